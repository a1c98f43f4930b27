"""Per-session context: threads with growth and cache charts, the tool loop, side requests, errors.

Each capture is read through its own connection, so capture-local ids never mix.
Under an aggregated plan (`reports.html.budget.Detail`) long threads are charted
in bins (the `thread_bins` and `timeline_bins` views), long tables show their
first and last rows, and ribbons merge and leave out rows; each session says so
in a note.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence

import duckdb
from markupsafe import Markup

from ctxtap.reports.html import charts
from ctxtap.reports.html.blockdata import BlockData, Ribbon, RibbonRow
from ctxtap.reports.html.budget import Detail, head_and_tail, sql_command, sql_str
from ctxtap.reports.html.cacheviews import build_cache_views
from ctxtap.reports.html.formatting import num, short_id
from ctxtap.reports.html.model import (
    REQUESTS_SQL,
    CacheEvent,
    CaptureInfo,
    LeftOut,
    Row,
    SessionView,
    Shown,
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
                   by_name: list[tuple[str, int, int]], label: str, *, keep: int | None = None,
                   cap: CaptureInfo | None = None, con: duckdb.DuckDBPyConnection | None = None,
                   session_id: str = "") -> ToolLoop:
    """The tool loop; with `keep`, a timeline in time bins and a table of the first and last calls."""
    nums = {r["request_id"]: r["num"] for r in session_requests}
    for c in calls:
        c["num"] = nums.get(c.get("request_id") or "")
        c["result_num"] = nums.get(c.get("result_request_id") or "")
    calls.sort(key=lambda c: (c["num"] if c["num"] is not None else 1 << 30, c.get("call_index") or 0))
    svg = Markup("")
    bin_s = None
    if keep is not None and len(session_requests) > keep and con is not None:
        starts = [r["ts_start"] for r in session_requests if r.get("ts_start") is not None]
        ends = [r.get("ts_end") or r["ts_start"] for r in session_requests if r.get("ts_start") is not None]
        if starts:
            bin_s = max(max(ends) - min(starts), 0.001) / keep
            bins = fetch(con, "SELECT * FROM timeline_bins(?) WHERE session_id = ? ORDER BY bin",
                         [bin_s, session_id])
            svg = charts.timeline_chart(session_requests, calls, label, bins=bins, bin_s=bin_s)
    elif calls or session_requests:
        svg = charts.timeline_chart(session_requests, calls, label)
    head, gone, tail = head_and_tail(calls, keep if keep is not None and len(calls) > keep else None)
    left_out = None
    if gone and cap is not None:
        left_out = LeftOut(len(gone), _call_label(gone[0]), _call_label(gone[-1]), sql_command(
            cap.path, "SELECT c.* FROM tool_calls c LEFT JOIN requests r USING (capture_id, request_id) "
                      f"WHERE c.session_id = {sql_str(session_id)} ORDER BY r.seq_in_session, c.call_index "
                      f"LIMIT {len(gone)} OFFSET {len(head)}"))
    return ToolLoop(svg=svg, calls=calls, stats=stats or {}, by_name=by_name,
                    table=Shown(head, tail, left_out), bin_s=bin_s)


def _call_label(call: Row) -> str:
    return f"a call of #{call['num']}" if call.get("num") is not None else "an orphan call"


def shown_requests(rows: list[Row], keep: int | None, cap: CaptureInfo, session_id: str,
                   where: str = "") -> Shown:
    """A session's request rows as a table shows them: all, or the first and last with a query for the rest."""
    head, gone, tail = head_and_tail(rows, keep)
    if not gone:
        return Shown(rows, [])
    first, last = gone[0]["num"], gone[-1]["num"]
    sql = (f"SELECT * FROM requests WHERE session_id = {sql_str(session_id)}{where} "
           f"AND request_number BETWEEN {first} AND {last} ORDER BY request_number")
    return Shown(head, tail, LeftOut(len(gone), f"#{first}", f"#{last}", sql_command(cap.path, sql)))


def _marks(r: Row) -> str:
    return ("E" if r.get("error_layer") else "") + ("M" if r.get("miss_cause") and r["miss_cause"] != "cold_start"
                                                     else "") + (
        "D" if r.get("prefix_changed") else "")


def _ribbon_row(r: Row, capture_id: str) -> RibbonRow:
    label = f"#{r['num']} {r.get('purpose') or ''}"
    if r.get("error_layer"):
        label += f" · HTTP {r.get('status')}"
    return RibbonRow(key=r["request_id"], capture_id=capture_id, label=label, thread=r.get("thread_id") or "",
                     marks=_marks(r), num=r["num"], purpose=r.get("purpose") or "",
                     extends=r.get("divergence_kind") == "extended")


