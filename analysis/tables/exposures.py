"""`exposures`: every redacted secret or pseudonymised personal datum that entered model context.

The capture holds placeholders only (`[REDACTED:aws-access-key:3fa2c1]`, `<email-3fa2c1>`), never
values; equal secrets share a placeholder within a capture, so a placeholder found in the blocks a
request sent is a secret that request carried to its provider. One row per placeholder per block
placement (occurrence), with the segment it sits in, where it came from (the tool result of which
command, the environment, the user's text), the first request that sent it and how many requests
carried it.
"""

from __future__ import annotations

import bisect
import re

from ctxtap.analysis.tables.base import I64, BuildContext, Columns, Row, S, Table
from ctxtap.redaction.personal.pii_rules import PII_PLACEHOLDER_RE
from ctxtap.redaction.placeholder import PLACEHOLDER_RE

_CREDENTIAL = re.compile(PLACEHOLDER_RE.pattern.decode("ascii"))
_KIND = re.compile(r"REDACTED:([a-z0-9-]+):([0-9a-f]{6})|<([a-z-]+)-([0-9a-f]{6}|\d{1,5})>")

COLUMNS: Columns = [
    ("session_id", S, "Session of the first request that carried the placement."),
    ("placeholder", S, "The placeholder as stored (`[REDACTED:<kind>:<hash>]` or `<kind-<hash>>`); never a value."),
    ("category", S, "`credential` (a redacted secret) or `personal` (a pseudonymised personal datum)."),
    ("kind", S, "Placeholder type (`aws-access-key`, `generic-api-key`, `email`, `user`, ...)."),
    ("occurrence_id", I64, "Block placement (block_occurrences) that holds the placeholder."),
    ("path", S, "Position path of the block in the request body."),
    ("block_kind", S, "Kind of the block (tool_result, message_text, instruction_text, ...)."),
    ("segment_index", I64, "Segment of the block the placeholder sits in (block_segments)."),
    ("segment_source", S, "Business source of that segment (tool_result, runtime_environment, user_task, ...)."),
    ("source_detail", S, "Where it came from, in words: `tool result of cat config/settings.env`, `user text`, ..."),
    ("call_id", S, "Tool call whose result (or arguments) held it, if any."),
    ("tool_name", S, "That tool call's tool."),
    ("command", S, "That tool call's shell command, for shell-like tools (redacted)."),
    ("n_in_block", I64, "Times the placeholder appears in the block."),
    ("first_request_id", S, "First request that sent this placement."),
    ("first_seq_in_session", I64, "That request's 0-based order in its session."),
    ("host", S, "Host that request was sent to."),
    ("provider", S, "Provider of that host."),
    ("carried_requests", I64, "Requests that sent this placement (the first and every later one)."),
    ("session_first_request_id", S, "First request of the session that sent this placeholder in any placement."),
    ("session_requests", I64, "Requests of the session that sent this placeholder in any placement."),
]

_SOURCE_WORDS = {
    "user_task": "user text", "runtime_environment": "environment", "project_instructions": "project instructions",
    "assistant_output": "model output", "system_reminder": "system reminder", "platform_rules": "system prompt",
    "summary": "summary", "tool_catalogue": "tool catalogue", "plugin_catalogue": "plugin catalogue",
}


def placeholders(text: str) -> list[tuple[str, str, str, int]]:
    """(placeholder, category, kind, byte offset) of every placeholder in a text."""
    found = []
    for regex, category in ((_CREDENTIAL, "credential"), (PII_PLACEHOLDER_RE, "personal")):
        for m in regex.finditer(text):
            k = _KIND.search(m.group())
            kind = (k.group(1) or k.group(3)) if k else "unknown"
            found.append((m.group(), category, kind, len(text[: m.start()].encode("utf-8", "surrogatepass"))))
    return found


