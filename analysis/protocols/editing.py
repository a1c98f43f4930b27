"""Request bodies rebuilt from edits, keeping every byte that was not edited.

Replay and experiments change a request (drop a block, move it, reword it, move a
cache breakpoint) and send it again. Re-encoding the whole body would reorder or
re-escape what the client wrote and break signatures and cache prefixes that
depend on exact bytes, so edits are applied to the parsed body and the result is
written back against the original text: any value whose content is unchanged is
copied byte for byte (key order, whitespace, escapes, thinking signatures), and
only the values that changed are encoded, in the body's own style (compact or
spaced separators, ASCII escapes or raw UTF-8).

Edits address blocks by the position paths the parsers give them (`system[1]`,
`messages[4].content[0]`, `input[7]`, `contents[2].parts[0]`), always in the
numbering of the original body: several edits can be given at once and each
path means what the blocks table says. A Responses continuation's body holds
only its own input items, so its paths count from the first item of the body.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from difflib import SequenceMatcher
from json.decoder import scanstring
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, Field

from ctxtap.analysis.parsing.canonical import loads

if TYPE_CHECKING:
    from ctxtap.analysis.protocols.registry import Protocol


class EditError(ValueError):
    """An edit that cannot be applied to this body (bad path, no text, unsupported)."""


class ReplaceText(BaseModel):
    """Replace a block's text (a text part's `text`, a tool result's content, a string block)."""

    kind: Literal["replace_text"] = "replace_text"
    path: str
    text: str


class DropBlock(BaseModel):
    """Remove a block: the array element (or object member) its path points at."""

    kind: Literal["drop"] = "drop"
    path: str


class MoveBlock(BaseModel):
    """Move a block within its array; `to` is its index once moved (drops and moves apply in order given)."""

    kind: Literal["move"] = "move"
    path: str
    to: int


class SetCacheBreakpoint(BaseModel):
    """Mark a block as a cache breakpoint (`cache_control`); `ttl` "5m" / "1h" or None for the default."""

    kind: Literal["set_cache_breakpoint"] = "set_cache_breakpoint"
    path: str
    ttl: Literal["5m", "1h"] | None = None


class RemoveCacheBreakpoint(BaseModel):
    kind: Literal["remove_cache_breakpoint"] = "remove_cache_breakpoint"
    path: str


Edit = Annotated[
    ReplaceText | DropBlock | MoveBlock | SetCacheBreakpoint | RemoveCacheBreakpoint,
    Field(discriminator="kind"),
]

_STEP = re.compile(r"\.?([A-Za-z_][\w-]*)|\[(\d+)\]")


def block_steps(path: str) -> list[str | int]:
    """`messages[4].content[0]` -> ["messages", 4, "content", 0]."""
    steps: list[str | int] = []
    pos = 0
    while pos < len(path):
        m = _STEP.match(path, pos)
        if m is None or m.end() == pos:
            raise EditError(f"not a block path: {path!r}")
        steps.append(m.group(1) if m.group(1) is not None else int(m.group(2)))
        pos = m.end()
    if not steps or not isinstance(steps[0], str):
        raise EditError(f"not a block path: {path!r}")
    return steps


# --- applying edits to the parsed body --------------------------------------------------------


def apply_edits(protocol: Protocol, raw: bytes, edits: Sequence[Edit]) -> bytes:
    """`raw` with `edits` applied (see the module docstring); no edits: `raw` itself."""
    if not edits:
        return raw
    try:
        body = loads(raw)
    except (ValueError, UnicodeDecodeError) as e:
        raise EditError(f"request body is not JSON: {e}") from e
    # each path is resolved against the original body before anything moves
    located = [(edit, _locate(protocol, body, edit.path)) for edit in edits]
    for edit, (parent, key) in located:
        if isinstance(edit, ReplaceText):
            _replace_text(protocol, parent, key, edit)
        elif isinstance(edit, SetCacheBreakpoint | RemoveCacheBreakpoint):
            _cache_breakpoint(protocol, parent, key, edit)
    _reorder(located)
    return rebuild(raw, body)


def _locate(protocol: Protocol, body: Any, path: str) -> tuple[Any, str | int]:
    """(container, key or index) holding the value of the block at `path`."""
    steps = protocol.wire_path(body, path)
    parent: Any = None
    key: str | int = ""
    value = body
    for step in steps:
        if isinstance(step, int):
            if not isinstance(value, list) or not 0 <= step < len(value):
                raise EditError(f"{path}: no element [{step}]")
        elif not isinstance(value, dict) or step not in value:
            raise EditError(f"{path}: no field {step!r}")
        parent, key, value = value, step, value[step]
    if parent is None:
        raise EditError(f"{path}: points at the whole body")
    return parent, key


