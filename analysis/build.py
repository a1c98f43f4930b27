"""`ctxtap analyze`: derive the analysis dataset of a capture, once, and reuse it.

The dataset is rebuilt only when the capture, the ctxtap version, the analysis
version, the price table or the cache rules change (a fingerprint in
`analysis/_meta.json`). Blocks are content-addressed (see `analysis.blockstore`),
so tokenising and storage follow the unique content.
"""

from __future__ import annotations

import gc
import json
import shutil
import time
from array import array
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from analysis import growth, tokens
from analysis.attribution import CACHE_TRANSPARENT_RULES  # blocks providers drop before caching
from analysis.blockstore import BlockStore, RequestBlocks
from analysis.cachecheck import CacheRules, ReqView, cache_verdict, common_prefix, divergence, expected_reads
from analysis.db import dataset_dir
from analysis.layout import summarise_paths, tool_results_via
from analysis.memo import ParseMemo
from analysis.models import ModelCall
from analysis.parse import parse_exchanges
from analysis.prices import PriceTable
from analysis.protocols.registry import replayed_call
from analysis.schema import SCHEMAS
from analysis.sessions import Placement, SessionAssigner
from analysis.toolloop import canonical_arguments, result_status, shell_command, split_compound
from ctxtap import __version__
from ctxtap.capture.store import Capture

ANALYSIS_VERSION = "1"
META = "_meta.json"


@dataclass
class AnalyzeOptions:
    prices: Path | None = None
    cache_rules: Path | None = None
    force: bool = False


@dataclass
class CallRec:
    """A parsed call without its block objects (those live once in the BlockStore)."""

    call: ModelCall
    placement: Placement
    blocks: RequestBlocks
    content_ids: array = field(default_factory=lambda: array("q"))
    request_id: str = ""


@dataclass
class BuildStats:
    requests: int = 0
    blocks_total: int = 0
    distinct_contents: int = 0
    bytes_tokenised: int = 0
    unique_block_bytes: int = 0
    context_bytes_total: int = 0
    body_bytes_seen: int = 0  # request bodies the parser was given
    body_bytes_scanned: int = 0  # of which actually parsed (the rest reused from the previous body)
    seconds: float = 0.0


def fingerprint(capture: Capture, prices: PriceTable, rules_path: Path | None) -> dict:
    files = {}
    for name in ("flows.parquet", "ws_messages.parquet", "bodies.parquet"):
        path = capture.directory / name
        if path.exists():
            st = path.stat()
            files[name] = [st.st_size, st.st_mtime_ns]
    rules = Path(rules_path).read_text() if rules_path else ""
    return {
        "code": _code_digest(),
        "ctxtap_version": __version__, "analysis_version": ANALYSIS_VERSION,
        "capture_id": capture.manifest.capture_id, "capture_status": capture.manifest.status,
        "files": files, "prices": prices.digest, "cache_rules": rules,
        "cache_rules_default": (Path(__file__).with_name("cache_rules.toml")).read_text(),
    }


Progress = Callable[[Iterable, int], Iterable]


def _code_digest() -> str:
    """Digest of the analyzer's own code and SQL, so an upgrade always rebuilds."""
    import hashlib

    digest = hashlib.sha256()
    root = Path(__file__).parent
    for path in sorted([*root.rglob("*.py"), *root.rglob("*.sql"), *root.rglob("*.toml")]):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def ensure_analysis(capture_dir: Path, options: AnalyzeOptions | None = None,
                    progress: Progress | None = None) -> tuple[Path, bool]:
    """Build the dataset if missing or stale. Returns (dataset dir, whether it was built now)."""
    options = options or AnalyzeOptions()
    capture = Capture.open(capture_dir)
    prices = PriceTable.load(options.prices)
    rules = CacheRules.load(options.cache_rules)
    out = dataset_dir(capture.directory)
    key = fingerprint(capture, prices, options.cache_rules)
    meta_path = out / META
    if not options.force and not capture.live and meta_path.exists():
        try:
            if json.loads(meta_path.read_text()).get("fingerprint") == key:
                return out, False
        except ValueError:
            pass
    start = time.perf_counter()
    # The build allocates many long-lived objects (blocks, memo entries); the cyclic GC would
    # rescan them again and again, making time grow faster than the content. Nothing here
    # creates reference cycles that need collecting before the build ends.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        tables, stats = build(capture, prices, rules, progress)
    finally:
        if gc_was_enabled:
            gc.enable()
    stats.seconds = time.perf_counter() - start
    write_dataset(out, capture.manifest.capture_id, tables, {
        "fingerprint": key, "built_at": time.time(), "prices_as_of": prices.as_of,
        "cache_rules_as_of": rules.as_of, "estimate_encoding": tokens.encoding_label(),
        "stats": stats.__dict__,
    })
    return out, True


