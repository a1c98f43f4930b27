"""Streamed bodies of JSON values, one after another, read as events for the stream joiner.

Not every model stream is SSE: a JSON array whose elements arrive one by one (Gemini without
`alt=sse`) or one JSON object per line (Ollama, NDJSON). A secret the model echoes is split across
their elements just as across SSE events, so each element goes through `StreamRedactor` like an
event: its content streams are joined and redacted before it is released. The framing is
`wire.ndjson`'s; a body the framer gives up on is released as far as it was framed, and the rest is
handed back (`abandon`) for the caller to redact as plain text.
"""

from __future__ import annotations

from ctxtap.redaction.streams import FramedRedactor, PayloadRedactor, Released
from ctxtap.wire.ndjson import JsonValuesFramer, looks_like_json_stream

__all__ = ["JsonStreamRedactor", "looks_like_json_stream", "redact_json_stream"]


class JsonStreamRedactor(FramedRedactor):
    """A JSON-values body fed in arbitrary cuts; returns redacted bytes once final."""

    def __init__(self, redactor: PayloadRedactor) -> None:
        super().__init__(redactor)
        self._framer = JsonValuesFramer()

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
        ends = self._framer.frame(self._buf)
        if self._framer.failed:
            self.failed = True
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
