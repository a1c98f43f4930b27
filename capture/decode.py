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

import zlib

import brotli
import zstandard as zstd

from ctxtap.redaction.base64_runs import looks_like_text

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


class _Zlib:
    """gzip (its members one after another, as `gzip` reads them), zlib-wrapped or raw deflate.

    Fed `_ZLIB_IN` bytes at a time with at most `_ZLIB_OUT` out per call: a call that raises
    (bad data, a bad checksum in the trailer) loses only its own output, not the body's.
    """

    def __init__(self, wbits: int, members: bool) -> None:
        self._wbits, self._members = wbits, members
        self._d = zlib.decompressobj(wbits)
        self._ended = False

    def feed(self, data: bytes, room: int) -> Decoded:
        out = bytearray()
        view, pos = memoryview(data), 0
        while pos < len(view):
            if self._ended:  # after a stream's end: zero padding (ignored) or, in gzip, the next member
                rest = bytes(view[pos:]).lstrip(b"\0") if self._members else b""
                if not rest:
                    break
                self._d, self._ended = zlib.decompressobj(self._wbits), False
                view, pos = memoryview(rest), 0
            pending = view[pos : pos + _ZLIB_IN]
            pos += len(pending)
            while True:
                try:  # max_length >= 1 (0 would mean unbounded)
                    out += self._d.decompress(pending, min(_ZLIB_OUT, room - len(out)))
                except zlib.error as exc:
                    return bytes(out), f"invalid data: {exc}"
                if len(out) >= room:
                    return bytes(out), None
                pending = self._d.unconsumed_tail
                if not pending:
                    break
            if self._d.eof:
                self._ended = True
                if self._d.unused_data:
                    view, pos = memoryview(self._d.unused_data + bytes(view[pos:])), 0
        return bytes(out), None

    def finished(self) -> bool:
        return self._ended


class _Brotli:
    def __init__(self) -> None:
        self._d = brotli.Decompressor()

    def feed(self, data: bytes, room: int) -> Decoded:
        out = bytearray()
        view = memoryview(data)  # slices without copies
        for pos in range(0, len(view), _BROTLI_STEP):
            if self._d.is_finished():
                break  # bytes after the end marker are ignored
            try:
                out += self._d.process(view[pos : pos + _BROTLI_STEP])
            except brotli.error as exc:
                return bytes(out), f"invalid data: {exc}"
            if len(out) >= room:
                break
        return bytes(out), None

    def finished(self) -> bool:
        return self._d.is_finished()


