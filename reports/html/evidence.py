"""The Evidence section: secrets and personal data sent to the model, network touched through the
proxy, tool results that were cut, and retries with their Retry-After honoured or not.

Reads the `exposure_summary`, `network`, `tool_calls` and `retries` views; sentences are made here
so the template only reads them.
"""

from __future__ import annotations

from collections.abc import Sequence

import duckdb

from ctxtap.analysis.tables.network import NOT_SEEN
from ctxtap.reports.html.budget import ctxtap_sql
from ctxtap.reports.html.formatting import num
from ctxtap.reports.html.model import (
    CaptureInfo,
    CaptureNetwork,
    Evidence,
    RetryLine,
    SessionEvidence,
    SessionView,
    fetch,
)

MAX_ROWS = 100  # rows per evidence table; the rest are counted and listed by a ctxtap sql command


def _plural(n: int, word: str) -> str:
    if n == 1:
        return f"1 {word}"
    return f"{num(n)} {word[:-2] + 'a' if word.endswith('datum') else word + 's'}"


def headlines(exposures: Sequence[dict]) -> list[str]:
    """`3 credentials from the tool result of cat config/settings.env were sent to api.anthropic.com
    from request 4 on`: one sentence per (category, source, hosts, first request), most carried first."""
    groups: dict[tuple, list[dict]] = {}
    for e in exposures:
        key = (e["category"], e["first_source"], e["hosts"] or "the provider", e["first_seq_in_session"])
        groups.setdefault(key, []).append(e)
    out = []
    for (category, source, hosts, first), rows in sorted(
            groups.items(), key=lambda kv: (kv[0][0] != "credential", -len(kv[1]), kv[0][3])):
        n = len(rows)
        what = _plural(n, "credential" if category == "credential" else "personal datum")
        carried = max(r["requests_carrying"] or 0 for r in rows)
        source_words = source if not source.startswith("tool result") else "a " + source
        out.append(f"{what} from {source_words} {'was' if n == 1 else 'were'} sent to {hosts} from request "
                   f"{first + 1} on ({_plural(carried, 'request')} carried {'it' if n == 1 else 'them'}).")
    return out


def build_evidence(per_capture: Sequence[tuple[CaptureInfo, duckdb.DuckDBPyConnection, list[SessionView]]]
                   ) -> Evidence:
    sessions: list[SessionEvidence] = []
    network: list[CaptureNetwork] = []
    totals = {"credential": 0, "personal": 0, "truncated": 0, "retries": 0, "destinations": 0}
    for cap, con, views in per_capture:
        exposures = fetch(con, "SELECT * FROM exposure_summary ORDER BY session_id, category, first_seq_in_session, "
                               "kind, placeholder")
        truncated = fetch(con, "SELECT * FROM tool_calls WHERE truncated ORDER BY session_id, request_id, call_index")
        retries = fetch(con, "SELECT * FROM retries ORDER BY session_id, failed_request_id")
        nums = {r["request_id"]: r["request_number"]
                for r in fetch(con, "SELECT request_id, request_number FROM requests")}
        rows = fetch(con, "SELECT * FROM network ORDER BY first_ts, host, path")
        totals["destinations"] += len({r["host"] for r in rows})
        network.append(CaptureNetwork(cap, rows[:MAX_ROWS], max(0, len(rows) - MAX_ROWS),
                                      f'{ctxtap_sql(cap.path)} "SELECT * FROM network ORDER BY first_ts"'))
        for view in views:
            sid = view.session_id
            mine = [e for e in exposures if e["session_id"] == sid]
            for e in mine:
                e["num"] = e["first_seq_in_session"] + 1
                totals[e["category"]] = totals.get(e["category"], 0) + 1
            cut = [dict(c, num=nums.get(c["request_id"]), result_num=nums.get(c["result_request_id"]))
                   for c in truncated if c["session_id"] == sid]
            tries = [RetryLine(r, nums.get(r["failed_request_id"]), nums.get(r["retry_request_id"]))
                     for r in retries if r["session_id"] == sid]
            totals["truncated"] += len(cut)
            totals["retries"] += len(tries)
            if not (mine or cut or tries):
                continue
            sessions.append(SessionEvidence(
                anchor=view.anchor, client=view.client, session_id=sid, headlines=headlines(mine),
                exposures=mine[:MAX_ROWS], exposures_left_out=max(0, len(mine) - MAX_ROWS),
                truncated=cut[:MAX_ROWS], truncated_left_out=max(0, len(cut) - MAX_ROWS),
                retries=tries[:MAX_ROWS], retries_left_out=max(0, len(tries) - MAX_ROWS)))
    return Evidence(sessions=sessions, network=network, not_seen=NOT_SEEN, n_credentials=totals["credential"],
                    n_personal=totals["personal"], n_truncated=totals["truncated"], n_retries=totals["retries"],
                    n_destinations=totals["destinations"])
