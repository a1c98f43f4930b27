"""The live view at scale: what a page reads follows the page, not the capture (issue 15, item 4)."""

from __future__ import annotations

import json
from pathlib import Path

from ctxtap.analysis.db import connect
from ctxtap.reports.html.blockdata import BlockData, Ribbon, RibbonRow

# thread_bin_sources as it was first written: the mean of tokens_by_source over each bin's requests
# (it expands every position of every request; the view computes the same from runs).
NAIVE_BIN_SOURCES = """
SELECT m.capture_id, m.thread_id, m.bin, s.source, sum(s.tokens_estimated) / any_value(m.n_requests)
FROM (SELECT b.capture_id, b.thread_id, b.bin, b.request_id,
             count(*) OVER (PARTITION BY b.capture_id, b.thread_id, b.bin) AS n_requests
      FROM request_bins(?) b) m
JOIN tokens_by_source s ON s.capture_id = m.capture_id AND s.request_id = m.request_id
GROUP BY m.capture_id, m.thread_id, m.bin, s.source
"""
VIEW_BIN_SOURCES = "SELECT capture_id, thread_id, bin, source, mean_tokens_estimated FROM thread_bin_sources(?)"


def _same_bin_sources(capture: Path) -> None:
    con = connect([capture])
    for k in (1, 3, 7):
        naive = sorted(con.execute(NAIVE_BIN_SOURCES, [k]).fetchall())
        assert naive, "the capture has requests with blocks"
        assert sorted(con.execute(VIEW_BIN_SOURCES, [k]).fetchall()) == naive, f"bins of {k}"


def test_thread_bin_sources_equals_the_mean_of_tokens_by_source_on_a_long_session(synth1000: Path) -> None:
    _same_bin_sources(synth1000)


def test_thread_bin_sources_equals_the_mean_of_tokens_by_source_with_subagents_and_sections(
        demo_capture: Path) -> None:
    _same_bin_sources(demo_capture)


def test_thread_bin_sources_equals_the_mean_of_tokens_by_source_on_real_clients(
        corpus_captures: list[Path]) -> None:
    for capture in corpus_captures:
        _same_bin_sources(capture)


def _ribbon(con, capture_id: str, ids: list[str], only: bool) -> tuple[BlockData, Ribbon]:
    blocks = BlockData()
    blocks.compact = True
    blocks.add_capture(con, capture_id, "ctxtap sql X", request_ids=ids if only else None)
    blocks.load_positions(capture_id, ids)
    ribbon = Ribbon("req", [RibbonRow(key=i, capture_id=capture_id, label=i, thread="t") for i in ids])
    blocks.add_ribbon(ribbon)
    return blocks, ribbon


def _resolved(data_json: str) -> dict:
    """The embedded data with interned strings spelled out (the string tables differ in order)."""
    data = json.loads(data_json)
    strings = data.pop("strings")
    for name in ("path", "kind", "attrs", "rule", "tool"):
        data["occ"][name] = [strings[i] for i in data["occ"][name]]
    for ribbon in data["ribbons"].values():
        for row in ribbon["rows"]:
            row["bp"] = [strings[v] if k % 2 else v for k, v in enumerate(row["bp"])]
    return data


def test_a_request_pages_ribbon_reads_only_its_requests_blocks_and_draws_the_same(synth1000: Path) -> None:
    con = connect([synth1000])
    capture_id, n_occurrences = con.execute(
        "SELECT any_value(capture_id), count(*) FROM t_block_occurrences").fetchone()
    last = con.execute("SELECT r.request_id, p.previous_request_id FROM requests r JOIN prefix p USING (request_id) "
                       "WHERE p.previous_request_id IS NOT NULL ORDER BY r.seq_in_session DESC LIMIT 1").fetchone()
    ids = [last[1], last[0]]
    full, full_ribbon = _ribbon(con, capture_id, ids, only=False)
    part, part_ribbon = _ribbon(con, capture_id, ids, only=True)
    distinct = con.execute("SELECT count(DISTINCT occurrence_id) FROM blocks WHERE request_id IN (?, ?)", ids).fetchone()[0]
    assert len(full.cols["src"]) >= n_occurrences > 2 * distinct  # the whole capture, against ...
    assert len(part.cols["src"]) == distinct  # ... only what the two requests use
    assert [(r.tokens, r.n_blocks) for r in part_ribbon.rows] == [(r.tokens, r.n_blocks) for r in full_ribbon.rows]
    assert part_ribbon.rows[-1].n_blocks == con.execute(
        "SELECT count(*) FROM blocks WHERE request_id = ?", [ids[1]]).fetchone()[0]
    assert _resolved(part.data_json()) == _resolved(full.data_json())  # the page embeds the same data
    assert part.texts_json(100_000) == full.texts_json(100_000)


def test_live_history_shares_resent_blocks_so_each_update_compares_pointers(synth30: Path, tmp_path: Path) -> None:
    """A live update feeds every request again to a fresh block store: the blocks a request resends
    must be the very objects its predecessor held (equal ones would be compared field by field)."""
    from ctxtap.analysis.blocks.sequences import shared_prefix
    from ctxtap.analysis.live import LiveAnalysis

    live = LiveAnalysis(synth30, tmp_path / "work")
    assert live.poll()
    history = [blocks for _, blocks in live._history]
    assert len(history) >= 30
    resent = 0
    for earlier, later in zip(history, history[1:], strict=False):
        k = shared_prefix(earlier, later)
        assert all(a is b for a, b in zip(earlier[:k], later[:k], strict=True))
        resent += k
    assert resent > 10 * len(history)  # the session resends its history: most blocks are shared objects
