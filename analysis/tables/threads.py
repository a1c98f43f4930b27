"""`threads`: per thread, the growth fit total(n) = n*p + m*n(n+1)/2 and where growth accelerated."""

from __future__ import annotations

from ctxtap.analysis.tables.base import F64, I64, BuildContext, CallRec, Columns, Row, S, Table
from ctxtap.analysis.threads import growth

COLUMNS: Columns = [
    ("session_id", S, "Session."),
    ("thread_id", S, "Thread."),
    ("thread_kind", S, "`main`, `subagent`, `side`, `retry` or `flattened` (see requests.thread_kind)."),
    ("thread_rule", S, "Why the thread has its kind (see requests.thread_rule)."),
    ("parent_thread_id", S, "Subagents: the delegating thread."),
    ("parent_call_id", S, "Subagents: the delegation call in the parent thread."),
    ("client", S, "Client."),
    ("n_requests", I64, "Requests in the thread."),
    ("input_basis", S, "`reported` or `estimated`: which input series the fit uses (failed calls left out)."),
    ("total_input_tokens", I64, "Cumulative input over the thread's successful calls."),
    ("fit_p", F64, "Fitted stable prefix p in total(n) = n*p + m*n(n+1)/2 (tokens)."),
    ("fit_m", F64, "Fitted growth per request m (tokens)."),
    ("fit_r2", F64, "R^2 of the per-request fit input_i = p + m*i."),
    ("accel_seq", I64, "seq_in_thread where growth accelerated: the largest jump above twice the median increment (null if none)."),
    ("accel_request_id", S, "That request."),
    ("accel_increment_tokens", I64, "Its increment over the previous request."),
    ("median_increment_tokens", F64, "Median per-request increment."),
]


def build(ctx: BuildContext) -> list[Row]:
    return _thread_rows(ctx.recs, ctx.tables["requests"])


def _thread_rows(recs: list[CallRec], requests: list[dict]) -> list[dict]:
    by_thread: dict[str, list[dict]] = {}
    for row in requests:
        by_thread.setdefault(row["thread_id"], []).append(row)
    out = []
    for thread_id, rows in by_thread.items():
        rows.sort(key=lambda r: r["seq_in_thread"])
        n_requests = len(rows)
        # failed calls (no usage) are not part of the growth series
        rows = [r for r in rows if r["error_layer"] is None] or rows
        reported = all(r["input_tokens_reported"] is not None for r in rows)
        series = [r["input_tokens_reported"] if reported else r["input_tokens_estimated"] for r in rows]
        f = growth.fit(series)
        idx, inc, median = growth.acceleration(series)
        out.append({
            "session_id": rows[0]["session_id"], "thread_id": thread_id, "thread_kind": rows[0]["thread_kind"],
            "thread_rule": rows[0]["thread_rule"], "parent_thread_id": rows[0]["parent_thread_id"],
            "parent_call_id": rows[0]["parent_call_id"],
            "client": rows[0]["client"], "n_requests": n_requests,
            "input_basis": "reported" if reported else "estimated",
            "total_input_tokens": sum(series),
            "fit_p": f.p if f else None, "fit_m": f.m if f else None, "fit_r2": f.r2 if f else None,
            "accel_seq": rows[idx]["seq_in_thread"] if idx is not None else None,
            "accel_request_id": rows[idx]["request_id"] if idx is not None else None,
            "accel_increment_tokens": inc, "median_increment_tokens": median,
        })
    return out


TABLE = Table("threads", "per thread: the growth fit and where growth accelerated", COLUMNS, build)
