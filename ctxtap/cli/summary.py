"""`ctxtap stats`: a terminal summary built from the named views (and `stats --json`: the same figures)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import duckdb


def _fmt(value, digits: int = 0) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def input_words(total, reported, n_estimated: int, estimate) -> str:
    """A session's input in one figure, with how it is made up: the same figure everywhere (the
    sessions view's input_tokens), its parts named so nobody has to guess why another differs."""
    parts = [f"{_fmt(reported)} reported by the provider"]
    if n_estimated:
        parts.append(f"{_fmt((total or 0) - (reported or 0))} estimated for {n_estimated} request"
                     f"{'s' if n_estimated != 1 else ''} without usage")
    return (f"input {_fmt(total)} incl. cache reads ({' + '.join(parts)}; "
            f"ctxtap's estimate of the content alone {_fmt(estimate)})")


SESSIONS = """
    SELECT session_id, client, n_requests, n_main, n_side, n_turns, input_tokens, input_tokens_reported,
           n_input_estimated, input_tokens_estimated, cache_hit_rate, output_tokens, cost_usd, n_errors
    FROM sessions ORDER BY first_ts"""
GROWTH = """
    SELECT g.thread_id, g.n_requests, g.input_basis, g.total_input_tokens, g.fit_p, g.fit_m,
           r.request_number AS accel_request_number
    FROM growth g LEFT JOIN requests r ON r.capture_id = g.capture_id AND r.request_id = g.accel_request_id
    WHERE g.thread_kind != 'side' AND g.n_requests > 1 ORDER BY g.total_input_tokens DESC LIMIT 10"""
MISSES = """
    SELECT miss_cause, count(*) AS n, any_value(coalesce(miss_explanation, divergence_summary)) AS example
    FROM prefix WHERE miss_cause IS NOT NULL GROUP BY 1 ORDER BY 2 DESC"""
PREFIX_CHANGES = """
    SELECT divergence_label AS label, count(*) AS n, any_value(divergence_summary) AS example
    FROM prefix WHERE prefix_changed
    GROUP BY 1 ORDER BY 2 DESC LIMIT 5"""
TOOLS = """
    SELECT count(*) AS n, count(*) FILTER (WHERE parallel_group_size > 1) AS in_parallel_groups,
           count(*) FILTER (WHERE repeat_of IS NOT NULL) AS repeats,
           count(*) FILTER (WHERE result_status = 'error') AS errors,
           count(*) FILTER (WHERE orphan IS NOT NULL) AS orphans, median(gap_ms) AS median_gap_ms
    FROM tool_calls"""
EFFICIENCY = """
    SELECT p.session_id, p.n_turns, p.n_calls, p.input_tokens, p.output_tokens,
           p.ttfb_p50_ms, p.ttfb_p95_ms, p.ttfb_max_ms, p.n_ttfb_approximate,
           p.duration_p50_ms, p.duration_p95_ms, p.duration_max_ms,
           p.n_tools_timed, p.n_tools_from_telemetry, p.n_tools_from_gap,
           p.tool_p50_ms, p.tool_p95_ms, p.tool_max_ms
    FROM process_efficiency p JOIN sessions s USING (capture_id, session_id)
    ORDER BY s.first_ts"""


def _records(con: duckdb.DuckDBPyConnection, query: str) -> list[dict[str, Any]]:
    cursor = con.execute(query)
    columns = [d[0] for d in cursor.description]
    return [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]


