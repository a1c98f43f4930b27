"""Minimal stdlib clients (HTTP+SSE, WebSocket) that can go through an HTTP proxy.

The demo agents, tests and benchmarks need to talk to the model server either
directly or through ctxtap's intercepting proxy (CONNECT tunnel + TLS with the
proxy's CA), exactly like a real CLI configured with HTTPS_PROXY would.
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from wsproto import ConnectionType, WSConnection
from wsproto.events import (
    AcceptConnection,
    CloseConnection,
    Ping,
    RejectConnection,
    RejectData,
    Request,
    TextMessage,
)
from wsproto.extensions import PerMessageDeflate

from .codec import decode_body


@dataclass(frozen=True)
class Origin:
    scheme: str  # http | https | ws | wss
    host: str
    port: int
    base_path: str  # path prefix of the base URL, without trailing slash

    @property
    def secure(self) -> bool:
        return self.scheme in ("https", "wss")

    @property
    def host_header(self) -> str:
        default = 443 if self.secure else 80
        return self.host if self.port == default else f"{self.host}:{self.port}"

    @classmethod
    def parse(cls, url: str) -> Origin:
        parts = urlsplit(url if "://" in url else "http://" + url)
        scheme = parts.scheme or "http"
        port = parts.port or (443 if scheme in ("https", "wss") else 80)
        return cls(scheme, parts.hostname or "127.0.0.1", port, parts.path.rstrip("/"))


def _tls_context(ca_file: str | None) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=ca_file) if ca_file else ssl.create_default_context()


@dataclass
class SSEEvent:
    event: str | None
    data: str

    def json(self) -> Any:
        return json.loads(self.data)


def iter_sse(resp: http.client.HTTPResponse) -> Iterator[SSEEvent]:
    """Parse an SSE body incrementally (comments skipped, multi-line data joined)."""
    event: str | None = None
    data: list[str] = []
    while True:
        raw = resp.readline()
        if not raw:
            break
        line = raw.decode("utf-8").rstrip("\r\n")
        if not line:
            if data:
                yield SSEEvent(event, "\n".join(data))
            event, data = None, []
        elif line.startswith(":"):
            continue
        elif line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].lstrip(" ") if line[5:6] == " " else line[5:])
    if data:
        yield SSEEvent(event, "\n".join(data))


@dataclass
class Response:
    status: int
    headers: list[tuple[str, str]]
    raw: http.client.HTTPResponse = field(repr=False)

    def header(self, name: str) -> str | None:
        name = name.lower()
        return next((v for k, v in self.headers if k.lower() == name), None)

    def body(self) -> bytes:
        return decode_body(self.raw.read(), self.header("content-encoding"))

    def json(self) -> Any:
        return json.loads(self.body() or b"null")

    def events(self) -> Iterator[SSEEvent]:
        return iter_sse(self.raw)


class HttpClient:
    """One keep-alive connection to a base URL, optionally through an HTTP proxy."""

    def __init__(self, base_url: str, *, proxy: str | None = None, ca_file: str | None = None,
                 timeout: float = 30.0) -> None:
        self.origin = Origin.parse(base_url)
        self.proxy = Origin.parse(proxy) if proxy else None
        self.ca_file = ca_file
        self.timeout = timeout
        self._conn: http.client.HTTPConnection | None = None
        self._last: http.client.HTTPResponse | None = None

    def _connect(self) -> http.client.HTTPConnection:
        o, p = self.origin, self.proxy
        if o.secure:
            ctx = _tls_context(self.ca_file)
            if p:
                conn: http.client.HTTPConnection = http.client.HTTPSConnection(p.host, p.port, context=ctx, timeout=self.timeout)
                conn.set_tunnel(o.host, o.port)
            else:
                conn = http.client.HTTPSConnection(o.host, o.port, context=ctx, timeout=self.timeout)
        else:
            conn = http.client.HTTPConnection(p.host if p else o.host, p.port if p else o.port, timeout=self.timeout)
        return conn

    def request(self, method: str, path: str, body: bytes | None = None,
                headers: list[tuple[str, str]] | None = None) -> Response:
        """Send a request; `path` is appended to the base URL's path. Caller reads the body."""
        target = self.origin.base_path + path
        if self.proxy and not self.origin.secure:  # plain HTTP via proxy: absolute-form target
            target = f"http://{self.origin.host_header}{target}"
        hdrs = list(headers or [])
        if self._last is not None and not self._last.isclosed():
            try:  # the caller stopped reading early (e.g. at `data: [DONE]`): drain to reuse the connection
                self._last.read()
            except (OSError, http.client.HTTPException):
                self.close()
        if self._conn is None:
            self._conn = self._connect()
        conn = self._conn
        try:
            conn.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
            names = {k.lower() for k, _ in hdrs}
            if "host" not in names:
                conn.putheader("Host", self.origin.host_header)
            for key, value in hdrs:
                conn.putheader(key, value)
            if body is not None and "content-length" not in names:
                conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body)
            resp = conn.getresponse()
        except Exception:
            self.close()
            raise
        self._last = resp
        return Response(resp.status, resp.getheaders(), resp)

    def close(self) -> None:
        self._last = None
        if self._conn is not None:
            self._conn.close()
            self._conn = None


