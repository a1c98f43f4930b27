"""The cassette server: answers model requests with the recorded responses, paced as recorded.

The recording proxy routes every model host of the source capture here (so the CLI talks
through the same proxy and CA as when it was recorded, and the replayed run is recorded too).
Binds 127.0.0.1 only and serves nothing without its per-run token, which travels as the first
path segment of the route (`/_replay/<token>/<original host>/...`).

Matching (`Matcher`): a request is matched to an unused recorded request of the same API and
endpoint — a WebSocket continuation by the response it continues (`previous_response_id`, so the
chain stays the recorded one), anything else by the longest shared prefix of blocks after volatile
fields are masked (the thread), earliest first (the position). A request that shares no block
with any unused recorded one matches nothing and gets a provider-style error.
"""

from __future__ import annotations

import json
import logging
import secrets
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, Request, TextMessage
from wsproto.extensions import PerMessageDeflate

from ctxtap.modelserver.websocket import text_messages
from ctxtap.replay.cassette import Block, Cassette, Recorded, parse_blocks
from ctxtap.wire.families import error_body
from ctxtap.wire.httpbody import MAX_BODY_BYTES, BodyError, read_body, refuse

log = logging.getLogger("ctxtap.replay")
LOOPBACK = "127.0.0.1"
PREFIX = "/_replay/"
WS_REQUEST_TYPES = {"response.create", "response.append"}


@dataclass
class Served:
    """One request the replayed run made, and what it was answered with."""

    index: int
    host: str
    path: str
    websocket: bool
    request_body: bytes
    api: str
    blocks: list[Block]
    recorded: Recorded | None
    status: int
    note: str = ""  # why it was answered with an error

    def describe(self) -> str:
        kind = "WebSocket request" if self.websocket else "request"
        return f"{kind} {self.index + 1} ({self.host}{self.path.split('?', 1)[0]})"


def _family(api: str) -> str:
    return api.removesuffix("-websocket")