def write_dataset(out: Path, capture_id: str, tables: dict[str, list[dict]], meta: dict) -> None:
    """Write every table to `<out>/<table>/capture_id=<id>/part-0.parquet`, atomically as a whole."""
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    for name, schema in SCHEMAS.items():
        rows = tables.get(name, [])
        part = tmp / name / f"capture_id={capture_id}"
        part.mkdir(parents=True)
        columns = {f.name: [r.get(f.name) for r in rows] for f in schema}
        pq.write_table(pa.table(columns, schema=schema), part / "part-0.parquet", compression="zstd")
    (tmp / META).write_text(json.dumps(meta, indent=2, sort_keys=True, default=str))
    old = out.with_name(out.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if out.exists():
        out.rename(old)
    tmp.rename(out)
    shutil.rmtree(old, ignore_errors=True)


# --- the build ------------------------------------------------------------------------------


def build(capture: Capture, prices: PriceTable, rules: CacheRules,
          progress: Progress | None = None) -> tuple[dict[str, list[dict]], BuildStats]:
    from ctxtap.capture.paths import redaction_key
    from redaction import Redactor

    redactor = Redactor(redaction_key(), capture.manifest.capture_id)
    store = BlockStore()
    assigner = SessionAssigner()
    recs: list[CallRec] = []
    stats = BuildStats()
    exchanges: Iterable = capture.exchanges()
    if progress is not None:
        flows = capture.flows()
        total = sum(1 for m, r in zip(flows.column("is_model").to_pylist(), flows.column("record_mode").to_pylist(),
                                      strict=True) if m and r == "full")
        exchanges = progress(exchanges, total)
    memo = ParseMemo()
    for call in parse_exchanges(exchanges, memo):
        rb = store.add_request(call.call_key, call.request.blocks)
        compacted = any(b.source == "summary" for b in call.request.blocks)
        placement = assigner.place(call, rb.conversation, continues_after_compaction=compacted)
        stats.blocks_total += len(call.request.blocks)
        stats.context_bytes_total += rb.context_bytes
        call.request.blocks = []  # the store holds what is needed, once
        recs.append(CallRec(call, placement, rb, rb.content_ids, call.call_key))
    stats.body_bytes_scanned, stats.body_bytes_seen = memo.bytes_scanned, memo.bytes_seen
    store.tokenise()
    stats.requests = len(recs)
    stats.distinct_contents = len(store.content)
    stats.bytes_tokenised = store.bytes_tokenised
    stats.unique_block_bytes = sum(row["bytes"] for row in store.content.values())

    content_tokens = store.content_tokens()
    requests = _request_rows(recs, store, content_tokens, prices, redactor)
    prefix = _prefix_rows(recs, store, content_tokens, rules, requests)
    tool_calls = _tool_call_rows(recs, store, content_tokens, requests, redactor)
    threads = _thread_rows(recs, requests)
    layout = _layout_rows(recs, store, content_tokens, prefix)
    runs = [
        {"request_id": rec.request_id, "position_start": s, "n": n, "occurrence_start": o}
        for rec in recs for s, n, o in rec.blocks.runs
    ]
    breakpoints = [
        {"request_id": rec.request_id, "position": pos, "cache_breakpoint": value}
        for rec in recs for pos, value in rec.blocks.breakpoints
    ]
    m = capture.manifest
    tables = {
        "captures": [{"name": capture.directory.name, "source": m.source, "status": m.status,
                      "started_at": m.started_at, "ended_at": m.ended_at, "ctxtap_version": m.ctxtap_version}],
        "requests": requests,
        "request_breakpoints": breakpoints,
        "block_content": list(store.content.values()),
        "block_occurrences": store.occurrences,
        "request_block_runs": runs,
        "tool_calls": tool_calls,
        "prefix": prefix,
        "threads": threads,
        "layout": layout,
    }
    return tables, stats


def _usage_status(usage) -> str:
    fields = (usage.input_total, usage.output)
    if all(f.value is not None for f in fields):
        return "reported"
    if any(f.value is not None for f in (usage.input_total, usage.output, usage.cache_read)):
        return "partial"
    return "not_available"


def _request_rows(recs: list[CallRec], store: BlockStore, content_tokens: list[int], prices: PriceTable,
                  redactor) -> list[dict]:
    rows = []
    cumulative: dict[str, int] = {}
    order = sorted(range(len(recs)), key=lambda i: (recs[i].call.ts_start, i))
    seq_session: dict[str, int] = {}
    seq_thread: dict[str, int] = {}
    by_index: dict[int, dict] = {}
    for i in order:
        rec = recs[i]
        call, pl = rec.call, rec.placement
        usage = call.response.usage
        est = sum(content_tokens[c] for c in rec.content_ids)
        reported = usage.input_total.value
        prev = pl.previous_in_thread
        common = 0
        if prev is not None:
            common = common_prefix(recs[prev].content_ids, rec.content_ids)
        error = call.response.error
        price = prices.find(call.request.model or call.response.model)
        cost = prices.cost(call.request.model or call.response.model, usage)
        basis = reported if reported is not None else est
        cumulative[pl.thread_id] = cumulative.get(pl.thread_id, 0) + basis
        ts_end = call.ts_end
        parse_status = _combined_status(call)
        row = {
            "request_id": rec.request_id, "flow_id": call.flow_id, "ws_index": call.ws_index,
            "session_id": pl.session_id, "session_source": pl.session_source, "thread_id": pl.thread_id,
            "thread_kind": pl.thread_kind,
            "seq_in_session": seq_session.setdefault(pl.session_id, 0),
            "seq_in_thread": seq_thread.setdefault(pl.thread_id, 0),
            "turn_index": pl.turn_index,
            "ts_start": call.ts_start, "ts_end": ts_end,
            "ttfb_ms": (call.ts_first_byte - call.ts_start) * 1000 if call.ts_first_byte else None,
            "duration_ms": (ts_end - call.ts_start) * 1000 if ts_end else None,
            "client": call.identity.client, "client_version": call.identity.client_version,
            "provider": call.provider, "api": call.api, "transport": call.transport,
            "endpoint": call.request.endpoint, "model": call.request.model or call.response.model,
            "purpose": call.purpose.purpose, "purpose_rule": call.purpose.rule_id,
            "purpose_evidence": "; ".join(e for e in call.purpose.evidence if e),
            "status": call.http_status,
            "error_layer": error.layer if error else None, "error_code": error.code if error else None,
            "error_message": redactor.redact_text(error.message) if error and error.message else None,
            "retryable": error.retryable if error else None,
            "retry_after_s": error.retry_after_s if error else None,
            "parse_status": parse_status,
            "parse_error": call.request.parse_error or call.response.parse_error,
            "input_tokens_reported": reported,
            "input_uncached_tokens": usage.input_uncached.value,
            "cache_read_tokens": usage.cache_read.value,
            "cache_write_tokens": usage.cache_write.value,
            "cache_write_5m_tokens": usage.cache_write_5m.value,
            "cache_write_1h_tokens": usage.cache_write_1h.value,
            "output_tokens": usage.output.value, "reasoning_tokens": usage.reasoning.value,
            "usage_status": _usage_status(usage), "cache_semantics": usage.cache_semantics,
            "input_tokens_estimated": est, "estimate_encoding": tokens.encoding_label(),
            "estimate_ratio": (reported / est) if reported and est else None,
            "n_blocks": len(rec.content_ids), "n_new_blocks": len(rec.content_ids) - common,
            "n_tools": call.request.n_tools, "body_bytes": call.request_bytes,
            "context_bytes": rec.blocks.context_bytes,
            "response_id": call.response.response_id,
            "previous_response_id": call.request.previous_response_id,
            "stop_reason": call.response.stop_reason, "n_tool_calls": len(call.response.tool_calls),
            "response_text": redactor.redact_text(call.response.text) if call.response.text else None,
            "cost_usd": cost,
            "price_match": f"{price.source}:{price.match}" if price else None,
            "cumulative_input_tokens": cumulative[pl.thread_id],
        }
        seq_session[pl.session_id] += 1
        seq_thread[pl.thread_id] += 1
        by_index[i] = row
    rows = [by_index[i] for i in range(len(recs))]
    return rows


def _combined_status(call: ModelCall) -> str:
    statuses = {call.request.parse_status, call.response.parse_status} - {"not_applicable"}
    if "error" in statuses:
        return "error"
    if "partial" in statuses:
        return "partial"
    return "ok"




def _view(rec: CallRec, row: dict, store: BlockStore, content_tokens: list[int]) -> ReqView:
    occ = [store.occurrences[o] for o in rec.blocks.occurrences]
    breakpoints = dict(rec.blocks.breakpoints)
    keys = [-1 if o["rule_id"] in CACHE_TRANSPARENT_RULES else c for o, c in zip(occ, rec.content_ids, strict=True)]
    return ReqView(
        request_id=rec.request_id, provider=rec.call.provider, model=row["model"],
        ts_start=rec.call.ts_start, ts_end=rec.call.ts_end,
        hashes=list(rec.content_ids), cache_keys=keys, tokens=[content_tokens[c] for c in rec.content_ids],
        paths=[o["path"] for o in occ], kinds=[o["kind"] for o in occ], sources=[o["source"] for o in occ],
        texts=None, breakpoints=breakpoints, auto_breakpoint=rec.call.request.top_level_cache_control,
        cache_read=row["cache_read_tokens"], cache_write=row["cache_write_tokens"],
        calibration=row["estimate_ratio"],
    )


def _prefix_rows(recs: list[CallRec], store: BlockStore, content_tokens: list[int], rules: CacheRules,
                 requests: list[dict]) -> list[dict]:
    rows = []
    views: dict[int, ReqView] = {}

    def view(i: int) -> ReqView:
        if i not in views:
            views[i] = _view(recs[i], requests[i], store, content_tokens)
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
            common_tokens = sum(cur.tokens[:common])
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
            "cache_read_tokens": cur.cache_read, "cache_write_tokens": cur.cache_write,
            "expected_cached_tokens": expected, "cache_status": status, "miss_cause": cause,
            "miss_explanation": explanation,
        })
        if prev_i is not None and prev_i in views and prev_i != i:
            # keep memory bounded: a view is needed again only as the next request's predecessor
            del views[prev_i]
    return rows


