"""DuckDB views -> the report's context: plain dataclasses and dicts that templates only read.

Each capture is read through its own connection (`analysis.db.connect([capture])`),
so capture-local ids (`gemini-cli:auto:1`, HAR flow ids) can never mix between
captures; the comparison is assembled from the per-capture results. Templates
never query and never compute: a new analysis is a view, a query in one of
the section builders (sessions, overview, comparison), and one partial.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import duckdb

from ctxtap.reports.html.blockdata import MIN_CAP_BYTES, TEXT_ENTRY_MIN_BYTES, BlockData
from ctxtap.reports.html.budget import Detail, ctxtap_sql
from ctxtap.reports.html.comparison import build_comparison
from ctxtap.reports.html.effects import build_effects
from ctxtap.reports.html.events import MAX_DRAWN, MAX_DRAWN_BUDGETED, build_events
from ctxtap.reports.html.evidence import build_evidence
from ctxtap.reports.html.model import LARGE_TABLE, CaptureInfo, ReportContext, SessionView
from ctxtap.reports.html.overview import build_overview
from ctxtap.reports.html.sessions import build_sessions

__all__ = ["LARGE_TABLE", "Connections", "ReportContext", "build_context", "capture_info"]


class Connections:
    """One sandboxed connection per set of captures for the whole of one report: opening one binds
    every view over the datasets (a quarter of a second for a capture), and a report reads the same
    captures for its plan, each capture, the overview and every re-planned render."""

    def __init__(self, opener: Callable[[list[Path]], duckdb.DuckDBPyConnection] | None = None) -> None:
        """`opener`: how a set of captures is opened (default: their local datasets; `ctxtap report` over
        a store passes one that reads the store in place, the captures named by their ids)."""
        self._open: dict[tuple[Path, ...], duckdb.DuckDBPyConnection] = {}
        self._opener = opener

    def get(self, captures: Sequence[Path]) -> duckdb.DuckDBPyConnection:
        from ctxtap.analysis.db import connect

        key = tuple(Path(p) for p in captures)
        if key not in self._open:
            self._open[key] = (self._opener or connect)(list(key))
        return self._open[key]

    def close(self) -> None:
        for con in self._open.values():
            con.close()
        self._open.clear()


def capture_info(path: Path, con: duckdb.DuckDBPyConnection) -> CaptureInfo:
    capture_id, source, started_at, ended_at = con.execute(
        "SELECT capture_id, source, started_at, ended_at FROM captures").fetchone()
    n = con.execute("SELECT count(*) FROM requests").fetchone()[0]
    return CaptureInfo(path=Path(path), capture_id=capture_id, name=Path(path).name, source=source or "",
                       started_at=started_at, ended_at=ended_at, n_requests=n)


def plan_inputs(captures: Sequence[Path], cons: Connections | None = None) -> tuple[int, int]:
    """(model requests, bytes the distinct block texts take at least) of a report of these captures,
    to plan its detail before building it."""
    con = (cons or Connections()).get(captures)
    requests = con.execute("SELECT count(*) FROM requests").fetchone()[0]
    (texts,) = con.execute(f"""
        SELECT coalesce(sum(least(bytes, {MIN_CAP_BYTES}) + {TEXT_ENTRY_MIN_BYTES}), 0) FROM (
            SELECT DISTINCT c.content_hash, c.bytes FROM t_block_occurrences o
            JOIN t_block_content c ON c.capture_id = o.capture_id AND c.content_hash = o.content_hash)""").fetchone()
    return requests, int(texts)


def build_context(captures: Sequence[Path], title: str | None = None, detail: Detail | None = None,
                  cons: Connections | None = None) -> ReportContext:
    """Read every capture's analysis dataset (which must exist) into one report context, as detailed
    as `detail` allows (default: every request)."""
    cons = cons or Connections()
    detail = detail or Detail.full()
    blocks = BlockData()
    blocks.compact = not detail.is_full
    per_capture = []
    sessions: list[SessionView] = []
    notes: list[str] = []
    for path in captures:
        con = cons.get([path])
        cap = capture_info(Path(path), con)
        blocks.add_capture(con, cap.capture_id, ctxtap_sql(cap.path))
        mine = build_sessions(cap, con, blocks, len(sessions), detail, notes)
        timelines = build_events(con, cap, MAX_DRAWN if detail.is_full else MAX_DRAWN_BUDGETED)
        for s in mine:
            s.timeline = timelines.get(s.session_id)
        sessions.extend(mine)
        per_capture.append((cap, con, mine))
    comparison = build_comparison(per_capture, blocks)
    evidence = build_evidence(per_capture)
    effects = build_effects(per_capture)
    infos = [cap for cap, _, _ in per_capture]
    if title is None:
        clients = sorted({s.client for s in sessions})
        title = f"ctxtap report — {', '.join(clients) or 'no model traffic'}"
    overview = build_overview(cons.get(captures))
    return ReportContext(title=title, captures=infos, overview=overview, sessions=sessions,
                         comparison=comparison, blocks=blocks, notes=notes, detail=detail, evidence=evidence,
                         effects=effects)
