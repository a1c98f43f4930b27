"""AWS event streams (`application/vnd.amazon.eventstream`): Bedrock's streamed answers, redacted frame by frame.

Claude Code, and any agent on Amazon Bedrock, streams through binary frames:
a prelude (total and header lengths, a CRC-32), typed headers, a payload and
a CRC-32 of the whole message. `InvokeModelWithResponseStream` puts each
Anthropic event in the payload as base64 (`{"bytes":"eyJ0eXBlIjoi...","p":"..."}`),
so no detector could read a key the model echoed, whole or in pieces;
`ConverseStream` puts its JSON there directly. Each frame's event (the decoded
`bytes`, else the payload) goes through `StreamRedactor` like an SSE event, so
deltas are joined; a frame whose event, payload or string headers changed is
written again with its lengths and checksums recomputed, every other frame is
kept byte for byte. A frame whose checksums do not hold gives up the framing:
what was read is released, the rest is handed back (`abandon`).
"""

from __future__ import annotations

import base64
import binascii
import collections
import json
import struct
import zlib
from dataclasses import dataclass

from ctxtap.redaction.streams import FramedRedactor, PayloadRedactor, Released

_PRELUDE = struct.Struct(">III")
MAX_FRAME_BYTES = 16 * 1024 * 1024  # the format allows 16 MiB per message
_STRING = 7  # header value types: 7 is a UTF-8 string (uint16 length), 6 a byte array
_FIXED = {0: 0, 1: 0, 2: 1, 3: 2, 4: 4, 5: 8, 8: 8, 9: 16}


def _valid_prelude(data: bytes | bytearray, pos: int = 0) -> tuple[int, int] | None:
    """(total, header length) of the frame at `pos`, if its prelude's checksum holds."""
    total, headers, crc = _PRELUDE.unpack_from(data, pos)
    if zlib.crc32(data[pos : pos + 8]) != crc or not 16 + headers <= total <= MAX_FRAME_BYTES:
        return None
    return total, headers


def looks_like_eventstream(data: bytes) -> bool:
    """Starts with an event-stream prelude whose checksum holds (one chance in 2^32 by accident)."""
    return len(data) >= 12 and _valid_prelude(data) is not None


@dataclass
class _Frame:
    headers: bytes
    payload: bytes  # as received
    outer: dict | None  # the payload's JSON when it carries the event as base64 `bytes`
    inner: bytes | None  # that event, decoded
    original: bytes  # the whole frame as received


class EventStreamRedactor(FramedRedactor):
    """An event-stream body fed in arbitrary cuts; returns redacted frames once final."""

    def finish(self) -> bytes:
        if self.failed:
            return b""
        if self._buf:  # a frame cut short: not a frame, handed back as it is (`abandon`)
            self.failed = True
        return self._emit(self._events.finish())

    def _frames(self) -> list[tuple[object, bytes, int, int | None]]:
        buf = self._buf
        out: list[tuple[object, bytes, int, int | None]] = []
        pos = 0
        while len(buf) - pos >= 12:
            sizes = _valid_prelude(buf, pos)
            if sizes is None:
                self.failed = True
                break
            total, header_size = sizes
            if len(buf) - pos < total:
                break
            frame = bytes(buf[pos : pos + total])
            if zlib.crc32(frame[:-4]) != int.from_bytes(frame[-4:], "big"):
                self.failed = True
                break
            out.append(_event(frame, header_size))
            pos += total
        del buf[:pos]
        return out

    def _emit(self, released: list[Released]) -> bytes:
        if not released:
            return b""
        before = collections.Counter(self._redactor.counts)
        out = bytearray()
        for item in released:
            if item.redactions:
                self.redactions.update(item.redactions)
            frame = item.token
            assert isinstance(frame, _Frame)
            event = self._redactor.redact_payload(item.data)
            if frame.outer is not None:
                payload = frame.payload
                if event != frame.inner:
                    payload = json.dumps({**frame.outer, "bytes": base64.b64encode(event).decode()},
                                         separators=(",", ":")).encode()
                payload = self._redactor.redact_payload(payload)
            else:
                payload = event
            headers = _redact_headers(frame.headers, self._redactor)
            if payload == frame.payload and headers == frame.headers:
                out += frame.original
            else:
                out += _encode(headers, payload)
        self._count_since(before)
        return bytes(out)


