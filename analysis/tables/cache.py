"""The cache beyond one thread's predecessor: three witnesses per request, subagents against their
parent, cold batches in flight, and the cache-key variants of a session.

* `cache_verdicts`: per request, what the bytes say changed against the baseline, the provider's own
  diagnostics (where a response carries them), the client's claim (where its telemetry carries one),
  and whether they agree (`analysis.cachewitness`).
* `subagent_prefix`: a subagent's first request against its parent's request at the delegation (the
  one whose response made the delegation call): the prefix they share and where they part.
* `cold_batches`: requests that started while another request with the same prefix was still in
  flight, so its cache write had not landed: each paid for the prefix again (`extra_cost_usd`).
* `cache_key_variants`: the distinct (prompt_cache_key, client session id, model, tool order) of a
  session, each with what varied from the first.
"""

from __future__ import annotations

import hashlib
from array import array
from bisect import bisect_right
from collections import defaultdict, deque
from collections.abc import Sequence

from ctxtap.analysis.blocks.divergence import describe_change
from ctxtap.analysis.blocks.sequences import common_prefix
from ctxtap.analysis.cache.cachecheck import HIT_FRACTION, CacheRule
from ctxtap.analysis.cache.cachewitness import (
    Claim,
    agreement,
    change_of_block,
    change_of_claim,
    change_of_provider,
    claims,
)
from ctxtap.analysis.parsing.models import TokenCount, Usage
from ctxtap.analysis.tables.base import F64, I64, B, BuildContext, CallRec, Columns, Row, S, Table

_PARTS = ["tools", "system", "messages"]  # a Messages-style cache prefix, in order
RECENT = 8  # finished requests looked back at for a prefix already written (besides in-flight ones)
LOOK_BACK = 64  # requests before a claim searched for the miss it speaks of

VERDICT_COLUMNS: Columns = [
    ("request_id", S, "Request."),
    ("session_id", S, "Session."),
    ("thread_id", S, "Thread."),
    ("cache_status", S, "The bytes' cache verdict (prefix.cache_status)."),
    ("baseline_request_id", S, "The request the witnesses compare with: the one whose response this request named "
                               "for the provider's comparison when it is in the capture, else the thread's previous "
                               "request."),
    ("baseline_source", S, "`provider-baseline` (named by the request), `thread-previous`, or null (none)."),
    ("bytes_change", S, "What the bytes say changed first against the baseline: `model`, `cache_key` "
                        "(prompt_cache_key), `tools`, `system`, `messages`, or `none` (the baseline is a prefix of "
                        "this request); null without a baseline."),
    ("bytes_cause", S, "The bytes' miss cause (prefix.miss_cause: `prefix_change`, `ttl_expired`, ...)."),
    ("bytes_detail", S, "Where the bytes diverged, in words."),
    ("provider_outcome", S, "The provider's diagnostics: `miss`, `hit`, `no_divergence`, `not_compared` (asked on a "
                            "first turn), `pending` (still comparing), `baseline_not_found`, `unavailable`, `other`; "
                            "null when the response carries none."),
    ("provider_reason", S, "The provider's reason as it wrote it (`tools_changed`, `input_changed`, ...)."),
    ("provider_change", S, "That reason in the bytes' words (`tools`, `system`, `input` = system or messages, ...)."),
    ("provider_missed_tokens", I64, "Tokens the provider says missed (`cache_missed_input_tokens`, "
                                    "`cache_missed_tokens`)."),
    ("provider_reusable_tokens", I64, "OpenAI: the compared response's reusable prefix "
                                      "(`comparison_reusable_tokens`)."),
    ("provider_baseline_id", S, "The response id the request asked the provider to compare with."),
    ("provider_diagnostics", S, "The provider's diagnostics object as JSON."),
    ("client_claim", S, "The client's own claim as it wrote it (Claude Code `prompt_cache.last_miss_cause`, "
                        "`message.diagnostics.cache_miss_reason`), from its telemetry."),
    ("client_change", S, "That claim in the bytes' words (`ttl` where it names an expiry); null if unread."),
    ("client_source", S, "The telemetry record and attribute the claim came from."),
    ("client_telemetry_id", I64, "Its payload (telemetry.parquet)."),
    ("agreement", S, "`agree` (two or more witnesses, none contradicting), `disagree`, `unknown` (fewer than two)."),
    ("agreement_detail", S, "Each witness's answer, and which two differ."),
]