def summary_data(con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    """Every figure `ctxtap stats` prints, as plain data (`stats --json`); the text is drawn from
    it, so the two cannot disagree."""
    tools = _records(con, TOOLS)[0]
    return {
        "sessions": _records(con, SESSIONS),
        "requests_by_purpose": dict(con.execute(
            "SELECT purpose, count(*) FROM requests GROUP BY 1 ORDER BY 2 DESC").fetchall()),
        "errors_by_layer": dict(con.execute(
            "SELECT error_layer, count(*) FROM errors GROUP BY 1 ORDER BY 2 DESC").fetchall()),
        "growth": _records(con, GROWTH),
        "cache_misses": _records(con, MISSES),
        "prefix_changes": _records(con, PREFIX_CHANGES),
        "tool_calls": tools if tools["n"] else None,
        "process_efficiency": _records(con, EFFICIENCY),
    }


def summary_lines(con: duckdb.DuckDBPyConnection) -> Iterator[str]:
    yield from data_lines(summary_data(con))


def data_lines(data: dict[str, Any]) -> Iterator[str]:
    """The text of `ctxtap stats` from `summary_data`."""
    yield "sessions"
    for r in data["sessions"]:
        hit, cost = r["cache_hit_rate"], r["cost_usd"]
        hit_s = "n/a" if hit is None else f"{hit:.0%}"
        cost_s = "n/a" if cost is None else f"${cost:,.4f}"
        yield (f"  {r['session_id'][:48]:<48} {r['client']:<12} requests {r['n_requests']} (main {r['n_main']}, "
               f"side {r['n_side']}), turns {r['n_turns']}, "
               f"{input_words(r['input_tokens'], r['input_tokens_reported'], r['n_input_estimated'], r['input_tokens_estimated'])}, "
               f"cache hit {hit_s}, output {_fmt(r['output_tokens'])}, cost {cost_s}, errors {r['n_errors']}")
    yield "requests by purpose"
    for purpose, n in data["requests_by_purpose"].items():
        yield f"  {purpose:<16} {n}"
    if data["errors_by_layer"]:
        yield "errors by layer"
        for layer, n in data["errors_by_layer"].items():
            yield f"  {layer:<16} {n}"
    if data["growth"]:
        yield "token growth (main threads): total(n) = n*p + m*n(n+1)/2, over each thread's successful requests"
        for g in data["growth"]:
            accel = g["accel_request_number"]
            accel_s = f", accelerated at request #{accel}" if accel is not None else ""
            yield (f"  {g['thread_id'][-40:]:<40} {g['n_requests']} requests, thread input "
                   f"{_fmt(g['total_input_tokens'])} ({g['input_basis']}, failed requests left out), "
                   f"p={_fmt(g['fit_p'])} m={_fmt(g['fit_m'])}{accel_s}")
    if data["cache_misses"]:
        yield "cache misses"
        for m in data["cache_misses"]:
            yield f"  {m['miss_cause']:<14} {m['n']}  e.g. {m['example']}"
    if data["prefix_changes"]:
        yield "where the prefix changed"
        for c in data["prefix_changes"]:
            label, example = c["label"], c["example"]
            yield f"  {c['n']} x {label}" + (f"   e.g. {example[len(label):].strip()}" if example != label else "")
    tools = data["tool_calls"]
    if tools:
        yield (f"tool calls  {tools['n']} ({tools['in_parallel_groups']} in parallel groups, {tools['repeats']} "
               f"repeats, {tools['errors']} errors, {tools['orphans']} orphans), median call-to-result gap "
               f"{_fmt(tools['median_gap_ms'], 1)} ms")
    yield from _efficiency_lines(data["process_efficiency"])


def _ms(p50, p95, top) -> str:
    if p50 is None:
        return "n/a"
    return f"p50 {_fmt(p50)} / p95 {_fmt(p95)} / max {_fmt(top)} ms"


def efficiency_lines(con: duckdb.DuckDBPyConnection) -> Iterator[str]:
    """Process efficiency per session: turns, calls, tokens, model-call and tool latency."""
    yield from _efficiency_lines(_records(con, EFFICIENCY))


def _efficiency_lines(rows: list[dict[str, Any]]) -> Iterator[str]:
    if not rows:
        return
    yield "process efficiency (per session)"
    for r in rows:
        approx = r["n_ttfb_approximate"]
        approx_s = f" ({approx} approximate: response-header time)" if approx else ""
        yield (f"  {r['session_id'][:48]:<48} turns {r['n_turns']}, model calls {r['n_calls']}, input "
               f"{_fmt(r['input_tokens'])} incl. cache reads (as in sessions) / output {_fmt(r['output_tokens'])}")
        yield f"    model TTFT (first byte)   {_ms(r['ttfb_p50_ms'], r['ttfb_p95_ms'], r['ttfb_max_ms'])}{approx_s}"
        yield f"    model call total          {_ms(r['duration_p50_ms'], r['duration_p95_ms'], r['duration_max_ms'])}"
        timed, from_tel, from_gap = r["n_tools_timed"], r["n_tools_from_telemetry"], r["n_tools_from_gap"]
        if timed:
            basis = []
            if from_tel:
                basis.append(f"{from_tel} from client telemetry")
            if from_gap:
                basis.append(f"{from_gap} only the call-to-result gap")
            rest = timed - from_tel - from_gap
            if rest:
                basis.append(f"{rest} from times in the results")
            yield f"    tools ({timed}: {', '.join(basis)})  {_ms(r['tool_p50_ms'], r['tool_p95_ms'], r['tool_max_ms'])}"
        else:
            yield "    tools                     none timed"
