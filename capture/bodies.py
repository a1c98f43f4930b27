"""Body storage that follows unique content.

An agent resends its whole history on every call, so most of each request body
is the previous body. Each body is stored zstd-compressed, preferably as a delta
against an earlier body of the same stream: the length of the prefix the two share,
then the rest of the body compressed with the base's end as a raw-content dictionary
(its rest, and the last `DICT_WINDOW` bytes of the shared prefix: what a new turn most
likely repeats) (`zstd-tail`). Writing and reading a delta then cost time in what the
body adds, not in the history it resends; a reader that parsed the base also learns
how many leading bytes it can take over (`BodyDecoder.prefix`). Every
`KEYFRAME_EVERY`-th body of a chain is stored whole so reading any body decodes at
most that many frames. Decoding always returns the exact bytes.

Captures written before `zstd-tail` existed hold `zstd-delta` bodies (the whole body
compressed with the whole base as dictionary); they still decode.
"""

from __future__ import annotations

import hashlib
import struct
from bisect import bisect_right
from collections import OrderedDict, deque
from dataclasses import dataclass

import zstandard as zstd

LEVEL = 3
KEYFRAME_EVERY = 64
WINDOW_LOG = 27  # 128 MiB: a delta can reference any byte of a base up to this size
MAX_DELTA_BASE = 1 << WINDOW_LOG
CANDIDATES_PER_STREAM = 4
# Bodies kept as delta bases: none bigger than this (a streamed response of tens of megabytes is
# no prefix of the next one), and this much in all, the least recently used streams' oldest going first.
MAX_BASE_BYTES = 16 << 20
BASES_BUDGET = 64 << 20
MIN_SHARED_PREFIX = 256  # below this a delta is not worth a dictionary
MIN_TAIL_DICT = 64  # a shorter dictionary is not worth one
# Of the shared prefix, this much of its end is in the dictionary of the rest: the storage of a
# session is as small as with any larger window, at a fraction of the cost to load it.
DICT_WINDOW = 1 << 15
TAIL_HEADER = struct.Struct("<QQ")  # zstd-tail: shared prefix length, where in the base the dictionary begins


class BodyFormatError(ValueError):
    """A stored body that cannot be what the encoder wrote (a damaged capture)."""


@dataclass(frozen=True)
class EncodedBody:
    body_id: int
    codec: str  # "zstd" | "zstd-tail" | "ref" (identical to body `base_id`); "zstd-delta" in older captures
    base_id: int | None
    size: int
    sha256: str
    data: bytes


def common_prefix_len(a: bytes, b: bytes, step: int = 4096) -> int:
    """Length of the shared prefix: compare 4 KiB slices in turn, then bisect the first that differs.

    Linear in the shared length with memcmp-speed slices; bisecting whole-body slices
    instead would copy the body log(n) times.
    """
    n = min(len(a), len(b))
    i = 0
    while i < n:
        j = min(n, i + step)
        if a[i:j] != b[i:j]:
            lo, hi = i, j - 1
            while lo < hi:  # the answer is in [i, j): the first index where they differ
                mid = (lo + hi + 1) // 2
                if a[i:mid] == b[i:mid]:
                    lo = mid
                else:
                    hi = mid - 1
            return lo
        i = j
    return n


def _delta_params() -> zstd.ZstdCompressionParameters:
    return zstd.ZstdCompressionParameters.from_level(LEVEL, window_log=WINDOW_LOG)


def _decompressor(dictionary: bytes) -> zstd.ZstdDecompressor:
    """A decompressor for frames written against `dictionary` (raw content: a base's bytes)."""
    return zstd.ZstdDecompressor(dict_data=zstd.ZstdCompressionDict(dictionary, dict_type=zstd.DICT_TYPE_RAWCONTENT),
                                 max_window_size=MAX_DELTA_BASE)


