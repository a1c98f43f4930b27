"""Parse a request body reusing the previous body of its thread.

Agents resend their whole history on every call, so request k's body usually
begins with request k-1's bytes. Parsing each body in full would make analysis
cost grow with the resent bytes (quadratically in turns). This scanner parses
only what changed: top-level values and array elements that lie wholly inside
the common byte prefix are taken over from the previous parse (the very same
Python objects), and scanning resumes where the bytes start to differ.

The result records byte spans of every top-level value and of every element of
the tracked arrays, so the next body can reuse this one in turn.
"""

from __future__ import annotations

import json
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any

from ctxtap.analysis.blocks.sequences import shared_bytes as common_prefix
from ctxtap.capture.bodies import BodyView, as_bytes

_DECODER = json.JSONDecoder()
_WS = " \t\n\r"


class ScanError(ValueError):
    pass


@dataclass
class ScannedBody:
    data: bytes | BodyView  # a view of a stored body: its resent history is never joined
    obj: dict[str, Any]
    spans: dict[str, tuple[int, int]]  # top-level key -> value byte span
    key_starts: dict[str, int]  # top-level key -> byte offset of its key string
    elements: dict[str, list[tuple[int, int]]] = field(default_factory=dict)  # tracked arrays
    reused_keys: set[str] = field(default_factory=set)  # values taken over from the previous body
    reused_elements: dict[str, int] = field(default_factory=dict)  # array key -> leading elements reused
    scanned_bytes: int = 0  # bytes actually parsed (the rest was reused)
    skipped_bytes: int = 0  # of the bytes after the shared prefix, those of values found again


class _Cursor:
    """A str view of data[base:] with char -> byte offset conversion."""

    def __init__(self, data: bytes | BodyView, base: int) -> None:
        self.data = data
        self.text = data[base:].decode("utf-8")
        self.base = base
        self.ascii = self.text.isascii()
        self._last_char = 0
        self._last_byte = base

    def byte(self, char_pos: int) -> int:
        if self.ascii:
            return self.base + char_pos
        if char_pos < self._last_char:
            self._last_char, self._last_byte = 0, self.base
        self._last_byte += len(self.text[self._last_char:char_pos].encode("utf-8"))
        self._last_char = char_pos
        return self._last_byte

    def skip_ws(self, pos: int) -> int:
        text = self.text
        while pos < len(text) and text[pos] in _WS:
            pos += 1
        return pos

    def expect(self, pos: int, chars: str) -> tuple[int, str]:
        pos = self.skip_ws(pos)
        if pos >= len(self.text) or self.text[pos] not in chars:
            raise ScanError(f"expected one of {chars!r} at byte {self.byte(pos)}")
        return pos + 1, self.text[pos]

    def value(self, pos: int) -> tuple[Any, int, int]:
        pos = self.skip_ws(pos)
        try:
            value, end = _DECODER.raw_decode(self.text, pos)
        except json.JSONDecodeError as exc:
            raise ScanError(str(exc)) from exc
        return value, pos, end


def scan(data: bytes | BodyView, tracked: tuple[str, ...] = (), prev: ScannedBody | None = None,
         shared: int | None = None) -> ScannedBody:
    """Parse a top-level JSON object, reusing `prev` for the common prefix. Raises ScanError.

    `shared`: the length of that prefix when the caller knows it (the capture recorded it when
    it stored the body as a delta); otherwise the two bodies are compared. It must not exceed
    the true common prefix: the bytes below it are not looked at.
    """
    start = _object_start(data)
    if not data[start:start + 1] == b"{":
        raise ScanError("not a JSON object")
    out = ScannedBody(data=data, obj={}, spans={}, key_starts={})
    resume_at, array_key = start + 1, None
    if prev is not None and prev.obj:
        if shared is None:  # not recorded (a keyframe, an older capture): compare the two
            shared = common_prefix(as_bytes(data), as_bytes(prev.data))
        shared = min(shared, len(data), len(prev.data))
        resume_at, array_key = _take_over(out, prev, shared, tracked)
    cursor = _Cursor(data, resume_at)
    pos = 0
    if array_key is not None:
        pos = _scan_array_tail(cursor, pos, out, array_key)
        pos, sep = cursor.expect(pos, ",}")
        if sep == "}":
            return _finish(out, cursor, pos)
    else:
        pos = cursor.skip_ws(pos)
        if pos < len(cursor.text) and cursor.text[pos] == "}":
            return _finish(out, cursor, pos + 1)
    while True:
        key, kstart, kend = cursor.value(pos)
        if not isinstance(key, str):
            raise ScanError("object key is not a string")
        pos, _ = cursor.expect(kend, ":")
        if key in tracked:
            pos = cursor.skip_ws(pos)
            if pos < len(cursor.text) and cursor.text[pos] == "[":
                out.key_starts[key] = cursor.byte(kstart)
                out.obj[key] = []
                out.elements[key] = []
                vstart = cursor.byte(pos)
                out.spans[key] = (vstart, vstart)
                pos = _scan_array_tail(cursor, pos + 1, out, key, opened=True)
                pos, sep = cursor.expect(pos, ",}")
                if sep == "}":
                    return _finish(out, cursor, pos)
                continue
        same = _same_value(cursor, pos, prev, key) if prev is not None else None
        if same is not None:  # the previous body's value, byte for byte: take over its object
            vstart, vend = same
            out.obj[key] = prev.obj[key]  # type: ignore[union-attr]
            out.reused_keys.add(key)
            out.skipped_bytes += cursor.byte(vend) - cursor.byte(vstart)
        else:
            value, vstart, vend = cursor.value(pos)
            out.obj[key] = value
        out.key_starts[key] = cursor.byte(kstart)
        out.spans[key] = (cursor.byte(vstart), cursor.byte(vend))
        pos, sep = cursor.expect(vend, ",}")
        if sep == "}":
            return _finish(out, cursor, pos)


