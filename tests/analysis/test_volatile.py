"""The volatile-field masker replay hands the diff engine: what it masks, and what it leaves alone."""

from __future__ import annotations

from ctxtap.analysis.blocks.volatile import normalise, volatile_changes, volatile_fields
from ctxtap.analysis.compare.diff import BlockSide, diff_blocks


def test_dates_ids_temp_paths_and_hashes_are_masked():
    text = ("Today's date is 2026-12-01. Current time: 2026-12-01T11:40:00Z. Monday, December 1, 2026 at 11:40:00. "
            "Session 550e8400-e29b-41d4-a716-446655440000, request req_011CVabc123, temp dir /tmp/claude-1000/x.json; "
            "billing cch=61a74; cch=27819; commit 3fbde82a1b2c3d4e5f60718293a4b5c6d7e8f901.")
    masked = normalise(text)
    for value in ("2026", "11:40", "550e8400", "req_011", "/tmp/", "61a74", "27819", "3fbde82a"):
        assert value not in masked, value
    assert "<timestamp>" in masked and "<uuid>" in masked and "<temp-path>" in masked and "<hash>" in masked
    assert masked.startswith("Today's date is <date>. Current time: <timestamp>.")


def test_ordinary_text_is_left_alone():
    text = ("Read the file src/main.py and list 3 functions; use tools at most 12 times (version 2.1). "
            '{"max_tokens":32000,"maxLength":10000} port=12345')
    assert normalise(text) == text
    assert volatile_fields(text) == []


def test_tool_run_durations_are_volatile():
    a = "Exit code: 0\nWall time: 0.3 seconds\nOutput:\nREADME.md"
    b = "Exit code: 0\nWall time: 0.1 seconds\nOutput:\nREADME.md"
    assert normalise(a) == normalise(b) and volatile_changes(a, b) == ["duration 0.3 seconds -> 0.1 seconds"]
    assert normalise('{"duration_ms": 12, "ok": true}') == normalise('{"duration_ms": 48, "ok": true}')
    assert normalise("Exit code: 0") != normalise("Exit code: 1")


def test_changes_are_listed_by_kind_and_value():
    a = "Current time: 2026-11-30T09:00:00Z in /tmp/run-aaa, id msg_01ABCDEFGH"
    b = "Current time: 2026-12-01T10:00:00Z in /tmp/run-bbb, id msg_01ABCDEFGH"
    assert volatile_changes(a, b) == ["timestamp 2026-11-30T09:00:00Z -> 2026-12-01T10:00:00Z",
                                      "temp path /tmp/run-aaa -> /tmp/run-bbb"]
    assert volatile_changes(a, a) == []


def test_the_diff_engine_calls_a_volatile_change_same():
    def side(text: str) -> BlockSide:
        return BlockSide(position=0, path="system[1]", kind="instruction_text", content_hash=str(hash(text)), text=text)

    [volatile] = diff_blocks([side("date 2026-11-30")], [side("date 2026-12-01")], normalise=normalise)
    assert volatile.op == "same" and volatile.volatile
    [real] = diff_blocks([side("date 2026-11-30, be brief")], [side("date 2026-12-01, be thorough")],
                         normalise=normalise)
    assert real.op == "changed" and not real.volatile