def _event(frame: bytes, header_size: int) -> tuple[_Frame, bytes, int, None]:
    """(token, event bytes, 0, None) for the joiner: the decoded `bytes` of the payload, else the payload."""
    headers = frame[12 : 12 + header_size]
    payload = frame[12 + header_size : -4]
    if payload.startswith(b"{") and b'"bytes"' in payload:
        try:
            obj = json.loads(payload)
            inner = base64.b64decode(obj["bytes"], validate=True) if isinstance(obj, dict) else None
        except (ValueError, KeyError, TypeError, binascii.Error):
            inner = None
        if inner is not None:
            return _Frame(headers, payload, obj, inner, frame), inner, 0, None
    return _Frame(headers, payload, None, None, frame), payload, 0, None


def _header_fields(headers: bytes) -> list[tuple[bytes, int, bytes]] | None:
    """(name, value type, value bytes) of each header, or None where the format does not describe them."""
    out = []
    pos = 0
    try:
        while pos < len(headers):
            name_size = headers[pos]
            name = headers[pos + 1 : pos + 1 + name_size]
            kind = headers[pos + 1 + name_size]
            pos += 2 + name_size
            if kind in (6, _STRING):
                size = int.from_bytes(headers[pos : pos + 2], "big")
                pos += 2
            else:
                size = _FIXED[kind]
            if pos + size > len(headers):
                return None
            out.append((name, kind, headers[pos : pos + size]))
            pos += size
    except (IndexError, KeyError):
        return None
    return out


def _redact_headers(headers: bytes, redactor: PayloadRedactor) -> bytes:
    """String header values redacted (an exception's message, a hostile upstream's own headers)."""
    fields = _header_fields(headers)
    if fields is None:
        return headers  # headers the format does not describe: kept (the frame's checksum held)
    out = bytearray()
    for name, kind, value in fields:
        out += bytes([len(name)]) + name + bytes([kind])
        if kind == _STRING:
            value = redactor.redact_payload(value)
        out += len(value).to_bytes(2, "big") + value if kind in (6, _STRING) else value
    return bytes(out)


@dataclass(frozen=True)
class Message:
    """One event-stream message as a reader needs it: string headers by name, and the payload."""

    headers: dict[str, str]
    payload: bytes


def read_messages(data: bytes) -> tuple[list[Message], bool]:
    """The messages of an event-stream body in order, and whether all of it was read (False: it
    ended mid-message, or a checksum did not hold there; the messages before are returned)."""
    out: list[Message] = []
    pos = 0
    while len(data) - pos >= 12:
        sizes = _valid_prelude(data, pos)
        if sizes is None or len(data) - pos < sizes[0]:
            return out, False
        total, header_size = sizes
        message = data[pos : pos + total]
        if zlib.crc32(message[:-4]) != int.from_bytes(message[-4:], "big"):
            return out, False
        fields = _header_fields(message[12 : 12 + header_size]) or []
        headers = {n.decode("utf-8", "replace"): v.decode("utf-8", "replace") for n, k, v in fields if k == _STRING}
        out.append(Message(headers, message[12 + header_size : -4]))
        pos += total
    return out, pos == len(data)


def _encode(headers: bytes, payload: bytes) -> bytes:
    total = 16 + len(headers) + len(payload)
    prelude = struct.pack(">II", total, len(headers))
    prelude += zlib.crc32(prelude).to_bytes(4, "big")
    message = prelude + headers + payload
    return message + zlib.crc32(message).to_bytes(4, "big")


def redact_eventstream(data: bytes, redactor: PayloadRedactor) -> bytes:
    """A whole event-stream body: every content stream joined, then every frame."""
    stream = EventStreamRedactor(redactor)
    out = stream.feed(data) + stream.finish()
    if stream.failed:
        out += redactor.redact_payload(stream.abandon())
    return out