def build(ctx: BuildContext) -> list[Row]:
    store = ctx.store
    requests = ctx.tables["requests"]
    calls = {(r["session_id"], r["call_id"]): r for r in ctx.tables.get("tool_calls", []) if r["call_id"]}
    # which occurrences hold placeholders (each distinct content is scanned once)
    found_in_content: dict[str, list] = {}
    for content_hash, row in store.content.items():
        text = row.get("text") or ""
        if "REDACTED:" in text or "<" in text:
            hits = placeholders(text)
            if hits:
                found_in_content[content_hash] = hits
    if not found_in_content:
        return []
    exposed = sorted(o["occurrence_id"] for o in store.occurrences if o["content_hash"] in found_in_content)
    # the requests that carried each exposed occurrence, in capture order
    carriers: dict[int, list[int]] = {o: [] for o in exposed}
    for i, rec in enumerate(ctx.recs):
        for _s, n, o in rec.blocks.runs:
            lo = bisect.bisect_left(exposed, o)
            hi = bisect.bisect_left(exposed, o + n)
            for occ in exposed[lo:hi]:
                carriers[occ].append(i)
    segments_of: dict[int, list[dict]] = {}
    for seg in store.segments:
        if seg["occurrence_id"] in carriers:
            segments_of.setdefault(seg["occurrence_id"], []).append(seg)
    hosts = _hosts(ctx)
    rows: list[Row] = []
    for occ_id in exposed:
        carried = carriers[occ_id]
        if not carried:
            continue
        occ = store.occurrences[occ_id]
        first = carried[0]
        req = requests[first]
        segs = sorted(segments_of.get(occ_id, []), key=lambda s: s["byte_start"])
        counts: dict[str, list] = {}
        for placeholder, category, kind, offset in found_in_content[occ["content_hash"]]:
            entry = counts.setdefault(placeholder, [category, kind, offset, 0])
            entry[3] += 1
        for placeholder, (category, kind, offset, n) in counts.items():
            seg = _segment_at(segs, offset)
            seg_source = seg["source"] if seg else occ["source"]
            call = calls.get((req["session_id"], occ["call_id"])) if occ["call_id"] else None
            rows.append({
                "session_id": req["session_id"], "placeholder": placeholder, "category": category, "kind": kind,
                "occurrence_id": occ_id, "path": occ["path"], "block_kind": occ["kind"],
                "segment_index": seg["segment_index"] if seg else None, "segment_source": seg_source,
                "source_detail": _detail(occ, seg_source, call), "call_id": occ["call_id"],
                "tool_name": occ["tool_name"] or (call["name"] if call else None),
                "command": call["command"] if call else None, "n_in_block": n,
                "first_request_id": req["request_id"], "first_seq_in_session": req["seq_in_session"],
                "host": hosts.get(req["flow_id"]), "provider": req["provider"], "carried_requests": len(carried),
                "_carriers": carried,
            })
    # per session and placeholder: the first request and the distinct requests over all placements
    by_key: dict[tuple[str, str], set[int]] = {}
    for row in rows:
        by_key.setdefault((row["session_id"], row["placeholder"]), set()).update(row["_carriers"])
    for row in rows:
        carried = by_key[(row["session_id"], row["placeholder"])]
        row["session_first_request_id"] = requests[min(carried)]["request_id"]
        row["session_requests"] = len(carried)
        del row["_carriers"]
    return rows


def _segment_at(segments: list[dict], offset: int) -> dict | None:
    for seg in segments:
        if seg["byte_start"] <= offset < seg["byte_end"]:
            return seg
    return segments[-1] if segments else None


def _detail(occ: dict, seg_source: str, call: dict | None) -> str:
    if occ["kind"] == "tool_result" or seg_source == "tool_result":
        what = (call or {}).get("command") or (call or {}).get("name") or occ["tool_name"]
        return f"tool result of {what}" if what else "tool result"
    if occ["kind"] == "tool_call" or seg_source == "tool_call":
        what = (call or {}).get("name") or occ["tool_name"]
        return f"tool call arguments of {what}" if what else "tool call arguments"
    return _SOURCE_WORDS.get(seg_source, seg_source or "unknown")


def _hosts(ctx: BuildContext) -> dict[str, str]:
    flows = ctx.capture.flows()
    return dict(zip(flows.column("flow_id").to_pylist(), flows.column("host").to_pylist(), strict=True))


TABLE = Table("exposures", "every redacted secret or pseudonymised datum that entered model context, by placement",
              COLUMNS, build)
