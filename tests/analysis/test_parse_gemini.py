"""Golden tests for the Gemini parser: Code Assist (wrapped) and public API forms."""

from __future__ import annotations

import json

from ctxtap.analysis.parsing.parse import parse_exchange
from tests.corpus import fixture, http_exchange

GEMINI_HEADERS = [("User-Agent", "GeminiCLI/0.61.0/gemini-2.5-pro (linux; x64; terminal)")]


def cloudcode_call(response: bytes | None = None, status: int = 200):
    ex = http_exchange(
        "/v1internal:streamGenerateContent?alt=sse",
        fixture("gemini/request_cloudcode.json"),
        response if response is not None else fixture("gemini/response_cloudcode.sse"),
        headers=GEMINI_HEADERS,
        status=status,
    )
    (call,) = parse_exchange(ex)
    return call


def test_wrapped_request_layout():
    call = cloudcode_call()
    layout = [(b.path, b.kind, b.role, b.source, b.rule_id) for b in call.request.blocks]
    assert layout == [
        (
            "tools[0].functionDeclarations[0]",
            "tool_definition",
            "system",
            "tool_catalogue",
            "generic.tool-definition",
        ),
        (
            "tools[0].functionDeclarations[1]",
            "tool_definition",
            "system",
            "tool_catalogue",
            "generic.tool-definition",
        ),
        (
            "systemInstruction.parts[0]",
            "instruction_text",
            "system",
            "platform_rules",
            "gemini.system-prompt",
        ),
        ("contents[0].parts[0]", "message_text", "user", "runtime_environment", "gemini.session-context"),
        ("contents[1].parts[0]", "message_text", "user", "user_task", "generic.first-user-text-task"),
        ("contents[2].parts[0]", "reasoning", "assistant", "assistant_output", "generic.reasoning"),
        ("contents[2].parts[1]", "tool_call", "assistant", "tool_call", "generic.tool-call"),
        ("contents[3].parts[0]", "tool_result", "user", "tool_result", "generic.tool-result"),
    ]
    call_block, result_block = call.request.blocks[6], call.request.blocks[7]
    # no ids on the wire: linked by name and order
    assert call_block.call_id == result_block.call_id == "run_shell_command#0"
    assert json.loads(result_block.text) == {"output": "1 failed"}
    assert call.request.model == "gemini-2.5-pro"
    assert call.request.stream is True


def test_wrapped_stream_response():
    r = cloudcode_call().response
    assert r.parse_status == "ok"
    assert r.response_id == "trace-1"
    assert r.text == "The test imports a missing module."
    assert r.reasoning == "Checking the import."
    assert [(t.name, json.loads(t.arguments)) for t in r.tool_calls] == [
        ("read_file", {"path": "tests/test_app.py"})
    ]
    assert r.stop_reason == "STOP"
    u = r.usage
    assert u.cache_semantics == "inclusive"
    assert (u.input_total.value, u.cache_read.value, u.input_uncached.value) == (5000, 4096, 904)
    assert (u.output.value, u.reasoning.value) == (160, 120)  # thoughts are on top of candidates
    assert u.output.status == "reported"


def test_identity_and_purpose():
    call = cloudcode_call()
    assert (call.identity.client, call.identity.client_version) == ("gemini-cli", "0.61.0")
    assert call.identity.session_id == "gem-sess-1"
    assert call.identity.turn_id == "prompt-7"
    assert call.purpose.purpose == "main"


def test_public_structured_side_call():
    ex = http_exchange(
        "/v1beta/models/gemini-2.5-flash:generateContent",
        fixture("gemini/request_next_speaker.json"),
        fixture("gemini/response_public.json"),
        host="generativelanguage.googleapis.com",
    )
    (call,) = parse_exchange(ex)
    assert call.request.model == "gemini-2.5-flash"
    assert call.purpose.purpose == "structured_side" and call.purpose.rule_id == "text.side-call"
    r = call.response
    assert r.response_id == "gem-resp-1"
    # Gemini omits zero counters: an absent cached count next to a reported prompt is an estimated zero
    assert (r.usage.cache_read.value, r.usage.cache_read.status) == (0, "estimated")
    assert (r.usage.input_uncached.value, r.usage.input_uncached.status) == (800, "estimated")
    assert r.usage.reasoning.status == "estimated"