def _prefix_len(a: list[Block], b: list[Block]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x.signature != y.signature:
            break
        n += 1
    return n


class Matcher:
    """Pairs each incoming request with one recorded request, each recorded request used once."""

    def __init__(self, calls: list[Recorded]) -> None:
        self.calls = calls
        self.used: set[str] = set()
        self._lock = threading.Lock()

    def match(self, api: str, endpoint: str, blocks: list[Block], previous: str | None,
              websocket: bool = False) -> Recorded | None:
        with self._lock:
            pool = [c for c in self.calls if c.key not in self.used and _family(c.api) == _family(api)
                    and c.endpoint == endpoint and c.websocket == websocket]
            best: Recorded | None = None
            if previous:
                best = next((c for c in pool if c.previous_response_id == previous), None)
            if best is None:
                # the thread: the longest shared prefix, then the most shared blocks; the position: earliest
                mine = {b.signature for b in blocks}
                scored = [(_prefix_len(c.blocks, blocks), len(mine & {b.signature for b in c.blocks}), -c.order, c)
                          for c in pool]
                scored = [s for s in scored if s[0] > 0 or s[1] > 0 or (not blocks and not s[3].blocks)]
                if scored:
                    best = max(scored, key=lambda s: s[:3])[3]
            if best is not None:
                self.used.add(best.key)
            return best

    def unused(self) -> list[Recorded]:
        return [c for c in self.calls if c.key not in self.used]


def provider_error(api: str, status: int, message: str) -> dict[str, Any]:
    """An error body shaped like the provider's own, so the CLI shows it as an API error."""
    return error_body(api, status, message)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "ctxtap-replay/1.0"
    sys_version = ""
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's signature
        log.debug("%s %s", self.address_string(), format % args)

    def do_GET(self) -> None:
        self._handle()

    do_POST = do_PUT = do_DELETE = do_PATCH = do_GET

    # -- routing and the token ---------------------------------------------------------------

    def _target(self) -> tuple[str, str] | None:
        """(original host, original path) when the request carries the token, else None."""
        owner = self.server.owner
        if not self.path.startswith(PREFIX):
            return None
        token, _, rest = self.path[len(PREFIX):].partition("/")
        if not secrets.compare_digest(token, owner.token):
            return None
        host, _, path = rest.partition("/")
        return host, "/" + path

    def _handle(self) -> None:
        target = self._target()
        if target is None:
            self._send_json(403, {"error": {"message": "ctxtap replay server: missing or wrong token"}})
            return
        host, path = target
        if (self.headers.get("Upgrade") or "").lower() == "websocket":
            self._websocket(host, path)
            return
        try:
            raw = read_body(self.rfile, self.headers, self.server.owner.max_body_bytes)
        except BodyError as exc:
            refuse(self, exc)
            return
        self._answer_http(host, path, raw)

    # -- HTTP -----------------------------------------------------------------------------------

    def _answer_http(self, host: str, path: str, raw: bytes) -> None:
        owner = self.server.owner
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        api, endpoint, blocks, previous = parse_blocks(host, path, body)
        if api == "other":  # not a model call (settings, telemetry): answered as recorded, or as offline
            self._answer_side(host, path)
            return
        call = owner.matcher.match(api, endpoint, blocks, previous)
        served = owner.log(host, path, False, raw, api, blocks, call)
        if call is None or call.problem:
            served.status = 400
            served.note = owner.refusal(served, call)
            self._send_json(400, provider_error(api, 400, served.note))
            return
        served.status = call.status or 200
        try:
            self._play(call)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _answer_side(self, host: str, path: str) -> None:
        owner = self.server.owner
        answer = owner.cassette.side_answer(host, self.command, path)
        owner.side_requests += 1
        if answer is None:  # never recorded: what the offline proxy answers (GET 404, else 200 {})
            status, body = (404, b'{"error":"not found (ctxtap replay)"}') if self.command == "GET" else (200, b"{}")
            ctype = "application/json"
        else:
            status, ctype = answer.status, answer.content_type or "application/json"
            body = answer.body if answer.body or status >= 400 else b"{}"
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _send_json(self, status: int, obj: Any) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _play(self, call: Recorded) -> None:
        owner = self.server.owner
        owner.sleep(call.headers_delay_s)
        body = call.body or b""
        self.send_response(call.status or 200, call.reason or None)
        for key, value in call.headers:
            self.send_header(key, value)
        if not call.streamed:
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        owner.sleep(call.first_byte_delay_s)
        start = time.monotonic()
        for at, piece in pieces(call):
            wait = at / owner.speed - (time.monotonic() - start) if owner.speed > 0 else 0
            if wait > 0:
                time.sleep(wait)
            if piece:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
        self.wfile.write(b"0\r\n\r\n")

    # -- WebSocket --------------------------------------------------------------------------

    def _websocket(self, host: str, path: str) -> None:
        owner = self.server.owner
        if not any(c.websocket and c.host == host for c in owner.cassette.calls):
            # The recorded run did not use a WebSocket here: refuse the upgrade as a provider
            # would, so the CLI falls back to HTTP as it did when recorded.
            self._send_json(426, {"error": {"message": "websocket not recorded for this host"}})
            return
        ws = WSConnection(ConnectionType.SERVER)
        lines = "".join(f"{k}: {v}\r\n" for k, v in self.headers.items())
        ws.receive_data(self.raw_requestline + lines.encode("latin-1") + b"\r\n")
        if next((e for e in ws.events() if isinstance(e, Request)), None) is None:
            self._send_json(400, {"error": {"message": "bad websocket handshake"}})
            return
        self.close_connection = True
        self.connection.sendall(ws.send(AcceptConnection(extensions=[PerMessageDeflate()])))
        for text in text_messages(self, ws):
            self._answer_frame(ws, host, path, text)

    def _answer_frame(self, ws: WSConnection, host: str, path: str, text: str) -> None:
        owner = self.server.owner
        try:
            obj = json.loads(text)
        except ValueError:
            obj = None
        if not isinstance(obj, dict) or obj.get("type") not in WS_REQUEST_TYPES:
            return  # not a model request (the recorded server did not answer those either)
        api, endpoint, blocks, previous = parse_blocks(host, path, obj, websocket=True)
        call = owner.matcher.match(api, endpoint, blocks, previous, websocket=True)
        served = owner.log(host, path, True, text.encode(), api, blocks, call)
        if call is None or call.problem:
            served.status = 400
            served.note = owner.refusal(served, call)
            error = {"type": "error", "status": 400, **provider_error(api, 400, served.note)}
            self.connection.sendall(ws.send(TextMessage(data=json.dumps(error))))
            return
        served.status = 200
        start = time.monotonic()
        for frame in call.frames:
            wait = frame.delay_s / owner.speed - (time.monotonic() - start) if owner.speed > 0 else 0
            if wait > 0:
                time.sleep(wait)
            self.connection.sendall(ws.send(TextMessage(data=frame.text if frame.text is not None
                                                        else frame.data.decode("utf-8", "replace"))))


def pieces(call: Recorded) -> list[tuple[float, bytes]]:
    """The body cut as it arrived when recorded: (seconds after the first byte, bytes).

    With recorded offsets, the cuts are the recorded network reads (scaled when redaction
    changed the body's length). Without them (captures from before offsets were stored), the
    stream's events are spread evenly between the recorded first and last byte.
    """
    body = call.body or b""
    if call.offsets:
        total = call.offsets[-1][0] or 1
        scale = len(body) / total
        out, done = [], 0
        for end, at in call.offsets:
            cut = len(body) if end >= total else min(len(body), round(end * scale))
            out.append((at, body[done:cut]))
            done = max(done, cut)
        if done < len(body):
            out.append((call.offsets[-1][1], body[done:]))
        return out
    events = [e + b"\n\n" for e in body.split(b"\n\n") if e.strip()] or [body]
    step = call.body_duration_s / max(1, len(events) - 1)
    return [(i * step, e) for i, e in enumerate(events)]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, owner: ReplayServer) -> None:
        self.owner = owner
        super().__init__((LOOPBACK, 0), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError, OSError)):
            return
        log.exception("error while replaying to %s", client_address)


