"""Golden tests for the OpenAI Responses parser: HTTP JSON/SSE, WebSocket chains, compaction."""

from __future__ import annotations

import json

from ctxtap.analysis.parsing.parse import ParseState, parse_exchange, parse_exchanges
from tests.corpus import fixture, http_exchange, ws_exchange, ws_fixture_frames

CODEX_HEADERS = [
    ("originator", "codex_cli_rs"),
    ("user-agent", "codex_cli_rs/0.150.0 (Mac OS 15.0.1; arm64) iTerm.app"),
    ("session_id", "sess-c1"),
    ("thread_id", "thread-123"),
    (
        "x-codex-turn-metadata",
        json.dumps(
            {"session_id": "sess-c1", "thread_id": "thread-123", "turn_id": "turn-9", "request_kind": "turn"}
        ),
    ),
]


def codex_call(response: bytes | None = None):
    ex = http_exchange(
        "/v1/responses",
        fixture("responses/request_codex_http.json"),
        response if response is not None else fixture("responses/response_stream.sse"),
        headers=CODEX_HEADERS,
    )
    calls = parse_exchange(ex)
    assert len(calls) == 1
    return calls[0]


def test_block_order_and_sources():
    call = codex_call()
    layout = [(b.path, b.kind, b.role, b.source, b.rule_id) for b in call.request.blocks]
    assert layout == [
        ("tools[0]", "tool_definition", "system", "tool_catalogue", "generic.tool-definition"),
        ("tools[1]", "tool_definition", "system", "tool_catalogue", "generic.tool-definition"),
        ("tools[2]", "tool_definition", "system", "plugin_catalogue", "generic.mcp-tool"),
        ("instructions", "instruction_text", "system", "platform_rules", "codex.base-instructions"),
        ("input[0].content[0]", "instruction_text", "developer", "runtime_environment", "codex.permissions"),
        ("input[1].content[0]", "message_text", "user", "project_instructions", "codex.agents-md"),
        ("input[2].content[0]", "message_text", "user", "project_instructions", "codex.agents-md"),
        ("input[3].content[0]", "message_text", "user", "runtime_environment", "codex.environment-context"),
        ("input[4].content[0]", "message_text", "user", "user_task", "generic.first-user-text-task"),
        ("input[4].content[1]", "image", "user", "user_task", "generic.user-media"),
        ("input[5]", "reasoning", "assistant", "assistant_output", "generic.reasoning"),
        ("input[6]", "tool_call", "assistant", "tool_call", "generic.tool-call"),
        ("input[7]", "tool_result", "tool", "tool_result", "generic.tool-result"),
        ("input[8]", "tool_call", "assistant", "tool_call", "generic.tool-call"),
        ("input[9]", "tool_result", "tool", "tool_result", "generic.tool-result"),
        ("input[10].content[0]", "message_text", "assistant", "assistant_output", "generic.assistant-text"),
    ]
    blocks = {b.path: b for b in call.request.blocks}
    assert blocks["input[1].content[0]"].scope == "repository"
    assert blocks["input[2].content[0]"].scope == "directory"  # services/api below the cwd
    assert blocks["input[4].content[1]"].text == "[image image/png 70 bytes]"
    assert blocks["input[5]"].text == "Need to run the tests."
    assert blocks["input[7]"].text == "FAIL: test_parse (exit 2)"
    assert (blocks["input[9]"].call_id, blocks["input[9]"].tool_name) == ("call_2", "apply_patch")
    assert call.request.tool_names == ["shell_command", "apply_patch", "search_docs"]
    assert call.request.n_tools == 3


def test_stream_reassembly_prefers_done_items():
    r = codex_call().response
    assert r.parse_status == "ok" and r.error is None
    assert r.response_id == "resp_fx1"
    assert r.text == "Running pytest."
    assert r.reasoning == "Check the failing test."
    assert [(t.call_id, t.name, t.kind, t.arguments) for t in r.tool_calls] == [
        ("call_3", "shell_command", "function", '{"command":"pytest -q"}')
    ]
    assert [i["type"] for i in r.output_items] == ["reasoning", "message", "function_call"]
    assert r.stop_reason == "completed"


def test_usage_inclusive_with_cache_write():
    u = codex_call().response.usage
    assert u.cache_semantics == "inclusive"
    assert (u.input_total.value, u.cache_read.value, u.cache_write.value) == (41237, 40960, 100)
    assert u.input_uncached.value == 41237 - 40960 - 100 and u.input_uncached.status == "reported"
    assert (u.output.value, u.reasoning.value) == (311, 192)


def test_truncated_stream_falls_back_to_deltas():
    raw = fixture("responses/response_stream.sse")
    cut = raw[: raw.rindex(b"event: response.output_item.done")]
    r = codex_call(cut).response
    assert r.parse_status == "partial" and r.error.rule_id == "stream.truncated"
    assert r.tool_calls[0].arguments == '{"command":"pytest -q"}'  # joined from two deltas
    assert r.text == "Running pytest."
    assert r.usage.input_total.status == "not_available"


