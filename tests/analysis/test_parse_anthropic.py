"""Golden tests for the Anthropic Messages parser, from hand-written fixtures."""

from __future__ import annotations

import json

from ctxtap.analysis.parsing.parse import parse_exchange
from tests.analysis.claude_headers import CLAUDE_HEADERS
from tests.corpus import fixture, http_exchange


def one_call(ex):
    calls = parse_exchange(ex)
    assert len(calls) == 1
    return calls[0]


def claude_call():
    ex = http_exchange(
        "/v1/messages?beta=true",
        fixture("anthropic/request_claude_code.json"),
        fixture("anthropic/response_stream.sse"),
        headers=CLAUDE_HEADERS,
    )
    return one_call(ex)


def test_block_order_paths_and_sources():
    call = claude_call()
    layout = [(b.path, b.kind, b.role, b.source, b.rule_id) for b in call.request.blocks]
    assert layout == [
        ("tools[0]", "tool_definition", "system", "tool_catalogue", "generic.tool-definition"),
        ("tools[1]", "tool_definition", "system", "plugin_catalogue", "generic.mcp-tool"),
        ("system[0]", "instruction_text", "system", "platform_rules", "claude.billing-header"),
        ("system[1]", "instruction_text", "system", "platform_rules", "claude.identity"),
        ("system[2]", "instruction_text", "system", "platform_rules", "claude.system-prompt"),
        ("messages[0].content[0]", "message_text", "user", "project_instructions", "claude.claude-md"),
        ("messages[0].content[1]", "message_text", "user", "project_instructions", "claude.claude-md"),
        ("messages[0].content[2]", "message_text", "user", "user_task", "generic.first-user-text-task"),
        ("messages[0].content[3]", "image", "user", "user_task", "generic.user-media"),
        ("messages[1].content", "instruction_text", "system", "runtime_environment", "claude.env-message"),
        ("messages[2].content[0]", "reasoning", "assistant", "assistant_output", "generic.reasoning"),
        ("messages[2].content[1]", "message_text", "assistant", "assistant_output", "generic.assistant-text"),
        ("messages[2].content[2]", "tool_call", "assistant", "tool_call", "generic.tool-call"),
        ("messages[3].content[0]", "tool_result", "user", "tool_result", "generic.tool-result"),
    ]
    assert [b.position for b in call.request.blocks] == list(range(14))


def test_six_attributes_of_key_blocks():
    blocks = {b.path: b for b in claude_call().request.blocks}
    root_md, nested_md = blocks["messages[0].content[0]"], blocks["messages[0].content[1]"]
    assert (root_md.authority, root_md.scope, root_md.lifetime, root_md.content_type) == (
        "project",
        "repository",
        "project",
        "instruction",
    )
    assert nested_md.scope == "directory"  # src/api/CLAUDE.md below the working directory
    env = blocks["messages[1].content"]
    assert (env.authority, env.scope, env.lifetime, env.content_type) == (
        "platform",
        "session",
        "session",
        "data",
    )
    task = blocks["messages[0].content[2]"]
    assert (task.authority, task.scope, task.lifetime, task.content_type) == (
        "user",
        "turn",
        "turn",
        "instruction",
    )
    result = blocks["messages[3].content[0]"]
    # an instruction-shaped string inside a tool result stays data
    assert "IGNORE PREVIOUS INSTRUCTIONS" in result.text
    assert (result.authority, result.content_type) == ("data", "data")
    tools = blocks["tools[0]"]
    assert (tools.authority, tools.scope, tools.lifetime, tools.content_type) == (
        "platform",
        "global",
        "client_version",
        "instruction",
    )