def _tool_call_rows(recs: list[CallRec], store: BlockStore, content_tokens: list[int], requests: list[dict],
                    redactor) -> list[dict]:
    index_of = {rec.request_id: i for i, rec in enumerate(recs)}
    # carried: for every occurrence, how many requests carried it and their summed input rate
    n_occ = len(store.occurrences)
    carry = [0] * (n_occ + 1)
    carry_rate = [0.0] * (n_occ + 1)
    for rec, row in zip(recs, requests, strict=True):
        rate = _blended_rate(row)
        for _s, n, o in rec.blocks.runs:
            carry[o] += 1
            carry[o + n] -= 1
            carry_rate[o] += rate or 0.0
            carry_rate[o + n] -= rate or 0.0
    running, running_rate = 0, 0.0
    carried = [0] * n_occ
    carried_rate = [0.0] * n_occ
    for o in range(n_occ):
        running += carry[o]
        running_rate += carry_rate[o]
        carried[o], carried_rate[o] = running, running_rate
    # results by (session, call_id): first request carrying it, text, error flag, carry totals
    results: dict[tuple[str, str], dict] = {}
    for occ in store.occurrences:
        if occ["kind"] != "tool_result" or not occ["call_id"]:
            continue
        first = index_of.get(occ["first_request_id"])
        if first is None:
            continue
        key = (recs[first].placement.session_id, occ["call_id"])
        tokens_ = content_tokens[store.content_index[occ["content_hash"]]]
        entry = results.get(key)
        if entry is None or first < entry["first"]:
            entry = results[key] = {
                "first": first, "text": store.content[occ["content_hash"]]["text"], "is_error": occ["is_error"],
                "tokens": tokens_, "bytes": store.content[occ["content_hash"]]["bytes"],
                "carried": 0, "carried_rate": 0.0, "thread": recs[first].placement.thread_id,
            }
        entry["carried"] += carried[occ["occurrence_id"]]
        entry["carried_rate"] += carried_rate[occ["occurrence_id"]] * tokens_
    replayed = _replayed_calls(recs, store, index_of)
    rows = []
    seen_calls: set[tuple[str, str]] = set()
    identical: dict[tuple[str, str, str], dict] = {}
    for i, rec in enumerate(recs):
        call, pl = rec.call, rec.placement
        calls = call.response.tool_calls
        for tc in calls:
            key = (pl.session_id, tc.call_id)
            seen_calls.add(key)
            result = results.get(key)
            if result is None:
                # The provider gave no id (Gemini): the client made one up and used it on the
                # replayed call and on its result. Find the replay by name and arguments.
                client_id = _client_call_id(replayed, pl.session_id, tc.name, tc.arguments, i)
                if client_id is not None:
                    seen_calls.add((pl.session_id, client_id))
                    result = results.get((pl.session_id, client_id))
            command = shell_command(tc.name, tc.arguments)
            parts = split_compound(command) if command else []
            status = result_status(result["text"], result["is_error"]) if result else "missing"
            gap_ms = None
            if result is not None and call.ts_end:
                gap_ms = (recs[result["first"]].call.ts_start - call.ts_end) * 1000
            signature = (pl.session_id, tc.name, canonical_arguments(tc.arguments))
            earlier = identical.get(signature)
            row = {
                "session_id": pl.session_id, "thread_id": pl.thread_id, "request_id": rec.request_id,
                "call_id": tc.call_id, "name": tc.name, "kind": tc.kind,
                "arguments": redactor.redact_text(tc.arguments), "call_index": tc.index,
                "parallel_group_size": len(calls), "command": redactor.redact_text(command) if command else None,
                "is_compound": len(parts) > 1 if command else None,
                "n_subcommands": len(parts) if command else None,
                "result_request_id": recs[result["first"]].request_id if result else None,
                "result_status": status,
                "result_bytes": result["bytes"] if result else None,
                "result_tokens": result["tokens"] if result else None,
                "gap_ms": gap_ms,
                "repeat_of": earlier["call_id"] if earlier else None,
                "stuck_on_error": bool(earlier and earlier["result_status"] == "error"),
                "carried_requests": result["carried"] if result else 0,
                "carried_tokens": result["carried"] * result["tokens"] if result else 0,
                "carried_cost_usd": result["carried_rate"] if result and result["carried_rate"] else None,
                "orphan": None if result else "call",
            }
            if earlier is None:
                identical[signature] = row
            rows.append(row)
    for (session_id, call_id), result in results.items():
        if (session_id, call_id) in seen_calls:
            continue
        if _has_history_call(store, call_id):
            continue  # proposed before the capture started: its call replays in history
        rows.append({
            "session_id": session_id, "thread_id": result["thread"], "request_id": None, "call_id": call_id,
            "name": None, "kind": None, "arguments": None, "call_index": None, "parallel_group_size": None,
            "command": None, "is_compound": None, "n_subcommands": None,
            "result_request_id": recs[result["first"]].request_id,
            "result_status": result_status(result["text"], result["is_error"]),
            "result_bytes": result["bytes"], "result_tokens": result["tokens"], "gap_ms": None,
            "repeat_of": None, "stuck_on_error": False, "carried_requests": result["carried"],
            "carried_tokens": result["carried"] * result["tokens"],
            "carried_cost_usd": result["carried_rate"] or None, "orphan": "result",
        })
    return rows


