"""The live view's queries: paged rows over the analysis views, nothing computed here that a view says.

Lists are read a page at a time (`LIMIT`/`OFFSET` on an indexed order), so a
10,000-request capture costs the server one page of rows per scroll step, not
the whole session.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from markupsafe import Markup

from ctxtap.reports.html import charts, palette
from ctxtap.reports.html.sessions import _binned_thread, thread_label
from ctxtap.reports.live.sources import CaptureSource

Row = dict[str, Any]
MAX_PAGE = 500
MAX_TEXT_CHARS = 20_000  # a response or header value longer than this is shown head and tail


def page_args(offset: Any, limit: Any) -> tuple[int, int]:
    try:
        o, n = int(offset or 0), int(limit or 100)
    except (TypeError, ValueError):
        return 0, 100
    return max(o, 0), min(max(n, 1), MAX_PAGE)


def capture_row(src: CaptureSource) -> Row:
    cap = (src.rows("SELECT * FROM captures") or [{}])[0]
    tot = (src.rows("SELECT * FROM totals") or [{}])[0]
    n_sessions = (src.rows("SELECT count(*) AS n FROM sessions") or [{"n": 0}])[0]["n"]
    return {"name": src.name, "live": src.live, "status": cap.get("status"), "source": cap.get("source"),
            "started_at": cap.get("started_at"), "n_sessions": n_sessions, **{k: v for k, v in tot.items()
                                                                               if k != "capture_id"}}


SESSIONS_SQL = """
SELECT s.session_id, s.client, s.n_requests, s.n_threads, s.n_turns, s.first_ts, s.last_ts,
       s.input_tokens_reported, s.input_tokens_estimated, s.cache_read_tokens, s.output_tokens, s.cost_usd,
       s.cache_hit_rate, s.n_errors, m.models
FROM sessions s LEFT JOIN (SELECT session_id, string_agg(DISTINCT model, ', ') AS models FROM requests GROUP BY 1) m
  USING (session_id)
ORDER BY s.first_ts, s.session_id LIMIT ? OFFSET ?
"""


def sessions_page(src: CaptureSource, offset: int, limit: int) -> dict[str, Any]:
    total = (src.rows("SELECT count(*) AS n FROM sessions") or [{"n": 0}])[0]["n"]
    return {"total": total, "offset": offset, "rows": src.rows(SESSIONS_SQL, [limit, offset])}


def session(src: CaptureSource, session_id: str) -> Row | None:
    rows = src.rows("SELECT * FROM sessions WHERE session_id = ?", [session_id])
    return rows[0] if rows else None


REQUESTS_SQL = """
SELECT r.request_id, r.request_number, r.seq_in_session, r.seq_in_thread, r.thread_id, r.thread_kind, r.purpose, r.status,
       r.error_layer, r.error_message, r.model, r.input_tokens_estimated, r.input_tokens_reported,
       r.cache_read_tokens, r.cache_write_tokens, r.output_tokens, r.ttfb_ms, r.duration_ms, r.ts_start, r.ts_end,
       r.cost_usd, r.parse_status, p.cache_status, p.miss_cause, p.miss_explanation, p.divergence_summary,
       p.prefix_changed
