"""`ctxtap stats`: a terminal summary built from the named views."""

from __future__ import annotations

from collections.abc import Iterator

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


def summary_lines(con: duckdb.DuckDBPyConnection) -> Iterator[str]:
    yield "sessions"
    rows = con.execute("""
        SELECT session_id, client, n_requests, n_main, n_side, n_turns, input_tokens, input_tokens_reported,
               n_input_estimated, input_tokens_estimated, cache_hit_rate, output_tokens, cost_usd, n_errors
        FROM sessions ORDER BY first_ts""").fetchall()
    for (sid, client, n, main, side, turns, total, inp, n_est, est, hit, out, cost, errors) in rows:
        hit_s = "n/a" if hit is None else f"{hit:.0%}"
        cost_s = "n/a" if cost is None else f"${cost:,.4f}"
        yield (f"  {sid[:48]:<48} {client:<12} requests {n} (main {main}, side {side}), turns {turns}, "
               f"{input_words(total, inp, n_est, est)}, cache hit {hit_s}, output {_fmt(out)}, "
               f"cost {cost_s}, errors {errors}")
    yield "requests by purpose"
    for purpose, n in con.execute("SELECT purpose, count(*) FROM requests GROUP BY 1 ORDER BY 2 DESC").fetchall():
        yield f"  {purpose:<16} {n}"
    errors = con.execute("SELECT error_layer, count(*) FROM errors GROUP BY 1 ORDER BY 2 DESC").fetchall()
    if errors:
        yield "errors by layer"
        for layer, n in errors:
            yield f"  {layer:<16} {n}"
    growth = con.execute("""
        SELECT g.thread_id, g.n_requests, g.input_basis, g.total_input_tokens, g.fit_p, g.fit_m, r.request_number
        FROM growth g LEFT JOIN requests r ON r.capture_id = g.capture_id AND r.request_id = g.accel_request_id
        WHERE g.thread_kind != 'side' AND g.n_requests > 1 ORDER BY g.total_input_tokens DESC LIMIT 10
    """).fetchall()
    if growth:
        yield "token growth (main threads): total(n) = n*p + m*n(n+1)/2, over each thread's successful requests"
        for tid, n, basis, total, p, m, accel in growth:
            accel_s = f", accelerated at request #{accel}" if accel is not None else ""
            yield (f"  {tid[-40:]:<40} {n} requests, thread input {_fmt(total)} ({basis}, failed requests left out), "
                   f"p={_fmt(p)} m={_fmt(m)}{accel_s}")
    misses = con.execute("""
        SELECT miss_cause, count(*), any_value(coalesce(miss_explanation, divergence_summary))
        FROM prefix WHERE miss_cause IS NOT NULL GROUP BY 1 ORDER BY 2 DESC""").fetchall()
    if misses:
        yield "cache misses"
        for cause, n, example in misses:
            yield f"  {cause:<14} {n}  e.g. {example}"
    divergences = con.execute("""
        SELECT divergence_label, count(*), any_value(divergence_summary)
        FROM prefix WHERE prefix_changed
        GROUP BY 1 ORDER BY 2 DESC LIMIT 5""").fetchall()
    if divergences:
        yield "where the prefix changed"
        for label, n, example in divergences:
            yield f"  {n} x {label}" + (f"   e.g. {example[len(label):].strip()}" if example != label else "")
    tools = con.execute("""
        SELECT count(*), count(*) FILTER (WHERE parallel_group_size > 1),
               count(*) FILTER (WHERE repeat_of IS NOT NULL), count(*) FILTER (WHERE result_status = 'error'),
               count(*) FILTER (WHERE orphan IS NOT NULL), median(gap_ms)
        FROM tool_calls""").fetchone()
    if tools and tools[0]:
        n, parallel, repeats, failed, orphans, gap = tools
        yield (f"tool calls  {n} ({parallel} in parallel groups, {repeats} repeats, {failed} errors, "
               f"{orphans} orphans), median call-to-result gap {_fmt(gap, 1)} ms")
    yield from efficiency_lines(con)


def _ms(p50, p95, top) -> str:
    if p50 is None:
        return "n/a"
    return f"p50 {_fmt(p50)} / p95 {_fmt(p95)} / max {_fmt(top)} ms"


def efficiency_lines(con: duckdb.DuckDBPyConnection) -> Iterator[str]:
    """Process efficiency per session: turns, calls, tokens, model-call and tool latency."""
    rows = con.execute("""
        SELECT p.session_id, p.n_turns, p.n_calls, p.input_tokens, p.output_tokens,
               p.ttfb_p50_ms, p.ttfb_p95_ms, p.ttfb_max_ms, p.n_ttfb_approximate,
               p.duration_p50_ms, p.duration_p95_ms, p.duration_max_ms,
               p.n_tools_timed, p.n_tools_from_telemetry, p.n_tools_from_gap,
               p.tool_p50_ms, p.tool_p95_ms, p.tool_max_ms
        FROM process_efficiency p JOIN sessions s USING (capture_id, session_id)
        ORDER BY s.first_ts""").fetchall()
    if not rows:
        return
    yield "process efficiency (per session)"
    for (sid, turns, calls, inp, out, t50, t95, tmax, approx, d50, d95, dmax,
         timed, from_tel, from_gap, x50, x95, xmax) in rows:
        approx_s = f" ({approx} approximate: response-header time)" if approx else ""
        yield (f"  {sid[:48]:<48} turns {turns}, model calls {calls}, input {_fmt(inp)} incl. cache reads "
               f"(as in sessions) / output {_fmt(out)}")
        yield f"    model TTFT (first byte)   {_ms(t50, t95, tmax)}{approx_s}"
        yield f"    model call total          {_ms(d50, d95, dmax)}"
        if timed:
            basis = []
            if from_tel:
                basis.append(f"{from_tel} from client telemetry")
            if from_gap:
                basis.append(f"{from_gap} only the call-to-result gap")
            rest = timed - from_tel - from_gap
            if rest:
                basis.append(f"{rest} from times in the results")
            yield f"    tools ({timed}: {', '.join(basis)})  {_ms(x50, x95, xmax)}"
        else:
            yield "    tools                     none timed"
