"""Ollama's native API: chat and generate, NDJSON streams and single answers, its counts."""

from __future__ import annotations

import json

from ctxtap.analysis.parsing.parse import parse_exchange
from ctxtap.capture.classify import classify_flow
from tests.corpus import http_exchange

HOST = "ollama.com"
CHAT = {
    "model": "qwen3-coder:480b-cloud",
    "messages": [
        {"role": "system", "content": "You are aider, an expert software developer."},
        {"role": "user", "content": "Run the tests"},
        {"role": "assistant", "content": "", "thinking": "I should run pytest.",
         "tool_calls": [{"function": {"name": "bash", "arguments": {"cmd": "pytest -q"}}}]},
        {"role": "tool", "content": "1 failed", "tool_name": "bash"},
        {"role": "user", "content": "Look at this", "images": ["iVBORw0KGgo="]},
    ],
    "tools": [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}],
    "options": {"num_predict": 2048},
}


def _lines(*objs: dict) -> bytes:
    return b"".join(json.dumps(o).encode() + b"\n" for o in objs)


STREAM = _lines(
    {"model": "qwen3-coder", "message": {"role": "assistant", "content": "", "thinking": "The test "}, "done": False},
    {"model": "qwen3-coder", "message": {"role": "assistant", "content": "", "thinking": "is wrong."}, "done": False},
    {"model": "qwen3-coder", "message": {"role": "assistant", "content": "Fixing "}, "done": False},
    {"model": "qwen3-coder", "message": {"role": "assistant", "content": "it now."}, "done": False},
    {"model": "qwen3-coder", "message": {"role": "assistant", "content": "", "tool_calls": [
        {"function": {"name": "edit", "arguments": {"path": "app.py"}}}]}, "done": False},
    {"model": "qwen3-coder", "message": {"role": "assistant", "content": ""}, "done": True, "done_reason": "stop",
     "total_duration": 9_000_000, "prompt_eval_count": 812, "eval_count": 57},
)
NDJSON = [("content-type", "application/x-ndjson")]


def _call(path: str, body: dict, response: bytes | dict, headers=NDJSON):
    (call,) = parse_exchange(http_exchange(path, body, response, host=HOST, response_headers=headers))
    return call


def test_chat_blocks_in_order():
    call = _call("/api/chat", CHAT, STREAM)
    assert call.api == "ollama" and call.provider == "ollama" and call.request.model == "qwen3-coder:480b-cloud"
    assert call.request.max_output_tokens == 2048
    layout = [(b.path, b.kind, b.role) for b in call.request.blocks]
    assert layout == [
        ("tools[0]", "tool_definition", "system"),
        ("messages[0].content", "instruction_text", "system"),
        ("messages[1].content", "message_text", "user"),
        ("messages[2].thinking", "reasoning", "assistant"),
        ("messages[2].tool_calls[0]", "tool_call", "assistant"),
        ("messages[3]", "tool_result", "tool"),
        ("messages[4].content", "message_text", "user"),
        ("messages[4].images[0]", "image", "user"),
    ]
    assert call.request.blocks[5].tool_name == "bash" and call.request.blocks[5].text == "1 failed"


def test_the_streamed_answer_and_its_counts():
    response = _call("/api/chat", CHAT, STREAM).response
    assert response.parse_status == "ok" and response.error is None
    assert response.text == "Fixing it now." and response.reasoning == "The test is wrong."
    (tool_call,) = response.tool_calls
    assert tool_call.name == "edit" and json.loads(tool_call.arguments) == {"path": "app.py"}
    assert response.stop_reason == "stop"
    usage = response.usage
    assert (usage.input_uncached.value, usage.output.value, usage.input_total.value) == (812, 57, None)


def test_a_cut_stream_an_error_line_and_a_single_answer():
    cut = _call("/api/chat", CHAT, STREAM[: STREAM.rindex(b'{"model"')]).response
    assert cut.parse_status == "partial" and "done" in cut.parse_error and cut.text == "Fixing it now."
    failed = _call("/api/chat", CHAT, _lines({"error": "model requires more system memory"})).response
    assert failed.error is not None and "system memory" in failed.error.message
    single = _call("/api/generate", {"model": "llama3", "system": "Be terse.", "prompt": "Why?", "stream": False},
                   {"model": "llama3", "response": "Because.", "done": True, "prompt_eval_count": 9,
                    "eval_count": 2}, [("content-type", "application/json")])
    assert single.response.text == "Because." and single.response.usage.output.value == 2
    assert [(b.path, b.kind) for b in single.request.blocks] == [("system", "instruction_text"),
                                                                 ("prompt", "message_text")]
    assert single.request.stream is False


def test_ollama_cloud_is_recorded_in_full():
    for path in ("/api/chat", "/api/generate"):
        flow = classify_flow(HOST, path)
        assert flow.is_model and flow.provider == "ollama" and flow.endpoint == "generate"
    assert not classify_flow(HOST, "/api/tags", "GET").is_model


def test_lines_that_are_not_json_are_counted_and_a_value_over_lines_is_one() -> None:
    noisy = STREAM.replace(b"\n", b"\nnot json at all\n", 1)
    response = _call("/api/chat", CHAT, noisy).response
    assert response.text == "Fixing it now." and response.parse_status != "ok" and "1" in (response.parse_error or "")
    pretty = json.dumps(json.loads(STREAM.splitlines()[-1]), indent=2).encode()  # one object over many lines
    assert _call("/api/chat", CHAT, STREAM[: STREAM.rindex(b'{"model"')] + pretty).response.parse_status == "ok"
