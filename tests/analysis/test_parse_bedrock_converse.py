"""Amazon Bedrock's Converse API (Cline, Roo Code, opencode's Bedrock provider): blocks in order,
the streamed answer reassembled from event-stream frames, usage with its cache counters."""

from __future__ import annotations

import json

from ctxtap.analysis.parsing.parse import parse_exchange
from tests.corpus import http_exchange
from tests.redaction.eventstream_frames import frame

HOST = "bedrock-runtime.us-west-2.amazonaws.com"
MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
PATH = "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream"
FRAMES = [("content-type", "application/vnd.amazon.eventstream")]

REQUEST = {
    "system": [{"text": "You are Cline, a highly skilled software engineer."}, {"cachePoint": {"type": "default"}}],
    "messages": [
        {"role": "user", "content": [{"text": "<task>\nFix the failing test\n</task>"}]},
        {"role": "assistant", "content": [
            {"reasoningContent": {"reasoningText": {"text": "Read the test first.", "signature": "sig"}}},
            {"toolUse": {"toolUseId": "tooluse_1", "name": "read_file", "input": {"path": "test_app.py"}}}]},
        {"role": "user", "content": [
            {"toolResult": {"toolUseId": "tooluse_1", "content": [{"text": "def test_x(): assert add(1, 2) == 4"}],
                            "status": "success"}},
            {"image": {"format": "png", "source": {"bytes": "iVBORw0KGgo="}}}]},
    ],
    "inferenceConfig": {"maxTokens": 8192, "temperature": 0},
    "toolConfig": {"tools": [
        {"toolSpec": {"name": "read_file", "description": "Read a file",
                      "inputSchema": {"json": {"type": "object", "properties": {"path": {"type": "string"}}}}}},
        {"cachePoint": {"type": "default"}}]},
}


def _event(event_type: str, payload: dict) -> bytes:
    return frame(json.dumps({**payload, "p": "abc"}).encode(), event_type)


STREAM = b"".join([
    _event("messageStart", {"role": "assistant"}),
    _event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "The test expects 4"}}}),
    _event("contentBlockStop", {"contentBlockIndex": 0}),
    _event("contentBlockDelta", {"contentBlockIndex": 1, "delta": {"text": "The assertion "}}),
    _event("contentBlockDelta", {"contentBlockIndex": 1, "delta": {"text": "is wrong."}}),
    _event("contentBlockStop", {"contentBlockIndex": 1}),
    _event("contentBlockStart", {"contentBlockIndex": 2,
                                 "start": {"toolUse": {"toolUseId": "tooluse_2", "name": "write_file"}}}),
    _event("contentBlockDelta", {"contentBlockIndex": 2, "delta": {"toolUse": {"input": '{"path": "test_'}}}),
    _event("contentBlockDelta", {"contentBlockIndex": 2, "delta": {"toolUse": {"input": 'app.py"}'}}}),
    _event("contentBlockStop", {"contentBlockIndex": 2}),
    _event("messageStop", {"stopReason": "tool_use"}),
    _event("metadata", {"usage": {"inputTokens": 12, "outputTokens": 40, "totalTokens": 3052,
                                  "cacheReadInputTokens": 3000, "cacheWriteInputTokens": 0},
                        "metrics": {"latencyMs": 900}}),
])


def _call(response: bytes | dict, path: str = PATH, headers=FRAMES):
    (call,) = parse_exchange(http_exchange(path, REQUEST, response, host=HOST, response_headers=headers,
                                           headers=[("user-agent", "Cline/3.40.0")]))
    return call


def test_blocks_in_their_effective_order():
    call = _call(STREAM)
    assert call.api == "bedrock-converse" and call.provider == "aws-bedrock"
    assert call.request.model == MODEL and call.request.max_output_tokens == 8192
    layout = [(b.path, b.kind, b.role) for b in call.request.blocks]
    assert layout == [
        ("toolConfig.tools[0]", "tool_definition", "system"),
        ("toolConfig.tools[1]", "other", "system"),
        ("system[0]", "instruction_text", "system"),
        ("system[1]", "other", "system"),
        ("messages[0].content[0]", "message_text", "user"),
        ("messages[1].content[0]", "reasoning", "assistant"),
        ("messages[1].content[1]", "tool_call", "assistant"),
        ("messages[2].content[0]", "tool_result", "user"),
        ("messages[2].content[1]", "image", "user"),
    ]
    result = call.request.blocks[7]
    assert result.call_id == "tooluse_1" and result.tool_name == "read_file" and "assert add" in result.text
    assert call.request.blocks[6].tool_name == "read_file"


def test_the_streamed_answer_is_reassembled():
    response = _call(STREAM).response
    assert response.parse_status == "ok" and response.error is None
    assert response.text == "The assertion is wrong." and response.reasoning == "The test expects 4"
    (tool_call,) = response.tool_calls
    assert (tool_call.call_id, tool_call.name, json.loads(tool_call.arguments)) == (
        "tooluse_2", "write_file", {"path": "test_app.py"})
    assert response.stop_reason == "tool_use"
    usage = response.usage
    assert (usage.input_total.value, usage.cache_read.value, usage.output.value) == (3012, 3000, 40)


def test_a_cut_stream_and_an_exception_frame_are_told_apart():
    cut = _call(STREAM[: len(STREAM) // 2]).response
    assert cut.parse_status == "partial" and "messageStop" in cut.parse_error
    exception = frame(b'{"message":"Too many tokens, please wait before trying again."}', "throttlingException",
                      exception=True)
    response = _call(_event("messageStart", {"role": "assistant"}) + exception).response
    assert response.error is not None and response.error.layer == "rate_limit"
    assert response.error.code == "throttlingException"


def test_an_answer_that_is_not_streamed():
    body = {"output": {"message": {"role": "assistant", "content": [
        {"text": "Done."}, {"toolUse": {"toolUseId": "t9", "name": "run", "input": {"cmd": "pytest"}}}]}},
        "stopReason": "tool_use", "usage": {"inputTokens": 5, "outputTokens": 7, "totalTokens": 12}}
    response = _call(body, PATH.replace("converse-stream", "converse"), [("content-type", "application/json")]).response
    assert response.parse_status == "ok" and response.text == "Done."
    assert response.tool_calls[0].name == "run" and json.loads(response.tool_calls[0].arguments) == {"cmd": "pytest"}
    assert response.usage.input_total.value == 5 and response.usage.output.value == 7
