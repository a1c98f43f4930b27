"""The overview section: totals, clients, requests by purpose, errors by layer."""

from __future__ import annotations

from collections import Counter, defaultdict

from reports.html.model import ClientRow, Overview, Row, SessionView, sum_present


def build_overview(sessions: list[SessionView]) -> Overview:
    all_requests = [r for s in sessions for r in s.requests]
    totals: Row = {
        "captures": len({s.capture.capture_id for s in sessions}),
        "clients": len({s.client for s in sessions}),
        "sessions": len(sessions),
        "requests": len(all_requests),
    }
    for key in ("n_main", "n_subagent", "n_side", "input_tokens_reported", "input_tokens_estimated",
                "cache_read_tokens", "cache_write_tokens", "output_tokens", "reasoning_tokens", "cost_usd",
                "n_unpriced", "n_errors"):
        totals[key] = sum_present(s.totals.get(key) for s in sessions)
    reads = sum_present(r.get("cache_read_tokens") for r in all_requests if r.get("cache_read_tokens") is not None)
    base = sum_present(r.get("input_tokens_reported") for r in all_requests if r.get("cache_read_tokens") is not None)
    totals["cache_hit_rate"] = (reads / base) if reads is not None and base else None
    clients: list[ClientRow] = []
    by_client: dict[str, list[SessionView]] = defaultdict(list)
    for s in sessions:
        by_client[s.client].append(s)
    for client, group in sorted(by_client.items()):
        reqs = [r for s in group for r in s.requests]
        clients.append(ClientRow(
            client=client,
            versions=", ".join(sorted({r["client_version"] for r in reqs if r.get("client_version")})) or "–",
            apis=", ".join(sorted({r["api"] for r in reqs if r.get("api")})) or "–",
            sessions=len(group), requests=len(reqs),
            main=sum(1 for r in reqs if r.get("thread_kind") != "side"),
            side=sum(1 for r in reqs if r.get("thread_kind") == "side"),
            input_reported=sum_present(r.get("input_tokens_reported") for r in reqs),
            cache_read=sum_present(r.get("cache_read_tokens") for r in reqs),
            output=sum_present(r.get("output_tokens") for r in reqs),
            cost=sum_present(r.get("cost_usd") for r in reqs),
            errors=sum(1 for r in reqs if r.get("error_layer")),
        ))
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
