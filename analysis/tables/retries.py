"""`retries`: model requests that failed and the request that tried again, as numbered attempts.

A failed request (an error status or a provider error) is linked to the next request of the same
session with the same purpose and model: its retry. Where the provider asked for a pause
(`Retry-After`, `retry-after-ms`, or a delay stated in the error), the delay the client actually
left is set beside it, and `honoured` says whether it waited at least that long (5% and 50 ms of
slack for clock rounding).
"""

from __future__ import annotations

from ctxtap.analysis.tables.base import F64, I64, B, BuildContext, Columns, Row, S, Table

SLACK_RATIO, SLACK_S = 0.95, 0.05

COLUMNS: Columns = [
    ("session_id", S, "Session."),
    ("failed_request_id", S, "The request that failed."),
    ("retry_request_id", S, "The next request of the session with the same purpose and model (null: never retried)."),
    ("attempt", I64, "Attempt number of the failed request (1: first try; 2 and on: it was itself a retry)."),
    ("first_request_id", S, "The first attempt of the chain."),
    ("status", I64, "HTTP status of the failed request."),
    ("error_layer", S, "Error layer (rate_limit, quota, model_service, ...)."),
    ("error_code", S, "Provider error code."),
    ("retryable", B, "Whether the error is worth retrying."),
    ("retry_after_s", F64, "Pause the provider asked for, seconds (null: none asked)."),
    ("delay_s", F64, "Observed: from the failed response's end to the retry's start, seconds."),
    ("honoured", B, "The retry waited at least retry_after_s (null when no pause was asked or there was no retry)."),
    ("same_context", B, "The retry resent exactly the same context blocks."),
    ("retry_failed", B, "The retry failed too."),
]


def _failed(row: dict) -> bool:
    return bool(row.get("error_layer")) or (row.get("status") or 0) >= 400


def build(ctx: BuildContext) -> list[Row]:
    requests = ctx.tables["requests"]
    order = sorted(range(len(requests)), key=lambda i: (requests[i]["session_id"], requests[i]["seq_in_session"]))
    by_session: dict[str, list[int]] = {}
    for i in order:
        by_session.setdefault(requests[i]["session_id"], []).append(i)
    rows: list[Row] = []
    attempt_of: dict[int, tuple[int, int]] = {}  # request index -> (attempt number, first index)
    for indices in by_session.values():
        for pos, i in enumerate(indices):
            failed = requests[i]
            if not _failed(failed):
                continue
            retry = next((j for j in indices[pos + 1:]
                          if requests[j]["purpose"] == failed["purpose"] and requests[j]["model"] == failed["model"]),
                         None)
            attempt, first = attempt_of.get(i, (1, i))
            end = failed.get("ts_end") or failed.get("ts_start")
            delay = None
            if retry is not None and end is not None and requests[retry]["ts_start"] is not None:
                delay = max(0.0, requests[retry]["ts_start"] - end)
                attempt_of[retry] = (attempt + 1, first)
            asked = failed.get("retry_after_s")
            honoured = None
            if asked is not None and delay is not None:
                honoured = delay >= asked * SLACK_RATIO - SLACK_S
            rows.append({
                "session_id": failed["session_id"], "failed_request_id": failed["request_id"],
                "retry_request_id": requests[retry]["request_id"] if retry is not None else None,
                "attempt": attempt, "first_request_id": requests[first]["request_id"],
                "status": failed.get("status"), "error_layer": failed.get("error_layer"),
                "error_code": failed.get("error_code"), "retryable": failed.get("retryable"),
                "retry_after_s": asked, "delay_s": delay, "honoured": honoured,
                "same_context": (list(ctx.recs[i].content_ids) == list(ctx.recs[retry].content_ids))
                if retry is not None else None,
                "retry_failed": _failed(requests[retry]) if retry is not None else None,
            })
    return rows


TABLE = Table("retries", "failed model requests linked to their retries, with Retry-After asked vs delay observed",
              COLUMNS, build)
