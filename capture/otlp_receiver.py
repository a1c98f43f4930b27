"""A loopback OTLP/HTTP receiver: what a recorded client exports about itself.

Coding CLIs export OpenTelemetry logs, metrics and traces when asked (`ctxtap record
--telemetry` points them here). The receiver only takes bytes off the socket and hands
them on with what it saw (path, content type, whether the body was complete): decoding
and redaction happen in the capture writer, like every other record. It runs on a
thread of the writer child process, so the proxy's event loop never sees it.

Only the wrapped process should reach it: it binds 127.0.0.1 on a free port and answers
only paths under a per-run random token (`http://127.0.0.1:PORT/<token>/v1/logs`); any
other path gets 404 and is counted, never stored. A payload that is cut short, too big
or not OTLP at all is still handed on with its status; nothing stops the receiver.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from ctxtap.capture.events import TelemetryEvent
from ctxtap.wire.httpbody import BodyError, BodyTooLarge, read_body, refuse

MAX_PAYLOAD_BYTES = 8 << 20  # larger payloads keep their first 8 MiB, marked `oversized`, answered 413
_READ = 64 * 1024
SIGNALS = {"v1/logs": "logs", "v1/metrics": "metrics", "v1/traces": "traces"}


def signal_of(path: str) -> str:
    """`logs`, `metrics`, `traces` by the OTLP path suffix, else `unknown`."""
    bare = path.split("?", 1)[0].rstrip("/")
    for suffix, signal in SIGNALS.items():
        if bare.endswith(suffix):
            return signal
    return "unknown"


class TelemetryReceiver:
    """OTLP/HTTP on 127.0.0.1; every accepted POST becomes one `TelemetryEvent`."""

    def __init__(self, on_payload: Callable[[TelemetryEvent], object], max_bytes: int = MAX_PAYLOAD_BYTES,
                 host: str = "127.0.0.1") -> None:
        self.on_payload = on_payload
        self.max_bytes = max_bytes
        self.token = secrets.token_urlsafe(18)
        self.refused = 0  # requests without the token
        self.received = 0
        self._seq = 0
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer((host, 0), self._handler_class())
        self._server.daemon_threads = True
        self.port: int = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, name="ctxtap-otlp", daemon=True)

    @property
    def endpoint(self) -> str:
        """The base URL a client is given (it appends `/v1/logs` etc.)."""
        return f"http://127.0.0.1:{self.port}/{self.token}"

    def start(self) -> TelemetryReceiver:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _next_seq(self) -> int:
        with self._lock:
            self._seq += 1
            return self._seq - 1

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            timeout = 30  # a client that stops sending mid-body cannot hold a thread forever

            def log_message(self, format: str, *args) -> None:  # noqa: A002 - stdlib signature
                return  # the wrapped client's terminal is not ours to write on

            def do_GET(self) -> None:
                self._reply(405, b"", "text/plain")

            def do_POST(self) -> None:
                prefix = f"/{receiver.token}/"
                if not self.path.startswith(prefix):
                    with receiver._lock:
                        receiver.refused += 1
                    self._drain_and_refuse()
                    return
                ts = time.time()
                self._refusal: BodyError | None = None
                body, status, declared = self._read_body()
                ctype = self.headers.get("content-type", "")
                event = TelemetryEvent(
                    seq=receiver._next_seq(), ts=ts, source="otlp-receiver", flow_id=None,
                    path="/" + self.path[len(prefix):], signal=signal_of(self.path),
                    content_type=ctype, content_encoding=self.headers.get("content-encoding"),
                    user_agent=self.headers.get("user-agent"), body=body, received=status,
                    declared_bytes=declared,
                )
                try:
                    receiver.on_payload(event)
                    with receiver._lock:
                        receiver.received += 1
                except Exception:  # the writer is gone: still answer, the client must not hang
                    pass
                if self._refusal is not None:  # 413 or 400 (none when cut short), the connection closed
                    refuse(self, self._refusal)
                    return
                if "json" in ctype:
                    self._reply(200, b"{}", "application/json")
                else:  # an empty Export*ServiceResponse is zero bytes of protobuf
                    self._reply(200, b"", "application/x-protobuf")

            def _read_body(self) -> tuple[bytes, str, int | None]:
                """(bytes kept, `complete` | `truncated` | `oversized`, declared length), never more than
                `max_bytes` in memory: an over-limit body keeps its first `max_bytes`, the rest is not read."""
                try:
                    body = read_body(self.rfile, self.headers, receiver.max_bytes, keep_prefix=True)
                except BodyTooLarge as exc:
                    self._refusal = exc
                    return exc.kept, "oversized", exc.declared
                except BodyError as exc:  # cut short, or framing that is not HTTP's
                    self._refusal = exc
                    return exc.kept, "truncated", exc.declared
                return body, "complete", len(body)

            def _drain_and_refuse(self) -> None:
                try:
                    left = int(self.headers.get("content-length") or 0)
                except ValueError:
                    left = 0
                if left > receiver.max_bytes or left < 0 or self.headers.get("transfer-encoding"):
                    self.close_connection = True  # not read: the connection cannot carry another request
                else:
                    while left > 0:
                        piece = self.rfile.read(min(_READ, left))
                        if not piece:
                            break
                        left -= len(piece)
                self._reply(404, b"", "text/plain")

            def _reply(self, code: int, body: bytes, ctype: str) -> None:
                try:
                    self.send_response(code)
                    self.send_header("content-type", ctype)
                    self.send_header("content-length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:
                    self.close_connection = True

        return Handler
