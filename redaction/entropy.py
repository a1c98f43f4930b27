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


@lru_cache(maxsize=4096)
def expected_entropy(alphabet: int, n: int) -> float:
    """The Shannon entropy `n` characters drawn at random from `alphabet` score on average: what a random
    body of that alphabet and length scores, for the token detectors to compare with.

    Each symbol's count is binomial, so the mean is `alphabet` times the mean of -p log2 p over that
    count (exact). Miller and Madow's correction, used before, holds only for bodies much longer than
    the alphabet: for twenty characters of base62 it said 2.1 bits where random ones score 4.0. It is
    kept where it holds (eight characters per symbol and more: within a hundredth of a bit)."""
    if n <= 0 or alphabet <= 1:
        return 0.0
    if n >= 8 * alphabet:
        return math.log2(alphabet) - (alphabet - 1) / (2 * n * math.log(2))
    log_p, log_q = -math.log(alphabet), math.log1p(-1.0 / alphabet)
    mean = 0.0
    for count in range(1, n + 1):
        log_pmf = math.lgamma(n + 1) - math.lgamma(count + 1) - math.lgamma(n - count + 1) + count * log_p + (
            n - count) * log_q
        share = count / n
        mean += math.exp(log_pmf) * -share * math.log2(share)
    return alphabet * mean
