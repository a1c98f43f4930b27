"""What the proxy hands to the capture writer: raw, unredacted facts about a flow.

These live only in memory between a mitmproxy hook and the writer thread; the
writer redacts them before anything is written. Bodies are references to the
bytes mitmproxy already holds (no copies on the event loop).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ctxtap.wire.families import ws_terminal_types


@dataclass
class RequestEvent:
    flow_id: str
    seq: int
    record_full: bool  # False: metadata only (method, host, path, status, sizes, timings)
    is_model: bool
    provider: str
    api: str
    endpoint: str
    websocket: bool  # an upgrade request
    method: str
    scheme: str
    host: str
    port: int
    path: str
    url: str  # as the client asked for it
    upstream_url: str | None  # where --route sent it, if anywhere
    http_version: str
    headers: list[tuple[str, str]]
    body_in: bytes | None  # as received from the client
    body_out: bytes | None  # as sent upstream
    ts_start: float
    ts_end: float | None
    body_is_decoded: bool = False  # imported from HAR: bodies are already decoded text
    telemetry: str | None = None  # a known vendor telemetry endpoint (classify.TELEMETRY_ENDPOINTS)


@dataclass
class ResponseEvent:
    flow_id: str
    status: int
    reason: str
    http_version: str
    headers: list[tuple[str, str]]
    body_in: bytes | None  # as received from upstream (None when it came as ResponseChunk events)
    body_out: bytes | None  # as sent to the client
    streamed: bool
    ts_headers: float | None
    ts_first_byte: float | None
    ts_end: float | None
    error: str | None = None
    body_is_decoded: bool = False
    chunked: bool = False  # the body already reached the writer as ResponseChunk events
    chunk_offsets: list[list[float]] | None = None  # streamed: [bytes so far, ms after first byte] per read


@dataclass
class StreamStart:
    """A response is about to stream: the writer processes its chunks as they come."""

    flow_id: str
    content_type: str | None
    content_encoding: str | None


@dataclass
class ResponseChunk:
    """Pieces of a streamed response body, as forwarded to the client: one bytes object, or the
    reads of one batch in order (a list, so the proxy hands them over without joining them)."""

    flow_id: str
    data: bytes | list[bytes]

    def pieces(self) -> list[bytes]:
        return self.data if isinstance(self.data, list) else [self.data]


@dataclass
class RingChunk:
    """A `ResponseChunk` whose bytes wait in the shared ring (`capture.ring`): the pieces' lengths
    from `offset` on, and the ring position after them (what the child acknowledges)."""

    flow_id: str
    offset: int
    lengths: list[int]
    end: int


@dataclass
class ErrorEvent:
    """The flow failed (connection reset, upstream refused, stream cut, killed)."""

    flow_id: str
    error: str
    ts: float
    partial: ResponseEvent | None = None  # what arrived before the failure


@dataclass
class WsMessageEvent:
    flow_id: str
    index: int
    from_client: bool
    ts: float
    is_text: bool
    content: bytes
    record_full: bool = True


@dataclass
class WsEndEvent:
    flow_id: str
    ts: float
    close_code: int | None
    closed_by_client: bool | None
    n_messages: int


@dataclass
class TelemetryEvent:
    """A payload of the client's own telemetry: OTLP sent to ctxtap's receiver, or a known
    vendor telemetry endpoint's request seen by the proxy (then `flow_id` names the flow)."""

    seq: int
    ts: float
    source: str  # `otlp-receiver`, or `proxy:<endpoint name>` (e.g. `proxy:claude-event-logging`)
    flow_id: str | None
    path: str  # without the receiver's token
    signal: str  # logs | metrics | traces | events | unknown
    content_type: str | None
    content_encoding: str | None
    user_agent: str | None
    body: bytes
    received: str = "complete"  # complete | truncated | oversized
    declared_bytes: int | None = None


@dataclass
class ManifestNote:
    """Facts for the manifest learnt after the writer started (e.g. what telemetry was injected)."""

    key: str
    value: object


@dataclass
class Barrier:
    """A no-op event: its future resolves once everything queued before it is written."""

    note: str = field(default="")




def ws_message_type(content: bytes, is_text: bool) -> str | None:
    """The JSON `type` of a text frame (e.g. "response.create"), if it has one."""
    import json

    if not is_text or not content.lstrip().startswith(b"{"):
        return None
    try:
        value = json.loads(content)
    except ValueError:
        return None
    kind = value.get("type") if isinstance(value, dict) else None
    return kind if isinstance(kind, str) else None


def is_terminal_ws_message(ev: WsMessageEvent) -> bool:
    """Server frames that end a response: the proxy waits for these to be durable."""
    return (not ev.from_client) and ws_message_type(ev.content, ev.is_text) in ws_terminal_types()
