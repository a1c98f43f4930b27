"""Pieces every protocol parser shares: the request draft and tolerant accessors.

Bodies come from real clients and from our own mutation tests; any field can be
missing or have the wrong type. The accessors here return None/empty instead of
raising, and the parsers record a warning so the result says what was skipped.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ctxtap.analysis.blocks.drafts import BlockDraft, json_text
from ctxtap.analysis.parsing.canonical import base64_size, data_url_placeholder, loads
from ctxtap.analysis.parsing.errors import protocol_error
from ctxtap.analysis.parsing.models import ErrorInfo, ParsedResponse, ParseStatus, Role


@dataclass
class RequestDraft:
    """A parsed request before attribution; `facts` feed purpose and identity rules."""

    model: str | None = None
    stream: bool | None = None
    max_output_tokens: int | None = None
    blocks: list[BlockDraft] = field(default_factory=list)
    tool_names: list[str] = field(default_factory=list)
    previous_response_id: str | None = None
    top_level_cache_control: str | None = None
    status: ParseStatus = "ok"
    error: str | None = None
    warnings: list[str] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)
    endpoint: str | None = None  # overrides the endpoint the path implies (e.g. a Responses warm-up)
    complete: bool = True  # False when inherited input (a continuation) could not be fully resolved
    calls_by_name: dict[str, int] = field(default_factory=dict)  # history's tool calls per name (Gemini ids)

    def warn(self, message: str) -> None:
        """Record something skipped; a request with warnings is only partially parsed."""
        if len(self.warnings) < 50:
            self.warnings.append(message)
        if self.status == "ok":
            self.status = "partial"


def load_json(raw: bytes | str | None) -> tuple[Any, str | None]:
    """(value, error) of a JSON body."""
    if raw is None or raw == b"" or raw == "":
        return None, "empty body"
    try:
        value = loads(raw)
    except ValueError as e:  # includes UnicodeDecodeError and absurd nesting
        return None, f"invalid JSON: {str(e)[:200]}"
    return value, (None if value is not None else "body is JSON null")


def as_dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list:
    return value if isinstance(value, list) else []


def as_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def as_bool(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


_ROLES: dict[str, Role] = {
    "system": "system",
    "developer": "developer",
    "user": "user",
    "assistant": "assistant",
    "model": "assistant",
    "tool": "tool",
    "function": "tool",
    "ipython": "tool",
}


def norm_role(value: Any, default: Role = "user") -> Role:
    return _ROLES.get(value, default) if isinstance(value, str) else default


def text_kind(role: Role) -> str:
    return "instruction_text" if role in ("system", "developer") else "message_text"


# --- content parts ----------------------------------------------------------------------------


def media_placeholder(kind: str, media_type: str | None, data: Any) -> str:
    size = base64_size(data) if isinstance(data, str) else 0
    return f"[{kind} {media_type or 'application/octet-stream'} {size} bytes]"


def source_text(kind: str, source: Any) -> str:
    """Placeholder (or text) for an image/document `source` object (base64, url, text, file, content)."""
    if not isinstance(source, dict):
        return f"[{kind}]"
    stype = source.get("type")
    if stype == "base64":
        return media_placeholder(kind, source.get("media_type"), source.get("data"))
    if stype == "url":
        return data_url_placeholder(kind, str(source.get("url", "")))
    if stype == "text":
        return str(source.get("data", ""))
    if stype == "file":
        return f"[{kind} file {source.get('file_id', '')}]"
    if stype == "content":
        return parts_text(source.get("content"))
    return f"[{kind} {stype}]"


def parts_text(content: Any) -> str:
    """Tokenised text of a content value: a string, or a list of text/media parts joined.

    Tool results may carry parts of any family's shapes (text, image/document
    sources, image URLs, files), so this one reader serves every protocol.
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return json_text(content)
    out: list[str] = []
    all_text = True
    for part in content:
        if isinstance(part, str):
            out.append(part)
            continue
        if not isinstance(part, dict):
            all_text = False
            out.append(json_text(part))
            continue
        ptype = part.get("type")
        if "text" in part and isinstance(part.get("text"), str):
            out.append(part["text"])
            continue
        all_text = False
        if ptype == "image":
            out.append(source_text("image", part.get("source")))
        elif ptype == "document":
            out.append(source_text("document", part.get("source")))
        elif ptype in ("input_image", "image_url"):
            url = part.get("image_url")
            if isinstance(url, dict):
                url = url.get("url")
            if isinstance(url, str):
                out.append(data_url_placeholder("image", url))
            else:
                out.append(f"[image file {part.get('file_id', '')}]")
        elif ptype == "input_file":
            out.append(f"[file {part.get('filename') or part.get('file_id') or ''}]")
        else:
            out.append(json_text(part))
    # consecutive text parts reach the tokenizer back to back; placeholders get their own line
    return "".join(out) if all_text else "\n".join(out)


