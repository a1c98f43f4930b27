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
    if type(data) is bytes:
        return _entropy(data)
    return _compute(bytes(data))


def _compute(data: bytes) -> float:
    n = len(data)
    return -sum(c / n * math.log2(c / n) for c in Counter(data).values())


_entropy = lru_cache(maxsize=8192)(_compute)
clear_cache = _entropy.cache_clear
