"""What the server received and sent, kept for tests to assert on.

Raw bytes are kept exactly as they arrived (before Content-Encoding decoding)
so tests can check that a proxy in between forwarded them unchanged.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Received:
    index: int
    method: str
    path: str  # including the query string
    headers: list[tuple[str, str]]  # as received: original case and order
    raw_body: bytes  # before Content-Encoding decoding
    body: bytes  # decoded
    client: tuple[str, int]
    time: float
    ws_frames: list[str] = field(default_factory=list)  # client text frames (WebSocket only)

    def header(self, name: str) -> str | None:
        """First value of a header, case-insensitively."""
        name = name.lower()
        return next((v for k, v in self.headers if k.lower() == name), None)

    @property
    def json(self) -> Any:
        """The decoded body as JSON, or None if it is not JSON."""
        try:
            return json.loads(self.body) if self.body else None
        except (ValueError, UnicodeDecodeError):
            return None

    @property
    def is_websocket(self) -> bool:
        return (self.header("upgrade") or "").lower() == "websocket"


@dataclass
class Sent:
    index: int  # index of the Received it answers
    status: int
    headers: list[tuple[str, str]]
    body: bytes = b""  # JSON body, or the SSE bytes written (up to a cut)
    frames: list[str] = field(default_factory=list)  # server text frames (WebSocket only)
    complete: bool = True  # False when the stream was cut on purpose


class TrafficLog:
    """Thread-safe append-only logs of received requests and sent responses."""

    def __init__(self) -> None:
        self._lock = threading.RLock()  # re-entrant: wait() predicates call the accessors
        self._cond = threading.Condition(self._lock)
        self._received: list[Received] = []
        self._sent: list[Sent] = []

    def add_received(self, **fields: Any) -> Received:
        with self._cond:
            rec = Received(index=len(self._received), **fields)
            self._received.append(rec)
            self._cond.notify_all()
            return rec

    def add_frame(self, rec: Received, text: str) -> None:
        with self._cond:
            rec.ws_frames.append(text)
            self._cond.notify_all()

    def add_sent(self, sent: Sent) -> None:
        with self._cond:
            self._sent.append(sent)
            self._cond.notify_all()

    def add_sent_frame(self, sent: Sent, text: str) -> None:
        with self._cond:
            sent.frames.append(text)
            self._cond.notify_all()

    def received(self) -> list[Received]:
        with self._lock:
            return list(self._received)

    def sent(self) -> list[Sent]:
        with self._lock:
            return list(self._sent)

    def frames(self, index: int) -> list[str]:
        with self._lock:
            return list(self._received[index].ws_frames)

    def wait(self, predicate: Any, timeout: float) -> bool:
        """Block until predicate() is true (re-checked on every new record) or timeout."""
        with self._cond:
            return self._cond.wait_for(predicate, timeout)

    def clear(self) -> None:
        with self._lock:
            self._received.clear()
            self._sent.clear()