def test_identity_and_purpose():
    call = codex_call()
    ident = call.identity
    assert (ident.client, ident.client_version) == ("codex", "0.150.0")
    assert (ident.session_id, ident.thread_id, ident.turn_id) == ("sess-c1", "thread-123", "turn-9")
    assert ident.prompt_cache_key == "thread-123"
    assert call.purpose.purpose == "main" and call.purpose.rule_id == "codex.turn-metadata-turn"


def test_response_failed():
    r = codex_call(fixture("responses/response_failed.sse")).response
    assert r.parse_status == "ok"
    assert (r.error.layer, r.error.code, r.error.retryable) == (
        "context_length",
        "context_length_exceeded",
        False,
    )
    assert r.stop_reason == "failed"


def test_compact_endpoint():
    ex = http_exchange(
        "/v1/responses/compact",
        fixture("responses/request_compact.json"),
        fixture("responses/response_compact.json"),
        headers=[*CODEX_HEADERS[:2], ("x-openai-subagent", "compact")],
    )
    (call,) = parse_exchange(ex)
    assert call.request.endpoint == "compact"
    assert call.purpose.purpose == "compaction" and call.purpose.rule_id == "endpoint.compact"
    assert [i["type"] for i in call.response.output_items] == ["message", "compaction"]
    assert call.response.usage.input_total.value == 900
    assert call.request.n_tools == 0


def test_websocket_prewarm_continuation_and_wrapped_error():
    ex = ws_exchange(ws_fixture_frames("responses/ws_frames.jsonl"), headers=CODEX_HEADERS[:2])
    calls = parse_exchange(ex, ParseState())
    assert [c.call_key for c in calls] == [
        "ws-1#0",
        "ws-1#3",
        "ws-1#9",
    ]  # response.processed is not a request
    prewarm, first, second = calls
    assert prewarm.purpose.purpose == "warmup" and prewarm.purpose.rule_id == "codex.generate-false"
    assert prewarm.request.endpoint == "warmup"
    assert first.purpose.purpose == "main"
    assert first.identity.turn_id == "turn-1" and first.identity.session_id == "s-ws"
    assert first.response.tool_calls[0].call_id == "call_w1"
    # the continuation carries one new item; the model read the whole history
    paths = [(b.path, b.source, b.inherited_from) for b in second.request.blocks]
    assert paths == [
        ("tools[0]", "tool_catalogue", None),
        ("instructions", "platform_rules", None),
        ("input[0].content[0]", "runtime_environment", "resp_w1"),
        ("input[1].content[0]", "runtime_environment", "resp_w1"),
        ("input[2].content[0]", "user_task", "resp_w1"),
        ("input[3]", "tool_call", "resp_w1"),
        ("input[4]", "tool_result", None),
    ]
    assert second.request.effective_input_complete
    assert second.request.previous_response_id == "resp_w1"
    err = second.response.error
    assert (err.layer, err.code, err.http_status, err.retryable, err.retry_after_s) == (
        "quota",
        "usage_limit_reached",
        429,
        False,
        120.0,
    )
    assert err.rule_id == "stream:code.usage_limit_reached"
    assert second.transport == "websocket" and second.ts_start == 2009.0


def test_unresolved_continuation_is_flagged():
    frames = ws_fixture_frames("responses/ws_frames.jsonl")[9:]  # only the last request and its error
    (call,) = parse_exchange(ws_exchange(frames))
    assert not call.request.effective_input_complete
    assert call.request.parse_status == "partial"
    assert any("resp_w1" in w for w in call.request.warnings)
    assert [b.path for b in call.request.blocks if b.path.startswith("input")] == ["input[0]"]


def test_http_continuation_across_flows():
    first_body = {"model": "gpt-5", "store": True, "input": "List the files.", "tools": []}
    first_resp = {
        "id": "resp_h1",
        "status": "completed",
        "output": [{"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"}],
        "usage": {"input_tokens": 50, "output_tokens": 5},
    }
    second_body = {
        "model": "gpt-5",
        "store": True,
        "previous_response_id": "resp_h1",
        "input": [{"type": "function_call_output", "call_id": "c1", "output": "a.txt"}],
    }
    second_resp = {
        "id": "resp_h2",
        "status": "completed",
        "output": [],
        "usage": {"input_tokens": 60, "output_tokens": 3},
    }
    calls = list(
        parse_exchanges(
            [
                http_exchange("/v1/responses", first_body, first_resp, flow_id="f1"),
                http_exchange("/v1/responses", second_body, second_resp, flow_id="f2"),
            ]
        )
    )
    blocks = calls[1].request.blocks
    assert [(b.path, b.kind, b.inherited_from) for b in blocks] == [
        ("input[0].content", "message_text", "resp_h1"),
        ("input[1]", "tool_call", "resp_h1"),
        ("input[2]", "tool_result", None),
    ]
    assert blocks[2].tool_name == "ls"
    # the first call's usage: no cached counter at all -> uncached is an estimate
    u = calls[0].response.usage
    assert u.input_uncached.value == 50 and u.input_uncached.status == "estimated"