SUBAGENT_COLUMNS: Columns = [
    ("session_id", S, "Session."),
    ("thread_id", S, "The subagent thread."),
    ("first_request_id", S, "Its first request."),
    ("parent_thread_id", S, "The delegating thread."),
    ("parent_call_id", S, "The delegation call."),
    ("parent_request_id", S, "The parent's request at the delegation: the one whose response made the call (else "
                             "the parent's last request before the child started)."),
    ("parent_match", S, "`delegation-call` or `latest-before`."),
    ("same_model", B, "Both requests name the same model (a cache is per model)."),
    ("shared_prefix_blocks", I64, "Leading blocks the child shares with the parent's request."),
    ("shared_prefix_tokens", I64, "Their estimated tokens: what the child could read from the parent's cache."),
    ("child_blocks", I64, "Blocks in the child's request."),
    ("parent_blocks", I64, "Blocks in the parent's request."),
    ("divergent_change", S, "Where they part: `model`, `tools`, `system`, `messages`, `none` (one is a prefix of "
                            "the other)."),
    ("child_divergent_path", S, "The child's first differing block."),
    ("child_divergent_kind", S, "Its kind."),
    ("child_divergent_source", S, "Its business source."),
    ("parent_divergent_path", S, "The parent's block at that position."),
    ("divergence_summary", S, "What differs, in words."),
    ("child_cache_read_tokens", I64, "Cache reads reported for the child's first request."),
    ("child_cache_write_tokens", I64, "Cache writes reported for it."),
]

COLD_COLUMNS: Columns = [
    ("batch_id", S, "The batch: its writer's request id."),
    ("request_id", S, "Request."),
    ("session_id", S, "Session."),
    ("thread_id", S, "Thread."),
    ("role", S, "`writer` (the first of the batch: its write was in flight) or `member` (started before it ended)."),
    ("writer_request_id", S, "The in-flight request whose prefix this one shares."),
    ("started_after_writer_s", F64, "Seconds from the writer's start to this request's start (writer: 0)."),
    ("writer_left_s", F64, "Seconds the writer still had to run when this request started (writer: null)."),
    ("shared_prefix_tokens", I64, "Cacheable prefix shared with the writer, in the provider's tokens (estimate x "
                                  "calibration; breakpoints, minimum and granularity as in cache_rules)."),
    ("cache_read_tokens", I64, "Reported cache reads."),
    ("cache_write_tokens", I64, "Reported cache writes."),
    ("unread_tokens", I64, "Shared prefix the request did not read: paid again (members)."),
    ("extra_cost_usd", F64, "What those tokens cost over a cache read at this model's prices (members; null when "
                            "unpriced)."),
]

VARIANT_COLUMNS: Columns = [
    ("session_id", S, "Session."),
    ("n_variants", I64, "Distinct cache-key variants in the session."),
    ("variant", I64, "1-based, in order of first use."),
    ("n_requests", I64, "Generate requests with this variant."),
    ("first_request_id", S, "Its first request."),
    ("last_request_id", S, "Its last request."),
    ("prompt_cache_key", S, "The request's prompt_cache_key (OpenAI, Moonshot...)."),
    ("client_session_id", S, "The client's own session id (header or body), where it sends one."),
    ("model", S, "Model."),
    ("n_tools", I64, "Tools offered."),
    ("tool_order", S, "Short hash of the tool names in order (equal: same tools, same order)."),
    ("varied", S, "What differs from variant 1, in words (`model a -> b; tool order (same 12 tools)`); null for "
                  "variant 1."),
]


# --- shared ---------------------------------------------------------------------------------------


def _keys(rec: CallRec) -> Sequence[int]:
    """Content keys with blocks outside the provider's cache key neutralised (as the prefix table does)."""
    if not rec.transparent:
        return rec.content_ids
    keys = array("q", rec.content_ids)
    for position in rec.transparent:
        keys[position] = -1
    return keys


def _model(rec: CallRec) -> str | None:
    return rec.call.request.model or rec.call.response.model


def _block(ctx: BuildContext, rec: CallRec, pos: int) -> dict | None:
    if pos >= len(rec.content_ids):
        return None
    return {name: ctx.store.column(rec.blocks, name)[pos] for name in ("path", "kind", "role", "source")}


