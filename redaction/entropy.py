"""Shannon entropy, the randomness measure gitleaks' rules and ctxtap's weak-name checks share."""

from __future__ import annotations

import math
from collections import Counter
from functools import lru_cache


def shannon_entropy(data: bytes) -> float:
    """Bits per character (gitleaks computes it the same way).

    Bodies repeat the same candidate values (resent history), so results are remembered.
    """
    if not data:
        return 0.0
    return _entropy(bytes(data))  # bytes(b) is b itself: hashable for the cache, no copy


@lru_cache(maxsize=8192)
def _entropy(data: bytes) -> float:
    n = len(data)
    return -sum(c / n * math.log2(c / n) for c in Counter(data).values())


clear_cache = _entropy.cache_clear


def expected_entropy(alphabet: int, n: int) -> float:
    """About the Shannon entropy of `n` characters drawn at random from `alphabet` (Miller-Madow bias):
    what a random body of that alphabet and length scores, for the token detectors to compare with."""
    return max(math.log2(min(alphabet, n)) - (alphabet - 1) / (2 * n * math.log(2)), 1.0)
