"""The loopback HTTP/1.1 + WebSocket shell around the engine.

Threaded so many clients (and a proxy's connection pool) can talk at once;
streams use chunked transfer-encoding with one chunk per event so pacing and
mid-stream cuts behave like a real provider; JSON uses Content-Length.
Binds 127.0.0.1 only: it is a test fixture, never a network service.
"""

from __future__ import annotations

import json
import logging
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ctxtap.wire.httpbody import MAX_BODY_BYTES, BodyError, read_body, refuse

from .codec import CodecError, decode_body, eventstream_frame, sse_frame
from .engine import Engine
from .faults import INJECT_HEADER, Fault, parse_inject
from .records import Received, Sent, TrafficLog
from .reply import Reply, ServedExchange
from .routes import guess_family, is_websocket_path
from .script import Script
from .websocket import serve_websocket

log = logging.getLogger("ctxtap.modelserver")
LOOPBACK = "127.0.0.1"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "ctxtap-modelserver/1.0"
    sys_version = ""
    server: _HTTPServer

    def setup(self) -> None:
        super().setup()
        # One small write per stream event: without NODELAY, Nagle + delayed ACK adds ~40 ms per response.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def version_string(self) -> str:
        return self.server_version

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - signature of the base class
        if self.server.owner.verbose:
            log.info("%s %s", self.address_string(), format % args)

    def do_GET(self) -> None:
        if (self.headers.get("Upgrade") or "").lower() == "websocket":
            self._websocket()
        else:
            self._http()

    def do_POST(self) -> None:
        self._http()

    do_PUT = do_DELETE = do_PATCH = do_POST

    # -- HTTP -------------------------------------------------------------------------------

    def _record(self, raw: bytes, body: bytes) -> Received:
        return self.server.owner.recorder.add_received(
            method=self.command, path=self.path, headers=list(self.headers.items()), raw_body=raw, body=body,
            client=self.client_address[:2], time=time.time(),
        )

    def _http(self) -> None:
        owner = self.server.owner
        try:
            raw = read_body(self.rfile, self.headers, owner.max_body_bytes)
        except BodyError as exc:
            error = owner.engine.error_reply(guess_family(self.path), exc.status, exc.message)
            refuse(self, exc, error.body, error.headers)
            return
        problem = None
        try:
            body = decode_body(raw, self.headers.get("Content-Encoding"))
        except CodecError as exc:
            body, problem = raw, str(exc)
        rec = self._record(raw, body)
        try:
            reply = owner.engine.respond(self.command, self.path, list(self.headers.items()), body,
                                         self.client_address[0], body_error=problem)
        except Exception as exc:  # a shape the engine did not expect: answer like a provider would
            log.exception("engine failed on %s %s", self.command, self.path)
            reply = owner.engine.error_reply(guess_family(self.path), 400, f"Could not process request: {exc}")
        self._send(rec, reply)

    def _send(self, rec: Received, reply: Reply) -> None:
        try:
            if reply.is_stream:
                self._send_stream(rec, reply)
            else:
                self._send_json(rec, reply)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _send_json(self, rec: Received, reply: Reply) -> None:
        data = json.dumps(reply.body, ensure_ascii=False).encode()
        self.send_response(reply.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in reply.headers:
            self.send_header(key, value)
        self.end_headers()
        sent = Sent(rec.index, reply.status, list(reply.headers), data)
        if reply.cut_after is not None:  # a cut JSON body: half of it, then the connection drops
            sent.body, sent.complete = data[: len(data) // 2], False
        self.server.owner.recorder.add_sent(sent)  # before the bytes go out, so clients never race the record
        self.wfile.write(sent.body)
        if not sent.complete:
            self._abort()

    def _send_stream(self, rec: Received, reply: Reply) -> None:
        owner = self.server.owner
        self.send_response(reply.status)
        self.send_header("Content-Type", "application/vnd.amazon.eventstream" if reply.eventstream
                         else "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        for key, value in reply.headers:
            self.send_header(key, value)
        self.end_headers()
        delay = reply.delay_s if reply.delay_s is not None else owner.chunk_delay_s
        written: list[bytes] = []
        sent = Sent(rec.index, reply.status, list(reply.headers))
        cut = False
        try:
            for index, event in enumerate(reply.events or []):
                if reply.cut_after is not None and index >= reply.cut_after:
                    cut = True
                    break
                if index and delay:
                    time.sleep(delay)
                frame = (eventstream_frame(event.data, event.name, reply.eventstream) if reply.eventstream
                         else sse_frame(event.data, event.name))
                self.wfile.write(b"%x\r\n%s\r\n" % (len(frame), frame))
                written.append(frame)
        except OSError:
            cut = True
            raise
        finally:  # recorded before the end (or cut) is sent: a client that saw it also sees the record
            sent.body, sent.complete = b"".join(written), not cut
            owner.recorder.add_sent(sent)
        if cut:
            self._abort()
            return
        if reply.linger_s:
            self.wfile.flush()
            time.sleep(reply.linger_s)
        self.wfile.write(b"0\r\n\r\n")

    def _abort(self) -> None:
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def send_plain_error(self, status: int, message: str, rec: Received) -> None:
        """An OpenAI-shaped error outside the engine (refused WebSocket upgrades)."""
        body = {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}}
        self._send(rec, Reply(status=status, body=body))

    # -- WebSocket --------------------------------------------------------------------------

    def _websocket(self) -> None:
        owner = self.server.owner
        rec = self._record(b"", b"")
        fault = parse_inject(self.headers.get(INJECT_HEADER))
        if fault is not None and fault.status:
            self.send_plain_error(fault.status, "websocket upgrade refused (injected)", rec)
        elif not is_websocket_path(self.path):
            self.send_plain_error(404, f"no websocket endpoint at {self.path}", rec)
        elif not owner.websocket:
            self.send_plain_error(426, "websocket not supported", rec)
        else:
            serve_websocket(self, rec)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 256

    def __init__(self, owner: ModelServer, port: int) -> None:
        self.owner = owner
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()
        self.closing = False
        super().__init__((LOOPBACK, port), _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._open_lock:
            self._open.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._open_lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients hanging up mid-request are normal here; anything else is a bug worth a traceback."""
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError)) or (isinstance(exc, OSError) and self.closing):
            return
        log.exception("error while serving %s", client_address)

    def close_open_connections(self) -> None:
        with self._open_lock:
            conns = list(self._open)
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class ModelServer:
    """A scripted fake model provider on 127.0.0.1, serving in a background thread.

    >>> with ModelServer(script="basic", chunk_delay_s=0.0) as srv:
    ...     srv.url  # e.g. "http://127.0.0.1:40123"
    """

    def __init__(
        self,
        script: Script | str | None = None,
        *,
        port: int = 0,
        host: str = LOOPBACK,
        chunk_delay_s: float = 0.0,
        websocket: bool = True,
        cache_ttl_s: float = 300.0,
        min_cache_tokens: int = 1024,
        bytes_per_token: float = 4.0,
        cache_block_tokens: int = 1,
        clock: Callable[[], float] = time.monotonic,
        chat_usage_style: str = "auto",
        delta_chars: int = 32,
        retry_after_s: float = 1.0,
        faults: Iterable[Fault] = (),
        verbose: bool = False,
        max_body_bytes: int = MAX_BODY_BYTES,
    ) -> None:
        if host not in (LOOPBACK, "localhost"):
            raise ValueError("the model server binds 127.0.0.1 only")
        self.engine = Engine(script, cache_ttl_s=cache_ttl_s, min_cache_tokens=min_cache_tokens,
                             bytes_per_token=bytes_per_token, cache_block_tokens=cache_block_tokens, clock=clock,
                             chat_usage_style=chat_usage_style, delta_chars=delta_chars,
                             retry_after_s=retry_after_s, faults=faults)
        self.recorder = TrafficLog()
        self.chunk_delay_s = chunk_delay_s
        self.websocket = websocket
        self.verbose = verbose
        self.max_body_bytes = max_body_bytes  # a larger request body is answered 413, never read
        self._requested_port = port
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> ModelServer:
        if self._httpd is None:
            self._httpd = _HTTPServer(self, self._requested_port)
            self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                            name=f"modelserver:{self.port}", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        httpd.closing = True
        httpd.shutdown()
        httpd.server_close()
        httpd.close_open_connections()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> ModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def host(self) -> str:
        return LOOPBACK

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("server not started")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://{LOOPBACK}:{self.port}"

    # -- test accessors ---------------------------------------------------------------------

    @property
    def received(self) -> list[Received]:
        """Every request received (HTTP and WebSocket handshakes), oldest first."""
        return self.recorder.received()

    @property
    def sent(self) -> list[Sent]:
        return self.recorder.sent()

    @property
    def exchanges(self) -> list[ServedExchange]:
        """Every model call with its decision and usage (WebSocket frames included)."""
        return self.engine.exchanges

    def frames(self, index: int) -> list[str]:
        """Client text frames of the WebSocket whose handshake is received[index]."""
        return self.recorder.frames(index)

    def wait_for(self, predicate: Callable[[], bool], timeout: float = 5.0) -> bool:
        return self.recorder.wait(predicate, timeout)

    def inject(self, fault: Fault | None = None, **fields: Any) -> Fault:
        """Queue a fault, e.g. `srv.inject(status=429, on_request=2)`."""
        fault = fault or Fault(**fields)
        self.engine.inject(fault)
        return fault

    def clear_faults(self) -> None:
        self.engine.clear_faults()

    @property
    def clock_offset(self) -> float:
        """Seconds added to the cache clock; `srv.clock_offset += 360` jumps past a 5-minute TTL."""
        return self.engine.clock_offset

    @clock_offset.setter
    def clock_offset(self, value: float) -> None:
        self.engine.clock_offset = value

    def reset(self) -> None:
        """Forget everything received, sent and cached."""
        self.engine.reset()
        self.recorder.clear()
