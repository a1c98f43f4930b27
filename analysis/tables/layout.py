"""`layout`: one row per client — where rules, environment, task and project instructions sit."""

from __future__ import annotations

from ctxtap.analysis.blocks.blockstore import BlockStore
from ctxtap.analysis.blocks.divergence import divergence_label
from ctxtap.analysis.compare.layout import summarise_paths, tool_results_via
from ctxtap.analysis.tables.base import I64, BuildContext, CallRec, Columns, Row, S, Table

COLUMNS: Columns = [
    ("client", S, "Client."),
    ("api", S, "Protocol used for main requests."),
    ("n_sessions", I64, "Sessions seen."),
    ("rules_location", S, "Where high-level (platform) rules live, e.g. `system[0..3]`, `input[1..4] (developer)`."),
    ("environment_location", S, "Where the runtime environment lives."),
    ("task_location", S, "Where the user's task lives."),
    ("project_instructions_location", S, "Where project instructions (AGENTS.md, CLAUDE.md) live, if present."),
    ("tool_results_via", S, "How tool results return (`tool_result blocks in user messages`, `tool messages`, ...)."),
    ("n_tools", I64, "Tools offered (first main request)."),
    ("tool_definition_tokens", I64, "Estimated tokens of the tool definitions."),
    ("system_tokens", I64, "Estimated tokens of platform rules."),
    ("dynamic_fields_before_stable", S, "Blocks that change between requests yet sit before stable content (cache breakers)."),
]


def build(ctx: BuildContext) -> list[Row]:
    return _layout_rows(ctx.recs, ctx.store, ctx.content_tokens, ctx.tables["prefix"])


def _layout_rows(recs: list[CallRec], store: BlockStore, content_tokens: list[int],
                 prefix: list[dict]) -> list[dict]:
    by_client: dict[str, list[int]] = {}
    for i, rec in enumerate(recs):
        if rec.placement.thread_kind == "main":
            by_client.setdefault(rec.call.identity.client, []).append(i)
    prefix_by_id = {p["request_id"]: p for p in prefix}
    seg_sources: dict[int, set[str]] = {}
    seg_tokens: dict[tuple[int, str], int] = {}
    for row, n in zip(store.segments, store.segment_tokens(), strict=True):
        seg_sources.setdefault(row["occurrence_id"], set()).add(row["source"])
        key = (row["occurrence_id"], row["source"])
        seg_tokens[key] = seg_tokens.get(key, 0) + n
    out = []
    for client, indexes in sorted(by_client.items()):
        # the richest early request: the second main request if there is one (it carries tool results)
        sample = recs[indexes[1] if len(indexes) > 1 else indexes[0]]
        occ = [store.occurrences[o] for o in sample.blocks.occurrences]

        def where(source: str, occ=occ) -> str | None:
            """Blocks of that source, and blocks with a segment of it (marked as a part)."""
            paths, roles = [], []
            for o in occ:
                if o["source"] == source:
                    paths.append(o["path"])
                    roles.append(o["role"])
                elif o["source"] == "mixed" and source in seg_sources.get(o["occurrence_id"], ()):
                    paths.append(o["path"])
                    roles.append(f"{o['role']}, part")
            return summarise_paths(paths, roles)

        via = set()
        reach = 0  # occurrence ids below this are done: each distinct occurrence is looked at once
        # requests repeat their predecessor's runs: the distinct runs cover every occurrence
        for low, high in sorted({(occ, occ + n) for i in indexes for _s, n, occ in recs[i].blocks.runs}):
            for o in range(max(low, reach), high):
                row = store.occurrences[o]
                if row["kind"] == "tool_result":
                    via.add((row["wire_type"], row["role"]))
            reach = max(reach, high)
        dynamic = []
        for i in indexes:
            p = prefix_by_id.get(recs[i].request_id)
            if p and p["divergence_kind"] == "changed" and p["divergence_summary"]:
                if p["first_divergent_position"] is not None and p["first_divergent_position"] < p["n_blocks"] - 1:
                    dynamic.append(p["divergence_summary"])
        sessions = {recs[i].placement.session_id for i in indexes}
        tool_tokens = sum(content_tokens[store.content_index[o["content_hash"]]] for o in occ
                          if o["kind"] == "tool_definition")
        system_tokens = sum(seg_tokens.get((o["occurrence_id"], "platform_rules"), 0) for o in occ)
        out.append({
            "client": client, "api": sample.call.api, "n_sessions": len(sessions),
            "rules_location": where("platform_rules"),
            "environment_location": where("runtime_environment"),
            "task_location": where("user_task"),
            "project_instructions_location": where("project_instructions"),
            "tool_results_via": tool_results_via(via),
            "n_tools": sample.call.request.n_tools,
            "tool_definition_tokens": tool_tokens, "system_tokens": system_tokens,
            "dynamic_fields_before_stable": "; ".join(dict.fromkeys(divergence_label(d) for d in dynamic)) or None,
        })
    return out


TABLE = Table("layout", "one row per client: the cross-client context-layout comparison", COLUMNS, build)
