"""Streamed bodies of JSON values, one after another, read as events for the stream joiner.

Not every model stream is SSE: Gemini's `streamGenerateContent` without
`alt=sse` answers with a JSON array whose elements arrive one by one, and
Ollama's native API (and other NDJSON / JSON Lines streams) with one JSON
object per line. A secret the model echoes is split across their elements just
as across SSE events, so each element goes through `StreamRedactor` like an
event: its content streams are joined and redacted before it is released.

The framing follows JSON's own structure (strings, brackets), not lines:
Gemini's elements span many lines. An element is an object or array at the
top level, or one level inside a top-level array; whatever lies between
elements (`[`, `,`, white space, scalars) travels with the element after it.
A body that stops making sense as JSON, or an element past `MAX_ELEMENT_BYTES`
(no delta is that big), is given up: what was framed is released, and the rest
is handed back (`abandon`) for the caller to redact as plain text.
"""

from __future__ import annotations

import re

from ctxtap.redaction.streams import FramedRedactor, PayloadRedactor, Released

MAX_ELEMENT_BYTES = 4 * 1024 * 1024
_STRUCTURE = re.compile(rb'["{}\[\]]')
_STRING_REST = re.compile(rb'[^"\\]*(?:\\.[^"\\]*)*"', re.S)  # after an opening quote, through the closing one


def looks_like_json_stream(data: bytes) -> bool:
    """A whole body that is a JSON array of objects, or more than one top-level object (NDJSON).

    A single object (any ordinary request or response) is not: it has nothing to join.
    """
    head = data[:64].lstrip()
    if head.startswith(b"["):
        return head[1:].lstrip().startswith(b"{")
    # a raw newline never occurs inside a JSON string, and a pretty-printed single object
    # indents what it nests: `\n{` starts a second top-level object
    return head.startswith(b"{") and b"\n{" in data


class JsonStreamRedactor(FramedRedactor):
    """A JSON-values body fed in arbitrary cuts; returns redacted bytes once final."""

    def __init__(self, redactor: PayloadRedactor) -> None:
        super().__init__(redactor)
        self._pos = 0  # how far `_buf` is framed
        self._depth = 0
        self._outer_array = False  # the top-level value now open is an array (its elements are events)
        self._element = -1  # where the element being framed starts in `_buf`

    def finish(self) -> bytes:
        """The end of the body: everything still held, redacted."""
        if self.failed:
            return b""
        released: list[Released] = []
        if self._buf:  # a last element cut short, or trailing `]` and white space
            block = bytes(self._buf)
            self._buf.clear()
            released += self._events.feed(None, block)
        return self._emit(released + self._events.finish())

    def _frames(self) -> list[tuple[object, bytes, int, int | None]]:
        """Complete elements at the head of `_buf`, cut off it: (token, block, payload start, end)."""
        buf = self._buf
        ends: list[tuple[int, int]] = []  # (element start, element end) in `buf`
        pos, depth, element = self._pos, self._depth, self._element
        search = _STRUCTURE.search
        while True:
            m = search(buf, pos)
            if m is None:
                pos = len(buf)
                break
            at = m.start()
            c = buf[at]
            if c == 0x22:  # a string: skip it whole, or wait for the rest of it
                rest = _STRING_REST.match(buf, at + 1)
                if rest is None:
                    pos = at
                    break
                pos = rest.end()
                continue
            pos = at + 1
            if c in (0x7B, 0x5B):  # { [
                if depth == 0:
                    self._outer_array = c == 0x5B
                    if not self._outer_array:
                        element = at
                elif depth == 1 and self._outer_array:
                    element = at
                depth += 1
            else:
                depth -= 1
                if depth < 0:
                    self.failed = True
                    break
                if element >= 0 and depth == (1 if self._outer_array else 0):
                    ends.append((element, pos))
                    element = -1
        limit = ends[-1][1] if ends else 0
        if len(buf) - limit > MAX_ELEMENT_BYTES:  # no delta is this big: not a stream of chunks
            self.failed = True
        if not self.failed:
            self._pos, self._depth = pos - limit, depth
            self._element = element - limit if element >= 0 else -1
        return self._cut(ends)

    def _cut(self, ends: list[tuple[int, int]]) -> list[tuple[object, bytes, int, int | None]]:
        """The blocks ending at each element's end, taken off `_buf`."""
        if not ends:
            return []
        with memoryview(self._buf) as view:
            complete = bytes(view[: ends[-1][1]])
        del self._buf[: ends[-1][1]]
        out = []
        block_start = 0
        for start, end in ends:
            out.append((None, complete[block_start:end], start - block_start, end - block_start))
            block_start = end
        return out


def redact_json_stream(data: bytes, redactor: PayloadRedactor) -> bytes:
    """A whole JSON-values body: every content stream joined, then every element."""
    stream = JsonStreamRedactor(redactor)
    out = stream.feed(data) + stream.finish()
    if stream.failed:
        out += redactor.redact_payload(stream.abandon())
    return out
