"""analysis/compare/diff.py: block matching on hand-made layouts, and request diffs over real analysed captures."""

from __future__ import annotations

import re

import pytest

from ctxtap.analysis.compare.diff import (
    BlockSide,
    cache_break_position,
    diff_blocks,
    first_divergence,
    load_blocks,
    predecessor,
    request_diff,
    tokens_by_op,
)


def side(position: int, h: str, path: str | None = None, text: str | None = None, tokens: int = 10,
         breakpoint: bool = False) -> BlockSide:
    return BlockSide(position=position, path=path or f"messages[{position}]", role="user", source="user_task",
                     kind="message_text", content_hash=h, tokens_estimated=tokens, is_cache_breakpoint=breakpoint,
                     text=text)


def ops(changes) -> list[tuple[str, str | None, str | None]]:
    return [(c.op, c.a.content_hash if c.a else None, c.b.content_hash if c.b else None) for c in changes]


def test_identical_layouts_are_all_same() -> None:
    a = [side(0, "x"), side(1, "y")]
    changes = diff_blocks(a, list(a))
    assert [c.op for c in changes] == ["same", "same"]
    assert first_divergence(changes) is None


def test_an_insertion_does_not_make_the_blocks_after_it_moved() -> None:
    a = [side(0, "x"), side(1, "y"), side(2, "z")]
    b = [side(0, "x"), side(1, "new"), side(2, "y"), side(3, "z")]
    changes = diff_blocks(a, b)
    assert ops(changes) == [("same", "x", "x"), ("only_b", None, "new"), ("same", "y", "y"), ("same", "z", "z")]
    assert first_divergence(changes) == 1


def test_same_path_other_hash_is_changed_with_a_text_diff() -> None:
    a = [side(0, "x", "system[0]", "intro\nline two\nend"), side(1, "y")]
    b = [side(0, "x2", "system[0]", "intro\nline 2\nend"), side(1, "y")]
    changes = diff_blocks(a, b)
    assert [c.op for c in changes] == ["changed", "same"]
    assert changes[0].text_diff == ["@@ -1,3 +1,3 @@", " intro", "-line two", "+line 2", " end"]


def test_changed_pairs_by_path_before_order() -> None:
    a = [side(0, "p", "tools[0]"), side(1, "q", "tools[1]")]
    b = [side(0, "q2", "tools[1]"), side(1, "p2", "tools[0]")]
    assert ops(diff_blocks(a, b)) == [("changed", "q", "q2"), ("changed", "p", "p2")]


def test_a_block_found_elsewhere_is_moved_and_removed_blocks_stay_where_they_were() -> None:
    a = [side(0, "t1"), side(1, "t2"), side(2, "gone"), side(3, "t3")]
    b = [side(0, "t2"), side(1, "t1"), side(2, "t3")]
    changes = diff_blocks(a, b)
    got = ops(changes)
    assert ("moved", "t1", "t1") in got or ("moved", "t2", "t2") in got
    assert ("only_a", "gone", None) in got
    assert got.index(("only_a", "gone", None)) == len(got) - 2  # before t3, as in A
    assert [c.op for c in changes].count("same") == 2


def test_a_removed_block_is_only_a_at_its_place() -> None:
    a = [side(0, "x"), side(1, "y"), side(2, "z")]
    b = [side(0, "x"), side(1, "z")]
    assert ops(diff_blocks(a, b)) == [("same", "x", "x"), ("only_a", "y", None), ("same", "z", "z")]


def test_segment_changes_name_the_sections_that_differ() -> None:
    from ctxtap.analysis.compare.diff import SegmentSide, segment_changes

    def segs(*bounds: tuple[str | None, str, int, int]) -> list[SegmentSide]:
        return [SegmentSide(segment_index=i, label=label, source=source, byte_start=s, byte_end=e)
                for i, (label, source, s, e) in enumerate(bounds)]

    a = side(0, "a", "system[0]", "rules\n# Env\ncwd /x\n")
    b = side(0, "b", "system[0]", "rules\n# Env\ncwd /y\n<r>note</r>")
    a.segments = segs((None, "platform_rules", 0, 6), ("Env", "runtime_environment", 6, 19))
    b.segments = segs((None, "platform_rules", 0, 6), ("Env", "runtime_environment", 6, 19),
                      ("r", "system_reminder", 19, 30))
    assert segment_changes(a, b) == ["Env changed", "r added"]
    assert segment_changes(b, a) == ["Env changed", "r removed"]
    one = side(0, "c", "system[0]", "x")
    assert segment_changes(one, one) is None  # not loaded


