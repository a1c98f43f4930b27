"""`prefix`: each request against its thread predecessor — where the prefix diverged, and what the cache did."""

from __future__ import annotations

from array import array

from ctxtap.analysis.blocks.blockstore import BlockStore
from ctxtap.analysis.blocks.divergence import divergence_label, prefix_changed
from ctxtap.analysis.cache.cachecheck import (
    CacheRules,
    ReqView,
    cache_verdict,
    common_prefix,
    divergence,
    expected_reads,
)
from ctxtap.analysis.tables.base import F64, I64, B, BuildContext, CallRec, Columns, Row, S, Table

COLUMNS: Columns = [
    ("request_id", S, "Request."),
    ("previous_request_id", S, "The thread's previous request (null for the first)."),
    ("thread_id", S, "Thread."),
    ("gap_s", F64, "Seconds from the previous request's end to this request's start."),
    ("n_blocks", I64, "Blocks in this request."),
    ("common_prefix_blocks", I64, "Leading blocks identical to the previous request's."),
    ("common_prefix_tokens", I64, "Estimated tokens of that common prefix."),
    ("first_divergent_position", I64, "Position of the first differing block (null: pure extension)."),
    ("first_divergent_path", S, "Its path."),
    ("first_divergent_kind", S, "Its kind."),
    ("first_divergent_source", S, "Its business source."),
    ("divergence_kind", S, "`extended` (previous request is a prefix), `changed`, `inserted`, `removed`, `reordered`, `first`."),
    ("divergence_summary", S, "What changed, in words (e.g. `system[0] changed: a per-request hash (cch=49d84 -> cch=7a1f2)`)."),
    ("prefix_changed", B, "The request broke its predecessor's prefix (divergence_kind changed, inserted, removed or reordered)."),
    ("divergence_label", S, "divergence_summary without its example values (`system[2] changed: a timestamp`): the key to group changes by."),
    ("cache_read_tokens", I64, "Reported cache reads."),
    ("cache_write_tokens", I64, "Reported cache writes."),
    ("expected_cached_tokens", I64, "Tokens the provider's caching rules let us expect to be read (breakpoints, minimum lengths, granularity, TTL)."),
    ("cache_status", S, "`hit` (reads >= 90% of expected), `partial`, `miss`, `unexpected_read` (reads where the "
                        "rules expected none: cached by another request), `n/a` (not reported)."),
    ("miss_cause", S, "`cold_start`, `prefix_change`, `ttl_expired`, `below_minimum`, `unexplained` (null on a hit "
                      "and an unexpected read)."),
    ("miss_explanation", S, "The cause in words (e.g. `TTL expired after a 6 min gap (5 min TTL)`; a minimum is "
                            "compared in the provider's tokens, the figure shown); an unexpected read says so."),
]

def build(ctx: BuildContext) -> list[Row]:
    return _prefix_rows(ctx.recs, ctx.store, ctx.content_tokens, ctx.rules, ctx.tables["requests"])


def _view(rec: CallRec, row: dict, store: BlockStore) -> ReqView:
    # lazy columns and token prefix sums: a view costs nothing per block of resent history;
    # blocks outside the cache key (CACHE_TRANSPARENT_RULES, found when the request was stored)
    # get the key -1
    keys = rec.content_ids
    if rec.transparent:
        keys = array("q", keys)
        for position in rec.transparent:
            keys[position] = -1
    return ReqView(
        request_id=rec.request_id, provider=rec.call.provider, model=row["model"],
        ts_start=rec.call.ts_start, ts_end=rec.call.ts_end,
        hashes=rec.content_ids, cache_keys=keys, tokens=store.token_prefix(rec.blocks),
        paths=store.column(rec.blocks, "path"), kinds=store.column(rec.blocks, "kind"),
        sources=store.column(rec.blocks, "source"),
        texts=None, breakpoints=dict(rec.blocks.breakpoints), auto_breakpoint=rec.call.request.top_level_cache_control,
        cache_read=row["cache_read_tokens"], cache_write=row["cache_write_tokens"],
        calibration=row["estimate_ratio"],
    )


def _prefix_rows(recs: list[CallRec], store: BlockStore, content_tokens: list[int], rules: CacheRules,
                 requests: list[dict]) -> list[dict]:
    rows = []
    views: dict[int, ReqView] = {}

    def view(i: int) -> ReqView:
        if i not in views:
            views[i] = _view(recs[i], requests[i], store)
        return views[i]

    def text_of(v: ReqView, pos: int) -> str:
        rec = recs[index_of[v.request_id]]
        return store.text_of(rec.content_ids[pos])

    index_of = {rec.request_id: i for i, rec in enumerate(recs)}
    for i, rec in enumerate(recs):
        cur = view(i)
        prev_i = rec.placement.previous_in_thread
        prev = view(prev_i) if prev_i is not None else None
        gap = None
        if prev is not None:
            gap = max(0.0, cur.ts_start - (prev.ts_end or prev.ts_start))
        rule = rules.rule(cur.provider, cur.model)
        if prev is None:
            kind, summary = "first", None
            common, common_tokens, first_div = 0, 0, None
        else:
            kind, summary = divergence(prev, cur, text_of)
            common = common_prefix(prev.hashes, cur.hashes)
            common_tokens = cur.tokens.upto(common)
            first_div = None if kind == "extended" else common
        expected_est, facts = expected_reads(prev, cur, rule, gap)
        expected, status, cause, explanation = cache_verdict(prev, cur, rule, expected_est, facts, gap)
        if summary and first_div is not None and first_div < len(cur.cache_keys) and cur.cache_keys[first_div] == -1:
            summary += "; outside the cache key (billing metadata)"
        if rec.call.purpose.purpose == "warmup" or not cur.hashes:
            # a warm-up generates nothing and carries no context: there is no cache behaviour to judge
            expected, status, cause, explanation = None, "n/a", None, None
        if first_div is not None and first_div < len(cur.paths):
            div_path, div_kind, div_source = cur.paths[first_div], cur.kinds[first_div], cur.sources[first_div]
        elif first_div is not None and prev is not None:
            div_path, div_kind, div_source = prev.paths[first_div], prev.kinds[first_div], prev.sources[first_div]
        else:
            div_path = div_kind = div_source = None
        rows.append({
            "request_id": rec.request_id, "previous_request_id": prev.request_id if prev else None,
            "thread_id": rec.placement.thread_id, "gap_s": gap, "n_blocks": len(cur.hashes),
            "common_prefix_blocks": common, "common_prefix_tokens": common_tokens,
            "first_divergent_position": first_div, "first_divergent_path": div_path,
            "first_divergent_kind": div_kind, "first_divergent_source": div_source,
            "divergence_kind": kind, "divergence_summary": summary,
            "prefix_changed": prefix_changed(kind), "divergence_label": divergence_label(summary),
            "cache_read_tokens": cur.cache_read, "cache_write_tokens": cur.cache_write,
            "expected_cached_tokens": expected, "cache_status": status, "miss_cause": cause,
            "miss_explanation": explanation,
        })
        if prev_i is not None and prev_i in views and prev_i != i:
            # keep memory bounded: a view is needed again only as the next request's predecessor
            del views[prev_i]
    return rows


TABLE = Table("prefix", "each request against its predecessor in the thread, and what the cache did", COLUMNS, build)