class BodyEncoder:
    """Assigns body ids and encodes bodies; keeps a small bounded set of recent bases.

    Memory is bounded: at most `CANDIDATES_PER_STREAM` bodies per stream key, `max_streams`
    stream keys and `BASES_BUDGET` bytes are kept, whatever the number of flows.
    """

    def __init__(self, first_id: int = 1, max_streams: int = 64) -> None:
        self._next_id = first_id
        self._streams: OrderedDict[str, deque[tuple[int, bytes, int]]] = OrderedDict()
        self._base_bytes = 0
        self._by_hash: OrderedDict[str, int] = OrderedDict()
        self._max_streams = max_streams
        self._plain = zstd.ZstdCompressor(level=LEVEL)

    def streamed(self) -> StreamedBody:
        """Where a streamed body's pieces go as they are released (see `StreamedBody`)."""
        return StreamedBody()

    def encode_streamed(self, body: StreamedBody, stream_key: str, sha256: str | None = None) -> EncodedBody:
        """A streamed body: its pieces as `encode_parts` takes them, or, once it grew past a delta
        base, the frame compressed as it arrived (its digest read back from that frame when the
        caller has none: a stream that redaction changed)."""
        if body.frame is None:
            return self.encode_parts(body.parts, stream_key, sha256)
        data = body.finish()
        if sha256 is None:
            sha = hashlib.sha256()
            for piece in zstd.ZstdDecompressor().read_to_iter(data, read_size=1 << 20, write_size=1 << 20):
                sha.update(piece)
            sha256 = sha.hexdigest()
        body_id, ref = self._new_id(sha256, body.size)
        if ref is not None:
            return ref
        self._remember_hash(sha256, body_id)
        return EncodedBody(body_id, "zstd", None, body.size, sha256, data)

    def encode_parts(self, parts: list[bytes], stream_key: str, sha256: str | None = None) -> EncodedBody:
        """A body given as its pieces in order (a streamed response): too big to be a delta base,
        it is hashed and compressed piece by piece, never joined (a joined copy would hold it twice).
        `sha256`: the hex digest of the joined pieces when the caller has it already."""
        size = sum(map(len, parts))
        if size <= MAX_BASE_BYTES:
            return self.encode(b"".join(parts), stream_key, sha256)
        if sha256 is None:
            sha = hashlib.sha256()
            for part in parts:
                sha.update(part)
            sha256 = sha.hexdigest()
        body_id, ref = self._new_id(sha256, size)
        if ref is not None:
            return ref
        comp = self._plain.compressobj(size=size)  # the frame says its size: plain `decompress` reads it
        data = b"".join([*(comp.compress(part) for part in parts), comp.flush()])
        self._remember_hash(sha256, body_id)
        return EncodedBody(body_id, "zstd", None, size, sha256, data)

    def encode(self, data: bytes, stream_key: str, sha256: str | None = None) -> EncodedBody:
        """`sha256`: the hex digest of `data` when the caller has it already (hashing is not free)."""
        digest = sha256 or hashlib.sha256(data).hexdigest()
        body_id, ref = self._new_id(digest, len(data))
        if ref is not None:
            return ref
        base = self._best_base(data, stream_key)
        # Remembered before compressing: the oldest base is let go now, not after the compressed copy
        # exists (with 1 MB bodies, one body less at the writer's peak).
        self._remember(stream_key, body_id, data, 0 if base is None else base[0][2] + 1)
        if base is not None:
            (base_id, base_bytes, _), shared = base
            encoded = EncodedBody(body_id, "zstd-tail", base_id, len(data), digest,
                                  self._tail(data, base_bytes, shared))
        else:
            encoded = EncodedBody(body_id, "zstd", None, len(data), digest, self._plain.compress(data))
        self._remember_hash(digest, body_id)
        return encoded

    def _new_id(self, digest: str, size: int) -> tuple[int, EncodedBody | None]:
        """The next body id, and its `ref` row if a body with this digest is stored already."""
        body_id = self._next_id
        self._next_id += 1
        same = self._by_hash.get(digest)
        if same is None:
            return body_id, None
        self._remember_hash(digest, same)
        return body_id, EncodedBody(body_id, "ref", same, size, digest, b"")

    def _tail(self, data: bytes, base: bytes, shared: int) -> bytes:
        """A `zstd-tail` payload: the shared length, where the dictionary begins, then what follows
        the shared prefix compressed with the base from there on as dictionary: the end of the
        history (a new turn repeats its words) and the base's rest (a value changed early in the
        body is still found there). Where a turn only appends, writing and reading cost what it adds."""
        start = max(0, shared - DICT_WINDOW)
        if len(base) - start < MIN_TAIL_DICT:
            return TAIL_HEADER.pack(shared, len(base)) + self._plain.compress(memoryview(data)[shared:])
        comp = zstd.ZstdCompressor(
            dict_data=zstd.ZstdCompressionDict(base[start:], dict_type=zstd.DICT_TYPE_RAWCONTENT),
            compression_params=_delta_params(),
        )
        return TAIL_HEADER.pack(shared, start) + comp.compress(memoryview(data)[shared:])

    def _best_base(self, data: bytes, stream_key: str) -> tuple[tuple[int, bytes, int], int] | None:
        """((id, bytes, chain depth), shared prefix length) of the candidate sharing the longest prefix."""
        best: tuple[int, bytes, int] | None = None
        best_len = MIN_SHARED_PREFIX - 1
        for body_id, base_bytes, depth in self._streams.get(stream_key, ()):
            shared = common_prefix_len(data, base_bytes)
            if shared > best_len:
                best, best_len = (body_id, base_bytes, depth), shared
        if best is not None and best[2] + 1 >= KEYFRAME_EVERY:
            return None  # time for a keyframe: keeps every decode chain short
        return None if best is None else (best, best_len)

    def _remember(self, stream_key: str, body_id: int, data: bytes, depth: int) -> None:
        if len(data) > MAX_BASE_BYTES:
            return
        chain = self._streams.pop(stream_key, None) or deque()
        if len(chain) >= CANDIDATES_PER_STREAM:
            self._base_bytes -= len(chain.popleft()[1])
        chain.append((body_id, data, depth))
        self._base_bytes += len(data)
        self._streams[stream_key] = chain
        while len(self._streams) > self._max_streams or self._base_bytes > BASES_BUDGET:
            key, oldest = next(iter(self._streams.items()))  # the least recently used stream
            self._base_bytes -= len(oldest.popleft()[1])
            if not oldest:
                del self._streams[key]

    def _remember_hash(self, digest: str, body_id: int) -> None:
        self._by_hash[digest] = body_id
        self._by_hash.move_to_end(digest)
        while len(self._by_hash) > 4096:
            self._by_hash.popitem(last=False)


