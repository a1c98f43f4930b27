"""Undo HTTP content-encodings for storage (gzip, deflate, br, zstd), never raising."""

from __future__ import annotations

import gzip
import io
import zlib

import brotli
import zstandard as zstd

MAX_DECODED = 1 << 30  # refuse to inflate past 1 GiB (decompression bombs)


class DecodeError(Exception):
    pass


def _gunzip(data: bytes) -> bytes:
    with gzip.GzipFile(fileobj=io.BytesIO(data)) as fh:
        out = fh.read(MAX_DECODED + 1)
    return out


def _inflate(data: bytes) -> bytes:
    # "deflate" is zlib-wrapped per the RFC, but raw deflate is common in practice.
    for wbits in (zlib.MAX_WBITS, -zlib.MAX_WBITS):
        try:
            d = zlib.decompressobj(wbits)
            return d.decompress(data, MAX_DECODED + 1) + d.flush()
        except zlib.error:
            continue
    raise DecodeError("invalid deflate data")


def _unzstd(data: bytes) -> bytes:
    # Streaming decode: frames written without a content size (as Codex sends) work too.
    reader = zstd.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True)
    return reader.read(MAX_DECODED + 1)


_DECODERS = {
    "gzip": _gunzip,
    "x-gzip": _gunzip,
    "deflate": _inflate,
    "br": brotli.decompress,
    "zstd": _unzstd,
}


def decode_body(raw: bytes, content_encoding: str | None) -> tuple[bytes, str]:
    """Decode `raw` by its Content-Encoding.

    Returns (bytes, status) where status is "identity", "decoded" or
    "error: <reason>" — on error the raw bytes are returned unchanged so
    nothing is lost.
    """
    if not content_encoding or not raw:
        return raw, "identity"
    codings = [c.strip().lower() for c in content_encoding.split(",") if c.strip()]
    data = raw
    try:
        for coding in reversed(codings):
            if coding in ("identity", ""):
                continue
            decoder = _DECODERS.get(coding)
            if decoder is None:
                return raw, f"error: unsupported content-encoding {coding!r}"
            data = decoder(data)
            if len(data) > MAX_DECODED:
                return raw, "error: decoded body exceeds 1 GiB"
    except Exception as exc:  # any malformed compressed stream
        return raw, f"error: {type(exc).__name__}: {exc}"[:300]
    return data, "decoded"
