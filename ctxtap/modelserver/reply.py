"""The engine's transport-free output: what to answer, before any socket is involved.

Keeping replies as data lets the same engine serve HTTP JSON, HTTP SSE and
WebSocket frames, and lets tests call the engine without a server.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from .cache import CacheResult
from .tools import ShapedCall


def new_id(prefix: str, length: int = 24) -> str:
    return prefix + uuid.uuid4().hex[:length]


def split_text(text: str, size: int) -> list[str]:
    """Cut text into stream deltas of `size` characters (at least one delta)."""
    size = max(1, size)
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


@dataclass
class Event:
    """One stream event: SSE `data:` payload (dict, or a raw string like `[DONE]`)."""

    data: dict[str, Any] | str
    name: str | None = None  # SSE `event:` name, for APIs that send one


@dataclass
class Answer:
    """What the model says this time, independent of wire format."""

    kind: str  # "tools" | "final" | "side" | "warmup"
    text: str | None = None
    text_deltas: list[str] = field(default_factory=list)
    calls: list[ShapedCall] = field(default_factory=list)
    step: int | None = None
    reasoning: bool = False


@dataclass
class RenderContext:
    model: str
    stream: bool
    usage: CacheResult
    output_tokens: int
    reasoning_tokens: int = 0
    delta_chars: int = 32
    include_usage: bool = False  # chat: stream_options.include_usage
    moonshot: bool = False  # chat: usage inside choices[0] + usage.cached_tokens
    wrapped: bool = False  # gemini: Code Assist {"response": ...} envelope
    response_id: str = ""
    previous_response_id: str | None = None
    request: dict[str, Any] = field(default_factory=dict)
    # (field, value) where the request asked for cache diagnostics: the value may be None (`null`)
    diagnostics: tuple[str, Any] | None = None


@dataclass
class ServedExchange:
    """One logical model call (an HTTP request or a WebSocket response.create frame)."""

    seq: int
    api: str
    transport: str  # "http" | "ws"
    path: str
    session_key: str = ""
    status: int = 200
    kind: str = ""  # answer kind, or "error" / "count" / "compact" / "models"
    step: int | None = None
    stream: bool = False
    request: dict[str, Any] | None = field(default=None, repr=False)
    usage: dict[str, int] | None = None  # normalized: input, cache_read, cache_write, output
    provider_usage: dict[str, Any] | None = field(default=None, repr=False)
    response_id: str | None = None
    fault: str | None = None
    calls: list[str] = field(default_factory=list)  # commands of the tool calls answered


@dataclass
class Reply:
    status: int = 200
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: Any = None  # JSON body (non-stream)
    events: list[Event] | None = None  # stream events
    cut_after: int | None = None  # close the connection after this many events
    linger_s: float | None = None  # hold a whole stream's chunked end this long after its last event
    delay_s: float | None = None  # per-request pacing override
    exchange: ServedExchange | None = None
    output: list[dict[str, Any]] | None = None  # Responses output items (for previous_response_id)
    eventstream: str | None = None  # send the events as AWS event-stream frames (Bedrock: "invoke", "converse")

    @property
    def is_stream(self) -> bool:
        return self.events is not None