def _call_arguments(text: str) -> str | None:
    """Canonical arguments of a replayed tool-call block, whichever protocol's shape it has."""
    try:
        wire = json.loads(text)
    except ValueError:
        return None
    call = replayed_call(wire)
    if call is None:
        return None
    value = call.arguments
    return canonical_arguments(value if isinstance(value, str) else json.dumps(value))


def _replayed_calls(recs: list[CallRec], store: BlockStore, index_of: dict[str, int]) -> dict:
    """(session, tool name) -> [(first request index, call id, canonical arguments)] of replayed calls."""
    out: dict[tuple[str, str], list[tuple[int, str, str | None]]] = {}
    for occ in store.occurrences:
        if occ["kind"] != "tool_call" or not occ["call_id"] or not occ["tool_name"]:
            continue
        first = index_of.get(occ["first_request_id"])
        if first is None:
            continue
        args = _call_arguments(store.content[occ["content_hash"]]["text"])
        out.setdefault((recs[first].placement.session_id, occ["tool_name"]), []).append((first, occ["call_id"], args))
    return out


def _client_call_id(replayed: dict, session: str, name: str, arguments: str, after: int) -> str | None:
    wanted = canonical_arguments(arguments)
    for first, call_id, args in sorted(replayed.get((session, name), [])):
        if first > after and args == wanted:
            return call_id
    return None