def frame_json(content: bytes) -> Any:
    """A WebSocket frame's JSON value (None when it is not JSON)."""
    try:
        return loads(content)
    except (ValueError, UnicodeDecodeError):
        return None


class Replay(ABC):
    """Parser state that reused items must re-apply (e.g. tool-call id -> name maps).

    `facts(drafts)` lists what one item's drafts contribute, once, when the item is
    parsed; `apply(facts)` re-applies the facts of a run of reused items in one step.
    Applying an item's facts has the same effect as parsing it again.
    """

    @abstractmethod
    def facts(self, drafts: list) -> list: ...

    @abstractmethod
    def apply(self, facts: list) -> None: ...


def each_item(memo: Any, tag: str, items: list[Any], d: RequestDraft, fn: Callable[[Any, int], None],
              replay: Replay | None = None, start: int = 0) -> None:
    """Run `fn(item, index)` for each item, which appends its drafts to `d`.

    With a memo (see `analysis.memo`), an item object seen before at the same
    index reuses its drafts, warnings and tool names instead of being parsed
    again, and `replay` re-applies other state it changed (call-id maps).
    When the leading items are the very objects of the previous call with this
    tag, their drafts are taken over in one slice (and their replay facts in one step).
    """
    first = 0
    if memo is not None:
        first = _reuse_prefix(memo, tag, start, items, d, replay)
    marks = _Marks(d)
    for offset in range(first, len(items)):
        item = items[offset]
        index = start + offset
        if memo is not None:
            hit = memo.item(tag, index, item)
            if hit is not None:
                drafts, warnings, tool_names, facts = hit
                d.blocks.extend(drafts)
                d.tool_names.extend(tool_names)
                for warning in warnings:
                    d.warn(warning)
                if replay is not None:
                    replay.apply(facts)
                marks.add(d, facts)
                continue
        n_blocks, n_warnings, n_names = len(d.blocks), len(d.warnings), len(d.tool_names)
        fn(item, index)
        if memo is not None:
            drafts = d.blocks[n_blocks:]
            facts = replay.facts(drafts) if replay is not None else []
            memo.put_item(tag, index, item, (drafts, d.warnings[n_warnings:], d.tool_names[n_names:], facts))
            marks.add(d, facts)
    if memo is not None:
        memo.remember_items((tag, start), items, marks.finish(d, first))


class _Marks:
    """Where each item's drafts, warnings, tool names and replay facts end, for reuse by the next call."""

    def __init__(self, d: RequestDraft) -> None:
        self.base = (len(d.blocks), len(d.warnings), len(d.tool_names))
        self.facts: list = []
        self.ends: list[tuple[int, int, int, int]] = []

    def add(self, d: RequestDraft, facts: list) -> None:
        self.facts.extend(facts)
        self.ends.append((len(d.blocks), len(d.warnings), len(d.tool_names), len(self.facts)))

    def finish(self, d: RequestDraft, reused: int) -> tuple:
        b0, w0, t0 = self.base
        return (reused, d.blocks[b0:], d.warnings[w0:], d.tool_names[t0:], self.facts,
                [(b - b0, w - w0, t - t0, f) for b, w, t, f in self.ends])