_DELTAS = ("zstd-tail", "zstd-delta", "ref")  # codecs whose row names a base


def _plain_frame(dec: zstd.ZstdDecompressor, blob: bytes) -> bytes:
    """A `zstd` body: its frame states its size, or (a big stream, compressed as it arrived) not."""
    if zstd.frame_content_size(blob) >= 0:
        return dec.decompress(blob)
    return dec.decompressobj().decompress(blob)


class BodyView:
    """A body's bytes as pieces of other bytes, read without joining them.

    A `zstd-tail` body is its base's first bytes and a new tail. Building each body whole
    would copy the resent history once per request; a view keeps (buffer, start, end)
    pieces instead (at most one more per delta since the chain's keyframe) and joins only
    the ranges asked for. Slicing gives bytes; `bytes(view)` the whole body.
    """

    __slots__ = ("_pieces", "_ends")

    def __init__(self, pieces: tuple[tuple[bytes, int, int], ...]) -> None:
        self._pieces = pieces
        ends, total = [], 0
        for _, start, end in pieces:
            total += end - start
            ends.append(total)
        self._ends = ends

    @classmethod
    def of(cls, data: bytes) -> BodyView:
        return cls(((data, 0, len(data)),) if data else ())

    def __len__(self) -> int:
        return self._ends[-1] if self._ends else 0

    def __getitem__(self, key: slice) -> bytes:
        if not isinstance(key, slice):
            raise TypeError("a BodyView is read by slices")
        start, stop, step = key.indices(len(self))
        if step != 1:
            raise ValueError("a BodyView is read by contiguous slices")
        if start >= stop:
            return b""
        i = bisect_right(self._ends, start)
        parts = []
        pos = start
        while pos < stop:
            buf, a, b = self._pieces[i]
            first = self._ends[i] - (b - a)  # the view offset of this piece's first byte
            upto = min(stop, self._ends[i])
            lo, hi = a + pos - first, a + upto - first
            if lo == 0 and hi == len(buf) and upto == stop and pos == start:
                return buf  # one whole buffer: no copy
            parts.append(memoryview(buf)[lo:hi])
            pos, i = upto, i + 1
        return b"".join(parts)

    def __bytes__(self) -> bytes:
        return self[0:len(self)]

    def __contains__(self, needle: bytes) -> bool:
        """`needle in view` as for bytes: within a piece, or across a boundary between two."""
        if not needle:
            return True
        if any(buf.find(needle, a, b) >= 0 for buf, a, b in self._pieces):
            return True
        n = len(needle)
        return any(needle in self[max(0, end - n + 1):end + n - 1] for end in self._ends[:-1])

    def startswith(self, prefix: bytes, start: int = 0) -> bool:
        return start <= len(self) and self[start:start + len(prefix)] == prefix

    def head_then(self, shared: int, tail: bytes) -> BodyView:
        """This view's first `shared` bytes followed by `tail`."""
        pieces = []
        for (buf, a, b), end in zip(self._pieces, self._ends, strict=True):
            first = end - (b - a)
            if first >= shared:
                break
            pieces.append((buf, a, b) if end <= shared else (buf, a, a + shared - first))
        if tail:
            pieces.append((tail, 0, len(tail)))
        return BodyView(tuple(pieces))


def as_bytes(data: bytes | BodyView) -> bytes:
    return data if isinstance(data, bytes) else bytes(data)


