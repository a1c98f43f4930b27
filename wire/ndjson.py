"""Bodies of JSON values one after another: the framing, apart from what is done with each value.

Not every model stream is SSE: Gemini's `streamGenerateContent` without `alt=sse` answers with a JSON
array whose elements arrive one by one, and Ollama's native API (and other NDJSON / JSON Lines streams)
with one JSON object per line. The framing follows JSON's own structure (strings, brackets), not lines:
Gemini's elements span many lines. An element is an object or array at the top level, or one level
inside a top-level array; whatever lies between elements (`[`, `,`, white space, scalars) belongs
with the element after it. `JsonValuesFramer` finds elements in a buffer fed in arbitrary cuts (the
redactor's stream joiner uses it); a body that stops making sense as JSON, or an element past
`MAX_ELEMENT_BYTES`, marks the framer failed. Standard library only.
"""

from __future__ import annotations

import re

MAX_ELEMENT_BYTES = 4 * 1024 * 1024  # no streamed delta is this big: past it, not a stream of chunks
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


class JsonValuesFramer:
    """Where the elements of a JSON-values body end, read incrementally from a growing buffer.

    `frame(buf)` returns the (start, end) of every element completed in `buf` since the last call;
    the caller then removes `buf[:end of the last one]` (the framer's state is kept relative to that
    cut), appends what arrives next and calls again.
    """

    def __init__(self) -> None:
        self.failed = False
        self._pos = 0  # how far the buffer is framed
        self._depth = 0
        self._outer_array = False  # the top-level value now open is an array (its elements are the values)
        self._element = -1  # where the element being framed starts in the buffer

    def frame(self, buf: bytes | bytearray) -> list[tuple[int, int]]:
        ends: list[tuple[int, int]] = []
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
        if len(buf) - limit > MAX_ELEMENT_BYTES:
            self.failed = True
        if not self.failed:
            self._pos, self._depth = pos - limit, depth
            self._element = element - limit if element >= 0 else -1
        return ends



_GAP_NOISE = re.compile(rb"[\s,\[\]]*")


def split_values(body: bytes) -> tuple[list[bytes], int]:
    """A whole JSON-values body cut into its elements, and how many stretches of it were not JSON
    (text between elements other than white space, commas and the array's brackets, or an
    unbalanced tail): the parser of a complete body frames it the way the stream redactor does."""
    framer = JsonValuesFramer()
    spans = framer.frame(body)
    values, junk, last = [], 0, 0
    for start, end in spans:
        junk += _GAP_NOISE.fullmatch(body, last, start) is None
        values.append(body[start:end])
        last = end
    junk += _GAP_NOISE.fullmatch(body, last) is None
    return values, junk
