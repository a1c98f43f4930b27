"""Undo HTTP content-encodings for storage (gzip, deflate, br, zstd), never raising.

Decoding is incremental and bounded (`MAX_DECODED`): a decompression bomb costs
at most that much memory. A body that ends early (a cut stream) or goes bad
part way keeps what decoded before the fault, and that is what gets redacted
and stored. Compressed bytes are never stored where they are a real stream of
their coding: redaction cannot read inside them while a decompressor can (a
cut gzip stream still yields its secrets to `zcat`). Only bytes that are not
what their header says are kept as received.
"""

from __future__ import annotations

import re
import zlib

import brotli
import zstandard as zstd

MAX_DECODED = 256 << 20  # decoded bytes kept at most (bigger than any model API accepts)
_CUT = "the compressed stream ends before its end marker"
# Input fed to brotli per call: it has no output limit, and a crafted stream can expand one
# byte into megabytes (a quality-11 bomb measured 40 MiB per 64 bytes), so small steps bound
# how far one call can overshoot the limit.
_BROTLI_STEP = 64
# The same for zstd: a block (at most 128 KiB of output) needs at least a few bytes of input.
_ZSTD_RATIO = 1 << 17
# zlib takes an output limit: input in small pieces keeps its unconsumed tail (copied per call) short.
_ZLIB_IN, _ZLIB_OUT = 1024, 64 << 10

Decoded = tuple[bytes, str | None]  # (output, what went wrong or None)


def _zlib(data: bytes, wbits: int, limit: int, members: bool = False) -> Decoded:
    """Inflate at most `limit` + 1 bytes; gzip `members` follow one another (as `gzip` reads them).

    Fed `_ZLIB_IN` bytes at a time with at most `_ZLIB_OUT` out per call: a call that raises
    (bad data, a bad checksum in the trailer) loses only its own output, not the body's.
    """
    out = bytearray()
    d = zlib.decompressobj(wbits)
    view = memoryview(data)
    pos = 0
    while True:
        pending = view[pos : pos + _ZLIB_IN]
        pos += len(pending)
        while True:
            try:  # max_length >= 1 (0 would mean unbounded)
                out += d.decompress(pending, min(_ZLIB_OUT, limit + 1 - len(out)))
            except zlib.error as exc:
                return bytes(out), f"invalid data: {exc}"
            if len(out) > limit:
                return bytes(out), None
            pending = d.unconsumed_tail
            if not pending:
                break
        if d.eof:
            rest = d.unused_data + view[pos:]
            if not members or not rest.strip(b"\0"):  # gzip ignores zero padding after the last member
                return bytes(out), None
            d, view, pos = zlib.decompressobj(wbits), memoryview(rest), 0
        elif pos >= len(view):
            return bytes(out), _CUT


def _gunzip(data: bytes, limit: int) -> Decoded:
    return _zlib(data, 16 + zlib.MAX_WBITS, limit, members=True)


def _inflate(data: bytes, limit: int) -> Decoded:
    # "deflate" is zlib-wrapped per the RFC, but raw deflate is common in practice.
    out, error = _zlib(data, zlib.MAX_WBITS, limit)
    if out or error is None:
        return out, error
    raw, raw_error = _zlib(data, -zlib.MAX_WBITS, limit)
    return (raw, raw_error) if raw or raw_error is None else (b"", error)


def _unbrotli(data: bytes, limit: int) -> Decoded:
    d = brotli.Decompressor()
    out = bytearray()
    view = memoryview(data)  # slices without copies
    for pos in range(0, len(data), _BROTLI_STEP):
        try:
            out += d.process(view[pos : pos + _BROTLI_STEP])
        except brotli.error as exc:
            return bytes(out), f"invalid data: {exc}"
        if len(out) > limit:
            return bytes(out), None
    return bytes(out), None if d.is_finished() else _CUT