def _gap_command(cap: CaptureInfo, session_id: str, side: bool) -> str:
    """The query listing the blocks of a ribbon's left-out requests ({first} and {last}: their numbers)."""
    kind = "=" if side else "<>"
    sql = ("SELECT r.request_number AS num, b.* FROM blocks b JOIN requests r USING (capture_id, request_id) "
           f"WHERE r.session_id = {sql_str(session_id)} AND r.thread_kind {kind} 'side' "
           "AND r.request_number BETWEEN {first} AND {last} ORDER BY r.request_number, b.position")
    return sql_command(cap.path, sql.replace("{", "{{").replace("}", "}}").replace("{{first}}", "{first}")
                       .replace("{{last}}", "{last}"))


def _ribbon_note(ribbon: Ribbon, what: str) -> str:
    parts = []
    if ribbon.n_merged:
        parts.append(f"{num(ribbon.n_merged)} requests that only appended blocks to their predecessor are drawn "
                     "in the row of the last of them (the row says ×count; the requests table opens each one's own "
                     "blocks)")
    if ribbon.n_left_out:
        parts.append(f"{num(ribbon.n_left_out)} requests are left out (a row in their place says "
                     "which, with the query that lists their blocks)")
    if not parts:
        return ""
    return f"{what}: {num(len(ribbon.rows))} requests in {num(ribbon.n_rows)} rows; " + "; ".join(parts)


def _place(rows: list[Row], ribbon: Ribbon, where: list[tuple[int | None, bool]]) -> None:
    for r, (row, merged) in zip(rows, where, strict=True):
        r["ribbon"], r["row"], r["merged"] = ribbon.rid, row, merged


def _unbinned_requests(requests: list[Row], detail: Detail) -> list[str]:
    """The requests of the threads a plan draws request by request."""
    by_thread: dict[str, list[str]] = defaultdict(list)
    for r in requests:
        if r.get("thread_kind") != "side":
            by_thread[r.get("thread_id") or ""].append(r["request_id"])
    return [rid for ids in by_thread.values() if detail.bin_size(len(ids)) == 1 for rid in ids]


def _binned_thread(con: duckdb.DuckDBPyConnection, thread_id: str, k: int
                   ) -> tuple[list[Row], dict[str, dict[str, float]]]:
    """The `thread_bins` rows of a thread, and the mean tokens by source per bin (keyed like bins' `key`)."""
    bins = fetch(con, "SELECT * FROM thread_bins(?) WHERE thread_id = ? ORDER BY bin", [k, thread_id])
    by_source: dict[str, dict[str, float]] = defaultdict(dict)
    for b, source, tokens in con.execute(
            "SELECT bin, source, mean_tokens_estimated FROM thread_bin_sources(?) WHERE thread_id = ?",
            [k, thread_id]).fetchall():
        by_source[f"bin:{b}"][source] = float(tokens or 0)
    for b in bins:
        b["key"] = f"bin:{b['bin']}"
    return bins, by_source

