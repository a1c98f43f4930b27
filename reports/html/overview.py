"""The overview section: totals, clients, requests by purpose, errors by layer."""

from __future__ import annotations

from collections import Counter, defaultdict

import duckdb

from reports.html.model import ClientRow, Overview, Row, SessionView, fetch, sum_present


def build_overview(sessions: list[SessionView], con: duckdb.DuckDBPyConnection) -> Overview:
    """`con` reads every capture of the report: the totals and client rows are its views' rows."""
    all_requests = [r for s in sessions for r in s.requests]
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
    purposes = Counter(r.get("purpose") or "other" for r in all_requests)
    n = max(len(all_requests), 1)
    layers: dict[str, list[Row]] = defaultdict(list)
    for r in all_requests:
        if r.get("error_layer"):
            layers[r["error_layer"]].append(r)
    error_layers = [(layer, len(rs), f"HTTP {rs[0].get('status')} {rs[0].get('error_code') or ''}: "
                     f"{rs[0].get('error_message') or ''}".strip())
                    for layer, rs in sorted(layers.items(), key=lambda kv: -len(kv[1]))]
    return Overview(totals=totals, clients=clients,
                    purposes=[(p, c, c / n) for p, c in purposes.most_common()], error_layers=error_layers)


# --- comparison ---------------------------------------------------------------------------------------