def test_json_array_stream_and_count_tokens():
    chunks = [
        json.loads(line[6:])
        for line in fixture("gemini/response_cloudcode.sse").decode().splitlines()
        if line.startswith("data: ")
    ]
    ex = http_exchange(
        "/v1beta/models/gemini-2.5-pro:streamGenerateContent",
        fixture("gemini/request_cloudcode.json"),
        json.dumps([c["response"] for c in chunks]),
        host="generativelanguage.googleapis.com",
    )
    (call,) = parse_exchange(ex)
    assert call.transport == "stream"
    assert call.response.text == "The test imports a missing module."
    count = http_exchange(
        "/v1internal:countTokens",
        {
            "request": {
                "model": "models/gemini-2.5-pro",
                "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
            }
        },
        {"totalTokens": 3},
    )
    (counted,) = parse_exchange(count)
    assert counted.purpose.purpose == "count_tokens"
    assert counted.response.counted_input_tokens == 3


def test_resource_exhausted_is_a_rate_limit_with_retry_delay():
    err = cloudcode_call(fixture("gemini/error_resource_exhausted.json"), status=429).response.error
    assert (err.layer, err.code, err.retryable, err.retry_after_s) == (
        "rate_limit",
        "RESOURCE_EXHAUSTED",
        True,
        37.0,
    )


def test_truncated_stream():
    raw = fixture("gemini/response_cloudcode.sse")
    cut = raw[: raw.rindex(b"data: ")]
    r = cloudcode_call(cut).response
    assert r.parse_status == "partial"
    assert r.text == "The test imports "
    assert r.error.rule_id == "stream.truncated"


def test_id_less_calls_are_numbered_on_from_the_history():
    """Gemini calls without ids are `name#k` by their place among the history's calls of that
    name; a response's calls continue that count (not restart it), so each turn's call is the one
    the next request answers, and its results link to it, not to the first turn's."""

    def call(name: str, cmd: str) -> dict:
        return {"functionCall": {"name": name, "args": {"command": cmd}}}

    def answer(name: str, out: str) -> dict:
        return {"functionResponse": {"name": name, "response": {"output": out}}}

    history = [
        {"role": "user", "parts": [{"text": "look around"}]},
        {"role": "model", "parts": [call("shell", "pwd"), call("read", "a.txt")]},
        {"role": "user", "parts": [answer("shell", "/w"), answer("read", "A")]},
        {"role": "model", "parts": [call("shell", "ls")]},
        {"role": "user", "parts": [answer("shell", "a.txt")]},
    ]
    reply = {"candidates": [{"content": {"role": "model", "parts": [call("shell", "cat a.txt"), call("shell", "wc")]}}]}
    ex = http_exchange("/v1beta/models/gemini-2.5-pro:generateContent", {"contents": history}, reply,
                       host="generativelanguage.googleapis.com")
    (parsed,) = parse_exchange(ex)
    ids = [b.call_id for b in parsed.request.blocks if b.kind in ("tool_call", "tool_result")]
    assert ids == ["shell#0", "read#0", "shell#0", "read#0", "shell#1", "shell#1"]
    assert [c.call_id for c in parsed.response.tool_calls] == ["shell#2", "shell#3"]
    # a call that came with an id keeps it
    reply["candidates"][0]["content"]["parts"][0]["functionCall"]["id"] = "given-1"
    ex = http_exchange("/v1beta/models/gemini-2.5-pro:generateContent", {"contents": history}, reply,
                       host="generativelanguage.googleapis.com")
    (parsed,) = parse_exchange(ex)
    assert [c.call_id for c in parsed.response.tool_calls] == ["given-1", "shell#3"]
