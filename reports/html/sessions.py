"""Per-session context: threads with growth and cache charts, the tool loop, side requests, errors.

Each capture is read through its own connection, so capture-local ids never mix.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence

import duckdb
from markupsafe import Markup

from reports.html import charts
from reports.html.blockdata import BlockData, Ribbon, RibbonRow
from reports.html.formatting import short_id
from reports.html.model import (
    REQUESTS_SQL,
    CacheEvent,
    CaptureInfo,
    Row,
    SessionView,
    ThreadView,
    ToolLoop,
    fetch,
)


def thread_label(thread_id: str, kind: str, session_id: str) -> str:
    suffix = thread_id[len(session_id):].lstrip("/") if thread_id.startswith(session_id) else thread_id
    if kind == "main" and suffix in ("main", ""):
        return "main thread"
    return f"{kind} thread {short_id(suffix, 20)}"


def cache_events(rows: Sequence[Row]) -> list[CacheEvent]:
    """Misses grouped by their explanation, prefix changes by kind of change, each with its requests."""
    events: list[CacheEvent] = []
    misses: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        if r.get("miss_cause"):
            misses[f"{r['miss_cause'].replace('_', ' ')}: {r.get('miss_explanation') or ''}"].append(r)
    for text, members in misses.items():
        events.append(CacheEvent("miss", text, len(members), [m["num"] for m in members],
                                 members[0].get("divergence_summary") or ""))
    groups: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        if r.get("prefix_changed") and r.get("divergence_label"):
            groups[r["divergence_label"]].append(r)
    for text, members in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        events.append(CacheEvent("prefix", text, len(members), [m["num"] for m in members],
                                 members[0]["divergence_summary"]))
    return events


def build_toolloop(session_requests: list[Row], calls: list[Row], stats: Row | None,
                   by_name: list[tuple[str, int, int]], label: str) -> ToolLoop:
    nums = {r["request_id"]: r["num"] for r in session_requests}
    for c in calls:
        c["num"] = nums.get(c.get("request_id") or "")
        c["result_num"] = nums.get(c.get("result_request_id") or "")
    calls.sort(key=lambda c: (c["num"] if c["num"] is not None else 1 << 30, c.get("call_index") or 0))
    return ToolLoop(
        svg=charts.timeline_chart(session_requests, calls, label) if calls or session_requests else Markup(""),
        calls=calls, stats=stats or {}, by_name=by_name,
    )


def _marks(r: Row) -> str:
    return ("E" if r.get("error_layer") else "") + ("M" if r.get("miss_cause") and r["miss_cause"] != "cold_start"
                                                     else "") + (
        "D" if r.get("prefix_changed") else "")


def _ribbon_row(r: Row, capture_id: str) -> RibbonRow:
    label = f"#{r['num']} {r.get('purpose') or ''}"
    if r.get("error_layer"):
        label += f" · HTTP {r.get('status')}"
    return RibbonRow(key=r["request_id"], capture_id=capture_id, label=label, thread=r.get("thread_id") or "",
                     marks=_marks(r))


def build_sessions(cap: CaptureInfo, con: duckdb.DuckDBPyConnection, blocks: BlockData,
                   start_index: int) -> list[SessionView]:
    requests = fetch(con, REQUESTS_SQL)
    by_session: dict[str, list[Row]] = defaultdict(list)
    for r in requests:
        r["num"] = (r.get("seq_in_session") or 0) + 1
        by_session[r["session_id"]].append(r)
    totals = {r["session_id"]: r for r in fetch(con, "SELECT * FROM sessions")}
    growth = {g["thread_id"]: g for g in fetch(con, "SELECT * FROM growth")}
    by_source: dict[str, dict[str, int]] = defaultdict(dict)
    for rid, source, tokens in con.execute("SELECT request_id, source, tokens_estimated FROM tokens_by_source").fetchall():
        by_source[rid][source] = int(tokens or 0)
    calls_by_session: dict[str, list[Row]] = defaultdict(list)
    for c in fetch(con, "SELECT * FROM tool_calls ORDER BY session_id, request_id, call_index"):
        calls_by_session[c["session_id"]].append(c)
    loop_stats = {r["session_id"]: r for r in fetch(con, "SELECT * FROM tool_loop")}
    by_name: dict[str, list[tuple[str, int, int]]] = defaultdict(list)
    for sid, name, n, errors in con.execute(
            "SELECT session_id, coalesce(name, '?'), count(*), count(*) FILTER (WHERE result_status = 'error') "
            "FROM tool_calls GROUP BY ALL ORDER BY 3 DESC, 2").fetchall():
        by_name[sid].append((name, n, errors))
    blocks.load_positions(cap.capture_id, [r["request_id"] for r in requests])

    order = sorted(by_session, key=lambda s: min(r["ts_start"] or 0 for r in by_session[s]))
    out: list[SessionView] = []
    for k, sid in enumerate(order):
        rows = sorted(by_session[sid], key=lambda r: (r.get("seq_in_session") or 0, r.get("ts_start") or 0))
        anchor = f"s{start_index + k + 1}"
        client = rows[0].get("client") or "unknown"
        threads: list[ThreadView] = []
        thread_ids = sorted({r["thread_id"] for r in rows if r.get("thread_kind") != "side"},
                            key=lambda t: (0 if t.endswith("/main") else 1,
                                           min(r["seq_in_session"] for r in rows if r["thread_id"] == t)))
        for tid in thread_ids:
            trows = sorted((r for r in rows if r["thread_id"] == tid), key=lambda r: r.get("seq_in_thread") or 0)
            kind = trows[0].get("thread_kind") or "main"
            label = thread_label(tid, kind, sid)
            has_usage = any(r.get("input_tokens_reported") is not None for r in trows)
            threads.append(ThreadView(
                thread_id=tid, label=label, kind=kind, rows=trows, growth=growth.get(tid),
                growth_svg=charts.growth_chart(trows, by_source, growth.get(tid), f"{client} {label}"),
                cache_svg=charts.cache_chart(trows, f"{client} {label}") if has_usage else Markup(""),
                events=cache_events(trows), has_usage=has_usage, open=len(threads) < 2))
        side = [r for r in rows if r.get("thread_kind") == "side"]
        main_rows = [r for r in rows if r.get("thread_kind") != "side"]
        main_ribbon = Ribbon(f"{anchor}-main", [_ribbon_row(r, cap.capture_id) for r in main_rows])
        blocks.add_ribbon(main_ribbon)
        side_ribbon = None
        if side:
            side_ribbon = Ribbon(f"{anchor}-side", [_ribbon_row(r, cap.capture_id) for r in side])
            blocks.add_ribbon(side_ribbon)
        for ribbon, members in ((main_ribbon, main_rows), (side_ribbon, side)):
            for i, r in enumerate(members):
                r["ribbon"], r["row"] = ribbon.rid if ribbon else "", i
        ts = [r["ts_start"] for r in rows if r.get("ts_start")] + [r["ts_end"] for r in rows if r.get("ts_end")]
        out.append(SessionView(
            anchor=anchor, capture=cap, session_id=sid, client=client,
            short=short_id(sid[len(client) + 1:] if sid.startswith(client + ":") else sid, 10),
            client_versions=", ".join(sorted({r["client_version"] for r in rows if r.get("client_version")})) or "–",
            models=", ".join(sorted({r["model"] for r in rows if r.get("model")})) or "–",
            apis=", ".join(sorted({f"{r['api']} ({r['transport']})" for r in rows if r.get("api")})) or "–",
            session_source=rows[0].get("session_source") or "–",
            totals=totals.get(sid, {}),
            duration_s=(max(ts) - min(ts)) if ts else None,
            requests=rows, threads=threads, side=side,
            errors=[r for r in rows if r.get("error_layer")],
            toolloop=build_toolloop(rows, calls_by_session.get(sid, []), loop_stats.get(sid), by_name.get(sid, []),
                                    f"{client} {short_id(sid, 24)}"),
            ribbon=main_ribbon, side_ribbon=side_ribbon,
            purposes=Counter(r.get("purpose") or "other" for r in rows).most_common(),
        ))
    return out


# --- overview -----------------------------------------------------------------------------------------
