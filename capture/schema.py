"""The capture's Parquet schema, one documented column list per table.

`docs/capture-format.md` is generated from these lists (see `ctxtap.capture.schema_doc`),
so the documentation cannot drift from what is written.
"""

from __future__ import annotations

import pyarrow as pa

S, I64, I32, F64, B, BIN = pa.string(), pa.int64(), pa.int32(), pa.float64(), pa.bool_(), pa.binary()

FLOW_COLUMNS: list[tuple[str, pa.DataType, str]] = [
    ("capture_id", S, "Capture this flow belongs to."),
    ("flow_id", S, "Unique flow id (mitmproxy's flow id)."),
    ("seq", I64, "Order in which the proxy saw the request start (0-based)."),
    ("kind", S, "`http`, or `websocket` for an upgrade request (its messages are in ws_messages)."),
    ("record_mode", S, "`full` (headers and bodies kept) or `metadata` (method, host, path, status, sizes, timings)."),
    ("state", S, "`complete`, `incomplete` (no response recorded: still running at a crash), or `error`."),
    ("method", S, "HTTP method."),
    ("scheme", S, "`https` or `http` as the client used it."),
    ("host", S, "Host the client addressed (before any --route)."),
    ("port", I32, "Port the client addressed."),
    ("path", S, "Path with query string, credentials redacted."),
    ("url", S, "Full URL the client asked for, credentials redacted."),
    ("upstream_url", S, "Where `--route` sent the request, if it was routed; else null."),
    ("http_version", S, "Client-side HTTP version, e.g. `HTTP/1.1`, `HTTP/2.0`."),
    ("is_model", B, "True when the flow is a model-API call (known provider host and API path, or a user-added host)."),
    ("provider", S, "Provider of the host (`anthropic`, `openai`, `moonshot`, ...) or `unknown`."),
    ("api", S, "`messages`, `responses`, `responses-websocket`, `chat-completions`, `gemini`, `bedrock-messages`, "
               "`bedrock-converse`, `vertex-messages`, `ollama` or `other` (the path's API; the analyzer decides "
               "again)."),
    ("endpoint", S, "`generate`, `count_tokens`, `compact` or `other`."),
    ("telemetry_endpoint", S, "Known vendor telemetry endpoint this request uploads to (`claude-event-logging`, "
                              "`codex-otlp-metrics`): recorded in full and decoded into telemetry.parquet."),
    ("transport", S, "`sse`, `json`, `stream` (other streamed body), `websocket` or `none`."),
    ("client", S, "Client that sent it (`claude-code`, `codex`, `kimi-code`, `grok-cli`, ...) or `unknown (<ua>)`."),
    ("client_version", S, "Client version when the headers carry it."),
    ("client_rule", S, "Rule that identified the client (e.g. `ua:codex`, `body:grok-cli`)."),
    ("request_headers", S, "JSON list of [name, value] pairs, credentials redacted (null in metadata mode)."),
    ("request_content_encoding", S, "Original Content-Encoding of the request body (e.g. `zstd`), or null."),
    ("request_content_type", S, "Content-Type of the request."),
    ("request_decode_status", S, "`identity`, `decoded`, or `error: ...`: `...; kept the N bytes decoded before it` "
     "(cut, bad part way or past 256 MiB: the decoded part is stored), `...; nothing decoded, ...` (a compressed "
     "stream cut before its first output: nothing stored, as redaction cannot read it), else the body is stored "
     "as received (not what its header says)."),
    ("request_bytes_wire", I64, "Request body size as received from the client (encoded)."),
    ("request_bytes", I64, "Request body size after decoding (before redaction)."),
    ("request_body_id", I64, "Body id in bodies.parquet of the decoded, redacted request body."),
    ("request_sha256_client", S, "SHA-256 of the request body as received from the client."),
    ("request_sha256_upstream", S, "SHA-256 of the request body as sent upstream."),
    ("status", I32, "HTTP status code (null when no response arrived)."),
    ("reason", S, "HTTP reason phrase."),
    ("response_http_version", S, "Upstream HTTP version."),
    ("response_headers", S, "JSON list of [name, value] pairs, credentials redacted (null in metadata mode)."),
    ("response_content_encoding", S, "Original Content-Encoding of the response body."),
    ("response_content_type", S, "Content-Type of the response."),
    ("response_decode_status", S, "As `request_decode_status`."),
    ("response_bytes_wire", I64, "Response body size as received from upstream (encoded)."),
    ("response_bytes", I64, "Response body size after decoding."),
    ("response_body_id", I64, "Body id of the decoded, redacted response body (the reassembled stream for SSE)."),
    ("response_sha256_upstream", S, "SHA-256 of the response body as received from upstream."),
    ("response_sha256_client", S, "SHA-256 of the response body as sent to the client."),
    ("integrity_ok", B, "False when the bytes sent on differ from the bytes received (the proxy must never alter traffic)."),
    ("streamed", B, "True when the response was passed through chunk by chunk as it arrived."),
    ("ts_request_start", F64, "Unix time the request started arriving from the client."),
    ("ts_request_end", F64, "Unix time the request body was complete."),
    ("ts_response_headers", F64, "Unix time the response headers arrived from upstream."),
    ("ts_first_byte", F64, "Unix time the first response body byte arrived (streamed responses)."),
    ("ts_response_end", F64, "Unix time the last response byte arrived."),
    ("ts_ws_end", F64, "Unix time a WebSocket closed."),
    ("ws_close_code", I32, "WebSocket close code."),
    ("ws_closed_by_client", B, "True when the client closed the WebSocket."),
    ("n_ws_messages", I64, "Number of WebSocket messages (both directions)."),
    ("model_requests", I64, "Model calls in this flow: 1 for an HTTP model request, the number of request frames for a model WebSocket."),
    ("error", S, "Proxy-side error (connection reset, stream cut, ...), if any; redacted like a body (mitmproxy's "
     "messages can quote the bytes it could not parse)."),
    ("redactions", S, "JSON object: redaction placeholder type -> count, for this flow."),
    ("response_chunk_offsets", S, "Streamed responses: JSON list of `[bytes so far, ms after the first byte]`, one per "
     "network read as it arrived from upstream (raw bytes, before redaction), so replay can pace the stream as "
     "recorded. Null for buffered responses and for captures recorded before ctxtap stored it."),
]