def _replace_text(protocol: Protocol, parent: Any, key: str | int, edit: ReplaceText) -> None:
    value = parent[key]
    if isinstance(value, str):
        parent[key] = edit.text
        return
    if isinstance(value, dict):
        text_key = protocol.text_key(value)
        if text_key is not None:
            value[text_key] = edit.text
            return
    raise EditError(f"{edit.path}: this block has no text to replace")


def _cache_breakpoint(protocol: Protocol, parent: Any, key: str | int,
                      edit: SetCacheBreakpoint | RemoveCacheBreakpoint) -> None:
    if not protocol.cache_breakpoints:
        raise EditError(f"{edit.path}: {protocol.title or protocol.api} has no per-block cache breakpoints")
    value = parent[key]
    if isinstance(edit, RemoveCacheBreakpoint):
        if isinstance(value, dict):
            value.pop("cache_control", None)
        return
    marker: dict[str, Any] = {"type": "ephemeral"}
    if edit.ttl:
        marker["ttl"] = edit.ttl
    if isinstance(value, dict):
        value["cache_control"] = marker
    elif isinstance(value, str):  # a plain string block becomes one text part that can carry the marker
        parent[key] = [{"type": "text", "text": value, "cache_control": marker}]
    else:
        raise EditError(f"{edit.path}: a cache breakpoint needs an object or text block")


def _reorder(located: list[tuple[Edit, tuple[Any, str | int]]]) -> None:
    """Drops and moves, per container, by the elements' original indexes."""
    orders: dict[int, tuple[Any, list[Any], list[str | int]]] = {}
    for edit, (parent, key) in located:
        if not isinstance(edit, DropBlock | MoveBlock):
            continue
        if id(parent) not in orders:
            keys = list(range(len(parent))) if isinstance(parent, list) else list(parent)
            original = list(parent) if isinstance(parent, list) else dict(parent)
            orders[id(parent)] = (parent, original, keys)
        _, _, order = orders[id(parent)]
        if key not in order:
            raise EditError(f"{edit.path}: already dropped")
        order.remove(key)
        if isinstance(edit, MoveBlock):
            if not isinstance(parent, list):
                raise EditError(f"{edit.path}: only array elements can move")
            if not 0 <= edit.to <= len(order):
                raise EditError(f"{edit.path}: cannot move to index {edit.to}")
            order.insert(edit.to, key)
    for parent, original, order in orders.values():
        if isinstance(parent, list):
            parent[:] = [original[i] for i in order]
        else:
            items = {k: original[k] for k in order}
            parent.clear()
            parent.update(items)


# --- writing a body back against its original text ---------------------------------------------


def rebuild(raw: bytes, body: Any) -> bytes:
    """`body` encoded as JSON, reusing the bytes of `raw` for every value it has unchanged."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise EditError(f"request body is not UTF-8: {e}") from e
    try:
        root, end = _Parser(text).parse(0)
    except (ValueError, IndexError, RecursionError) as e:
        raise EditError(f"request body is not JSON: {e}") from e
    if text[end:].strip():
        raise EditError("request body has trailing data after its JSON value")
    writer = _Writer(text, _Style.of(text, root))
    return (text[: root.start] + writer.emit(root, body) + text[root.end:]).encode("utf-8")


class _Node:
    """A JSON value of the original text: its span, value and (containers) children."""

    __slots__ = ("start", "end", "value", "members", "items", "duplicates", "_key")

    def __init__(self, start: int, value: Any) -> None:
        self.start = start
        self.end = start
        self.value = value
        self.members: list[tuple[str, int, int, _Node]] | None = None  # (key, key start, key end, node)
        self.items: list[_Node] | None = None
        self.duplicates = False
        self._key: str | None = None

    def key(self) -> str:
        if self._key is None:
            self._key = _identity(self.value)
        return self._key

    def children_spans(self) -> list[tuple[int, int]]:
        if self.members is not None:
            return [(kstart, node.end) for _, kstart, _, node in self.members]
        return [(node.start, node.end) for node in self.items or ()]


def _identity(value: Any) -> str:
    """Exact identity of a JSON value: types, key order and all (`1` is not `true`, `{a,b}` is not `{b,a}`)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=True)


