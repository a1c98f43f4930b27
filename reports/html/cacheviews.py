"""A session's cache beyond the charts: the three witnesses of each miss side by side (disagreements
first), subagents against their parent, cold batches in flight and cache-key variants.

Reads the `cache_verdicts`, `subagent_prefix`, `cold_batches` and `cache_key_variants` views; shows a
verdict row only where there is something to say (a witness besides the bytes spoke, or the cache
missed), at most MAX_ROWS of them with the query that lists the rest.
"""

from __future__ import annotations

from collections import defaultdict

import duckdb

from ctxtap.reports.html.budget import sql_command, sql_str
from ctxtap.reports.html.model import CacheViews, CaptureInfo, LeftOut, Row, fetch

MAX_ROWS = 40
_ORDER = {"disagree": 0, "agree": 1, "unknown": 2}
_MISSED = ("miss", "partial", "unexpected_read")


def _worth_showing(v: Row) -> bool:
    return bool(v.get("provider_outcome") or v.get("client_claim") or v.get("cache_status") in _MISSED)


def build_cache_views(con: duckdb.DuckDBPyConnection, cap: CaptureInfo, requests: list[Row]) -> dict[str, CacheViews]:
    """Per session id, its cache views (sessions with nothing to show have none)."""
    nums = {r["request_id"]: r["num"] for r in requests}
    verdicts: dict[str, list[Row]] = defaultdict(list)
    for v in fetch(con, "SELECT * FROM cache_verdicts"):
        if _worth_showing(v):
            v["num"] = nums.get(v["request_id"])
            verdicts[v["session_id"]].append(v)
    subagents: dict[str, list[Row]] = defaultdict(list)
    for s in fetch(con, "SELECT * FROM subagent_prefix ORDER BY shared_prefix_tokens"):
        s["num"] = nums.get(s["first_request_id"])
        s["parent_num"] = nums.get(s["parent_request_id"])
        subagents[s["session_id"]].append(s)
    cold: dict[str, list[Row]] = defaultdict(list)
    for c in fetch(con, "SELECT * FROM cold_batches ORDER BY batch_id, started_after_writer_s"):
        c["num"] = nums.get(c["request_id"])
        cold[c["session_id"]].append(c)
    variants: dict[str, list[Row]] = defaultdict(list)
    for k in fetch(con, "SELECT * FROM cache_key_variants ORDER BY variant"):
        variants[k["session_id"]].append(k)
    out = {}
    for sid in set(verdicts) | set(subagents) | set(cold) | {s for s, rows in variants.items() if len(rows) > 1}:
        rows = sorted(verdicts.get(sid, []), key=lambda v: (_ORDER.get(v["agreement"], 3), v["num"] or 0))
        left_out = None
        if len(rows) > MAX_ROWS:
            gone = rows[MAX_ROWS:]
            # the rows left out, in the table's own order (disagreements first, then by request number)
            sql = (f"SELECT v.* FROM cache_verdicts v JOIN requests r USING (capture_id, request_id) "
                   f"WHERE v.session_id = {sql_str(sid)} AND (v.provider_outcome IS NOT NULL "
                   "OR v.client_claim IS NOT NULL OR v.cache_status IN ('miss', 'partial', 'unexpected_read')) "
                   "ORDER BY CASE v.agreement WHEN 'disagree' THEN 0 WHEN 'agree' THEN 1 ELSE 2 END, "
                   f"r.request_number LIMIT {len(gone)} OFFSET {MAX_ROWS}")
            left_out = LeftOut(len(gone), f"#{gone[0]['num']}", f"#{gone[-1]['num']}", sql_command(cap.path, sql))
        extra = [c["extra_cost_usd"] for c in cold.get(sid, []) if c.get("extra_cost_usd") is not None]
        out[sid] = CacheViews(
            verdicts=rows[:MAX_ROWS], left_out=left_out,
            n_disagree=sum(v["agreement"] == "disagree" for v in rows),
            n_agree=sum(v["agreement"] == "agree" for v in rows),
            n_provider=sum(v.get("provider_outcome") is not None for v in rows),
            n_client=sum(v.get("client_claim") is not None for v in rows),
            subagents=subagents.get(sid, []), cold=cold.get(sid, []),
            n_cold_batches=len({c["batch_id"] for c in cold.get(sid, [])}),
            cold_extra_usd=sum(extra) if extra else None, variants=variants.get(sid, []))
    return out
