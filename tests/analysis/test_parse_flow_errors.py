"""A flow error after a response ended whole is a note; before its end it is a failed call.

Clients stop reading at their stream's last event and close the connection; when the close
beats the chunked terminator through the proxy, mitmproxy records "Client disconnected." on a
flow whose response the client already had in full.
"""

from __future__ import annotations

import pytest

from ctxtap.analysis.parsing.parse import parse_exchange
from tests.corpus import fixture, http_exchange

CASES = [
    ("/v1/chat/completions", "chat/request_kimi.json", "chat/response_moonshot.sse"),
    ("/v1/chat/completions", "chat/request_kimi.json", "chat/response_deepseek.json"),
    ("/v1/messages", "anthropic/request_claude_code.json", "anthropic/response_stream.sse"),
    ("/v1/messages", "anthropic/request_claude_code.json", "anthropic/response_message.json"),
    ("/v1/responses", "responses/request_codex_http.json", "responses/response_stream.sse"),
    ("/v1internal:streamGenerateContent?alt=sse", "gemini/request_cloudcode.json", "gemini/response_cloudcode.sse"),
]


def _cut(raw: bytes) -> bytes:
    """The body cut half way: at an event boundary (a stream) or mid-value (a JSON body)."""
    half = len(raw) // 2
    if raw.lstrip().startswith((b"event:", b"data:")):
        return raw[: raw.index(b"\n\n", half) + 2]
    return raw[:half]


def _response(path: str, request: str, body: bytes, error: str | None):
    ex = http_exchange(path, fixture(request), body).model_copy(update={"error": error})
    (call,) = parse_exchange(ex)
    return call.response


@pytest.mark.parametrize(("path", "request_fixture", "response_fixture"), CASES)
@pytest.mark.parametrize("message", ["Client disconnected.", "Server disconnected.", "Connection killed."])
def test_an_error_after_a_whole_response_is_a_note(path, request_fixture, response_fixture, message):
    whole = _response(path, request_fixture, fixture(response_fixture), message)
    clean = _response(path, request_fixture, fixture(response_fixture), None)
    assert clean.parse_status == "ok" and clean.error is None
    assert whole.parse_status == "ok" and whole.error is None
    assert whole.parse_error == f"connection closed after the response ended: {message}"
    assert whole.usage == clean.usage and whole.text == clean.text


@pytest.mark.parametrize(("path", "request_fixture", "response_fixture"), CASES)
def test_an_error_before_the_response_ended_is_a_failed_call(path, request_fixture, response_fixture):
    cut = _cut(fixture(response_fixture))
    r = _response(path, request_fixture, cut, "Client disconnected.")
    assert r.parse_status in ("partial", "error")
    assert r.error is not None and r.error.layer == "protocol" and r.error.retryable