class StreamedBody:
    """A streamed body as its redacted pieces are released: kept as pieces while it could still be
    a delta base (`MAX_BASE_BYTES`), then compressed as it goes, so a stream of hundreds of
    megabytes costs the writer its compressed size, not its size. The frame then does not state
    its content size (it was not known when it began); `BodyDecoder` reads both kinds. Each such
    body has a compressor of its own: a zstd context compresses one frame at a time, and other
    bodies (and other streams) are stored while this one is still arriving."""

    __slots__ = ("parts", "size", "frame", "_out")

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.size = 0
        self.frame = None  # its compressor, once the body outgrew a delta base
        self._out: list[bytes] = []

    def add(self, part: bytes) -> None:
        if not part:
            return
        self.size += len(part)
        if self.frame is not None:
            self._out.append(self.frame.compress(part))
            return
        self.parts.append(part)
        if self.size > MAX_BASE_BYTES:
            self.frame = zstd.ZstdCompressor(level=LEVEL).compressobj()
            self._out = [self.frame.compress(piece) for piece in self.parts]
            self.parts = []

    def finish(self) -> bytes:
        assert self.frame is not None
        self._out.append(self.frame.flush())
        data, self._out = b"".join(self._out), []
        return data


class BodyDecoder:
    """Decodes stored bodies, following delta and ref chains, with a small LRU cache of views."""

    def __init__(self, lookup, cache_size: int = 32) -> None:
        """`lookup(body_id) -> (codec, base_id, data)` fetches one stored row."""
        self._lookup = lookup
        self._cache: OrderedDict[int, BodyView] = OrderedDict()
        self._cache_size = cache_size
        self._plain = zstd.ZstdDecompressor()

    def get(self, body_id: int) -> bytes:
        """The body's exact bytes."""
        return bytes(self.view(body_id))

    def view(self, body_id: int) -> BodyView:
        """The body without joining its pieces: what a reader of a long chain should take."""
        cached = self._cache.get(body_id)
        if cached is not None:
            self._cache.move_to_end(body_id)
            return cached
        # Walk to the nearest keyframe or cached body, then decode forwards.
        chain: list[tuple[int, str, int | None, bytes]] = []
        current: int | None = body_id
        view = BodyView(())
        while current is not None:
            hit = self._cache.get(current)
            if hit is not None:
                view = hit
                break
            codec, base_id, blob = self._lookup(current)
            chain.append((current, codec, base_id, blob))
            current = base_id if codec in _DELTAS else None
        for cid, codec, _base_id, blob in reversed(chain):
            if codec == "zstd":
                view = BodyView.of(_plain_frame(self._plain, blob))
            elif codec == "zstd-tail":
                view = self._untail(cid, view, blob)
            elif codec == "zstd-delta":
                view = BodyView.of(_decompressor(bytes(view)).decompress(blob))
            elif codec == "raw":
                view = BodyView.of(blob)
            elif codec != "ref":  # "ref": same bytes as its base, already in `view`
                raise BodyFormatError(f"body {cid}: unknown codec {codec!r} (written by a newer ctxtap?)")
            self._put(cid, view)
        return view

    def prefix(self, body_id: int) -> tuple[int, int | None] | None:
        """(base id, leading bytes shared with that base; None: all of them, a repeat), or None
        when the row does not say (a keyframe, an older capture's `zstd-delta`).

        Read from the stored row's header, without decoding: a reader that has the base
        parsed already takes those bytes over instead of comparing the two bodies.
        """
        codec, base_id, blob = self._lookup(body_id)
        if base_id is None:
            return None
        if codec == "ref":
            return base_id, None
        if codec == "zstd-tail" and len(blob) >= TAIL_HEADER.size:
            return base_id, TAIL_HEADER.unpack_from(blob)[0]
        return None

    def _untail(self, body_id: int, base: BodyView, blob: bytes) -> BodyView:
        if len(blob) < TAIL_HEADER.size:
            raise BodyFormatError(f"body {body_id}: a zstd-tail row of {len(blob)} bytes has no header")
        shared, start = TAIL_HEADER.unpack_from(blob)
        if shared > len(base) or start > len(base):
            raise BodyFormatError(f"body {body_id}: shares {shared} bytes, a dictionary from {start}, "
                                  f"with a base of {len(base)}")
        frame = memoryview(blob)[TAIL_HEADER.size:]
        dec = _decompressor(base[start:]) if start < len(base) else self._plain
        return base.head_then(shared, dec.decompress(frame))

    def _put(self, body_id: int, data: BodyView) -> None:
        self._cache[body_id] = data
        self._cache.move_to_end(body_id)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