def test_normalise_turns_a_volatile_change_into_same() -> None:
    a = [side(0, "h1", "system[0]", "billing cch=49d84;"), side(1, "s1", "system[1]", "Time: 10:00\nrules")]
    b = [side(0, "h2", "system[0]", "billing cch=7a1f2;"), side(1, "s2", "system[1]", "Time: 11:00\nrules")]

    def mask_hex(text: str) -> str:
        return re.sub(r"cch=[0-9a-f]+", "cch=#", text)

    changes = diff_blocks(a, b, normalise=mask_hex)
    assert [(c.op, c.volatile) for c in changes] == [("same", True), ("changed", False)]
    assert first_divergence(changes) == 1
    assert tokens_by_op(changes) == {"same": 10, "changed": 10, "moved": 0, "only_a": 0, "only_b": 0}


def test_cache_break_position_snaps_to_a_breakpoint() -> None:
    blocks = [side(0, "a", tokens=100), side(1, "b", tokens=100, breakpoint=True), side(2, "c", tokens=50),
              side(3, "d", tokens=50, breakpoint=True)]
    assert cache_break_position(blocks, None) is None
    assert cache_break_position(blocks, 0) == 0
    assert cache_break_position(blocks, 210) == 2  # read up to the first breakpoint
    assert cache_break_position(blocks, 290) == 4  # everything
    assert cache_break_position(blocks, 110, estimate_ratio=0.5) == 2  # estimates are twice what was reported


# -- over a real capture: the simulated Claude Code agent through the recording proxy --------


@pytest.fixture(scope="module")
def claude(tmp_path_factory, ctxtap_config):
    from ctxtap.analysis.db import connect
    from tests.democaptures import agent_capture

    capture = agent_capture(tmp_path_factory.mktemp("diff-claude"), ctxtap_config, "claude", turns=3)
    return connect([capture])


def main_requests(con) -> list[tuple[str, int]]:
    return con.execute("""SELECT request_id, seq_in_thread FROM requests
                          WHERE thread_kind = 'main' AND error_layer IS NULL ORDER BY seq_in_thread""").fetchall()


def test_load_blocks_matches_the_blocks_view(claude) -> None:
    rid = main_requests(claude)[-1][0]
    blocks = load_blocks(claude, rid, with_text=True)
    rows = claude.execute("SELECT position, content_hash FROM blocks WHERE request_id = ? ORDER BY position",
                          [rid]).fetchall()
    assert [(b.position, b.content_hash) for b in blocks] == rows
    assert all(b.text is not None for b in blocks)
    assert load_blocks(claude, "no-such-request") == []


def test_predecessor_is_the_previous_request_of_the_thread(claude) -> None:
    rows = claude.execute("SELECT request_id, thread_id, seq_in_thread FROM requests").fetchall()
    by_place = {(t, s): r for r, t, s in rows}
    for rid, thread, seq in rows:
        assert predecessor(claude, rid) == by_place.get((thread, seq - 1))
    assert predecessor(claude, "no-such-request") is None


