"""The overview section: totals, clients, requests by purpose, errors by layer."""

from __future__ import annotations

from collections import defaultdict

import duckdb

from reports.html.model import ClientRow, Overview, Row, SessionView, fetch, sum_present


def build_overview(sessions: list[SessionView], con: duckdb.DuckDBPyConnection) -> Overview:
    """`con` reads every capture of the report: the totals and client rows are its views' rows."""
    totals: Row = fetch(con, "SELECT * FROM totals")[0]
    by_client: dict[str, list[Row]] = defaultdict(list)
    for c in fetch(con, "SELECT * FROM client_summary ORDER BY client, capture_id"):
        by_client[c["client"]].append(c)
    clients = [ClientRow(
        client=client,
        versions=", ".join(sorted({v for c in rows for v in (c["client_versions"] or "").split(", ") if v})) or "–",
        apis=", ".join(sorted({a for c in rows for a in (c["apis"] or "").split(", ") if a})) or "–",
        sessions=sum(c["n_sessions"] for c in rows), requests=sum(c["n_requests"] for c in rows),
        main=sum(c["n_main"] for c in rows), side=sum(c["n_side"] for c in rows),
        input_reported=sum_present(c["input_tokens_reported"] for c in rows),
        cache_read=sum_present(c["cache_read_tokens"] for c in rows),
        output=sum_present(c["output_tokens"] for c in rows),
        cost=sum_present(c["cost_usd"] for c in rows),
        errors=sum(c["n_errors"] for c in rows),
    ) for client, rows in sorted(by_client.items())]
    purposes = [tuple(r) for r in con.execute(
        "SELECT coalesce(purpose, 'other') AS p, count(*) AS n, count(*) / sum(count(*)) OVER () "
        "FROM requests GROUP BY p ORDER BY n DESC, min(ts_start)").fetchall()]
    error_layers = []
    for layer, n, first in con.execute(
            "SELECT error_layer, count(*) AS n, arg_min({'status': status, 'code': error_code, 'message': error_message}, "
            "ts_start) FROM errors GROUP BY error_layer ORDER BY n DESC").fetchall():
        error_layers.append((layer, n, f"HTTP {first['status']} {first['code'] or ''}: {first['message'] or ''}".strip()))
    return Overview(totals=totals, clients=clients, purposes=purposes, error_layers=error_layers)


# --- comparison ---------------------------------------------------------------------------------------
