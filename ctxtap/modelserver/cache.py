"""A simulated provider prompt cache, so usage numbers behave like the real ones.

Reads are the longest cached prefix shared with earlier requests of the same
session key, only while the entry lives (TTL, refreshed on hit) and only above
a minimum length. Anthropic-style ("explicit") caching reads and writes only at
`cache_control` breakpoints; OpenAI/Chat/Gemini-style ("implicit") caching
stores every prompt and has no write counter. The clock is injected so tests
can jump past the TTL without sleeping.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from .prefix import Prefix

MAX_ENTRIES_PER_KEY = 32
# OpenAI's implicit cache reads in 128-token increments (past the 1024-token minimum): a prompt
# that grows by less than a step reads no more than before.
OPENAI_CACHE_STEP_TOKENS = 128


@dataclass
class CacheResult:
    total: int = 0  # all input tokens of the request
    read: int = 0  # served from cache
    write: int = 0  # newly written (explicit caching only)
    write_1h: int = 0  # part of `write` with a 1-hour TTL

    @property
    def uncached(self) -> int:
        return max(0, self.total - self.read - self.write)


@dataclass
class _Entry:
    data: bytes
    breakpoints: list[int] | None  # None: implicit entry, any prefix length may hit
    ttl_s: float
    expires_at: float = 0.0


@dataclass
class _Partition:
    entries: list[_Entry] = field(default_factory=list)


def common_prefix_len(a: bytes, b: bytes) -> int:
    """Length of the longest common prefix (binary search over memoryview slices)."""
    n = min(len(a), len(b))
    va, vb = memoryview(a), memoryview(b)
    if va[:n] == vb[:n]:
        return n
    lo, hi = 0, n - 1  # a[:lo] == b[:lo] holds, a[:n] != b[:n]
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if va[:mid] == vb[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


class PromptCache:
    def __init__(
        self,
        *,
        ttl_s: float = 300.0,
        min_tokens: int = 1024,
        bytes_per_token: float = 4.0,
        block_tokens: int = 1,
        clock: Callable[[], float],
    ) -> None:
        self.ttl_s = ttl_s
        self.min_tokens = min_tokens
        self.bytes_per_token = bytes_per_token
        self.block_tokens = max(1, block_tokens)
        self._clock = clock
        self._lock = threading.Lock()
        self._partitions: dict[str, _Partition] = {}

    def tokens(self, nbytes: int) -> int:
        return math.ceil(nbytes / self.bytes_per_token) if nbytes > 0 else 0

    def clear(self) -> None:
        with self._lock:
            self._partitions.clear()

    def apply(self, key: str, prefix: Prefix, *, explicit: bool, block_tokens: int | None = None) -> CacheResult:
        """Look the prompt up, then store what this request writes. Thread-safe.

        `block_tokens` overrides the cache's read granularity for this request (implicit caching only).
        """
        now = self._clock()
        total = self.tokens(len(prefix.data))
        with self._lock:
            part = self._partitions.setdefault(key, _Partition())
            part.entries = [e for e in part.entries if e.expires_at >= now]
            read_bytes, hit = self._lookup(part, prefix.data, explicit, block_tokens or self.block_tokens)
            if hit is not None:
                hit.expires_at = now + hit.ttl_s
            result = CacheResult(total=total, read=self.tokens(read_bytes))
            if explicit:
                self._write_explicit(part, prefix, read_bytes, result, now)
            elif total >= self.min_tokens:
                self._store(part, _Entry(prefix.data, None, self.ttl_s, now + self.ttl_s))
        return result

    def _lookup(self, part: _Partition, data: bytes, explicit: bool, block_tokens: int) -> tuple[int, _Entry | None]:
        best, best_entry = 0, None
        for entry in part.entries:
            common = common_prefix_len(entry.data, data)
            if explicit:
                usable = max((p for p in entry.breakpoints or [] if p <= common), default=0)
            else:
                block = int(block_tokens * self.bytes_per_token)
                usable = common - common % block if block > 1 else common
            if usable > best:
                best, best_entry = usable, entry
        if self.tokens(best) < self.min_tokens:
            return 0, None
        return best, best_entry

    def _write_explicit(self, part: _Partition, prefix: Prefix, read_bytes: int, result: CacheResult, now: float) -> None:
        """Write up to the last breakpoint; the part up to the last 1-hour breakpoint lives an hour."""
        points = [(p, ttl) for p, ttl in prefix.breakpoints if self.tokens(p) >= self.min_tokens]
        if not points:
            return
        last = max(p for p, _ in points)
        if last > read_bytes:
            result.write = self.tokens(last) - self.tokens(read_bytes)
        self._store(part, _Entry(prefix.data[:last], sorted({p for p, _ in points}), self.ttl_s, now + self.ttl_s))
        hour = sorted({p for p, ttl in points if ttl == "1h"})
        if hour:
            if hour[-1] > read_bytes:
                result.write_1h = self.tokens(hour[-1]) - self.tokens(read_bytes)
            self._store(part, _Entry(prefix.data[: hour[-1]], hour, 3600.0, now + 3600.0))

    @staticmethod
    def _store(part: _Partition, entry: _Entry) -> None:
        part.entries = [e for e in part.entries if e.data != entry.data]
        part.entries.append(entry)
        del part.entries[:-MAX_ENTRIES_PER_KEY]