@dataclass
class ReplayServer:
    """The cassette on 127.0.0.1, in a background thread."""

    cassette: Cassette
    speed: float = 1.0  # 2: twice as fast as recorded; 0: no pacing at all
    max_body_bytes: int = MAX_BODY_BYTES  # a larger request body is answered 413, never read
    token: str = field(default_factory=lambda: secrets.token_urlsafe(18))
    served: list[Served] = field(default_factory=list)
    side_requests: int = 0  # requests to a model host that are no model call (answered, not compared)

    def __post_init__(self) -> None:
        self.matcher = Matcher(self.cassette.calls)
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> ReplayServer:
        self._server = _Server(self)
        self._thread = threading.Thread(target=self._server.serve_forever, name="ctxtap-replay", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def __enter__(self) -> ReplayServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None
        return self._server.server_address[1]

    def route(self, host: str) -> str:
        """The proxy's `--route` for a model host: here, with the token and the host in the path."""
        return f"{host}=http://{LOOPBACK}:{self.port}{PREFIX}{self.token}/{host}"

    def sleep(self, seconds: float) -> None:
        if self.speed > 0 and seconds > 0:
            time.sleep(seconds / self.speed)

    def log(self, host: str, path: str, websocket: bool, raw: bytes, api: str, blocks: list[Block],
            call: Recorded | None) -> Served:
        with self._lock:
            served = Served(len(self.served), host, path, websocket, raw, api, blocks, call, 0)
            self.served.append(served)
            return served

    def refusal(self, served: Served, call: Recorded | None) -> str:
        if call is not None:
            return f"ctxtap replay: {served.describe()} matches {call.describe()}, which cannot be played back: " \
                   f"{call.problem}"
        return (f"ctxtap replay: {served.describe()} matches no recorded request (no unused recorded "
                f"{_family(served.api)} request shares a block with it); the recorded run never sent it")