def _compare(ctx: BuildContext, base: CallRec, cur: CallRec) -> tuple[str, str, int, dict | None, dict | None]:
    """(change, words, shared blocks, cur's block and base's block at the divergence) of cur against base."""
    a, b = _model(base), _model(cur)
    common = common_prefix(_keys(base), _keys(cur))
    if a and b and a != b:
        return "model", f"model {a} -> {b}", common, None, None
    ka, kb = base.call.identity.prompt_cache_key, cur.call.identity.prompt_cache_key
    if ka and kb and ka != kb:
        return "cache_key", f"prompt_cache_key {ka} -> {kb}", common, None, None
    if common >= len(base.content_ids) or common >= len(cur.content_ids):
        return "none", "one request is a prefix of the other", common, None, None
    mine, theirs = _block(ctx, cur, common), _block(ctx, base, common)
    assert mine is not None and theirs is not None
    # the part that comes first in cache order: a tool list one side ends early (the other's next
    # block is its system prompt) differs in its tools
    change = min(change_of_block(mine["kind"], mine["role"]), change_of_block(theirs["kind"], theirs["role"]),
                 key=_PARTS.index)
    if mine["path"] == theirs["path"]:
        words = describe_change(mine["path"], ctx.store.text_of(base.content_ids[common]),
                                ctx.store.text_of(cur.content_ids[common]))
    else:
        words = f"{mine['path']} ({mine['kind']}) where the other has {theirs['path']} ({theirs['kind']})"
    return change, words, common, mine, theirs


# --- cache_verdicts -------------------------------------------------------------------------------


def _claims_by_request(ctx: BuildContext) -> dict[int, Claim]:
    """Each claim in the telemetry, on the request it speaks of: the one whose response id it names,
    else the client session's latest request that ended by then (a missed one first)."""
    try:
        found = claims(ctx.capture.telemetry_records().to_pylist())
    except Exception:  # a damaged or absent telemetry file must not stop the analysis
        return {}
    if not found:
        return {}
    recs, requests = ctx.recs, ctx.tables["requests"]
    missed = {r["request_id"] for r in ctx.tables.get("prefix", []) if r.get("cache_status") in ("miss", "partial")}
    by_response = {rec.call.response.response_id: i for i, rec in enumerate(recs) if rec.call.response.response_id}
    ended: dict[str | None, list[tuple[float, int]]] = defaultdict(list)  # client session -> (end, request)
    for i, rec in enumerate(recs):
        if requests[i]["endpoint"] == "generate":
            end = rec.call.ts_end or rec.call.ts_start
            ended[rec.call.identity.session_id].append((end, i))
            ended[None].append((end, i))
    for rows in ended.values():
        rows.sort()
    out: dict[int, Claim] = {}
    for claim in sorted(found, key=lambda c: c.ts or 0.0):
        i = by_response.get(claim.response_id or "")
        if i is None and claim.ts is not None:
            rows = ended.get(claim.session) or ended[None]
            k = bisect_right(rows, (claim.ts + 1.0, len(recs)))
            before = [j for _, j in rows[max(0, k - LOOK_BACK):k]]
            i = next((j for j in reversed(before) if recs[j].request_id in missed), before[-1] if before else None)
        if i is not None:
            out[i] = claim
    return out