FROM requests r LEFT JOIN prefix p USING (request_id)
WHERE r.session_id = ? ORDER BY r.seq_in_session LIMIT ? OFFSET ?
"""


def requests_page(src: CaptureSource, session_id: str, offset: int, limit: int,
                  with_session: bool = False) -> dict[str, Any]:
    """A page of a session's timeline: request rows with tokens by source and the tool calls each proposed.
    `with_session` adds the session's own row (its cards): a live page's refresh is then one query round."""
    head = session(src, session_id) if with_session else None
    if head is not None:
        total = head["n_requests"]
    else:
        total = (src.rows("SELECT count(*) AS n FROM requests WHERE session_id = ?", [session_id]) or [{"n": 0}])[0]["n"]
    rows = src.rows(REQUESTS_SQL, [session_id, limit, offset])
    ids = [r["request_id"] for r in rows]
    by_source: dict[str, list] = defaultdict(list)
    calls: dict[str, list] = defaultdict(list)
    if ids:
        for r in src.rows("SELECT request_id, source, tokens_estimated FROM tokens_by_source "
                          f"WHERE request_id IN ({in_list(ids)})"):
            by_source[r["request_id"]].append([r["source"], int(r["tokens_estimated"] or 0)])
        for parts in by_source.values():  # the palette's order: a source's colour sits at the same place in every bar
            parts.sort(key=lambda part: (palette.source_index(part[0]), part[0]))
        for c in src.rows("SELECT request_id, name, result_status FROM tool_calls "
                          f"WHERE request_id IN ({in_list(ids)}) ORDER BY request_id, call_index"):
            calls[c["request_id"]].append([c["name"] or "?", c["result_status"]])
    for r in rows:
        r["num"] = r["request_number"]
        r["thread"] = thread_label(r["thread_id"] or "", r["thread_kind"] or "main", session_id)
        r["sources"] = by_source.get(r["request_id"], [])
        r["calls"] = calls.get(r["request_id"], [])
        r["cache"] = cache_words(r)
    out: dict[str, Any] = {"total": total, "offset": offset, "rows": rows}
    if with_session:
        out["session"] = head or {}
    return out


def in_list(values: list[str]) -> str:
    """A SQL list of string literals. DuckDB pushes a literal IN list down into the views (the
    segments behind tokens_by_source), where a parameter list is applied only after them: 25x
    faster for a page of a 10,000-request session."""
    return ", ".join("'" + v.replace("'", "''") + "'" for v in values) or "NULL"


def cache_words(r: Row) -> str:
    """The cache chip's words: the status, and why it missed."""
    status = r.get("cache_status")
    if not status or status == "n/a":
        return "cache n/a"
    if status == "hit":
        return "cache hit"
    cause = (r.get("miss_cause") or "").replace("_", " ")
    words = f"cache {status}"
    if cause:
        words += f": {cause}"
    if r.get("miss_explanation"):
        words += f" ({r['miss_explanation']})"
    return words


MAX_CHART_COLUMNS = 300  # a longer thread is charted in bins of requests, as the report does


