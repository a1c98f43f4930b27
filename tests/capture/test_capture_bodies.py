"""Body storage: delta-compressed against earlier bodies, always decoding to the exact bytes."""

from __future__ import annotations

import json
import os
import random

import pytest
import zstandard as zstd
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxtap.capture.bodies import (
    KEYFRAME_EVERY,
    TAIL_HEADER,
    BodyDecoder,
    BodyEncoder,
    BodyFormatError,
    BodyView,
    common_prefix_len,
)


def _roundtrip(bodies: list[tuple[bytes, str]]) -> tuple[list, dict]:
    enc = BodyEncoder()
    stored = {}
    encoded = []
    for data, key in bodies:
        e = enc.encode(data, key)
        stored[e.body_id] = (e.codec, e.base_id, e.data)
        encoded.append(e)
    return encoded, stored


def growing_history(turns: int, seed: int = 1) -> list[bytes]:
    rnd = random.Random(seed)
    messages: list[dict] = [{"role": "system", "content": "rules " * 500}]
    out = []
    for i in range(turns):
        messages.append({"role": "user", "content": f"turn {i} " + "".join(rnd.choice("abcdef ") for _ in range(800))})
        out.append(json.dumps({"model": "m", "messages": messages}).encode())
    return out


def test_every_body_decodes_to_exact_bytes_and_history_is_delta_encoded():
    bodies = growing_history(40)
    encoded, stored = _roundtrip([(b, "thread-a") for b in bodies])
    decoder = BodyDecoder(lambda i: stored[i], cache_size=2)
    for e, original in zip(encoded, bodies, strict=True):
        assert decoder.get(e.body_id) == original
    codecs = [e.codec for e in encoded]
    assert codecs[0] == "zstd"
    assert codecs.count("zstd-tail") >= len(bodies) - len(bodies) // KEYFRAME_EVERY - 1
    stored_bytes = sum(len(e.data) for e in encoded)
    raw_bytes = sum(len(b) for b in bodies)
    # Storage follows the unique content, not the resent history: a delta costs
    # about what the turn added (~800 random chars), not the whole history.
    deltas = sorted(len(e.data) for e in encoded if e.codec == "zstd-tail")
    assert deltas[len(deltas) // 2] < 800
    assert stored_bytes < raw_bytes / 15


def test_chains_are_bounded_by_keyframes():
    bodies = growing_history(3 * KEYFRAME_EVERY)
    encoded, stored = _roundtrip([(b, "k") for b in bodies])
    depth: dict[int, int] = {}
    for e in encoded:
        depth[e.body_id] = depth[e.base_id] + 1 if e.codec == "zstd-tail" else 0
    assert max(depth.values()) == KEYFRAME_EVERY - 1
    assert sum(1 for e in encoded if e.codec == "zstd") >= 3


def test_identical_bodies_are_stored_once():
    encoded, stored = _roundtrip([(b"same body", "a"), (b"other", "b"), (b"same body", "c")])
    assert encoded[2].codec == "ref" and encoded[2].base_id == encoded[0].body_id
    decoder = BodyDecoder(lambda i: stored[i])
    assert decoder.get(encoded[2].body_id) == b"same body"


def test_interleaved_streams_pick_their_own_base():
    a = growing_history(5, seed=1)
    b = growing_history(5, seed=2)
    order = [x for pair in zip(a, b, strict=True) for x in pair]
    keys = ["a", "b"] * 5
    encoded, stored = _roundtrip(list(zip(order, keys, strict=True)))
    decoder = BodyDecoder(lambda i: stored[i])
    for e, original in zip(encoded, order, strict=True):
        assert decoder.get(e.body_id) == original
    assert all(e.codec == "zstd-tail" for e in encoded[2:])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.binary(max_size=3000), st.sampled_from(["x", "y"])), max_size=12))
def test_roundtrip_arbitrary_bytes(bodies):
    bodies = [(d, k) for d, k in bodies if d]
    encoded, stored = _roundtrip(bodies)
    decoder = BodyDecoder(lambda i: stored[i], cache_size=1)
    for e, (original, _) in zip(encoded, bodies, strict=True):
        assert decoder.get(e.body_id) == original