def build_verdicts(ctx: BuildContext) -> list[Row]:
    recs = ctx.recs
    prefix = {r["request_id"]: r for r in ctx.tables.get("prefix", [])}
    by_response = {rec.call.response.response_id: i for i, rec in enumerate(recs) if rec.call.response.response_id}
    claimed = _claims_by_request(ctx)
    rows = []
    for i, rec in enumerate(recs):
        req, diag = rec.call.request, rec.call.response.cache_diagnostics
        base, source = None, None
        named = by_response.get(req.diagnostics_baseline or "")
        if named is not None and named != i:
            base, source = named, "provider-baseline"
        elif rec.placement.previous_in_thread is not None:
            base, source = rec.placement.previous_in_thread, "thread-previous"
        p = prefix.get(rec.request_id, {})
        bytes_change = detail = None
        if base is not None:
            bytes_change, detail, _, _, _ = _compare(ctx, recs[base], rec)
        outcome = diag.outcome if diag else None
        if outcome == "no_divergence" and req.diagnostics_baseline is None:
            outcome = "not_compared"  # a first turn: the provider stored this request, compared nothing
        provider_change = change_of_provider(outcome, diag.reason if diag else None)
        claim = claimed.get(i)
        client_change = change_of_claim(claim.text) if claim else None
        verdict = agreement(bytes_change, p.get("miss_cause"), provider_change, client_change)
        rows.append({
            "request_id": rec.request_id, "session_id": rec.placement.session_id,
            "thread_id": rec.placement.thread_id, "cache_status": p.get("cache_status"),
            "baseline_request_id": recs[base].request_id if base is not None else None,
            "baseline_source": source, "bytes_change": bytes_change, "bytes_cause": p.get("miss_cause"),
            "bytes_detail": detail, "provider_outcome": outcome, "provider_reason": diag.reason if diag else None,
            "provider_change": provider_change, "provider_missed_tokens": diag.missed_tokens if diag else None,
            "provider_reusable_tokens": diag.reusable_tokens if diag else None,
            "provider_baseline_id": req.diagnostics_baseline, "provider_diagnostics": diag.raw if diag else None,
            "client_claim": claim.text if claim else None, "client_change": client_change,
            "client_source": f"{claim.event or 'telemetry'}: {claim.name}" if claim else None,
            "client_telemetry_id": claim.telemetry_id if claim else None,
            "agreement": verdict.agreement, "agreement_detail": verdict.detail,
        })
    return rows


# --- subagent_prefix ------------------------------------------------------------------------------


def build_subagents(ctx: BuildContext) -> list[Row]:
    recs, requests = ctx.recs, ctx.tables["requests"]
    by_thread: dict[str, list[int]] = defaultdict(list)
    for i in sorted(range(len(recs)), key=lambda i: (recs[i].call.ts_start, i)):
        by_thread[recs[i].placement.thread_id].append(i)
    rows = []
    for thread, members in by_thread.items():
        child_i = members[0]
        child = recs[child_i]
        pl = child.placement
        if pl.thread_kind != "subagent" or not pl.parent_thread_id or not child.content_ids:
            continue
        parents = by_thread.get(pl.parent_thread_id, [])
        parent_i = next((j for j in parents if pl.parent_call_id and any(
            c.call_id == pl.parent_call_id for c in recs[j].call.response.tool_calls)), None)
        match = "delegation-call"
        if parent_i is None:
            before = [j for j in parents if recs[j].call.ts_start < child.call.ts_start]
            if not before:
                continue
            parent_i, match = before[-1], "latest-before"
        parent = recs[parent_i]
        change, words, common, mine, theirs = _compare(ctx, parent, child)
        row = requests[child_i]
        rows.append({
            "session_id": pl.session_id, "thread_id": thread, "first_request_id": child.request_id,
            "parent_thread_id": pl.parent_thread_id, "parent_call_id": pl.parent_call_id,
            "parent_request_id": parent.request_id, "parent_match": match,
            "same_model": _model(parent) == _model(child), "shared_prefix_blocks": common,
            "shared_prefix_tokens": ctx.store.token_prefix(child.blocks).upto(common),
            "child_blocks": len(child.content_ids), "parent_blocks": len(parent.content_ids),
            "divergent_change": change,
            "child_divergent_path": mine["path"] if mine else None,
            "child_divergent_kind": mine["kind"] if mine else None,
            "child_divergent_source": mine["source"] if mine else None,
            "parent_divergent_path": theirs["path"] if theirs else None,
            "divergence_summary": words,
            "child_cache_read_tokens": row["cache_read_tokens"], "child_cache_write_tokens": row["cache_write_tokens"],
        })
    return rows


# --- cold_batches ---------------------------------------------------------------------------------