def session_charts(src: CaptureSource, session_id: str) -> Markup:
    """The report's growth and cache charts of the session's main and subagent threads (the same code);
    a long thread is drawn from its `thread_bins` rows, so the cost does not grow with the thread."""
    threads = src.rows("""
        SELECT thread_id, any_value(thread_kind) AS kind, any_value(client) AS client, count(*) AS n,
               bool_or(input_tokens_reported IS NOT NULL) AS has_usage
        FROM requests WHERE session_id = ? AND thread_kind <> 'side'
        GROUP BY thread_id ORDER BY min(seq_in_session) LIMIT 4""", [session_id])
    out = []
    for t in threads:
        tid = t["thread_id"]
        label = f"{t['client'] or ''} {thread_label(tid, t['kind'] or 'main', session_id)}"
        growth = (src.rows("SELECT * FROM growth WHERE thread_id = ?", [tid]) or [None])[0]
        if t["n"] > MAX_CHART_COLUMNS:
            k = -(-t["n"] // MAX_CHART_COLUMNS)
            bins, bin_sources = _binned_thread(src.cursor(), tid, k)
            out.append(charts.growth_chart(bins, bin_sources, growth, label, bin_size=k))
            if t["has_usage"]:
                out.append(charts.cache_chart(bins, label, bin_size=k))
            continue
        rows = src.rows("""
            SELECT r.request_id, r.seq_in_thread, r.input_tokens_reported, r.input_uncached_tokens,
                   r.cache_read_tokens, r.cache_write_tokens, r.cumulative_input_tokens, p.prefix_changed,
                   p.miss_cause, p.cache_status, p.divergence_summary, p.miss_explanation, p.gap_s,
                   g.fitted_cumulative_tokens, r.request_number AS num, r.purpose, r.error_layer, r.status
            FROM requests r LEFT JOIN prefix p USING (request_id) LEFT JOIN growth_points g USING (request_id)
            WHERE r.thread_id = ? ORDER BY r.seq_in_thread""", [tid])
        by_source: dict[str, dict[str, int]] = defaultdict(dict)
        ids = [r["request_id"] for r in rows]  # a literal list: filtered before the segments expand
        for r in src.rows("SELECT request_id, source, tokens_estimated FROM tokens_by_source "
                          f"WHERE request_id IN ({in_list(ids)})"):
            by_source[r["request_id"]][r["source"]] = int(r["tokens_estimated"] or 0)
        out.append(charts.growth_chart(rows, by_source, growth, label))
        if t["has_usage"]:
            out.append(charts.cache_chart(rows, label))
    return Markup("").join(out)


REQUEST_SQL = """
SELECT r.*, p.previous_request_id, p.cache_status, p.miss_cause, p.miss_explanation, p.divergence_summary,
       p.common_prefix_tokens, p.expected_cached_tokens, p.first_divergent_path
FROM requests r LEFT JOIN prefix p USING (request_id) WHERE r.request_id = ?
"""


def request(src: CaptureSource, request_id: str) -> Row | None:
    rows = src.rows(REQUEST_SQL, [request_id])
    if not rows:
        return None
    r = rows[0]
    r["num"] = r["request_number"]
    r["thread"] = thread_label(r.get("thread_id") or "", r.get("thread_kind") or "main", r.get("session_id") or "")
    r["cache"] = cache_words(r)
    r["sources"] = src.rows("SELECT source, tokens_estimated, bytes FROM tokens_by_source WHERE request_id = ? "
                            "ORDER BY tokens_estimated DESC", [request_id])
    r["calls"] = src.rows("SELECT name, call_id, arguments, result_status, result_request_id FROM tool_calls "
                          "WHERE request_id = ? ORDER BY call_index", [request_id])
    # the cache's three witnesses (bytes, provider diagnostics, client claim) for this request
    r["witnesses"] = (src.rows("SELECT * FROM cache_verdicts WHERE request_id = ?", [request_id]) or [None])[0]
    flow = src.flow(r["flow_id"]) if r.get("flow_id") else None
    r["request_headers"] = _headers(flow, "request_headers")
    r["response_headers"] = _headers(flow, "response_headers")
    r["url"] = (flow or {}).get("url")
    return r


def _headers(flow: Row | None, key: str) -> list[tuple[str, str]]:
    if not flow or not flow.get(key):
        return []
    try:
        return [(str(k), clip(str(v), 2000)) for k, v in json.loads(flow[key])]
    except (ValueError, TypeError):
        return [("(unreadable)", clip(str(flow[key]), 2000))]


def clip(text: str | None, limit: int = MAX_TEXT_CHARS) -> str:
    """Head and tail of a long text, saying how much was left out (the view keeps it whole)."""
    if text is None:
        return ""
    if len(text) <= limit:
        return text
    head, tail = text[: limit * 3 // 4], text[-limit // 4:]
    return f"{head}\n… {len(text) - len(head) - len(tail):,} characters left out …\n{tail}"


def resolve_request(src: CaptureSource, ref: str, session_id: str | None = None) -> str | None:
    """A request id from what a user typed, read as `ctxtap diff` and `replay` read it (`analysis.requestref`):
    a full id or the start of one, or the request's number (`#13`; `SESSION#13`, or in `session_id`, where
    the capture holds several sessions). None when it names no request or more than one."""
    from ctxtap.analysis.threads.requestref import RefError
    from ctxtap.analysis.threads.requestref import resolve_request as resolve

    ids = src.rows("SELECT capture_id FROM captures LIMIT 1")
    if not ids:
        return None
    try:
        return resolve(src.cursor(), ids[0]["capture_id"], ref, session_id).request_id
    except RefError:
        return None


def request_pair_diff(src: CaptureSource, b: str, a: str | None = None) -> dict[str, Any]:
    """Request B against A (default: B's thread predecessor), with the shared diff of `analysis.diff`."""
    from ctxtap.analysis.compare.diff import request_diff
    from ctxtap.reports.html.diffpage import OP_LABELS, DiffBlockRow, _fill, _lines

    d = request_diff(src.cursor(), b) if a is None else request_diff(src.cursor(), a, b)
    rows = []
    for k, c in enumerate(d.changes):
        s = c.side
        rows.append(DiffBlockRow(s.position, c.op, OP_LABELS[c.op] + (" (volatile)" if c.volatile else ""),
                                 s.path, s.source or "unknown", _fill(s.source), c.tokens, c.volatile,
                                 k == d.first_divergence, _lines(c)))
    counts = d.counts()
    summary = ", ".join(f"{OP_LABELS[op]} {counts[op]} ({d.tokens_by_op.get(op, 0):,} tokens)" for op in OP_LABELS)
    return {"diff": d, "rows": rows, "summary": summary,
            "a": request(src, d.a_request_id), "b": request(src, d.b_request_id)}
