"""Server-sent events: the one home of SSE framing, read three ways.

`parse_sse` splits a body into decoded events, tolerant of the ways real streams break (events are
separated by a blank line; `data:` lines of one event are joined with "\\n"; lines starting with ":"
are comments; a stream cut mid-event still yields its last, partial event and says it was not
complete): the protocol parsers read answers with it. `event_ends` and `data_payload` find events
and their JSON as byte offsets, so the redactor can edit a stream in place as it arrives.
`is_sse_body` and `is_sse_response` tell an SSE body from its first bytes (and content type).
Standard library only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass
class SseEvent:
    data: str
    event: str | None = None
    id: str | None = None


@dataclass
class SseStream:
    events: list[SseEvent] = field(default_factory=list)
    complete: bool = True  # False when the body ended inside an event


def parse_sse(raw: bytes | str | None) -> SseStream:
    """Split an SSE body into events."""
    if raw is None:
        return SseStream(complete=False)
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes | bytearray) else raw
    if text.startswith("\ufeff"):
        text = text[1:]
    stream = SseStream()
    data: list[str] = []
    event: str | None = None
    ev_id: str | None = None
    pending = False  # any field seen since the last dispatch
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        if line == "":
            if data:
                stream.events.append(SseEvent("\n".join(data), event, ev_id))
            data, event, pending = [], None, False
            continue
        if line.startswith(":"):
            continue
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        pending = True
        if name == "data":
            data.append(value)
        elif name == "event":
            event = value
        elif name == "id":
            ev_id = value
    if pending:
        stream.complete = False
        if data:
            stream.events.append(SseEvent("\n".join(data), event, ev_id))
    return stream


def is_sse_body(data: bytes) -> bool:
    """An `text/event-stream` body: `event:`/`data:` lines from the start."""
    head = data[:2048].lstrip()
    return head.startswith((b"event:", b"data:", b"id:", b":")) and b"data:" in head


def is_sse_response(content_type: str | None, raw: bytes | None) -> bool:
    """An SSE body: declared by its content type, or starting with an SSE field line."""
    if content_type is not None and "text/event-stream" in content_type.lower():
        return True
    head = (raw or b"")[:64].lstrip()
    return head.startswith((b"event:", b"data:", b":"))


EVENT_END_RE = re.compile(rb"\n\r?\n")


def event_ends(buf: bytearray, start: int) -> list[int]:
    """Where each event of `buf[start:]` ends (after its blank line): `bytes.find` where no line
    ends in CR (a regex would look at every newline of the JSON)."""
    if buf.find(b"\r", start) >= 0:
        return [m.end() for m in EVENT_END_RE.finditer(buf, start)]
    ends = []
    size = len(buf)
    at = buf.find(b"\n", start)  # memchr: an event has a few newlines, its JSON none
    while at >= 0:
        if at + 1 < size and buf[at + 1] == 0x0A:
            ends.append(at + 2)
            at += 1
        at = buf.find(b"\n", at + 1)
    return ends


def data_payload(block: bytes) -> tuple[int, int]:
    """Where the JSON of an event with a single `data:` line sits, else an empty range."""
    first = block.find(b"data:")
    if first < 0 or (first > 0 and block[first - 1] != 0x0A):
        return 0, 0
    start = first + 5
    if block[start : start + 1] == b" ":
        start += 1
    end = block.find(b"\n", start)
    # a second `data:` line starts after a newline, and the first newline is where this line ends
    # (searching from there, not through the JSON: memchr instead of a substring search per byte)
    if end >= 0 and block.find(b"\ndata:", end) >= 0:
        return 0, 0
    end = len(block) if end < 0 else end
    if end > start and block[end - 1] == 0x0D:
        end -= 1
    return start, end