def _reuse_prefix(memo: Any, tag: str, start: int, items: list[Any], d: RequestDraft,
                  replay: Replay | None) -> int:
    last = memo.last_items((tag, start))
    if last is None:
        return 0
    prev_items, (drafts, warnings, names, facts, ends) = last
    k = memo.identical_prefix(prev_items, items)
    if k == 0:
        return 0
    b, w, t, f = ends[k - 1]
    d.blocks.extend(drafts if b == len(drafts) else drafts[:b])
    d.tool_names.extend(names[:t])
    for warning in warnings[:w]:
        d.warn(warning)
    if replay is not None:
        replay.apply(facts[:f])  # rebuild call-id maps and counters from exactly these items
    return k


class CallNames(Replay):
    """Tool-call id -> name, as parsing meets the calls (results are named after their call).

    Used like the dict it replaces (`names[id] = name`, `names.get(id)`). The calls of
    reused items are not copied in: while nothing was recorded before them, their facts
    are kept as they are and searched newest first on a miss, so reusing a long history
    costs nothing per call in it. Lookups give what the dict would have held.
    """

    def __init__(self) -> None:
        self._names: dict[str, str] = {}
        self._reused: list[tuple[str, str]] | None = None  # facts applied before anything else

    def __setitem__(self, call_id: str, name: str) -> None:
        self._names[call_id] = name

    def get(self, call_id: str, default: str | None = None) -> str | None:
        if call_id in self._names:  # recorded after the reused facts: the newer entry
            return self._names[call_id]
        if self._reused and call_id:
            for reused_id, name in reversed(self._reused):
                if reused_id == call_id:
                    return name
        return default

    def facts(self, drafts: list) -> list[tuple[str, str]]:
        return [(d.call_id, d.tool_name) for d in drafts if d.kind == "tool_call" and d.call_id and d.tool_name]

    def apply(self, facts: list[tuple[str, str]]) -> None:
        if self._reused is None and not self._names:
            self._reused = facts
        else:
            self._names.update(facts)  # in order: a later call with the same id wins, as in parsing


def load_response_object(raw: bytes | None) -> tuple[dict | None, Any]:
    """(object, None) for a JSON-object response body, else (None, a ParsedResponse saying why)."""
    try:
        obj = loads(raw or b"")
    except (ValueError, UnicodeDecodeError) as e:
        msg = f"response is not JSON: {str(e)[:200]}"
        return None, ParsedResponse(parse_status="error", parse_error=msg, error=protocol_error(msg, "body.unparsable"))
    if not isinstance(obj, dict):
        msg = "response is not a JSON object"
        return None, ParsedResponse(
            parse_status="error", parse_error=msg, error=protocol_error(msg, "body.unexpected-shape")
        )
    return obj, None


def stream_outcome(
    error: ErrorInfo | None,
    truncated: str | None,
    has_content: bool,
    bad_events: int,
    unit: str,
    note: str | None = None,
) -> tuple[ParseStatus, str | None, ErrorInfo | None]:
    """(parse_status, parse_error, error) for a stream, judged alike for every provider.

    `truncated` says why the stream looks cut off (None when it ended properly); a
    stream that already carried a provider error is not also called truncated.
    `note` and unparsable events downgrade an otherwise clean stream to partial.
    """
    status: ParseStatus = "ok"
    parse_error = None
    if truncated and error is None:
        status = "partial" if has_content else "error"
        parse_error = truncated
        error = protocol_error(truncated, "stream.truncated")
    for reason in (note, f"{bad_events} unparsable {unit}" if bad_events else None):
        if reason:
            status = "partial" if status == "ok" else status
            parse_error = parse_error or reason
    return status, parse_error, error