def _same_value(cursor: _Cursor, pos: int, prev: ScannedBody, key: str) -> tuple[int, int] | None:
    """(start, end) in characters of a value whose bytes are the previous body's value for `key`.

    Values after the first change (Claude Code sends its tools after the growing history)
    are found again by comparing bytes instead of being parsed again. The same bytes
    followed by a separator are the same JSON value.
    """
    span = prev.spans.get(key)
    if span is None or key in prev.elements:
        return None
    vs, ve = span
    start = cursor.skip_ws(pos)
    before = memoryview(prev.data)[vs:ve] if isinstance(prev.data, bytes) else prev.data[vs:ve]
    if not cursor.data.startswith(before, cursor.byte(start)):
        return None
    end = start + (ve - vs if cursor.ascii else len(bytes(before).decode("utf-8")))
    after = cursor.skip_ws(end)
    if after < len(cursor.text) and cursor.text[after] in ",}":
        return start, end
    return None


def _finish(out: ScannedBody, cursor: _Cursor, pos: int) -> ScannedBody:
    rest = cursor.text[pos:]
    if rest.strip():
        raise ScanError("trailing data after the JSON object")
    out.scanned_bytes = len(out.data) - cursor.base - out.skipped_bytes
    return out


def _take_over(out: ScannedBody, prev: ScannedBody, shared: int,
               tracked: tuple[str, ...]) -> tuple[int, str | None]:
    """Copy what lies inside the common prefix; return where to resume scanning.

    Resumption is always right after the last byte known to parse identically
    (the end of a reused value or element), so separators are re-checked.
    """
    order = sorted(prev.spans, key=lambda k: prev.key_starts[k])
    last_end: int | None = None
    for key in order:
        kstart = prev.key_starts[key]
        vstart, vend = prev.spans[key]
        if vend <= shared:
            out.obj[key] = prev.obj[key]
            out.spans[key] = (vstart, vend)
            out.key_starts[key] = kstart
            out.reused_keys.add(key)
            if key in prev.elements:
                out.elements[key] = list(prev.elements[key])
                out.reused_elements[key] = len(prev.elements[key])
            last_end = vend
            continue
        if key in tracked and key in prev.elements and vstart < shared:
            # element spans are in byte order: those ending inside the shared prefix lead
            kept = bisect_right(prev.elements[key], shared, key=_end)
            out.obj[key] = prev.obj[key][:kept]
            out.elements[key] = prev.elements[key][:kept]
            out.key_starts[key] = kstart
            out.spans[key] = (vstart, vstart)
            out.reused_elements[key] = kept
            resume = prev.elements[key][kept - 1][1] if kept else vstart + 1
            return resume, key
        break
    if last_end is not None:
        return last_end, "__after__"
    return _object_start(prev.data) + 1, None


def _object_start(data: bytes | BodyView) -> int:
    """Where the top-level value begins: past leading whitespace, read a slice at a time."""
    pos, step = 0, 256
    while pos < len(data):
        chunk = data[pos:pos + step]
        rest = chunk.lstrip()
        if rest:
            return pos + len(chunk) - len(rest)
        pos, step = pos + step, step * 2
    return len(data)


def _end(span: tuple[int, int]) -> int:
    return span[1]


def _scan_array_tail(cursor: _Cursor, pos: int, out: ScannedBody, key: str, opened: bool = False) -> int:
    """Scan array elements until `]` (after `[` or after the last reused element)."""
    if key == "__after__":
        return pos
    items: list = out.obj[key]
    spans = out.elements[key]
    first = opened or not spans
    while True:
        pos = cursor.skip_ws(pos)
        if pos < len(cursor.text) and cursor.text[pos] == "]":
            pos += 1
            break
        if not first:
            pos, sep = cursor.expect(pos, ",]")
            if sep == "]":
                break
        first = False
        value, vstart, vend = cursor.value(pos)
        items.append(value)
        spans.append((cursor.byte(vstart), cursor.byte(vend)))
        pos = vend
    astart = out.spans[key][0]
    out.spans[key] = (astart, cursor.byte(pos))
    return pos