def _unzstd(data: bytes, limit: int) -> Decoded:
    """Every frame in turn (Codex writes frames without a content size), fed a few bytes per
    128 KiB of room left."""
    out = bytearray()
    d = zstd.ZstdDecompressor().decompressobj()
    pos = 0
    view = memoryview(data)  # slices without copies
    while pos < len(data):
        step = max(1, (limit + 1 - len(out)) // _ZSTD_RATIO)
        try:
            out += d.decompress(view[pos : pos + step])
        except zstd.ZstdError as exc:
            return bytes(out), f"invalid data: {exc}"
        pos += step
        if len(out) > limit:
            return bytes(out), None
        if d.eof:  # the frame ended: what it did not use starts the next one
            rest = d.unused_data + data[pos:]
            if not rest:
                return bytes(out), None
            d, data, pos = zstd.ZstdDecompressor().decompressobj(), rest, 0
            view = memoryview(data)
    return bytes(out), _CUT  # the input ran out inside a frame


_DECODERS = {
    "gzip": _gunzip,
    "x-gzip": _gunzip,
    "deflate": _inflate,
    "br": _unbrotli,
    "zstd": _unzstd,
}


_MAGIC = {"gzip": b"\x1f\x8b", "x-gzip": b"\x1f\x8b", "zstd": b"\x28\xb5\x2f\xfd"}
_CONTROL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _real_stream(coding: str, data: bytes, out: bytes, error: str) -> bool:
    """Are `data` (which failed to decode whole), as far as they go, a real stream of `coding`?

    Then a decompressor could read secrets out of them, so they must not be stored as received:
    they ran out inside the stream (cut), begin with the coding's magic (gzip, zstd) or zlib's
    header, or what decoded is text (model API bodies are; brotli and raw deflate have no magic,
    and random bytes labelled so decode to a few bytes of binary before failing).
    """
    if error == _CUT:
        return True
    magic = _MAGIC.get(coding)
    if magic is not None and data.startswith(magic):
        return True
    if coding == "deflate" and len(data) >= 2 and data[0] & 0x0F == 8 and (data[0] << 8 | data[1]) % 31 == 0:
        return True
    return bool(out) and _text(out[:4096])


def _text(sample: bytes) -> bool:
    try:
        sample.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(sample) - 3:  # only a character cut at the end is allowed
            return False
    return _CONTROL.search(sample) is None


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n} bytes"


def decode_body(raw: bytes, content_encoding: str | None, limit: int = MAX_DECODED) -> tuple[bytes, str]:
    """Decode `raw` by its Content-Encoding.

    Returns (bytes, status), status one of:
    - `identity` / `decoded`: the whole body;
    - `error: <reason>; kept the N bytes decoded before it`: the decoded part of a body that was
      cut, went bad part way, or decodes past `limit` (kept up to it);
    - `error: <reason>; nothing decoded, ...`: a real compressed stream cut (or broken) before its
      first output: empty, since its bytes cannot be redacted;
    - `error: <reason>`: nothing decoded (a coding ctxtap does not know, a body that is not what
      its header says); the raw bytes are returned unchanged, so nothing is lost.
    """
    if not content_encoding or not raw:
        return raw, "identity"
    codings = [c.strip().lower() for c in content_encoding.split(",") if c.strip()]
    data = raw
    problem: str | None = None
    for coding in reversed(codings):
        if coding in ("identity", ""):
            continue
        decoder = _DECODERS.get(coding)
        if decoder is None:
            return raw, f"error: unsupported content-encoding {coding!r}"
        try:
            out, error = decoder(data, limit)
        except Exception as exc:  # noqa: BLE001 - never expected; a body must not stop the writer
            out, error = b"", f"{type(exc).__name__}: {exc}"
        if len(out) > limit:  # a stream that decodes, only too far: its first `limit` bytes are kept
            out, error = out[:limit], f"decoded body exceeds {_size(limit)}"
        elif error is not None and not _real_stream(coding, data, out, error):
            return raw, f"error: {coding}: {error}"[:300]  # not what its header says: kept as received
        if error is not None:
            if not out:
                return b"", (f"error: {coding}: {error}"[:240] + f"; nothing decoded, so the {len(raw)} bytes "
                             "received are not stored (redaction cannot read inside them)")
            problem = problem or f"{coding}: {error}"[:240]
        data = out
    if problem is not None:
        return data, f"error: {problem}; kept the {len(data)} bytes decoded before it"
    return data, "decoded"
