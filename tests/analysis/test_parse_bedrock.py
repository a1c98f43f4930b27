"""Claude Code on Amazon Bedrock: the same Messages body and events as on Anthropic's API, read
the same way, though the model sits in the path and the stream comes as binary frames."""

from __future__ import annotations

import base64
import json

from ctxtap.analysis.parsing.parse import parse_exchange
from tests.analysis.claude_headers import CLAUDE_HEADERS
from tests.corpus import fixture, http_exchange
from tests.redaction.eventstream_frames import frame

HOST = "bedrock-runtime.us-east-1.amazonaws.com"
MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
PATH = "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke-with-response-stream"
FRAMES = [("content-type", "application/vnd.amazon.eventstream")]


def _bedrock_body() -> bytes:
    body = json.loads(fixture("anthropic/request_claude_code.json"))
    body.pop("model")
    body.pop("stream", None)
    return json.dumps({"anthropic_version": "bedrock-2023-05-31", **body}).encode()


def as_frames(sse: bytes) -> bytes:
    """Each SSE event of an Anthropic stream as Bedrock sends it: one frame, the event in base64."""
    out = []
    for block in sse.decode().split("\n\n"):
        data = [line[5:].strip() for line in block.splitlines() if line.startswith("data:")]
        if data:
            payload = {"bytes": base64.b64encode(json.dumps(json.loads(data[0])).encode()).decode(), "p": "abcd"}
            out.append(frame(json.dumps(payload, separators=(",", ":")).encode()))
    return b"".join(out)


def _calls(response: bytes, response_headers=FRAMES):
    native = parse_exchange(http_exchange("/v1/messages?beta=true", fixture("anthropic/request_claude_code.json"),
                                          fixture("anthropic/response_stream.sse"), headers=CLAUDE_HEADERS))[0]
    (bedrock,) = parse_exchange(http_exchange(PATH, _bedrock_body(), response, host=HOST, headers=CLAUDE_HEADERS,
                                              response_headers=response_headers))
    return native, bedrock


def test_a_bedrock_call_reads_as_the_same_call_on_anthropics_api():
    native, bedrock = _calls(as_frames(fixture("anthropic/response_stream.sse")))
    assert bedrock.api == "bedrock-messages" and bedrock.provider == "aws-bedrock" and bedrock.transport == "stream"
    assert bedrock.request.model == MODEL
    layout = [(b.path, b.kind, b.role, b.source, b.rule_id, b.text) for b in native.request.blocks]
    assert [(b.path, b.kind, b.role, b.source, b.rule_id, b.text) for b in bedrock.request.blocks] == layout
    assert bedrock.identity.client == "claude-code"
    assert bedrock.response.parse_status == "ok" and native.response.parse_status == "ok"
    assert bedrock.response.model_dump(exclude={"raw"}) == native.response.model_dump(exclude={"raw"})
    assert bedrock.response.usage.output is not None


def test_a_stream_cut_short_or_ended_by_an_exception_says_so():
    frames = as_frames(fixture("anthropic/response_stream.sse"))
    _, cut = _calls(frames[: len(frames) // 2 + 7])  # the body ends inside a frame
    assert cut.response.parse_status == "partial" and "inside a frame" in cut.response.parse_error
    first = frames[: int.from_bytes(frames[:4], "big")]  # the first frame alone (message_start)
    exception = frame(b'{"message":"Too many tokens, please wait before trying again."}', "throttlingException",
                      exception=True)
    _, throttled = _calls(first + exception)
    error = throttled.response.error
    assert error is not None and error.code == "throttlingException" and error.layer == "rate_limit"
    assert error.retryable and error.message.startswith("Too many tokens")  # Bedrock's words for a rate limit


def test_an_answer_that_is_not_streamed_is_read_too():
    native = parse_exchange(http_exchange("/v1/messages", fixture("anthropic/request_claude_code.json"),
                                          fixture("anthropic/response_message.json")))[0]
    (bedrock,) = parse_exchange(http_exchange(PATH.replace("-with-response-stream", ""), _bedrock_body(),
                                              fixture("anthropic/response_message.json"), host=HOST))
    assert bedrock.api == "bedrock-messages" and bedrock.response.parse_status == "ok"
    assert bedrock.response.model_dump(exclude={"raw"}) == native.response.model_dump(exclude={"raw"})


VERTEX_HOST = "us-east5-aiplatform.googleapis.com"
VERTEX_BASE = "/v1/projects/my-project/locations/us-east5/publishers/anthropic/models"


def test_a_vertex_call_reads_as_the_same_call_on_anthropics_api():
    """Claude Code on Vertex AI: the Messages body (model in the path) and Anthropic's own SSE."""
    native = parse_exchange(http_exchange("/v1/messages?beta=true", fixture("anthropic/request_claude_code.json"),
                                          fixture("anthropic/response_stream.sse"), headers=CLAUDE_HEADERS))[0]
    body = json.loads(_bedrock_body())
    body["anthropic_version"] = "vertex-2023-10-16"
    (vertex,) = parse_exchange(http_exchange(f"{VERTEX_BASE}/claude-sonnet-4-5@20250929:streamRawPredict",
                                             json.dumps(body).encode(), fixture("anthropic/response_stream.sse"),
                                             host=VERTEX_HOST, headers=CLAUDE_HEADERS))
    assert vertex.api == "vertex-messages" and vertex.provider == "google-vertex"
    assert vertex.request.model == "claude-sonnet-4-5@20250929" and vertex.identity.client == "claude-code"
    layout = [(b.path, b.kind, b.role, b.source, b.rule_id, b.text) for b in native.request.blocks]
    assert [(b.path, b.kind, b.role, b.source, b.rule_id, b.text) for b in vertex.request.blocks] == layout
    assert vertex.response.model_dump(exclude={"raw"}) == native.response.model_dump(exclude={"raw"})
    (counted,) = parse_exchange(http_exchange(f"{VERTEX_BASE}/count-tokens:rawPredict", json.dumps(body).encode(),
                                              {"input_tokens": 1234}, host=VERTEX_HOST))
    assert counted.response.counted_input_tokens == 1234 and counted.request.model is None