WS_COLUMNS: list[tuple[str, pa.DataType, str]] = [
    ("capture_id", S, "Capture id."),
    ("flow_id", S, "The WebSocket's upgrade flow in flows.parquet."),
    ("idx", I64, "Position in the socket's message sequence (both directions, 0-based)."),
    ("from_client", B, "True for client-to-server messages."),
    ("ts", F64, "Unix time the message was complete at the proxy."),
    ("opcode", S, "`text` or `binary`."),
    ("size", I64, "Message size in bytes (after permessage-deflate decoding)."),
    ("msg_type", S, "JSON `type` of a text message, e.g. `response.create`, `response.completed`."),
    ("is_model_request", B, "True for a client frame that asks the model for a response."),
    ("body_id", I64, "Body id of the redacted message content (null in metadata mode)."),
    ("redactions", S, "JSON object: placeholder type -> count, for this message."),
]

BODY_COLUMNS: list[tuple[str, pa.DataType, str]] = [
    ("body_id", I64, "Body id referenced from flows and ws_messages."),
    ("codec", S, "`zstd` (whole body: one frame, which states its content size unless it is a streamed body of over 16 MiB, compressed as it arrived), `zstd-tail` (two u64 little-endian: the count of leading bytes equal to body `base_id`'s, and the offset in the base where the dictionary begins; then zstd of the rest, with the base from that offset on as raw-content dictionary, none if the offset is the base's length), `ref` (identical to `base_id`) or, in captures written before `zstd-tail`, `zstd-delta` (zstd of the whole body with the whole base as raw-content dictionary)."),
    ("base_id", I64, "Base body for `zstd-tail`, `zstd-delta` and `ref`."),
    ("size", I64, "Decoded size in bytes."),
    ("sha256", S, "SHA-256 of the decoded, redacted body."),
    ("data", BIN, "The encoded bytes."),
]


TELEMETRY_COLUMNS: list[tuple[str, pa.DataType, str]] = [
    ("capture_id", S, "Capture id."),
    ("telemetry_id", I64, "Payload id within the capture (0-based, in the order the writer got them)."),
    ("source", S, "`otlp-receiver` (the client exported to ctxtap's loopback receiver, `record --telemetry`) or "
                  "`proxy:<endpoint>` (a known vendor telemetry endpoint seen by the proxy, e.g. "
                  "`proxy:claude-event-logging`, `proxy:codex-otlp-metrics`)."),
    ("flow_id", S, "The flow in flows.parquet that carried it (proxy sources only)."),
    ("ts_received", F64, "Unix time the payload arrived."),
    ("path", S, "Request path (the receiver's per-run token removed)."),
    ("signal", S, "`logs`, `metrics`, `traces`, `events` (vendor event batches) or `unknown`."),
    ("content_type", S, "Content-Type as sent."),
    ("content_encoding", S, "Content-Encoding as sent (e.g. `gzip`), or null."),
    ("user_agent", S, "User-Agent of the exporter."),
    ("payload_format", S, "`protobuf`, `json` or `unknown`."),
    ("received", S, "`complete`, `truncated` (the sender stopped before its Content-Length) or `oversized` "
                    "(larger than the receiver keeps: the first 8 MiB are kept)."),
    ("declared_bytes", I64, "Body size the sender declared (Content-Length), if any."),
    ("bytes_wire", I64, "Body bytes received (encoded)."),
    ("bytes", I64, "Body bytes after decoding the Content-Encoding."),
    ("parse_status", S, "`ok`, `empty`, or `error: ...` saying why it did not decode (the body is then kept "
                        "as received, redacted)."),
    ("n_records", I64, "Records decoded from it (rows in telemetry_records.parquet)."),
    ("body_id", I64, "Body id of the stored payload: the decoded document as OTLP/JSON (ids in hex), redacted; "
                     "or the raw bytes, redacted, when it did not decode."),
    ("redactions", S, "JSON object: placeholder type -> count, for this payload and its records."),
]

