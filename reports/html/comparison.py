"""The comparison across clients: the layout table, tokens by source, cache behaviour.

The study's four-CLI comparison, generated: one row per (capture, client) from
the `layout` view, with the first main request's composition and the cache
outcome over all of the client's requests.
"""

from __future__ import annotations

from collections import Counter, defaultdict

import duckdb

from reports.html import charts
from reports.html.blockdata import BlockData, Ribbon, RibbonRow
from reports.html.model import CaptureInfo, Comparison, ComparisonRow, Row, SessionView, fetch, sum_present
from reports.html.sessions import CHANGE_DETAIL


def group_changes(text: str | None) -> str | None:
    """'a (x); a (y); b (z)' -> 'a ×2 (e.g. x); b (z)': the layout view lists every change it saw."""
    if not text:
        return text
    groups: dict[str, list[str]] = {}
    for part in text.split("; "):
        key = CHANGE_DETAIL.sub("", part)
        groups.setdefault(key, []).append(part[len(key):].strip())
    out = []
    for key, examples in groups.items():
        example = f" (e.g. {examples[0].strip('()')})" if examples[0] else ""
        out.append(f"{key} ×{len(examples)}{example}" if len(examples) > 1 else f"{key}{example}")
    return "; ".join(out)


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
        for layout in fetch(con, "SELECT * FROM layout ORDER BY client"):
            client = layout["client"]
            reqs = [r for s in sessions if s.client == client for r in s.requests]
            mains = [r for r in reqs if r.get("purpose") == "main" and not r.get("error_layer") and r.get("n_blocks")]
            first = min(mains, key=lambda r: (r.get("ts_start") or 0), default=None)
            total: dict[str, int] = defaultdict(int)
            for r in reqs:
                for src, v in by_source.get(r["request_id"], {}).items():
                    total[src] += v
            label = f"{client} · {layout.get('api')}" + (f" · {cap.name}" if several else "")
            layout = {**layout, "dynamic_fields_before_stable": group_changes(layout.get("dynamic_fields_before_stable"))}
            rows.append(ComparisonRow(label=label, client=client, capture=cap.name, capture_id=cap.capture_id,
                                      layout=layout, first_request=first,
                                      first_by_source=dict(by_source.get(first["request_id"], {})) if first else {},
                                      total_by_source=dict(total), cache=_cache_summary(reqs)))
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
        cache_svg=charts.cache_share_bars([(r.label, r.cache["read"] or 0, r.cache["write"] or 0,
                                            r.cache["uncached"] or 0) for r in rows],
                                          "Cache behaviour: reported input by cache outcome"),
        sources=sources, ribbon=ribbon)


def _source_order() -> list[str]:
    from reports.html.palette import SOURCES

    return [s.name for s in SOURCES]


def _cache_summary(reqs: list[Row]) -> Row:
    with_usage = [r for r in reqs if r.get("input_tokens_reported") is not None]
    reads = sum_present(r.get("cache_read_tokens") for r in with_usage)
    base = sum_present(r.get("input_tokens_reported") for r in with_usage if r.get("cache_read_tokens") is not None)
    causes = Counter(r["miss_cause"] for r in reqs if r.get("miss_cause"))
    divergences = Counter(CHANGE_DETAIL.sub("", r["divergence_summary"]) for r in reqs
                          if r.get("divergence_kind") in ("changed", "inserted", "removed", "reordered")
                          and r.get("divergence_summary"))
    return {
        "requests": len(reqs), "with_usage": len(with_usage),
        "input": sum_present(r.get("input_tokens_reported") for r in with_usage),
        "read": reads, "write": sum_present(r.get("cache_write_tokens") for r in with_usage),
        "uncached": sum_present(r.get("input_uncached_tokens") for r in with_usage),
        "hit_rate": (reads / base) if reads is not None and base else None,
        "causes": ", ".join(f"{c.replace('_', ' ')} ×{n}" for c, n in causes.most_common()) or "–",
        "top_divergence": (f"{divergences.most_common(1)[0][0]} ×{divergences.most_common(1)[0][1]}"
                           if divergences else "–"),
        "cost": sum_present(r.get("cost_usd") for r in reqs),
        "semantics": ", ".join(sorted({r["cache_semantics"] for r in with_usage if r.get("cache_semantics")})) or "–",
    }


# --- all together -------------------------------------------------------------------------------------