def _has_history_call(store: BlockStore, call_id: str) -> bool:
    return call_id in store.tool_call_ids


def _blended_rate(row: dict) -> float | None:
    """USD per input token actually paid by a request (cache discounts included)."""
    cost, reported = row.get("cost_usd"), row.get("input_tokens_reported")
    if cost is None or not reported:
        return None
    output = row.get("output_tokens") or 0
    return max(0.0, cost) / (reported + output) if reported + output else None


def _thread_rows(recs: list[CallRec], requests: list[dict]) -> list[dict]:
    by_thread: dict[str, list[dict]] = {}
    for row in requests:
        by_thread.setdefault(row["thread_id"], []).append(row)
    out = []
    for thread_id, rows in by_thread.items():
        rows.sort(key=lambda r: r["seq_in_thread"])
        n_requests = len(rows)
        # failed calls (no usage) are not part of the growth series
        rows = [r for r in rows if r["error_layer"] is None] or rows
        reported = all(r["input_tokens_reported"] is not None for r in rows)
        series = [r["input_tokens_reported"] if reported else r["input_tokens_estimated"] for r in rows]
        f = growth.fit(series)
        idx, inc, median = growth.acceleration(series)
        out.append({
            "session_id": rows[0]["session_id"], "thread_id": thread_id, "thread_kind": rows[0]["thread_kind"],
            "client": rows[0]["client"], "n_requests": n_requests,
            "input_basis": "reported" if reported else "estimated",
            "total_input_tokens": sum(series),
            "fit_p": f.p if f else None, "fit_m": f.m if f else None, "fit_r2": f.r2 if f else None,
            "accel_seq": rows[idx]["seq_in_thread"] if idx is not None else None,
            "accel_request_id": rows[idx]["request_id"] if idx is not None else None,
            "accel_increment_tokens": inc, "median_increment_tokens": median,
        })
    return out


