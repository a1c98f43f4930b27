"""The overview section: totals, clients, requests by purpose, errors by layer."""

from __future__ import annotations

import duckdb

from ctxtap.reports.html.model import ClientRow, Overview, Row, fetch


def build_overview(con: duckdb.DuckDBPyConnection) -> Overview:
    """`con` reads every capture of the report: the totals and client rows are its views' rows."""
    totals: Row = fetch(con, "SELECT * FROM totals")[0]
    clients = [ClientRow(
        client=c["client"], versions=c["client_versions"] or "–", apis=c["apis"] or "–",
        sessions=c["n_sessions"], requests=c["n_requests"], main=c["n_main"], side=c["n_side"],
        input_reported=c["input_tokens_reported"], cache_read=c["cache_read_tokens"],
        output=c["output_tokens"], cost=c["cost_usd"], errors=c["n_errors"],
    ) for c in fetch(con, "SELECT * FROM client_summary ORDER BY client")]
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
