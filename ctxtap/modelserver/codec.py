"""Byte-level helpers: request-body decompression, SSE framing and Bedrock's event-stream frames.

Codex zstd-compresses request bodies and SDKs differ in SSE framing details, so
the server must decode every Content-Encoding a client may use and frame each
provider's stream the way that provider does.
"""

from __future__ import annotations

import base64
import gzip
import json
import zlib
from typing import Any

import brotli
import zstandard

from ctxtap.wire.eventstream import encode


class CodecError(ValueError):
    """The body does not match its Content-Encoding."""


def _zstd(data: bytes) -> bytes:
    # Streaming frames (no content size in the header) need the stream reader.
    with zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=True) as reader:
        return reader.read()


def _deflate(data: bytes) -> bytes:
    try:
        return zlib.decompress(data)
    except zlib.error:
        return zlib.decompress(data, -zlib.MAX_WBITS)  # raw deflate, as some clients send


_DECODERS = {
    "gzip": gzip.decompress,
    "x-gzip": gzip.decompress,
    "deflate": _deflate,
    "br": brotli.decompress,
    "zstd": _zstd,
    "identity": lambda data: data,
}


def decode_body(data: bytes, content_encoding: str | None) -> bytes:
    """Undo Content-Encoding (possibly a comma list, applied in order) on a request body."""
    if not content_encoding or not data:
        return data
    for coding in reversed([c.strip().lower() for c in content_encoding.split(",") if c.strip()]):
        decoder = _DECODERS.get(coding)
        if decoder is None:
            raise CodecError(f"unsupported content-encoding {coding!r}")
        try:
            data = decoder(data)
        except Exception as exc:  # every codec has its own error type
            raise CodecError(f"body is not valid {coding}: {exc}") from exc
    return data


def dumps(obj: Any) -> str:
    """Compact-ish JSON like the Python fake servers and SDKs emit (", " / ": ")."""
    return json.dumps(obj, ensure_ascii=False)


def sse_frame(data: dict[str, Any] | str, event: str | None = None) -> bytes:
    """One SSE event; `event:` line only for providers that send it (Anthropic, Responses)."""
    payload = data if isinstance(data, str) else dumps(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


def eventstream_frame(data: dict[str, Any] | str, name: str | None = None, kind: str = "invoke") -> bytes:
    """One AWS event-stream message: for `InvokeModelWithResponseStream` a `chunk` holding the event's JSON in
    base64 under `bytes`; for `ConverseStream` the event's own JSON, named by `:event-type`."""
    payload = data if isinstance(data, str) else dumps(data)
    if kind == "converse":
        body = json.dumps({**json.loads(payload), "p": "abcdefgh"}, separators=(",", ":")).encode()
        event_type = (name or "chunk").encode()
    else:
        body = json.dumps({"bytes": base64.b64encode(payload.encode()).decode(), "p": "abcdefghijklmnopqrstuvwx"},
                          separators=(",", ":")).encode()
        event_type = b"chunk"
    headers = b"".join(bytes([len(n)]) + n + b"\x07" + len(v).to_bytes(2, "big") + v for n, v in (
        (b":event-type", event_type), (b":content-type", b"application/json"), (b":message-type", b"event")))
    return encode(headers, body)
