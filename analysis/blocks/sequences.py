"""Shared-prefix lengths at C speed.

Every request resends its predecessor's history, so the analyzer keeps asking how
many leading elements (or bytes) two requests share. A Python loop over the
elements makes every request cost time in proportion to its history; comparing
slices lets CPython's C code do the walking (a pointer comparison per element,
`memcmp` for bytes), and bisecting the first unequal slice keeps the total linear.
"""

from __future__ import annotations

from collections.abc import Sequence

FIRST_CHUNK = 4096  # bytes compared in the first step; every equal chunk doubles the next one ...
MAX_CHUNK = 1 << 16  # ... up to this: the unequal chunk is compared again while bisecting it
HEAD = 8  # elements compared before the whole: a sequence unequal there is not copied


def shared_prefix(a: Sequence, b: Sequence, start: int = 0) -> int:
    """Positions from `start` on where `a` and `b` hold equal elements, up to the first that differs.

    Equality is Python's `==`, which CPython checks as identity first: for
    elements whose equality *is* identity (plain objects, `eq=False` dataclasses)
    this is the count of leading identical objects. Works on lists, tuples and
    arrays; a slice comparison stops at its first unequal element.
    """
    if type(a) is not type(b):  # a list never equals an array: compare like with like
        a, b = list(a), list(b)
    n = min(len(a), len(b))
    if start >= n:
        return 0
    head = min(n, start + HEAD)
    if a[start:head] != b[start:head]:  # most candidates differ at once: no need to copy the rest
        n = head
    # slice only what must be (a list slice touches every element it copies)
    elif (a if start == 0 and len(a) == n else a[start:n]) == (b if start == 0 and len(b) == n else b[start:n]):
        return n - start
    lo, hi = start, n - 1  # a[start:lo] == b[start:lo], and the first difference lies in [lo, hi]
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo - start


def shared_bytes(a: bytes, b: bytes) -> int:
    """Length of the common prefix of two byte strings, without copying either.

    Chunks grow while they match, so a long shared prefix costs one `memcmp`
    pass and few calls; the first unequal chunk is bisected (bounded, so the
    bytes compared twice stay few).
    """
    n = min(len(a), len(b))
    view = memoryview(b)
    pos, step = 0, FIRST_CHUNK
    while pos < n:
        end = min(n, pos + step)
        if a.startswith(view[pos:end], pos):
            pos, step = end, min(step * 2, MAX_CHUNK)
            continue
        lo, hi = pos, end - 1  # a[:lo] == b[:lo], and the first difference lies in [lo, hi]
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if a.startswith(view[lo:mid], lo):
                lo = mid
            else:
                hi = mid - 1
        return lo
    return n


MAX_HOLES = 4  # changed positions an alignment steps over before it stops


def align(a: Sequence, b: Sequence, max_holes: int = MAX_HOLES, shared: int | None = None) -> tuple[int, list[int]]:
    """(m, holes): `a` and `b` hold equal elements at every position below `m` except `holes`.

    Agents resend their history with a few blocks changed early on (a per-request hash
    in the system prompt, a moved cache marker): a strict common prefix would stop at
    the first of them. Stepping over up to `max_holes` changed positions keeps the rest
    of the history shared. Equality is `==` as in `shared_prefix`, whose result for the
    two the caller may pass as `shared`.
    """
    if type(a) is not type(b):
        a, b = list(a), list(b)
    n = min(len(a), len(b))
    pos = shared_prefix(a, b) if shared is None else shared
    holes: list[int] = []
    while pos < n and len(holes) < max_holes:
        holes.append(pos)
        pos += 1 + shared_prefix(a, b, pos + 1)
    return pos, holes


def common_prefix(a: Sequence, b: Sequence) -> int:
    """Number of leading positions where `a` and `b` hold equal items (block keys)."""
    return shared_prefix(a, b)


def identical_prefix(a: Sequence, b: Sequence) -> int:
    """Number of leading positions where `a` and `b` hold the very same objects.

    For elements whose `==` may be a deep comparison (parsed JSON values): identity
    is what the memo needs, and it is also the cheaper check.
    """
    if a is b:
        return len(a)
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] is b[i]:
        i += 1
    return i