def _cacheable(ctx: BuildContext, writer: CallRec, reader: CallRec, rule: CacheRule) -> int:
    """Estimated tokens of the shared prefix the writer's request caches for the reader."""
    common = common_prefix(_keys(writer), _keys(reader))
    if rule.mode == "breakpoints":
        marks = {p for p, _ in writer.blocks.breakpoints}
        if writer.call.request.top_level_cache_control and writer.content_ids:
            marks.add(len(writer.content_ids) - 1)
        best = max((p for p in marks if p < common), default=-1)
        return ctx.store.token_prefix(reader.blocks).upto(best + 1) if best >= 0 else 0
    tokens = ctx.store.token_prefix(reader.blocks).upto(common)
    return (tokens // rule.granularity) * rule.granularity


def _count(value: int | None) -> TokenCount:
    return TokenCount(value=value, status="estimated") if value is not None else TokenCount()


def _as_read(usage: Usage, tokens: int) -> Usage:
    """`usage` as if `tokens` of what it wrote (5-minute writes first) or paid uncached had been read:
    the price difference is what the cold start cost."""
    write, uncached = usage.cache_write.value or 0, usage.input_uncached.value or 0
    from_write = min(tokens, write)
    from_uncached = min(tokens - from_write, uncached)
    w5, w1 = usage.cache_write_5m.value, usage.cache_write_1h.value
    if w5 is not None or w1 is not None:
        take5 = min(from_write, w5 or 0)
        w5, w1 = (w5 or 0) - take5, (w1 or 0) - (from_write - take5)
    return usage.model_copy(update={
        "cache_read": _count((usage.cache_read.value or 0) + from_write + from_uncached),
        "cache_write": _count(write - from_write) if usage.cache_write.value is not None else usage.cache_write,
        "input_uncached": _count(uncached - from_uncached),
        "cache_write_5m": _count(w5), "cache_write_1h": _count(w1),
    })


def _ttl(rec: CallRec, rule: CacheRule) -> float:
    """How long a finished request's write lives: an hour where it marked a 1-hour breakpoint."""
    marks = {ttl for _, ttl in rec.blocks.breakpoints} | {rec.call.request.top_level_cache_control}
    return rule.ttl_1h_s if "1h" in marks else rule.ttl_s


def build_cold(ctx: BuildContext) -> list[Row]:
    recs, requests = ctx.recs, ctx.tables["requests"]
    groups: dict[tuple, list[int]] = defaultdict(list)
    for i, rec in enumerate(recs):
        r = requests[i]
        if (r["endpoint"] == "generate" and r["purpose"] != "warmup" and rec.content_ids
                and r["cache_read_tokens"] is not None):
            groups[(r["session_id"], r["provider"], r["model"])].append(i)
    rows: list[Row] = []
    for (_, provider, model), members in groups.items():
        members.sort(key=lambda i: (recs[i].call.ts_start, i))
        rule = ctx.rules.rule(provider, model)
        writer_of: dict[int, tuple[int, int, int]] = {}  # member -> (batch's first writer, its writer, shared)
        flying: list[int] = []  # started earlier, not ended yet (few: the requests in flight at once)
        landed: deque[int] = deque(maxlen=RECENT)
        for i in members:
            start = recs[i].call.ts_start
            for j in [j for j in flying if recs[j].call.ts_end is not None and recs[j].call.ts_end <= start]:
                flying.remove(j)
                landed.append(j)
            if not flying:
                flying.append(i)
                continue
            scale = requests[i]["estimate_ratio"] or 1.0
            best = max(flying, key=lambda j: (_cacheable(ctx, recs[j], recs[i], rule), -recs[j].call.ts_start))
            shared = round(_cacheable(ctx, recs[best], recs[i], rule) * scale)
            written = max((round(_cacheable(ctx, recs[j], recs[i], rule) * scale) for j in landed
                           if start - (recs[j].call.ts_end or start) <= _ttl(recs[j], rule)), default=0)
            read = requests[i]["cache_read_tokens"] or 0
            flying.append(i)
            if shared < rule.min_tokens or shared <= written or read >= HIT_FRACTION * shared:
                continue
            if (requests[best]["cache_read_tokens"] or 0) >= HIT_FRACTION * shared:
                continue  # the writer read the prefix itself: it was cached already, this miss is another's
            writer_of[i] = (writer_of[best][0] if best in writer_of else best, best, shared)
        batches: dict[int, list[int]] = defaultdict(list)
        for i, (root, _, _) in writer_of.items():
            batches[root].append(i)
        for root, batch in batches.items():
            rows.append(_cold_row(ctx, root, root, root, "writer", 0))
            for i in sorted(batch, key=lambda i: recs[i].call.ts_start):
                _, writer, shared = writer_of[i]
                rows.append(_cold_row(ctx, root, writer, i, "member", shared))
    return rows


def _cold_row(ctx: BuildContext, root: int, writer_i: int, i: int, role: str, shared: int) -> Row:
    recs, requests = ctx.recs, ctx.tables["requests"]
    rec, r, writer = recs[i], requests[i], recs[writer_i]
    read = r["cache_read_tokens"] or 0
    unread = max(0, shared - read) if role == "member" else None
    extra = None
    if unread:
        usage = rec.call.response.usage
        actual = ctx.prices.cost(r["model"], usage)
        instead = ctx.prices.cost(r["model"], _as_read(usage, unread))
        extra = max(0.0, actual - instead) if actual is not None and instead is not None else None
    elif unread == 0:
        extra = 0.0
    end = writer.call.ts_end
    return {
        "batch_id": recs[root].request_id, "request_id": rec.request_id, "session_id": r["session_id"],
        "thread_id": r["thread_id"], "role": role, "writer_request_id": writer.request_id,
        "started_after_writer_s": rec.call.ts_start - recs[root].call.ts_start,
        "writer_left_s": (end - rec.call.ts_start) if role == "member" and end is not None else None,
        "shared_prefix_tokens": shared if role == "member" else None,
        "cache_read_tokens": r["cache_read_tokens"], "cache_write_tokens": r["cache_write_tokens"],
        "unread_tokens": unread, "extra_cost_usd": extra,
    }


# --- cache_key_variants ---------------------------------------------------------------------------


def _order_hash(names: Sequence[str]) -> str:
    return hashlib.sha256("\x00".join(names).encode()).hexdigest()[:10]


def _varied(first: dict, other: dict) -> str:
    said = []
    for key, label in (("prompt_cache_key", "prompt_cache_key"), ("client_session_id", "client session id"),
                       ("model", "model")):
        if first[key] != other[key]:
            said.append(f"{label} {first[key] or '(none)'} -> {other[key] or '(none)'}")
    a, b = first["_tools"], other["_tools"]
    if a != b:
        if sorted(a) == sorted(b):
            said.append(f"tool order (same {len(a)} tools)")
        else:
            added, gone = sorted(set(b) - set(a)), sorted(set(a) - set(b))
            parts = [f"+{', +'.join(added)}" if added else "", f"-{', -'.join(gone)}" if gone else ""]
            said.append(f"tools {len(a)} -> {len(b)} ({' '.join(p for p in parts if p) or 'repeated names'})")
    return "; ".join(said)


def build_variants(ctx: BuildContext) -> list[Row]:
    recs, requests = ctx.recs, ctx.tables["requests"]
    sessions: dict[str, dict[tuple, dict]] = defaultdict(dict)
    for i in sorted(range(len(recs)), key=lambda i: (recs[i].call.ts_start, i)):
        r, call = requests[i], recs[i].call
        if r["endpoint"] != "generate" or r["purpose"] == "warmup":
            continue
        tools = list(call.request.tool_names)
        key = (call.identity.prompt_cache_key, call.identity.session_id, r["model"], tuple(tools))
        variants = sessions[r["session_id"]]
        v = variants.get(key)
        if v is None:
            v = variants[key] = {
                "session_id": r["session_id"], "variant": len(variants) + 1, "n_requests": 0,
                "first_request_id": r["request_id"], "prompt_cache_key": key[0], "client_session_id": key[1],
                "model": key[2], "n_tools": len(tools), "tool_order": _order_hash(tools), "_tools": tools,
            }
        v["n_requests"] += 1
        v["last_request_id"] = r["request_id"]
    rows = []
    for variants in sessions.values():
        ordered = list(variants.values())
        for v in ordered:
            v["n_variants"] = len(ordered)
            v["varied"] = (_varied(ordered[0], v) or None) if v["variant"] > 1 else None
        for v in ordered:
            del v["_tools"]
            rows.append(v)
    return rows


TABLES = [
    Table("cache_verdicts", "per request, the three witnesses of the cache: the bytes, the provider's diagnostics "
          "and the client's claim, and whether they agree", VERDICT_COLUMNS, build_verdicts),
    Table("subagent_prefix", "each subagent's first request against its parent's request at the delegation",
          SUBAGENT_COLUMNS, build_subagents),
    Table("cold_batches", "requests that paid for a prefix another request was still writing (in flight), with "
          "the extra cost", COLD_COLUMNS, build_cold),
    Table("cache_key_variants", "the distinct cache-key variants of each session (prompt_cache_key, client session "
          "id, model, tool order), each with what varied", VARIANT_COLUMNS, build_variants),
]