TELEMETRY_RECORD_COLUMNS: list[tuple[str, pa.DataType, str]] = [
    ("capture_id", S, "Capture id."),
    ("telemetry_id", I64, "The payload it came in (telemetry.parquet)."),
    ("idx", I64, "Position within the payload."),
    ("kind", S, "`log` (an OTLP log record / event), `metric` (one data point), `span`, or `vendor-event`."),
    ("name", S, "Event name (`event.name` or the log body, e.g. `claude_code.tool_result`), metric name or "
                "span name."),
    ("ts", F64, "Unix time it occurred (log time, span start, data point time, vendor client timestamp)."),
    ("ts_end", F64, "Span end (spans only)."),
    ("trace_id", S, "Trace id in hex (vendor events: their session id)."),
    ("span_id", S, "Span id in hex."),
    ("parent_span_id", S, "Parent span id in hex."),
    ("severity", S, "Log severity text."),
    ("body", S, "Log body as text (JSON for structured bodies), redacted."),
    ("value", F64, "Metric data point value (the sum for histograms, whose count is in attributes `_count`)."),
    ("unit", S, "Metric unit."),
    ("service_name", S, "Resource attribute `service.name`."),
    ("scope_name", S, "Instrumentation scope name (vendor events: their event type)."),
    ("attributes", S, "JSON object of the record's attributes, redacted."),
    ("resource", S, "JSON object of the resource attributes, redacted."),
]


EFFECT_COLUMNS: list[tuple[str, pa.DataType, str]] = [
    ("capture_id", S, "Capture id."),
    ("root", S, "The snapshotted place the path is in, as an absolute path (personal data: publish and export "
                "leave it out)."),
    ("root_kind", S, "`workspace` (the working directory `record` ran the command in) or `watched` (a place "
                     "given with `record --watch`)."),
    ("rel_path", S, "Path relative to the root, `/`-separated (the new path for a rename)."),
    ("change", S, "`created`, `modified`, `deleted` or `renamed`."),
    ("renamed_from", S, "For a rename: the old relative path (same inode, or same size and content hash)."),
    ("entry_type", S, "`file` or `symlink` (directories are not reported; the files in them are)."),
    ("size_before", I64, "Size in bytes before the run (null when created)."),
    ("size_after", I64, "Size in bytes after the run (null when deleted)."),
    ("sha256_before", S, "SHA-256 of the content before the run, where it was hashed then (small files, within "
                         "the snapshot's hash budget); never the content itself."),
    ("sha256_after", S, "SHA-256 of the content after the run (hashed only for paths whose size, mtime or inode "
                        "changed); a symlink's hash is of its target text."),
    ("mtime_after", F64, "Modification time after the run (Unix seconds)."),
]

EFFECT_ROOT_COLUMNS: list[tuple[str, pa.DataType, str]] = [
    ("capture_id", S, "Capture id."),
    ("root", S, "Absolute path of the place snapshotted (personal data: publish and export leave it out)."),
    ("root_kind", S, "`workspace` or `watched`."),
    ("files_before", I64, "Entries seen before the run (`.git/` internals left out)."),
    ("files_after", I64, "Entries seen after the run."),
    ("hashed_bytes", I64, "Bytes read to hash contents, both snapshots together."),
    ("seconds_before", F64, "Time the snapshot before the run took."),
    ("seconds_after", F64, "Time the snapshot after the run took (comparison included)."),
    ("complete", B, "Both snapshots walked the whole place; false when a bound stopped one early (changes are "
                    "then reported only in the directories both walked in full)."),
    ("stopped", S, "Why a snapshot stopped early (`max files 200000`, `max seconds 20`, `unreadable`), else null."),
]


def arrow_schema(columns: list[tuple[str, pa.DataType, str]]) -> pa.Schema:
    return pa.schema([pa.field(name, dtype, metadata={"doc": doc}) for name, dtype, doc in columns])


FLOWS_SCHEMA = arrow_schema(FLOW_COLUMNS)
WS_SCHEMA = arrow_schema(WS_COLUMNS)
BODIES_SCHEMA = arrow_schema(BODY_COLUMNS)
TELEMETRY_SCHEMA = arrow_schema(TELEMETRY_COLUMNS)
TELEMETRY_RECORDS_SCHEMA = arrow_schema(TELEMETRY_RECORD_COLUMNS)
EFFECTS_SCHEMA = arrow_schema(EFFECT_COLUMNS)
EFFECT_ROOTS_SCHEMA = arrow_schema(EFFECT_ROOT_COLUMNS)
