"""AWS event streams (`application/vnd.amazon.eventstream`): Bedrock's streamed answers, redacted frame by frame
(the framing itself is `ctxtap.wire.eventstream`).

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
import zlib
from dataclasses import dataclass

from ctxtap.redaction.streams import FramedRedactor, PayloadRedactor, Released
from ctxtap.wire.eventstream import (
    STRING,
    encode,
    header_fields,
    valid_prelude,
)


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
            sizes = valid_prelude(buf, pos)
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
                out += encode(headers, payload)
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


def _redact_headers(headers: bytes, redactor: PayloadRedactor) -> bytes:
    """String header values redacted (an exception's message, a hostile upstream's own headers)."""
    fields = header_fields(headers)
    if fields is None:
        return headers  # headers the format does not describe: kept (the frame's checksum held)
    out = bytearray()
    for name, kind, value in fields:
        out += bytes([len(name)]) + name + bytes([kind])
        if kind == STRING:
            value = redactor.redact_payload(value)
        out += len(value).to_bytes(2, "big") + value if kind in (6, STRING) else value
    return bytes(out)


def redact_eventstream(data: bytes, redactor: PayloadRedactor) -> bytes:
    """A whole event-stream body: every content stream joined, then every frame."""
    stream = EventStreamRedactor(redactor)
    out = stream.feed(data) + stream.finish()
    if stream.failed:
        out += redactor.redact_payload(stream.abandon())
    return out
