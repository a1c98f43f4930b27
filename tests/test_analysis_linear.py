"""The analyzer's fast paths for long sessions give exactly what the plain computations give.

A request that resends its predecessor's history takes over the predecessor's
work (prefixes compared in C, scans and runs cut and extended, token sums read
from runs), so it costs time in what it adds. Here: each helper equals its naive
counterpart on random inputs, and the dataset of a long generated session is the
same with the fast paths as without them.
"""

from __future__ import annotations

from array import array

import pytest
from hypothesis import given
from hypothesis import strategies as st

from analysis.blocks import BlockDraft
from analysis.sequences import align, identical_prefix, shared_bytes, shared_prefix
from ctxtap.capture.bodies import common_prefix_len

# --- helpers against naive loops ------------------------------------------------------------


def _loop_prefix(a, b) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _loop_align(a, b, max_holes: int) -> tuple[int, list[int]]:
    n, pos, holes = min(len(a), len(b)), 0, []
    while pos < n:
        if a[pos] != b[pos]:
            if len(holes) == max_holes:
                break
            holes.append(pos)
        pos += 1
    return pos, holes


@given(st.lists(st.integers(0, 3), max_size=60), st.lists(st.integers(0, 3), max_size=60))
def test_shared_prefix_is_the_loop_on_lists_and_arrays(a, b):
    assert shared_prefix(a, b) == _loop_prefix(a, b)
    assert shared_prefix(array("q", a), array("q", b)) == _loop_prefix(a, b)
    assert shared_prefix(a, array("q", b)) == _loop_prefix(a, b)  # unlike types compare by value
    assert shared_prefix(a, a + b) == len(a)


@given(st.lists(st.integers(0, 2), max_size=40), st.lists(st.integers(0, 2), max_size=40), st.integers(0, 5))
def test_align_is_the_loop_with_holes(a, b, max_holes):
    assert align(a, b, max_holes) == _loop_align(a, b, max_holes)


def test_shared_prefix_of_drafts_is_by_identity():
    drafts = [BlockDraft(f"p{i}", "message_text", "user", None, "same") for i in range(10)]
    twins = [BlockDraft(d.path, d.kind, d.role, d.wire, d.text) for d in drafts]  # equal fields, new objects
    assert shared_prefix(drafts, drafts[:7] + twins[7:]) == 7
    assert shared_prefix(drafts, twins) == 0
    items = [{"a": i} for i in range(5)]
    assert identical_prefix(items, items[:3] + [dict(x) for x in items[3:]]) == 3


@given(st.binary(max_size=300), st.integers(0, 5), st.integers(0, 70_000), st.booleans())
def test_shared_bytes_is_the_common_prefix(seed, extra, where, flip):
    a = (seed or b"x") * (1 + 70_000 // max(1, len(seed)))  # long enough to cross several chunks
    b = bytearray(a)
    if flip and b:
        b[where % len(b)] ^= 0x40
    b = bytes(b) + b"y" * extra
    assert shared_bytes(a, b) == common_prefix_len(a, b) == _loop_prefix(a, b)
    assert shared_bytes(b, a) == common_prefix_len(b, a)


@pytest.mark.parametrize("where", [0, 1, 4095, 4096, 4097, 12_287, 12_288, 65_535, 65_536, 200_000, 299_999])
def test_shared_bytes_at_chunk_edges(where):
    a = bytes(range(256)) * 1200
    b = a[:where] + bytes([a[where] ^ 1]) + a[where + 1:]
    assert shared_bytes(a, b) == where
    assert shared_bytes(a, a) == len(a)
    assert shared_bytes(a, a[:where]) == where
