"""The parser's input: one recorded flow with decoded, redacted bodies.

The capture reader builds these from the capture's Parquet tables; tests build
them directly. Parsers never touch files or the network.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ctxtap.capture.bodies import BodyView
from ctxtap.capture.headers import header_value


class WsMessage(BaseModel):
    index: int  # position in the socket's message sequence (both directions)
    from_client: bool
    ts: float
    opcode: Literal["text", "binary"] = "text"
    content: bytes


class Exchange(BaseModel):
    """One HTTP request/response, or one WebSocket connection with its messages."""

    model_config = ConfigDict(arbitrary_types_allowed=True)  # BodyView
    flow_id: str
    kind: Literal["http", "websocket"] = "http"
    method: str = "POST"
    url: str  # the URL the client asked for (before any --route)
    host: str
    path: str  # path including the query string
    provider: str = "unknown"  # as classified at record time
    api: str = "other"  # as classified at record time
    client: str | None = None  # as classified at record time, refined by the parsers
    client_version: str | None = None
    request_headers: list[tuple[str, str]] = Field(default_factory=list)
    # bytes, or a view of a stored body (`Capture.exchanges(views=True)`, the analyzer's reading:
    # a long session's resent history is not joined into every request's bytes)
    request_body: bytes | BodyView | None = None
    # where the capture stored the request body: its id, and (base body id, leading bytes
    # shared with it; None: all) when it is a delta, so a parser that just read the base can
    # take the shared bytes over (`analysis.memo`); None where nobody recorded it
    request_body_id: int | None = None
    request_body_base: tuple[int, int | None] | None = None
    status: int | None = None
    response_headers: list[tuple[str, str]] = Field(default_factory=list)
    response_body: bytes | None = None
    ts_start: float = 0.0
    ts_response_headers: float | None = None
    ts_first_byte: float | None = None
    ts_end: float | None = None
    error: str | None = None  # proxy-side error (connection reset, stream cut, ...)
    ws_messages: list[WsMessage] = Field(default_factory=list)

    def header(self, name: str, response: bool = False) -> str | None:
        """First value of a header, case-insensitive."""
        return header_value(self.response_headers if response else self.request_headers, name)
