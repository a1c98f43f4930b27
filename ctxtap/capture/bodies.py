"""Body storage that follows unique content.

An agent resends its whole history on every call, so most of each request body
is the previous body. Each body is stored zstd-compressed, preferably as a delta
against an earlier body of the same stream (the earlier body used as a raw-content
dictionary). Every `KEYFRAME_EVERY`-th body of a chain is stored whole so reading
any body decodes at most that many frames. Decoding always returns the exact bytes.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict, deque
from dataclasses import dataclass

import zstandard as zstd

LEVEL = 3
KEYFRAME_EVERY = 16
WINDOW_LOG = 27  # 128 MiB: a delta can reference any byte of a base up to this size
MAX_DELTA_BASE = 1 << WINDOW_LOG
CANDIDATES_PER_STREAM = 4
MIN_SHARED_PREFIX = 256  # below this a delta is not worth a dictionary


@dataclass(frozen=True)
class EncodedBody:
    body_id: int
    codec: str  # "zstd" | "zstd-delta" | "ref" (identical to body `base_id`)
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


class BodyEncoder:
    """Assigns body ids and encodes bodies; keeps a small bounded set of recent bases.

    Memory is bounded: at most `CANDIDATES_PER_STREAM` bodies per stream key and
    `max_streams` stream keys are kept, whatever the number of flows.
    """

    def __init__(self, first_id: int = 1, max_streams: int = 64) -> None:
        self._next_id = first_id
        self._streams: OrderedDict[str, deque[tuple[int, bytes, int]]] = OrderedDict()
        self._by_hash: OrderedDict[str, int] = OrderedDict()
        self._max_streams = max_streams
        self._plain = zstd.ZstdCompressor(level=LEVEL)

    def encode(self, data: bytes, stream_key: str, sha256: str | None = None) -> EncodedBody:
        """`sha256`: the hex digest of `data` when the caller has it already (hashing is not free)."""
        body_id = self._next_id
        self._next_id += 1
        digest = sha256 or hashlib.sha256(data).hexdigest()
        same = self._by_hash.get(digest)
        if same is not None:
            self._remember_hash(digest, same)
            return EncodedBody(body_id, "ref", same, len(data), digest, b"")
        base = self._best_base(data, stream_key)
        # Remembered before compressing: the oldest base is let go now, not after the compressed copy
        # exists (with 1 MB bodies, one body less at the writer's peak).
        self._remember(stream_key, body_id, data, 0 if base is None else base[2] + 1)
        if base is not None:
            base_id, base_bytes, _ = base
            comp = zstd.ZstdCompressor(
                dict_data=zstd.ZstdCompressionDict(base_bytes, dict_type=zstd.DICT_TYPE_RAWCONTENT),
                compression_params=_delta_params(),
            )
            encoded = EncodedBody(body_id, "zstd-delta", base_id, len(data), digest, comp.compress(data))
        else:
            encoded = EncodedBody(body_id, "zstd", None, len(data), digest, self._plain.compress(data))
        self._remember_hash(digest, body_id)
        return encoded

    def _best_base(self, data: bytes, stream_key: str) -> tuple[int, bytes, int] | None:
        best: tuple[int, bytes, int] | None = None
        best_len = MIN_SHARED_PREFIX - 1
        for body_id, base_bytes, depth in self._streams.get(stream_key, ()):
            shared = common_prefix_len(data, base_bytes)
            if shared > best_len:
                best, best_len = (body_id, base_bytes, depth), shared
        if best is not None and best[2] + 1 >= KEYFRAME_EVERY:
            return None  # time for a keyframe: keeps every decode chain short
        return best

    def _remember(self, stream_key: str, body_id: int, data: bytes, depth: int) -> None:
        if len(data) > MAX_DELTA_BASE:
            return
        chain = self._streams.pop(stream_key, None) or deque(maxlen=CANDIDATES_PER_STREAM)
        chain.append((body_id, data, depth))
        self._streams[stream_key] = chain
        while len(self._streams) > self._max_streams:
            self._streams.popitem(last=False)

    def _remember_hash(self, digest: str, body_id: int) -> None:
        self._by_hash[digest] = body_id
        self._by_hash.move_to_end(digest)
        while len(self._by_hash) > 4096:
            self._by_hash.popitem(last=False)


class BodyDecoder:
    """Decodes stored bodies, following delta and ref chains, with a small LRU cache."""

    def __init__(self, lookup, cache_size: int = 32) -> None:
        """`lookup(body_id) -> (codec, base_id, data)` fetches one stored row."""
        self._lookup = lookup
        self._cache: OrderedDict[int, bytes] = OrderedDict()
        self._cache_size = cache_size
        self._plain = zstd.ZstdDecompressor()

    def get(self, body_id: int) -> bytes:
        cached = self._cache.get(body_id)
        if cached is not None:
            self._cache.move_to_end(body_id)
            return cached
        # Walk to the nearest keyframe or cached body, then decode forwards.
        chain: list[tuple[int, str, int | None, bytes]] = []
        current: int | None = body_id
        data = b""
        while current is not None:
            hit = self._cache.get(current)
            if hit is not None:
                data = hit
                break
            codec, base_id, blob = self._lookup(current)
            chain.append((current, codec, base_id, blob))
            current = base_id if codec in ("zstd-delta", "ref") else None
        for cid, codec, _base_id, blob in reversed(chain):
            if codec == "zstd":
                data = self._plain.decompress(blob)
            elif codec == "zstd-delta":
                dec = zstd.ZstdDecompressor(
                    dict_data=zstd.ZstdCompressionDict(data, dict_type=zstd.DICT_TYPE_RAWCONTENT),
                    max_window_size=MAX_DELTA_BASE,
                )
                data = dec.decompress(blob)
            elif codec == "raw":
                data = blob
            # "ref": same bytes as its base, already in `data`
            self._put(cid, data)
        return data

    def _put(self, body_id: int, data: bytes) -> None:
        self._cache[body_id] = data
        self._cache.move_to_end(body_id)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
