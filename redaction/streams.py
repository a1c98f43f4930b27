"""Secrets split across streamed deltas: `"text":"sk-ant-api"` ... `"text":"03-x7Yq..."`.

A model that echoes a key back streams it a few characters per SSE event, so
no single event holds a recognisable secret. This pass joins the delta
strings of one SSE body per field (`text`, `partial_json`, `delta`,
`arguments`...), looks for secrets in the joined text, and for each one that
spans several deltas puts the placeholder in the first piece and empties the
others. Events stay valid JSON and every other byte stays as it was.

The strings are joined in their escaped JSON form; the detectors already read
escaped text (`\\n`, `\\"`), and edits then stay inside the string contents.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from redaction.scanner import find_spans
from redaction.spans import Span

_DELTA_FIELDS = (
    b"text",
    b"thinking",
    b"partial_json",
    b"delta",
    b"content",
    b"arguments",
    b"reasoning_content",
    b"reasoning",
)
# One regex per field: a literal start lets `re` skip ahead (an alternation would not).
_FIELD_RES = tuple(
    (b'"' + field + b'"', re.compile(rb'"' + field + rb'"[ \t]*:[ \t]*"([^"\\\n]*(?:\\.[^"\\\n]*)*)"'))
    for field in _DELTA_FIELDS
)


def looks_like_sse(data: bytes) -> bool:
    """An `text/event-stream` body: `event:`/`data:` lines from the start."""
    head = data[:2048].lstrip()
    return head.startswith((b"event:", b"data:", b"id:", b":")) and b"data:" in head


def split_secret_edits(
    data: bytes,
    placeholder: Callable[[str, bytes], bytes],
    finder: Callable[[bytes], list[Span]] = find_spans,
) -> list[tuple[int, int, bytes]]:
    """(start, end, replacement) edits for secrets that span several deltas of this SSE body."""
    edits: list[tuple[int, int, bytes]] = []
    for quoted_field, regex in _FIELD_RES:
        if quoted_field not in data:
            continue
        strings = regex.findall(data)
        if len(strings) < 2 or not finder(b"".join(strings)):
            continue  # the common case, decided without building spans per event
        pieces = [m.span(1) for m in regex.finditer(data)]
        edits.extend(_edits_for_stream(data, pieces, placeholder, finder))
    return edits


def _edits_for_stream(
    data: bytes,
    pieces: list[tuple[int, int]],
    placeholder: Callable[[str, bytes], bytes],
    finder: Callable[[bytes], list[Span]],
) -> list[tuple[int, int, bytes]]:
    joined = b"".join(data[s:e] for s, e in pieces)
    offsets = []  # start of each piece within `joined`
    total = 0
    for s, e in pieces:
        offsets.append(total)
        total += e - s
    edits: list[tuple[int, int, bytes]] = []
    for span in finder(joined):
        first = _piece_at(offsets, span.start)
        last = _piece_at(offsets, span.end - 1)
        if first == last:
            continue  # inside one delta: the whole-body pass has it
        secret = joined[span.start : span.end]
        for i in range(first, last + 1):
            body_start, body_end = pieces[i]
            lo = body_start + max(0, span.start - offsets[i])
            hi = body_start + min(body_end - body_start, span.end - offsets[i])
            edits.append((lo, hi, placeholder(span.kind, secret) if i == first else b""))
    return edits


def _piece_at(offsets: list[int], pos: int) -> int:
    lo, hi = 0, len(offsets) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if offsets[mid] <= pos:
            lo = mid
        else:
            hi = mid - 1
    return lo