def test_a_request_against_its_predecessor_extends_it(claude) -> None:
    """Inside a turn, a request resends its predecessor and appends: the billing hash aside, all same."""
    (rid_a, _), (rid_b, _) = main_requests(claude)[:2]
    d = request_diff(claude, rid_b)
    assert (d.a_request_id, d.b_request_id) == (rid_a, rid_b)
    counts = d.counts()
    n_a = len(load_blocks(claude, rid_a))
    n_b = len(load_blocks(claude, rid_b))
    assert counts["only_a"] == 0 and counts["same"] + counts["changed"] == n_a
    assert counts["only_b"] == n_b - n_a > 0
    # the billing block's per-request hash (cch=...) is the first thing that differs
    first = d.changes[d.first_divergence]
    assert first.op == "changed" and first.b.path == "system[0]" and "a per-request hash" in d.first_divergence_words
    assert any(line.startswith("-x-anthropic-billing-header") for line in first.text_diff)
    # tokens by op add up to B's estimated input
    est = claude.execute("SELECT input_tokens_estimated FROM requests WHERE request_id = ?", [rid_b]).fetchone()[0]
    assert sum(v for k, v in d.tokens_by_op.items() if k != "only_a") == est


def test_the_timestamp_is_the_first_divergence_once_the_hash_is_masked(claude) -> None:
    """Turn 3 puts a timestamp at the top of the system prompt; masked ids leave exactly that change."""
    stamped = claude.execute("""
        SELECT b.request_id FROM blocks b JOIN t_block_content c USING (capture_id, content_hash)
        JOIN requests r USING (capture_id, request_id)
        WHERE r.thread_kind = 'main' AND c.text LIKE 'Current time:%' ORDER BY r.seq_in_thread LIMIT 1""").fetchone()[0]

    def mask(text: str) -> str:
        return re.sub(r"cch=[0-9a-f]+", "cch=#", text)

    d = request_diff(claude, stamped, normalise=mask)
    first = d.changes[d.first_divergence]
    billing = next(c for c in d.changes if c.b is not None and c.b.path == "system[0]")
    assert billing.op == "same" and billing.volatile
    assert first.op == "changed" and first.b.role == "system"
    assert first.b.text.startswith("Current time:") and not first.a.text.startswith("Current time:")
    assert "a timestamp inserted" in d.first_divergence_words and "1 line differs" in d.first_divergence_words
    # the stamp is a runtime-environment segment of its own at the top of the block
    assert "runtime_environment added" in first.segment_changes
    assert "segments: " in d.first_divergence_words
    assert d.first_divergence_words.startswith(f"block {first.b.position} ({first.b.path}, system / ")
    # explicit A and B give the same diff; the reverse diff swaps the sides
    again = request_diff(claude, d.a_request_id, stamped, normalise=mask)
    assert again.model_dump() == d.model_dump()
    back = request_diff(claude, stamped, d.a_request_id, normalise=mask)
    assert back.changes[back.first_divergence].a.content_hash == first.b.content_hash


def test_cache_reads_and_the_break_position_come_from_the_capture(claude) -> None:
    rows = main_requests(claude)
    rid = rows[1][0]
    d = request_diff(claude, rid)
    read = claude.execute("SELECT cache_read_tokens FROM requests WHERE request_id = ?", [rid]).fetchone()[0]
    assert d.b_cache_read_tokens == read
    if read is not None:
        assert d.cache_break_position is not None and 0 <= d.cache_break_position <= len(load_blocks(claude, rid))


def test_unknown_requests_are_refused_in_words(claude) -> None:
    with pytest.raises(LookupError, match="not in these captures"):
        request_diff(claude, "nope", main_requests(claude)[0][0])
    first = main_requests(claude)[0][0]
    with pytest.raises(LookupError, match="no predecessor"):
        request_diff(claude, first)


@pytest.mark.parametrize(("old", "new", "label"), [
    ("cch=49d84;", "cch=7a1f2;", "a per-request hash"),
    ("cch=a634d;", "cch=a6319;", "a per-request hash"),  # a shared head: the differing middle is `4d` / `19`
    ("cch=1c3e5;", "cch=9a3e5;", "a per-request hash"),  # a shared tail
    ("retries: 17", "retries: 19", "a number"),
    ("a deaf ear", "a dead ear", "text changed"),  # words of hex letters: no digit, no hash
    ("say hello", "say goodbye", "text changed"),
])
def test_a_change_is_named_from_the_whole_words_when_its_middle_is_short(old, new, label) -> None:
    from ctxtap.analysis.blocks.divergence import describe_change

    assert describe_change("system[0]", old, new).startswith(f"system[0] changed: {label} ")