class WsRejected(ConnectionError):
    """The server answered the WebSocket handshake with an HTTP error (e.g. 426)."""

    def __init__(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
        super().__init__(f"websocket upgrade refused: HTTP {status}")
        self.status, self.headers, self.body = status, headers, body


class WsClient:
    """A blocking text-frame WebSocket client (permessage-deflate offered)."""

    def __init__(self, url: str, *, headers: list[tuple[str, str]] | None = None, proxy: str | None = None,
                 ca_file: str | None = None, timeout: float = 30.0, deflate: bool = True) -> None:
        self.origin = Origin.parse(url)
        self.path = self.origin.base_path or "/"
        self.proxy = Origin.parse(proxy) if proxy else None
        self.headers = headers or []
        self.ca_file, self.timeout, self.deflate = ca_file, timeout, deflate
        self._sock: socket.socket | None = None
        self._ws = WSConnection(ConnectionType.CLIENT)
        self._pending: list[str] = []
        self._messages: list[str] = []

    def _open_socket(self) -> socket.socket:
        o, p = self.origin, self.proxy
        sock = socket.create_connection((p.host, p.port) if p else (o.host, o.port), timeout=self.timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if p:
            try:
                self._connect_tunnel(sock, f"{o.host}:{o.port}")
            except BaseException:
                sock.close()
                raise
        if o.secure:
            sock = _tls_context(self.ca_file).wrap_socket(sock, server_hostname=o.host)
        return sock

    @staticmethod
    def _connect_tunnel(sock: socket.socket, target: str) -> None:
        sock.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = sock.recv(4096)
            if not chunk:
                raise ConnectionError("proxy closed the CONNECT tunnel")
            head += chunk
        if head.split(b" ", 2)[1:2] != [b"200"]:
            raise ConnectionError(f"proxy refused CONNECT: {head.splitlines()[0]!r}")

    def connect(self) -> None:
        """Open the socket and complete the handshake; raises WsRejected on an HTTP answer."""
        self._sock = self._open_socket()
        try:
            self._handshake()
        except BaseException:
            self._sock.close()
            self._sock = None
            raise

    def _handshake(self) -> None:
        assert self._sock is not None
        extensions = [PerMessageDeflate()] if self.deflate else []
        request = Request(host=self.origin.host_header, target=self.path, extensions=extensions,
                          extra_headers=[(k.encode(), v.encode()) for k, v in self.headers])
        self._sock.sendall(self._ws.send(request))
        status, headers, body = 0, [], b""
        while True:
            for event in self._events():
                if isinstance(event, AcceptConnection):
                    return
                if isinstance(event, RejectConnection):
                    status = event.status_code
                    headers = [(k.decode(), v.decode()) for k, v in event.headers]
                    if not event.has_body:
                        raise WsRejected(status, headers, body)
                elif isinstance(event, RejectData):
                    body += event.data
                    if event.body_finished:
                        raise WsRejected(status, headers, body)

    def _events(self) -> Iterator[Any]:
        if self._sock is None:
            raise ConnectionError("websocket is closed")
        data = self._sock.recv(65536)
        self._ws.receive_data(data or None)
        yield from self._ws.events()
        if not data:
            self._sock.close()
            self._sock = None
            raise ConnectionError("websocket connection closed by peer")

    def send_text(self, text: str) -> None:
        assert self._sock is not None
        self._sock.sendall(self._ws.send(TextMessage(data=text)))

    def send_json(self, obj: Any) -> None:
        self.send_text(json.dumps(obj, ensure_ascii=False))

    def recv_text(self) -> str:
        """The next complete text message (answers pings; raises ConnectionError on close)."""
        while not self._messages:
            for event in self._events():
                if isinstance(event, TextMessage):
                    self._pending.append(event.data)
                    if event.message_finished:
                        self._messages.append("".join(self._pending))
                        self._pending = []
                elif isinstance(event, Ping) and self._sock is not None:
                    self._sock.sendall(self._ws.send(event.response()))
                elif isinstance(event, CloseConnection):
                    self.close()
                    raise ConnectionError(f"websocket closed: {event.code}")
        return self._messages.pop(0)

    def recv_json(self) -> Any:
        return json.loads(self.recv_text())

    def close(self) -> None:
        if self._sock is None:
            return
        try:
            self._sock.sendall(self._ws.send(CloseConnection(code=1000)))
        except Exception:  # already closed or half-closed: nothing left to tell the peer
            pass
        self._sock.close()
        self._sock = None
