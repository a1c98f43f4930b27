"""Header lookup, SSE sniffing and the transport of a response: small facts every layer asks about.

(Named `headers`, apart from the `wire/` layer of codecs.)

Headers are kept as recorded (a list of pairs, original case and order), so lookups
are case-insensitive and the first value wins. Pure and dependency-free: the proxy
process imports this module too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ctxtap.wire.sse import is_sse_response

Headers = Iterable[tuple[str, str]] | Mapping[str, Any]


def header_value(headers: Headers | None, name: str) -> str | None:
    """First value of header `name`, case-insensitively (None when absent)."""
    if headers is None:
        return None
    name = name.lower()
    items = headers.items() if isinstance(headers, Mapping) else headers
    for key, value in items:
        if str(key).lower() == name:
            return str(value)
    return None


def lower_headers(headers: Headers | None) -> dict[str, str]:
    """Headers as a dict with lower-case names; the first value of a repeated header wins."""
    if headers is None:
        return {}
    items = headers.items() if isinstance(headers, Mapping) else headers
    out: dict[str, str] = {}
    for key, value in items:
        out.setdefault(str(key).lower(), str(value))
    return out


def is_event_stream(content_type: str | None) -> bool:
    """A `text/event-stream` content type."""
    return content_type is not None and "text/event-stream" in content_type.lower()


def flow_transport(status: int | None, content_type: str | None, streamed: bool, websocket: bool) -> str:
    """Transport of a recorded flow, from its response head: websocket, sse, stream, json or none."""
    if websocket and status == 101:
        return "websocket"
    if status is None:
        return "none"
    ctype = (content_type or "").lower()
    if is_event_stream(ctype):
        return "sse"
    if streamed:
        return "stream"
    if "json" in ctype:
        return "json"
    return "none" if not ctype else "json" if ctype.startswith("application/") else "none"


def body_transport(content_type: str | None, raw: bytes | None) -> str:
    """Transport of a stored HTTP response body: sse, stream (a JSON array of chunks, Bedrock's
    frames), json or none."""
    if not raw:
        return "none"
    if is_sse_response(content_type, raw):
        return "sse"
    if "vnd.amazon.eventstream" in (content_type or "").lower():
        return "stream"  # Bedrock's binary frames
    return "stream" if raw.lstrip()[:1] == b"[" else "json"