def build_sessions(cap: CaptureInfo, con: duckdb.DuckDBPyConnection, blocks: BlockData,
                   start_index: int, detail: Detail | None = None,
                   notes: list[str] | None = None) -> list[SessionView]:
    """The capture's sessions; `detail` says how much is shown request by request, `notes` collects
    what was aggregated or left out."""
    detail = detail or Detail.full()
    notes = notes if notes is not None else []
    requests = fetch(con, REQUESTS_SQL)
    by_session: dict[str, list[Row]] = defaultdict(list)
    for r in requests:
        r["num"] = r["request_number"]
        by_session[r["session_id"]].append(r)
    totals = {r["session_id"]: r for r in fetch(con, "SELECT * FROM sessions")}
    growth = {g["thread_id"]: g for g in fetch(con, "SELECT * FROM growth")}
    generations: dict[str, list[Row]] = defaultdict(list)
    for g in fetch(con, "SELECT * FROM context_generations ORDER BY request_number"):
        generations[g["thread_id"]].append(g)
    delegations = {d["thread_id"]: d for d in fetch(con, "SELECT * FROM delegations")}
    by_source: dict[str, dict[str, int]] = defaultdict(dict)
    sql, params = "SELECT request_id, source, tokens_estimated FROM tokens_by_source", []
    if not detail.is_full:  # binned threads read thread_bin_sources instead
        sql += " WHERE request_id IN (SELECT unnest(?::VARCHAR[]))"
        params = [_unbinned_requests(requests, detail)]
    rows_by_source = con.execute(sql, params).fetchall() if not params or params[0] else []
    for rid, source, tokens in rows_by_source:
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
    cache_views = build_cache_views(con, cap, requests)

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
        binned_threads = 0
        for tid in thread_ids:
            trows = sorted((r for r in rows if r["thread_id"] == tid), key=lambda r: r.get("seq_in_thread") or 0)
            kind = trows[0].get("thread_kind") or "main"
            label = thread_label(tid, kind, sid)
            has_usage = any(r.get("input_tokens_reported") is not None for r in trows)
            k = detail.bin_size(len(trows))
            if k > 1:
                bins, bin_sources = _binned_thread(con, tid, k)
                growth_svg = charts.growth_chart(bins, bin_sources, growth.get(tid), f"{client} {label}", bin_size=k)
                cache_svg = charts.cache_chart(bins, f"{client} {label}", bin_size=k) if has_usage else Markup("")
                binned_threads += 1
            else:
                growth_svg = charts.growth_chart(trows, by_source, growth.get(tid), f"{client} {label}")
                cache_svg = charts.cache_chart(trows, f"{client} {label}") if has_usage else Markup("")
            threads.append(ThreadView(
                thread_id=tid, label=label, kind=kind, rows=trows, growth=growth.get(tid),
                growth_svg=growth_svg, cache_svg=cache_svg,
                events=cache_events(trows), has_usage=has_usage, open=len(threads) < 2, bin_size=k,
                generations=generations.get(tid, []), delegation=delegations.get(tid)))
        side = [r for r in rows if r.get("thread_kind") == "side"]
        main_rows = [r for r in rows if r.get("thread_kind") != "side"]
        main_ribbon = Ribbon(f"{anchor}-main", [_ribbon_row(r, cap.capture_id) for r in main_rows])
        keep = detail.share(len(rows))
        _place(main_rows, main_ribbon, blocks.add_ribbon(
            main_ribbon, merge=keep is not None and len(main_rows) > keep,
            max_bytes=detail.ribbon_share(len(main_rows)), gap_command=_gap_command(cap, sid, side=False)))
        side_ribbon = None
        if side:
            side_ribbon = Ribbon(f"{anchor}-side", [_ribbon_row(r, cap.capture_id) for r in side])
            _place(side, side_ribbon, blocks.add_ribbon(
                side_ribbon, merge=keep is not None and len(side) > keep,
                max_bytes=detail.ribbon_share(len(side)), gap_command=_gap_command(cap, sid, side=True)))
        errors = [r for r in rows if r.get("error_layer")]
        toolloop = build_toolloop(rows, calls_by_session.get(sid, []), loop_stats.get(sid), by_name.get(sid, []),
                                  f"{client} {short_id(sid, 24)}", keep=keep, cap=cap, con=con, session_id=sid)
        view_tables = {
            "requests": shown_requests(rows, keep, cap, sid),
            "side": shown_requests(side, keep, cap, sid, " AND thread_kind = 'side'"),
            "errors": shown_requests(errors, keep, cap, sid, " AND error_layer IS NOT NULL"),
        }
        main_ribbon.note = _ribbon_note(main_ribbon, "The context layout")
        if side_ribbon:
            side_ribbon.note = _ribbon_note(side_ribbon, "The side requests' context layout")
        notes.extend(_session_notes(sid, len(rows), threads, toolloop, view_tables, main_ribbon, side_ribbon,
                                    detail))
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
            requests=rows, threads=threads, side=side, errors=errors, toolloop=toolloop,
            ribbon=main_ribbon, side_ribbon=side_ribbon,
            purposes=Counter(r.get("purpose") or "other" for r in rows).most_common(),
            requests_table=view_tables["requests"], side_table=view_tables["side"],
            errors_table=view_tables["errors"], cache=cache_views.get(sid),
        ))
    return out


def _session_notes(session_id: str, n: int, threads: list[ThreadView], toolloop: ToolLoop,
                   tables: dict[str, Shown], ribbon: Ribbon, side_ribbon: Ribbon | None, detail: Detail) -> list[str]:
    """What a session's sections aggregated or left out, in words (none under full detail)."""
    said = []
    for rib in (ribbon, side_ribbon):
        if rib is not None and rib.note:
            said.append(rib.note[0].lower() + rib.note[1:])
    for th in threads:
        if th.bin_size > 1:
            said.append(f"the {th.label}'s growth and cache charts draw one column per {th.bin_size} requests "
                        f"(means per request; {num(len(th.rows))} requests)")
    if toolloop.bin_s:
        said.append(f"the tool-loop timeline counts requests and calls in bins of {toolloop.bin_s:.1f} s")
    for name, table in (("requests", tables["requests"]), ("tool-call", toolloop.table),
                        ("side-request", tables["side"]), ("error", tables["errors"])):
        if table.left_out:
            said.append(f"the {name} table shows its first {num(len(table.head))} and last {num(len(table.tail))} "
                        f"of {num(table.total)} rows")
    if not said:
        return []
    return [f"Session {short_id(session_id, 48)} has {num(n)} requests, more than a report of "
            f"{detail.max_bytes / 1e6:.2f} MB shows one by one: " + "; ".join(said)
            + ". Each table says how many rows it leaves out and gives the ctxtap sql query that lists them."]


# --- overview -----------------------------------------------------------------------------------------
