"""A request body read within a limit, for the `http.server` servers ctxtap runs (replay, model, OTLP).

A `Content-Length` or a chunk size is only what the client claims: a reader that allocates it ends in
MemoryError on `Content-Length: 107374182400`. Here a declared length is checked against the limit
before anything is read, a chunk is read no further than the allowance left, and a malformed length
or chunk-size line is refused (400) rather than guessed at. An over-limit body is answered 413 and
the connection closed, its rest never read. Standard library only: the model server stands apart
from ctxtap's pipeline, and the proxy's writer child runs the OTLP receiver.
"""

from __future__ import annotations

import json
import re
import socket
import time
from http.client import HTTPMessage
from http.server import BaseHTTPRequestHandler
from typing import BinaryIO

MAX_BODY_BYTES = 64 << 20  # the replay and model servers' default
_PIECE = 64 << 10
_LINE = 4096  # a chunk-size line (with extensions) or a trailer longer than this is refused
_TRAILERS = 100
_HEX = re.compile(rb"[0-9A-Fa-f]+")
# After a refusal, the rest of a body the client is still sending is read and dropped for a moment,
# so it reads the answer instead of a connection reset (closing with unread data sends a RST).
LINGER_S = 2.0
LINGER_BYTES = 16 << 20


class BodyError(Exception):
    """Why a body was not read whole; `kept` is what was read of it, `declared` its Content-Length."""

    status = 400
    kind = "invalid_request_error"

    def __init__(self, message: str, kept: bytes = b"", declared: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.kept = kept
        self.declared = declared


class InvalidBody(BodyError):
    """A Content-Length, Transfer-Encoding or chunk framing that is not HTTP/1.1's."""


class BodyTooLarge(BodyError):
    """More than the limit, declared or sent in chunks."""

    status = 413
    kind = "request_too_large"


class BodyCutShort(BodyError):
    """The client stopped sending (or the socket failed) before the body's end: nobody to answer."""


def read_body(rfile: BinaryIO, headers: HTTPMessage, limit: int, keep_prefix: bool = False) -> bytes:
    """The request body, at most `limit` bytes, or a `BodyError`.

    With `keep_prefix`, an over-limit body's first `limit` bytes are read and carried by the
    `BodyTooLarge` (the OTLP receiver stores them, marked oversized); without, nothing of it is read.
    """
    codings = [c.strip() for c in ",".join(headers.get_all("Transfer-Encoding") or []).lower().split(",")
               if c.strip()]
    if codings:
        if codings[-1] != "chunked":
            raise InvalidBody(f"Transfer-Encoding {', '.join(codings)} does not end in chunked")
        return _read_chunked(rfile, limit, keep_prefix)
    declared = _content_length(headers)
    kept = bytearray()
    if declared > limit:
        if keep_prefix:
            _read_into(rfile, kept, limit, declared)
        raise BodyTooLarge(f"the request body ({declared} bytes) is over this server's limit of {limit} bytes",
                           bytes(kept), declared)
    _read_into(rfile, kept, declared, declared)
    return bytes(kept)


def _content_length(headers: HTTPMessage) -> int:
    values = {v.strip() for h in headers.get_all("Content-Length") or [] for v in h.split(",")}
    if not values:
        return 0
    if len(values) > 1:
        raise InvalidBody("conflicting Content-Length values")
    value = values.pop()
    if not (value.isascii() and value.isdigit()):
        raise InvalidBody(f"Content-Length {value[:40]!r} is not a length")
    digits = value.lstrip("0")
    return int(digits or "0") if len(digits) <= 19 else 10 ** 19  # int() refuses 4,300 digits and more


def _read_into(rfile: BinaryIO, kept: bytearray, n: int, declared: int | None) -> None:
    """Append exactly `n` more bytes of the body to `kept`, in pieces (never one `n`-byte buffer)."""
    while n > 0:
        try:
            piece = rfile.read(min(_PIECE, n))
        except OSError:
            piece = b""
        if not piece:
            raise BodyCutShort("the client stopped sending before the body's end", bytes(kept), declared)
        kept += piece
        n -= len(piece)


def _line(rfile: BinaryIO, kept: bytearray, what: str) -> bytes:
    try:
        line = rfile.readline(_LINE + 1)
    except OSError:
        line = b""
    if not line:
        raise BodyCutShort("the client stopped sending before the body's end", bytes(kept))
    if not line.endswith(b"\n"):
        raise InvalidBody(f"a {what} line over {_LINE} bytes")
    return line


def _read_chunked(rfile: BinaryIO, limit: int, keep_prefix: bool) -> bytes:
    kept = bytearray()
    while True:
        line = _line(rfile, kept, "chunk-size")
        size_text = line.split(b";", 1)[0].strip()
        if not _HEX.fullmatch(size_text):
            raise InvalidBody(f"chunk size {size_text[:40].decode('latin-1')!r} is not a hexadecimal length")
        digits = size_text.lstrip(b"0")
        size = int(digits or b"0", 16) if len(digits) <= 16 else 1 << 64
        if size == 0:
            for _ in range(_TRAILERS):
                if _line(rfile, kept, "trailer") in (b"\r\n", b"\n"):
                    return bytes(kept)
            raise InvalidBody(f"more than {_TRAILERS} trailer lines")
        if len(kept) + size > limit:
            if keep_prefix:
                _read_into(rfile, kept, limit - len(kept), None)
            raise BodyTooLarge(f"the chunked request body is over this server's limit of {limit} bytes",
                               bytes(kept))
        _read_into(rfile, kept, size, None)
        if _line(rfile, kept, "chunk end") not in (b"\r\n", b"\n"):
            raise InvalidBody("a chunk is longer than its size says")


def refuse(handler: BaseHTTPRequestHandler, error: BodyError, body: object | None = None,
           headers: list[tuple[str, str]] | None = None) -> None:
    """Answer a body error (JSON, `body` or a plain `{"error": ...}`) and close the connection.

    A body cut short has nobody left to answer: the connection is only closed.
    """
    handler.close_connection = True
    if isinstance(error, BodyCutShort):
        return
    if body is None:
        body = {"error": {"type": error.kind, "message": error.message, "code": error.status}}
    data = json.dumps(body).encode()
    try:
        handler.send_response(error.status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        for key, value in headers or []:
            handler.send_header(key, value)
        handler.send_header("Connection", "close")
        handler.end_headers()
        handler.wfile.write(data)
        handler.wfile.flush()
    except OSError:
        return
    linger(handler.connection)


def linger(sock: socket.socket, seconds: float = LINGER_S, max_bytes: int = LINGER_BYTES) -> None:
    """End our side, then read and drop what the client still sends, for a bounded time and amount."""
    try:
        sock.shutdown(socket.SHUT_WR)
        deadline = time.monotonic() + seconds
        while max_bytes > 0:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            sock.settimeout(left)
            piece = sock.recv(min(_PIECE, max_bytes))
            if not piece:
                return
            max_bytes -= len(piece)
    except OSError:
        return
