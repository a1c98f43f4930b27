"""The comparison across clients: the layout table, tokens by source, cache behaviour.

One row per (capture, client) from the `layout` view, with the first main
request's composition and the client's cache outcome from `client_summary`.
"""

from __future__ import annotations

from collections import defaultdict

import duckdb

from ctxtap.reports.html import charts
from ctxtap.reports.html.blockdata import BlockData, Ribbon, RibbonRow
from ctxtap.reports.html.model import CaptureInfo, Comparison, ComparisonRow, SessionView, fetch


def build_comparison(per_capture: list[tuple[CaptureInfo, duckdb.DuckDBPyConnection, list[SessionView]]],
                     blocks: BlockData) -> Comparison | None:
    clients = {s.client for _, _, sessions in per_capture for s in sessions}
    if len(clients) < 2:
        return None
    several = len(per_capture) > 1
    rows: list[ComparisonRow] = []
    for cap, con, sessions in per_capture:
        by_source: dict[str, dict[str, int]] = defaultdict(dict)
        for rid, source, tokens in con.execute(
                "SELECT request_id, source, tokens_estimated FROM tokens_by_source").fetchall():
            by_source[rid][source] = int(tokens or 0)
        client_totals: dict[str, dict[str, int]] = defaultdict(dict)
        for client, source, tokens in con.execute(
                "SELECT client, source, tokens_estimated FROM client_tokens_by_source").fetchall():
            client_totals[client][source] = int(tokens or 0)
        summaries = {c["client"]: c for c in fetch(con, "SELECT * FROM client_summary")}
        for layout in fetch(con, "SELECT * FROM layout ORDER BY client"):
            client = layout["client"]
            reqs = [r for s in sessions if s.client == client for r in s.requests]
            mains = [r for r in reqs if r.get("purpose") == "main" and not r.get("error_layer") and r.get("n_blocks")]
            first = min(mains, key=lambda r: (r.get("ts_start") or 0), default=None)
            label = f"{client} · {layout.get('api')}" + (f" · {cap.name}" if several else "")
            rows.append(ComparisonRow(label=label, client=client, capture=cap.name, capture_id=cap.capture_id,
                                      layout=layout, first_request=first,
                                      first_by_source=dict(by_source.get(first["request_id"], {})) if first else {},
                                      total_by_source=client_totals.get(client, {}),
                                      cache=summaries.get(client, {})))
    rows.sort(key=lambda r: (r.client, r.label))
    ribbon = Ribbon("cmp", [RibbonRow(key=r.first_request["request_id"], capture_id=r.capture_id,
                                      label=r.label, thread=f"cmp-{i}")
                            for i, r in enumerate(rows) if r.first_request])
    blocks.add_ribbon(ribbon)
    sources = [s for s in _source_order() if any(r.total_by_source.get(s) for r in rows)]
    return Comparison(
        rows=rows,
        composition_svg=charts.composition_bars([(r.label, r.first_by_source) for r in rows if r.first_request],
                                                "First main request of each client, estimated tokens by source"),
        cache_svg=charts.cache_share_bars([(r.label, r.cache.get("cache_read_tokens") or 0,
                                            r.cache.get("cache_write_tokens") or 0,
                                            r.cache.get("input_uncached_tokens") or 0) for r in rows],
                                          "Cache behaviour: reported input by cache outcome"),
        sources=sources, ribbon=ribbon)


def _source_order() -> list[str]:
    from ctxtap.reports.html.palette import SOURCES

    return [s.name for s in SOURCES]


# --- all together -------------------------------------------------------------------------------------