class _Zstd:
    """Every frame in turn (Codex writes frames without a content size), fed a few bytes per
    128 KiB of room left."""

    def __init__(self) -> None:
        self._d = zstd.ZstdDecompressor().decompressobj()
        self._open = False  # bytes of a frame that has not ended were fed

    def feed(self, data: bytes, room: int) -> Decoded:
        out = bytearray()
        view, pos = memoryview(data), 0
        while pos < len(view):
            piece = view[pos : pos + max(1, (room - len(out)) // _ZSTD_RATIO)]
            pos += len(piece)
            self._open = True
            try:
                out += self._d.decompress(piece)
            except zstd.ZstdError as exc:
                return bytes(out), f"invalid data: {exc}"
            if len(out) >= room:
                break
            if self._d.eof:  # the frame ended: what it did not use starts the next one
                rest = self._d.unused_data
                self._d, self._open = zstd.ZstdDecompressor().decompressobj(), False
                if rest:
                    view, pos = memoryview(rest + bytes(view[pos:])), 0
        return bytes(out), None

    def finished(self) -> bool:
        return not self._open


CODINGS = frozenset({"gzip", "x-gzip", "deflate", "br", "zstd"})


class StreamDecoder:
    """One content-coding undone as its bytes arrive (a streamed response, or a whole body in
    one piece): bounded by `limit`, never raising.

    `feed` returns what decoded of the bytes so far; after a fault (bad data, past `limit`) it
    returns nothing more and `error` says why. `finish` adds the fault of a stream that ended
    before its end marker. `raw_deflate`: read "deflate" without zlib's wrapper (None: decided
    by its first two bytes, since servers send both).
    """

    def __init__(self, coding: str, limit: int = MAX_DECODED, raw_deflate: bool | None = None) -> None:
        self.coding = coding.strip().lower()
        if self.coding not in CODINGS:
            raise ValueError(f"unsupported content-encoding {coding!r}")
        self.limit = limit
        self.size = 0  # bytes decoded so far
        self.error: str | None = None
        self.exceeded = False
        self._raw_deflate = raw_deflate
        self._head = b""  # a first read too short to tell zlib-wrapped from raw deflate
        self._impl: _Zlib | _Brotli | _Zstd | None = None

    def _start(self, head: bytes) -> _Zlib | _Brotli | _Zstd:
        if self.coding in ("gzip", "x-gzip"):
            return _Zlib(16 + zlib.MAX_WBITS, members=True)
        if self.coding == "deflate":
            raw = not _zlib_header(head) if self._raw_deflate is None else self._raw_deflate
            return _Zlib(-zlib.MAX_WBITS if raw else zlib.MAX_WBITS, members=False)
        return _Brotli() if self.coding == "br" else _Zstd()

    def feed(self, data: bytes) -> bytes:
        if self.error is not None or not data:
            return b""
        if self._impl is None:
            if self.coding == "deflate" and self._raw_deflate is None and len(self._head) + len(data) < 2:
                self._head += data  # which deflate it is shows in two bytes: wait for the second
                return b""
            data, self._head = self._head + data, b""
            self._impl = self._start(data[:2])
        try:
            out, error = self._impl.feed(data, self.limit + 1 - self.size)
        except Exception as exc:  # noqa: BLE001 - never expected; a body must not stop the writer
            out, error = b"", f"{type(exc).__name__}: {exc}"
        if self.size + len(out) > self.limit:  # it decodes, only too far: the first `limit` bytes are kept
            out, error, self.exceeded = out[: self.limit - self.size], f"decoded body exceeds {_size(self.limit)}", True
        self.size += len(out)
        self.error = error
        return out

    def finish(self) -> str | None:
        """The fault that ended decoding, if any (bytes that ran out inside the stream are one)."""
        if self.error is None and (self._head or (self._impl is not None and not self._impl.finished())):
            self.error = _CUT
        return self.error


def _zlib_header(head: bytes) -> bool:
    """Do two bytes begin a zlib stream (deflate, its check bits right)?"""
    return len(head) >= 2 and head[0] & 0x0F == 8 and (head[0] << 8 | head[1]) % 31 == 0


_MAGIC = {"gzip": b"\x1f\x8b", "x-gzip": b"\x1f\x8b", "zstd": b"\x28\xb5\x2f\xfd"}


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
    if coding == "deflate" and _zlib_header(data):
        return True
    return bool(out) and looks_like_text(out[:4096])


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n} bytes"


def _decode_whole(coding: str, data: bytes, limit: int) -> tuple[bytes, str | None, bool]:
    """(output, fault, past the limit) of one coding over a whole body. "deflate" that fails at
    once read one way (zlib-wrapped or raw) is read again the other way."""
    dec = StreamDecoder(coding, limit)
    out = dec.feed(data)
    error = dec.finish()
    if coding == "deflate" and error is not None and not out:
        again = StreamDecoder(coding, limit, raw_deflate=_zlib_header(data[:2]))
        again_out = again.feed(data)
        if again_out or again.finish() is None:
            return again_out, again.error, again.exceeded
    return out, error, dec.exceeded


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
        if coding not in CODINGS:
            return raw, f"error: unsupported content-encoding {coding!r}"
        out, error, exceeded = _decode_whole(coding, data, limit)
        if error is not None and not exceeded and not _real_stream(coding, data, out, error):
            return raw, f"error: {coding}: {error}"[:300]  # not what its header says: kept as received
        if error is not None:
            if not out:
                return b"", _not_stored(coding, error, len(raw))
            problem = problem or f"{coding}: {error}"[:240]
        data = out
    if problem is not None:
        return data, kept(problem, len(data))
    return data, "decoded"


def kept(problem: str, size: int) -> str:
    return f"error: {problem}; kept the {size} bytes decoded before it"


def _not_stored(coding: str, error: str, size: int) -> str:
    return (f"error: {coding}: {error}"[:240] + f"; nothing decoded, so the {size} bytes received are not "
            "stored (redaction cannot read inside them)")