_WS = re.compile(r"[ \t\n\r]*")
_SCALAR = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null|NaN|-?Infinity")


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text

    def ws(self, pos: int) -> int:
        return _WS.match(self.text, pos).end()  # type: ignore[union-attr]

    def parse(self, pos: int) -> tuple[_Node, int]:
        text = self.text
        pos = self.ws(pos)
        ch = text[pos]
        if ch == "{":
            return self._object(pos)
        if ch == "[":
            return self._array(pos)
        if ch == '"':
            value, end = scanstring(text, pos + 1)
            node = _Node(pos, value)
        else:
            m = _SCALAR.match(text, pos)
            if m is None:
                raise ValueError(f"unexpected {ch!r} at {pos}")
            end = m.end()
            node = _Node(pos, json.loads(m.group()))
        node.end = end
        return node, end

    def _object(self, start: int) -> tuple[_Node, int]:
        text = self.text
        node = _Node(start, {})
        node.members = []
        pos = self.ws(start + 1)
        if text[pos] == "}":
            node.end = pos + 1
            return node, node.end
        while True:
            if text[pos] != '"':
                raise ValueError(f"expected a key at {pos}")
            key, kend = scanstring(text, pos + 1)
            colon = self.ws(kend)
            if text[colon] != ":":
                raise ValueError(f"expected ':' at {colon}")
            child, end = self.parse(colon + 1)
            if key in node.value:
                node.duplicates = True
            node.value[key] = child.value
            node.members.append((key, pos, kend, child))
            pos = self.ws(end)
            if text[pos] == "}":
                node.end = pos + 1
                return node, node.end
            if text[pos] != ",":
                raise ValueError(f"expected ',' or '}}' at {pos}")
            pos = self.ws(pos + 1)

    def _array(self, start: int) -> tuple[_Node, int]:
        text = self.text
        node = _Node(start, [])
        node.items = []
        pos = self.ws(start + 1)
        if text[pos] == "]":
            node.end = pos + 1
            return node, node.end
        while True:
            child, end = self.parse(pos)
            node.value.append(child.value)
            node.items.append(child)
            pos = self.ws(end)
            if text[pos] == "]":
                node.end = pos + 1
                return node, node.end
            if text[pos] != ",":
                raise ValueError(f"expected ',' or ']' at {pos}")
            pos = pos + 1


class _Style:
    """How the body writes JSON, so new values look like the client's own."""

    def __init__(self, item_sep: str, key_sep: str, ascii_only: bool) -> None:
        self.item_sep, self.key_sep, self.ascii_only = item_sep, key_sep, ascii_only
        compact = item_sep == "," and key_sep == ":"
        self.separators = (",", ":") if compact else (", ", ": ")

    @classmethod
    def of(cls, text: str, root: _Node) -> _Style:
        item_sep, key_sep = ",", ":"
        node: _Node | None = root
        while node is not None:  # the first container with two children shows the separators
            spans = node.children_spans()
            if node.members:
                _, _, kend, child = node.members[0]
                key_sep = text[kend:child.start]
            if len(spans) > 1:
                item_sep = text[spans[0][1]:spans[1][0]]
                break
            children = [m[3] for m in node.members] if node.members else (node.items or [])
            node = next((c for c in children if c.members or c.items), None)
        return cls(item_sep, key_sep, text.isascii() and "\\u" in text)

    def dumps(self, value: Any) -> str:
        return json.dumps(value, ensure_ascii=self.ascii_only, separators=self.separators)


class _Writer:
    def __init__(self, text: str, style: _Style) -> None:
        self.text, self.style = text, style

    def emit(self, node: _Node | None, value: Any) -> str:
        if node is None:
            return self.style.dumps(value)
        if node.key() == _identity(value):
            return self.text[node.start:node.end]
        if node.members is not None and isinstance(value, dict) and not node.duplicates:
            return self._object(node, value)
        if node.items is not None and isinstance(value, list):
            return self._array(node, value)
        return self.style.dumps(value)

    def _object(self, node: _Node, value: dict) -> str:
        text = self.text
        members = {key: (text[kstart:child.start], child) for key, kstart, _, child in node.members or ()}
        entries = []
        for key, item in value.items():
            if key in members:
                lead, child = members[key]
                entries.append(lead + self.emit(child, item))
            else:
                lead = json.dumps(key, ensure_ascii=self.style.ascii_only) + self.style.key_sep
                entries.append(lead + self.style.dumps(item))
        return self._join(node, entries)

    def _array(self, node: _Node, value: list) -> str:
        items = node.items or []
        old = [child.key() for child in items]
        new = [_identity(v) for v in value]
        entries: list[str] = []
        matcher = SequenceMatcher(None, old, new, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                entries.extend(self.text[items[i].start:items[i].end] for i in range(i1, i2))
            elif tag in ("replace", "insert"):
                for k in range(j2 - j1):  # changed elements: diff against the one they replace
                    original = items[i1 + k] if tag == "replace" and i1 + k < i2 else None
                    entries.append(self.emit(original, value[j1 + k]))
        return self._join(node, entries)

    def _join(self, node: _Node, entries: list[str]) -> str:
        text = self.text
        spans = node.children_spans()
        if not spans:
            head, tail, seps = text[node.start:node.end - 1], text[node.end - 1:node.end], []
        else:
            head, tail = text[node.start:spans[0][0]], text[spans[-1][1]:node.end]
            seps = [text[a[1]:b[0]] for a, b in zip(spans, spans[1:], strict=False)]
        out = [head]
        for i, entry in enumerate(entries):
            if i:
                out.append(seps[i - 1] if i - 1 < len(seps) else (seps[-1] if seps else self.style.item_sep))
            out.append(entry)
        out.append(tail)
        return "".join(out)
