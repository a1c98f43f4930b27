"""Server-sent events framing, tolerant of the ways real streams break.

Events are separated by a blank line; `data:` lines of one event are joined with
"\\n"; lines starting with ":" are comments (keep-alives); a stream cut mid-event
still yields its last, partial event so callers can keep what arrived, and reports
that it was not complete.
"""

from __future__ import annotations

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
