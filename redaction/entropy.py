"""Shannon entropy, the randomness measure gitleaks' rules and ctxtap's weak-name checks share."""

from __future__ import annotations

import math
from collections import Counter


def shannon_entropy(data: bytes) -> float:
    """Bits per character (gitleaks computes it the same way)."""
    if not data:
        return 0.0
    n = len(data)
    return -sum(c / n * math.log2(c / n) for c in Counter(data).values())
