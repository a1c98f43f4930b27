"""Leading runs two sequences share: by equality (block keys) or by identity (reused objects).

Agents resend their history, so most work in the analyzer is "how far does this
request agree with the previous one". `identical_prefix` is the memo's fast path:
objects taken over from an earlier parse are the very same objects (`is`), which
is both cheaper and stricter than equality.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def common_prefix(a: Sequence[Any], b: Sequence[Any]) -> int:
    """Number of leading positions where `a` and `b` hold equal items."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def identical_prefix(a: Sequence[Any], b: Sequence[Any]) -> int:
    """Number of leading positions where `a` and `b` hold the very same objects."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] is b[i]:
        i += 1
    return i
