"""The Responses WebSocket transport Codex uses, on top of an accepted HTTP request.

Codex opens `GET …/responses` with `Upgrade: websocket` (permessage-deflate
offered), sends `response.create` text frames and reads back the same JSON
objects the SSE transport carries. Refusing the upgrade with 426 makes Codex
fall back to HTTP SSE, which tests need as well.
"""

from __future__ import annotations

import json
import logging
import socket
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING

from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, CloseConnection, Ping, Request, TextMessage
from wsproto.extensions import PerMessageDeflate

from .records import Received, Sent
from .reply import new_id

if TYPE_CHECKING:
    from .server import _Handler

log = logging.getLogger("ctxtap.modelserver")


def _raw_head(handler: _Handler) -> bytes:
    lines = "".join(f"{k}: {v}\r\n" for k, v in handler.headers.items())
    return handler.raw_requestline + lines.encode("latin-1") + b"\r\n"


def text_messages(handler: BaseHTTPRequestHandler, ws: WSConnection) -> Iterator[str]:
    """The whole text messages a client sends on an upgraded connection, until it closes or the
    socket ends; pings are answered and the close is echoed here (the model and replay servers share it)."""
    pending: list[str] = []
    while True:
        try:
            data = handler.rfile.read1(65536)
        except OSError:
            return
        ws.receive_data(data or None)
        for event in ws.events():
            if isinstance(event, TextMessage):
                pending.append(event.data)
                if event.message_finished:
                    text, pending = "".join(pending), []
                    yield text
            elif isinstance(event, Ping):
                handler.connection.sendall(ws.send(event.response()))
            elif isinstance(event, CloseConnection):
                try:
                    handler.connection.sendall(ws.send(event.response()))
                except Exception:  # the peer may already be gone, or the close already sent
                    pass
                return
        if not data:
            return


def serve_websocket(handler: _Handler, rec: Received) -> None:
    """Complete the upgrade, then answer frames until the client closes."""
    owner = handler.server.owner
    ws = WSConnection(ConnectionType.SERVER)
    ws.receive_data(_raw_head(handler))
    request = next((e for e in ws.events() if isinstance(e, Request)), None)
    if request is None:
        handler.send_plain_error(400, "bad websocket handshake", rec)
        return
    rid = new_id("req_")
    accept = AcceptConnection(extensions=[PerMessageDeflate()], extra_headers=[(b"x-request-id", rid.encode())])
    handler.close_connection = True
    handler.connection.sendall(ws.send(accept))
    sent = Sent(index=rec.index, status=101, headers=[("x-request-id", rid)])
    owner.recorder.add_sent(sent)
    headers = list(handler.headers.items())
    for text in text_messages(handler, ws):
        owner.recorder.add_frame(rec, text)
        if not _answer(handler, ws, sent, headers, text):
            return

def _answer(handler: _Handler, ws: WSConnection, sent: Sent, headers: list[tuple[str, str]], text: str) -> bool:
    """Send the reply frames for one client frame; False when the connection was cut."""
    owner = handler.server.owner
    try:
        reply = owner.engine.respond_ws(text, headers, handler.client_address[0], handler.path)
    except Exception:
        log.exception("engine failed on a websocket frame")
        frame = {"type": "error", "status": 500, "error": {"type": "server_error", "message": "internal error"}}
        handler.connection.sendall(ws.send(TextMessage(data=json.dumps(frame))))
        return True
    delay = reply.delay_s if reply.delay_s is not None else owner.chunk_delay_s
    for index, event in enumerate(reply.events or []):
        if reply.cut_after is not None and index >= reply.cut_after:
            sent.complete = False
            _abort(handler)
            return False
        if index and delay:
            time.sleep(delay)
        payload = event.data if isinstance(event.data, str) else json.dumps(event.data, ensure_ascii=False)
        owner.recorder.add_sent_frame(sent, payload)
        handler.connection.sendall(ws.send(TextMessage(data=payload)))
    return True


def _abort(handler: _Handler) -> None:
    handler.close_connection = True
    try:
        handler.connection.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
