"""Golden tests for the Chat Completions parser (Moonshot/Kimi, DeepSeek, OpenAI shapes)."""

from __future__ import annotations

import json

from ctxtap.analysis.parsing.parse import parse_exchange
from tests.corpus import fixture, http_exchange

KIMI_HEADERS = [
    ("User-Agent", "KimiCLI/1.50.0"),
    ("X-Msh-Platform", "kimi_cli"),
    ("X-Msh-Version", "1.50.0"),
    ("X-Msh-Device-Id", "dev-9"),
]


def kimi_call(response: bytes | None = None, status: int = 200):
    ex = http_exchange(
        "/v1/chat/completions",
        fixture("chat/request_kimi.json"),
        response if response is not None else fixture("chat/response_moonshot.sse"),
        headers=KIMI_HEADERS,
        status=status,
    )
    (call,) = parse_exchange(ex)
    return call


def test_block_layout():
    call = kimi_call()
    layout = [(b.path, b.kind, b.role, b.source, b.rule_id) for b in call.request.blocks]
    assert layout == [
        ("tools[0]", "tool_definition", "system", "tool_catalogue", "generic.tool-definition"),
        ("tools[1]", "tool_definition", "system", "tool_catalogue", "generic.tool-definition"),
        ("messages[0].content", "instruction_text", "system", "mixed", "kimi.system-prompt"),
        ("messages[1].content", "message_text", "user", "user_task", "generic.first-user-text-task"),
        ("messages[2].content", "message_text", "user", "runtime_environment", "kimi.date-reminder"),
        ("messages[3].reasoning_content", "reasoning", "assistant", "assistant_output", "generic.reasoning"),
        ("messages[3].tool_calls[0]", "tool_call", "assistant", "tool_call", "generic.tool-call"),
        ("messages[3].tool_calls[1]", "tool_call", "assistant", "tool_call", "generic.tool-call"),
        ("messages[4]", "tool_result", "tool", "tool_result", "generic.tool-result"),
        ("messages[5]", "tool_result", "tool", "tool_result", "generic.tool-result"),
        ("messages[6].content[0]", "message_text", "user", "system_reminder", "kimi.system-reminder"),
        ("messages[6].content[1]", "message_text", "user", "user_task", "generic.user-text-task"),
        ("messages[6].content[2]", "image", "user", "user_task", "generic.user-media"),
    ]
    blocks = {b.path: b for b in call.request.blocks}
    prompt = blocks["messages[0].content"]  # the rules, then the working directory at the end
    assert [(g.source, g.rule_id) for g in prompt.segments] == [
        ("platform_rules", "kimi.system-prompt"), ("runtime_environment", "detect.environment")]
    assert prompt.text.encode()[prompt.segments[1].start:].strip().startswith(b"The current working directory is")
    assert blocks["messages[5]"].text == "On branch main\nnothing to commit"
    assert [(b.call_id, b.tool_name) for b in call.request.blocks if b.kind == "tool_result"] == [
        ("Shell_0", "Shell"),
        ("Shell_1", "Shell"),
    ]
    assert blocks["messages[6].content[2]"].text.startswith("[image image/jpeg ")
    assert blocks["messages[2].content"].lifetime == "session"
    assert call.request.tool_names == ["Shell", "$web_search"]
    assert call.request.max_output_tokens == 32000


def test_moonshot_stream_usage_inside_choice():
    call = kimi_call()
    r = call.response
    assert r.parse_status == "ok"
    assert r.text == "I'll check both files."
    assert r.reasoning == "The test imports a missing module."
    assert [(t.call_id, t.name, json.loads(t.arguments)) for t in r.tool_calls] == [
        ("ReadFile_2", "ReadFile", {"path": "src/app.py"}),
        ("ReadFile_3", "ReadFile", {"path": "tests/test_app.py"}),
    ]
    assert r.stop_reason == "tool_calls"
    u = r.usage
    assert u.cache_semantics == "inclusive"
    assert (u.input_total.value, u.cache_read.value, u.input_uncached.value) == (9120, 8960, 160)
    assert u.input_uncached.status == "reported"
    assert u.reasoning.status == "not_available"
    assert u.cache_write.status == "not_available"


def test_identity_and_purpose():
    call = kimi_call()
    assert (call.identity.client, call.identity.client_version) == ("kimi-cli", "1.50.0")
    assert call.identity.session_id == "session_abc-123"
    assert call.identity.user_id == "dev-9"
    assert call.purpose.purpose == "main"


def test_truncated_stream_has_no_usage():
    raw = fixture("chat/response_moonshot.sse")
    cut = raw[: raw.index(b'"finish_reason":"tool_calls"')]
    r = kimi_call(cut).response
    assert r.parse_status == "partial"
    assert r.error.layer == "protocol"
    for field in ("input_total", "input_uncached", "cache_read", "output"):
        count = getattr(r.usage, field)
        assert count.value is None and count.status == "not_available"
    assert r.usage.cache_semantics == "unknown"
    assert len(r.tool_calls) == 2  # fragments that arrived are kept


def test_deepseek_cache_fields_and_reasoning():
    ex = http_exchange(
        "/chat/completions",
        fixture("chat/request_kimi.json"),
        fixture("chat/response_deepseek.json"),
        host="api.deepseek.com",
    )
    (call,) = parse_exchange(ex)
    r = call.response
    assert call.provider == "deepseek"
    assert r.text == "9.11 is smaller than 9.9."
    assert r.reasoning == "Compare the two numbers."
    u = r.usage
    assert (u.input_total.value, u.cache_read.value, u.input_uncached.value, u.reasoning.value) == (
        1000,
        768,
        232,
        150,
    )
    assert call.transport == "json"


def test_errors():
    quota = kimi_call(fixture("chat/error_quota.json"), status=429).response.error
    assert (quota.layer, quota.code, quota.retryable) == ("quota", "insufficient_quota", False)
    rate = kimi_call(fixture("chat/error_rate_limit.json"), status=429).response.error
    assert (rate.layer, rate.retryable, rate.retry_after_s) == ("rate_limit", True, 1.5)
    ctx = kimi_call(fixture("chat/error_context.json"), status=400).response.error
    assert (ctx.layer, ctx.code) == ("context_length", "context_length_exceeded")


def test_error_chunk_in_stream():
    stream = b'data: {"id":"c1","choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\ndata: {"error":{"message":"server overloaded","type":"server_error"}}\n\n'
    r = kimi_call(stream).response
    assert r.text == "Hi"
    assert (r.error.layer, r.error.rule_id) == ("model_service", "stream:code.server_error")