def _label(summary: str) -> str:
    """A divergence summary without its example values: `system[2] changed: a timestamp`."""
    return summary.split(" (", 1)[0]


def _layout_rows(recs: list[CallRec], store: BlockStore, content_tokens: list[int],
                 prefix: list[dict]) -> list[dict]:
    by_client: dict[str, list[int]] = {}
    for i, rec in enumerate(recs):
        if rec.placement.thread_kind == "main":
            by_client.setdefault(rec.call.identity.client, []).append(i)
    prefix_by_id = {p["request_id"]: p for p in prefix}
    out = []
    for client, indexes in sorted(by_client.items()):
        # the richest early request: the second main request if there is one (it carries tool results)
        sample = recs[indexes[1] if len(indexes) > 1 else indexes[0]]
        occ = [store.occurrences[o] for o in sample.blocks.occurrences]

        def where(source: str, occ=occ) -> str | None:
            picked = [o for o in occ if o["source"] == source]
            return summarise_paths([o["path"] for o in picked], [o["role"] for o in picked])

        via = set()
        for i in indexes:
            for o in recs[i].blocks.occurrences:
                row = store.occurrences[o]
                if row["kind"] == "tool_result":
                    via.add((row["wire_type"], row["role"]))
        dynamic = []
        for i in indexes:
            p = prefix_by_id.get(recs[i].request_id)
            if p and p["divergence_kind"] == "changed" and p["divergence_summary"]:
                if p["first_divergent_position"] is not None and p["first_divergent_position"] < p["n_blocks"] - 1:
                    dynamic.append(p["divergence_summary"])
        sessions = {recs[i].placement.session_id for i in indexes}
        tool_tokens = sum(content_tokens[store.content_index[o["content_hash"]]] for o in occ
                          if o["kind"] == "tool_definition")
        system_tokens = sum(content_tokens[store.content_index[o["content_hash"]]] for o in occ
                            if o["source"] == "platform_rules")
        out.append({
            "client": client, "api": sample.call.api, "n_sessions": len(sessions),
            "rules_location": where("platform_rules"),
            "environment_location": where("runtime_environment"),
            "task_location": where("user_task"),
            "project_instructions_location": where("project_instructions"),
            "tool_results_via": tool_results_via(via),
            "n_tools": sample.call.request.n_tools,
            "tool_definition_tokens": tool_tokens, "system_tokens": system_tokens,
            "dynamic_fields_before_stable": "; ".join(dict.fromkeys(_label(d) for d in dynamic)) or None,
        })
    return out