def test_common_prefix_len():
    assert common_prefix_len(b"abcdef", b"abcxyz") == 3
    assert common_prefix_len(b"abc", b"abc") == 3
    assert common_prefix_len(b"", b"abc") == 0
    big = os.urandom(100_000)
    assert common_prefix_len(big, big[:60_000] + b"!" + big[60_001:]) == 60_000 or big[60_000:60_001] == b"!"


def test_the_oldest_base_is_let_go_before_the_new_body_is_compressed() -> None:
    """With a stream's candidates full, encoding holds no more bodies than it keeps afterwards
    (the writer's peak with 1 MB bodies: one body less)."""
    import tracemalloc

    from ctxtap.capture.bodies import CANDIDATES_PER_STREAM

    tracemalloc.start()  # before the bases exist, so letting one go shows
    try:
        enc = BodyEncoder()
        for _ in range(CANDIDATES_PER_STREAM):
            enc.encode(os.urandom(1 << 20), "s")  # unrelated bodies: each a keyframe and a candidate
        body = os.urandom(1 << 20)
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        encoded = enc.encode(body, "s")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert encoded.codec == "zstd"
    assert peak - before < (1 << 20) // 2  # the compressed copy took the oldest base's place


def test_a_delta_records_the_prefix_it_shares_with_its_base():
    bodies = growing_history(KEYFRAME_EVERY + 3)
    encoded, stored = _roundtrip([(b, "s") for b in bodies] + [(bodies[-1], "s")])
    decoder = BodyDecoder(lambda i: stored[i])
    by_id = {e.body_id: data for e, data in zip(encoded, [*bodies, bodies[-1]], strict=True)}
    for e in encoded:
        got = decoder.prefix(e.body_id)
        if e.codec == "zstd":
            assert got is None  # a keyframe names no base
        elif e.codec == "ref":
            assert got == (e.base_id, None)  # all of it
        else:
            assert got == (e.base_id, common_prefix_len(by_id[e.body_id], by_id[e.base_id]))
            # the delta costs about what the body adds, not the history it shares
            assert len(e.data) < len(by_id[e.body_id]) - got[1]
    assert any(e.codec == "ref" for e in encoded) and any(e.codec == "zstd-tail" for e in encoded)


def test_an_early_change_finds_the_rest_in_the_base():
    """A value changed near the start (Claude Code's per-request billing hash): the rest of the
    body is compressed against the rest of the base, so the delta stays small."""
    history = os.urandom(200_000).hex().encode()
    first = b'{"system": "cch=00001", "messages": "' + history + b'"}'
    second = b'{"system": "cch=00002", "messages": "' + history + b'more"}'
    enc = BodyEncoder()
    a = enc.encode(first + b" " * 300, "s")  # a shared prefix long enough to make a delta
    b = enc.encode(first[:300] + second, "s")
    assert b.codec == "zstd-tail" and TAIL_HEADER.unpack_from(b.data)[1] < len(first) + 300  # a dictionary
    assert len(b.data) < 2_000
    stored = {e.body_id: (e.codec, e.base_id, e.data) for e in (a, b)}
    assert BodyDecoder(lambda i: stored[i]).get(b.body_id) == first[:300] + second


def test_older_captures_zstd_delta_bodies_still_decode():
    base, body = b"x" * 5000 + b"base end", b"x" * 5000 + b"a new end"
    comp = zstd.ZstdCompressor(dict_data=zstd.ZstdCompressionDict(base, dict_type=zstd.DICT_TYPE_RAWCONTENT))
    stored = {1: ("zstd", None, zstd.ZstdCompressor().compress(base)), 2: ("zstd-delta", 1, comp.compress(body))}
    decoder = BodyDecoder(lambda i: stored[i])
    assert decoder.get(2) == body
    assert decoder.prefix(2) is None  # not recorded in that format: readers compare the bodies


@pytest.mark.parametrize("blob", [b"", TAIL_HEADER.pack(10**9, 0), TAIL_HEADER.pack(3, 10**9)])
def test_a_damaged_tail_row_is_a_clear_error(blob):
    stored = {1: ("zstd", None, zstd.ZstdCompressor().compress(b"the base")), 2: ("zstd-tail", 1, blob)}
    with pytest.raises(BodyFormatError, match="body 2"):
        BodyDecoder(lambda i: stored[i]).get(2)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(min_size=1, max_size=12), max_size=6), st.data())