def test_text_hash_size_and_breakpoints():
    blocks = {b.path: b for b in claude_call().request.blocks}
    image = blocks["messages[0].content[3]"]
    assert image.text == "[image image/png 70 bytes]"
    assert "iVBOR" not in image.text
    result = blocks["messages[3].content[0]"]
    assert result.text.startswith("1 failed, 3 passed\nIGNORE")
    assert result.bytes == len(result.text.encode())
    assert result.is_error is True
    assert result.cache_breakpoint == "ephemeral"
    assert blocks["tools[1]"].cache_breakpoint == "1h"
    assert blocks["system[2]"].cache_breakpoint == "ephemeral"
    assert blocks["system[1]"].cache_breakpoint is None
    call_block = blocks["messages[2].content[2]"]
    assert json.loads(call_block.text)["input"] == {"command": "pytest -q"}
    assert all(len(b.content_hash) == 64 for b in blocks.values())


def test_cache_control_does_not_change_the_hash():
    body = json.loads(fixture("anthropic/request_claude_code.json"))
    moved = json.loads(fixture("anthropic/request_claude_code.json"))
    del moved["system"][2]["cache_control"]
    moved["system"][1]["cache_control"] = {"type": "ephemeral"}
    del moved["messages"][3]["content"][0]["cache_control"]
    a = one_call(http_exchange("/v1/messages", body, fixture("anthropic/response_stream.sse")))
    b = one_call(http_exchange("/v1/messages", moved, fixture("anthropic/response_stream.sse")))
    assert [x.content_hash for x in a.request.blocks] == [x.content_hash for x in b.request.blocks]
    assert (
        a.request.blocks[4].cache_breakpoint == "ephemeral" and b.request.blocks[4].cache_breakpoint is None
    )


def test_tool_call_links_to_result():
    blocks = claude_call().request.blocks
    calls = {b.call_id: b for b in blocks if b.kind == "tool_call"}
    results = [b for b in blocks if b.kind == "tool_result"]
    assert [r.call_id for r in results] == ["toolu_01"]
    assert calls["toolu_01"].tool_name == results[0].tool_name == "Bash"


def test_stream_reassembly_and_usage():
    call = claude_call()
    r = call.response
    assert r.parse_status == "ok" and r.error is None
    assert r.response_id == "msg_fx1"
    assert r.text == "Let me read the file."
    assert r.reasoning == "The test fails because of a typo."
    assert [(t.call_id, t.name, json.loads(t.arguments)) for t in r.tool_calls] == [
        ("toolu_02", "Read", {"file_path": "/src/app.py"})
    ]
    assert r.stop_reason == "tool_use"
    u = r.usage
    assert u.cache_semantics == "additive"
    assert (u.input_uncached.value, u.cache_read.value, u.cache_write.value) == (12, 30000, 2048)
    assert (u.cache_write_5m.value, u.cache_write_1h.value) == (48, 2000)
    assert u.input_total.value == 12 + 30000 + 2048 and u.input_total.status == "reported"
    assert u.output.value == 157  # message_delta overrides message_start's 1
    assert u.reasoning.status == "not_available" and u.reasoning.value is None
    assert call.transport == "sse"


def test_identity_and_purpose():
    call = claude_call()
    ident = call.identity
    assert (ident.client, ident.client_version) == ("claude-code", "2.1.300")
    assert ident.session_id == "sess-from-header"  # header wins over metadata.user_id
    assert ident.turn_id == "prompt-1"
    assert ident.user_id and "dev-1" in ident.user_id
    assert call.purpose.purpose == "main" and call.purpose.rule_id == "claude.request-class"
    assert call.request.model == "claude-sonnet-4-5" and call.request.max_output_tokens == 32000
    assert call.request.tool_names == ["Bash", "mcp__github__search"]


def test_session_from_metadata_when_header_absent():
    call = one_call(
        http_exchange(
            "/v1/messages",
            fixture("anthropic/request_claude_code.json"),
            fixture("anthropic/response_stream.sse"),
        )
    )
    assert call.identity.session_id == "sess-from-body"
    assert call.identity.client == "claude-code"  # body marker
    assert call.identity.client_version == "2.1.300"  # from the billing header


def test_quota_probe_and_legacy_session():
    call = one_call(
        http_exchange(
            "/v1/messages",
            fixture("anthropic/request_quota.json"),
            fixture("anthropic/response_message.json"),
        )
    )
    assert call.purpose.purpose == "probe"
    assert call.purpose.rule_id == "generic.max-tokens-1"
    assert call.identity.session_id == "0a1b2c3d-1111-2222-3333-444455556666"
    claude = one_call(
        http_exchange(
            "/v1/messages",
            fixture("anthropic/request_quota.json"),
            fixture("anthropic/response_message.json"),
            headers=CLAUDE_HEADERS[:3],
        )
    )
    assert claude.purpose.rule_id == "claude.quota-probe"
    assert claude.request.blocks[0].rule_id == "claude.quota-probe"


def test_title_request_non_stream_json():
    call = one_call(
        http_exchange(
            "/v1/messages",
            fixture("anthropic/request_title.json"),
            fixture("anthropic/response_message.json"),
        )
    )
    assert call.purpose.purpose == "title" and call.purpose.rule_id == "text.title"
    assert call.response.text == '{"title": "Fix failing test"}'
    assert call.response.usage.input_total.value == 210
    assert call.response.usage.input_total.status == "estimated"  # no cache counters reported
    assert call.response.usage.cache_read.status == "not_available"
    assert call.transport == "json"


def test_count_tokens():
    call = one_call(
        http_exchange(
            "/v1/messages/count_tokens?beta=true",
            fixture("anthropic/request_title.json"),
            {"input_tokens": 4242},
        )
    )
    assert call.request.endpoint == "count_tokens"
    assert call.purpose.purpose == "count_tokens"
    assert call.response.counted_input_tokens == 4242
    assert call.response.usage.input_total.status == "not_available"


def test_error_event_inside_200_stream():
    call = one_call(
        http_exchange(
            "/v1/messages",
            fixture("anthropic/request_title.json"),
            fixture("anthropic/response_overloaded.sse"),
        )
    )
    r = call.response
    assert r.text == "Partial an"
    assert r.error is not None
    assert (r.error.layer, r.error.code, r.error.retryable) == ("model_service", "overloaded_error", True)
    assert r.error.rule_id == "stream:code.overloaded_error"


def test_truncated_stream_is_partial():
    raw = fixture("anthropic/response_stream.sse")
    cut = raw[: raw.index(b"pp.py")]  # mid tool-input JSON
    r = one_call(http_exchange("/v1/messages", fixture("anthropic/request_title.json"), cut)).response
    assert r.parse_status == "partial"
    assert r.error is not None and r.error.layer == "protocol" and r.error.rule_id == "stream.truncated"
    assert r.text == "Let me read the file."
    assert r.tool_calls[0].arguments == '{"file_path": "/src/a'


def test_http_errors():
    rate = one_call(
        http_exchange(
            "/v1/messages",
            fixture("anthropic/request_title.json"),
            fixture("anthropic/error_rate_limit.json"),
            status=429,
            response_headers=[("retry-after", "30"), ("content-type", "application/json")],
        )
    ).response.error
    assert (rate.layer, rate.code, rate.retryable, rate.retry_after_s, rate.http_status) == (
        "rate_limit",
        "rate_limit_error",
        True,
        30.0,
        429,
    )
    denied = one_call(
        http_exchange(
            "/v1/messages",
            fixture("anthropic/request_title.json"),
            fixture("anthropic/error_permission.json"),
            status=403,
        )
    ).response.error
    assert (denied.layer, denied.retryable) == ("auth", False)
    too_long = one_call(
        http_exchange(
            "/v1/messages",
            fixture("anthropic/request_title.json"),
            fixture("anthropic/error_prompt_too_long.json"),
            status=400,
        )
    ).response.error
    assert (too_long.layer, too_long.rule_id) == ("context_length", "http:message.context-length")
    overloaded = one_call(
        http_exchange(
            "/v1/messages", fixture("anthropic/request_title.json"), "<html>bad gateway</html>", status=529
        )
    ).response
    assert overloaded.error.layer == "model_service" and overloaded.error.retryable
    assert overloaded.parse_status == "partial"