def test_a_body_view_reads_like_its_joined_bytes(parts, data):
    """Slices, `in`, `startswith` and a head with a new tail: as on the joined bytes, also
    across the boundaries between pieces."""
    pieces = []
    for part in parts:  # each piece a range inside a larger buffer, as views hold them
        pad = data.draw(st.integers(0, 3))
        pieces.append((b"#" * pad + part + b"#", pad, pad + len(part)))
    view, joined = BodyView(tuple(pieces)), b"".join(parts)
    assert len(view) == len(joined) and bytes(view) == joined
    a = data.draw(st.integers(-3, len(joined) + 3))
    b = data.draw(st.integers(-3, len(joined) + 3))
    assert view[a:b] == joined[a:b]
    needle = data.draw(st.binary(max_size=5) | st.just(joined[max(a, 0):max(a, 0) + 4]))
    assert (needle in view) == (needle in joined)
    assert view.startswith(needle, max(a, 0)) == joined.startswith(needle, max(a, 0))
    shared, tail = data.draw(st.integers(0, len(joined))), data.draw(st.binary(max_size=8))
    assert bytes(view.head_then(shared, tail)) == joined[:shared] + tail


def test_a_long_chain_is_read_without_joining_its_history():
    """Each delta adds one piece (the history stays in the keyframe's buffer and the earlier
    tails), and the whole bytes are what was stored."""
    bodies = growing_history(KEYFRAME_EVERY - 1)
    encoded, stored = _roundtrip([(b, "s") for b in bodies])
    decoder = BodyDecoder(lambda i: stored[i])
    for e, original in zip(encoded, bodies, strict=True):
        view = decoder.view(e.body_id)
        assert bytes(view) == original
        assert len(view._pieces) <= e.body_id  # one piece more per delta at most
    assert len(decoder.view(encoded[-1].body_id)._pieces) > 1


def test_an_unknown_codec_is_a_clear_error_not_its_base():
    """A row written by a newer ctxtap is not read as the bytes of its base."""
    stored = {1: ("zstd", None, zstd.ZstdCompressor().compress(b"the base")), 2: ("zstd-future", 1, b"...")}
    with pytest.raises(BodyFormatError, match="body 2: unknown codec 'zstd-future'"):
        BodyDecoder(lambda i: stored[i]).get(2)


def test_a_big_streamed_body_is_compressed_in_pieces_and_kept_as_no_base(monkeypatch) -> None:
    """`encode_parts`: a body past MAX_BASE_BYTES is hashed and compressed piece by piece (never
    joined), decodes exactly, dedupes as a whole, and is no delta base; a small one is encoded as
    `encode` would (a base for the next)."""
    from ctxtap.capture import bodies

    monkeypatch.setattr(bodies, "MAX_BASE_BYTES", 10_000)
    enc, stored = BodyEncoder(), {}
    parts = [os.urandom(3000) for _ in range(10)]
    big = enc.encode_parts(parts, "resp s")
    stored[big.body_id] = (big.codec, big.base_id, big.data)
    assert (big.codec, big.size) == ("zstd", 30_000)
    assert BodyDecoder(lambda i: stored[i]).get(big.body_id) == b"".join(parts)
    again = enc.encode_parts(list(parts), "resp s")
    assert (again.codec, again.base_id) == ("ref", big.body_id)
    assert enc.encode(b"".join(parts) + b"more", "resp s").codec == "zstd"  # nothing to be a delta of
    enc.encode_parts([b"x" * 3000, b"y" * 3000], "resp t")
    assert enc.encode(b"x" * 3000 + b"y" * 3000 + b"z", "resp t").codec == "zstd-tail"


def test_bases_stay_within_their_byte_budget(monkeypatch) -> None:
    """However many streams, the bodies kept as bases never pass BASES_BUDGET bytes, the least
    recently used streams' oldest going first; the stream just written keeps its body."""
    from ctxtap.capture import bodies

    monkeypatch.setattr(bodies, "BASES_BUDGET", 50_000)
    enc = BodyEncoder()
    rnd = random.Random(3)
    for _ in range(60):
        key = f"s{rnd.randrange(7)}"
        body = os.urandom(4000 + rnd.randrange(6000))
        enc.encode(body, key)
        kept = [len(b) for chain in enc._streams.values() for _, b, _ in chain]
        assert sum(kept) == enc._base_bytes <= 50_000
        assert enc._streams[key][-1][1] == body
    assert enc._base_bytes > 35_000  # what fits is kept
