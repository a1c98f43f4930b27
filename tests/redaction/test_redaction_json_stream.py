"""Secrets split across streamed JSON values (a JSON array of chunks, NDJSON) and across the
deltas of APIs the joiner has no rule for: joined before redaction, whatever the cuts."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxtap.capture.bodies import BodyEncoder
from ctxtap.capture.writer import _Stream
from ctxtap.redaction import Redactor
from ctxtap.redaction.json_stream import JsonStreamRedactor, looks_like_json_stream
from ctxtap.wire import ndjson
from tests.redaction.json_stream_bodies import (
    _cohere_sse,
    _gemini_array,
    _ollama_chat,
    _ollama_generate,
    _tgi_sse,
)
from tests.secret_corpus import _chunks, generate_secrets

KEY = b"\x02" * 32
SECRETS = [s for s in generate_secrets(seed=11) if s.standalone]


def _texts(body: bytes, shape: str) -> str:
    """The streamed text of a (redacted) body, every value parsed as JSON (so each must still parse)."""
    if shape == "gemini-array":
        return "".join(e["candidates"][0]["content"]["parts"][0]["text"] for e in json.loads(body))
    if shape.startswith("ollama"):
        values = [json.loads(line) for line in body.decode().splitlines()]
        return "".join(v["message"]["content"] if "message" in v else v["response"] for v in values)
    values = [json.loads(line.split(":", 1)[1]) for line in body.decode().splitlines() if line.startswith("data:")]
    if shape == "cohere-sse":
        return "".join(v["delta"]["message"]["content"]["text"] for v in values)
    return "".join(v["token"]["text"] for v in values)


SHAPES = {
    "gemini-array": (_gemini_array, "application/json"),
    "ollama-chat": (_ollama_chat, "application/x-ndjson"),
    "ollama-generate": (_ollama_generate, "application/x-ndjson"),
    "cohere-sse": (_cohere_sse, "text/event-stream"),
    "tgi-sse": (_tgi_sse, "text/event-stream"),
}


def _planted(shape: str, secret) -> tuple[bytes, str]:
    text = f"Found it in the config: {secret.in_context} -- rotate it."
    return SHAPES[shape][0](_chunks(text, secret.value)), text


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_secret_streamed_in_pieces_is_redacted_whole_in_every_shape(shape: str) -> None:
    """The whole body as the writer redacts a buffered one: no fragment of any secret survives,
    every value still parses, and the text around the secret is kept."""
    redactor = Redactor(KEY, "c")
    for secret in SECRETS:
        body, text = _planted(shape, secret)
        out = redactor.redact_bytes(body)
        joined = _texts(out, shape)
        for fragment in secret.fragments():
            assert fragment not in joined, (shape, secret.kind)
        assert joined.startswith("Found it in the config: ") and joined.endswith(" -- rotate it."), (shape, joined)
        assert "[REDACTED:" in joined


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_stream_read_in_any_cuts_is_redacted_as_the_whole_body(shape: str) -> None:
    """Through the writer's stream, with the content type the API sends, cut at random places
    (inside strings, escapes and brackets): the stored body is the whole body's redaction."""
    maker, content_type = SHAPES[shape]
    rng = random.Random(shape)
    redactor = Redactor(KEY, "c")
    for secret in SECRETS[:12]:
        body, _ = _planted(shape, secret)
        whole = redactor.redact_bytes(body)
        for _ in range(3):
            stream = _Stream(content_type, None, redactor, BodyEncoder().streamed())
            at = 0
            while at < len(body):
                size = rng.choice((1, 2, 7, 64, 500))
                stream.feed([body[at:at + size]])
                at += size
            assert b"".join(stream.finish_body().parts) == whole, (shape, secret.kind)
            assert sum(stream.redactions.values()) == whole.count(b"[REDACTED:")


def test_the_content_type_does_not_decide():
    """Gemini's chunks sent as `text/plain`, NDJSON as `application/octet-stream`, SSE as
    `application/json`: the first bytes say what the body is."""
    redactor = Redactor(KEY, "c")
    secret = SECRETS[0]
    for shape, content_type in (("gemini-array", "text/plain"), ("ollama-chat", "application/octet-stream"),
                                ("cohere-sse", "application/json")):
        body, _ = _planted(shape, secret)
        stream = _Stream(content_type, None, redactor, BodyEncoder().streamed())
        for i in range(0, len(body), 5):
            stream.feed([body[i:i + 5]])
        joined = _texts(b"".join(stream.finish_body().parts), shape)
        assert secret.value not in joined and "[REDACTED:" in joined, shape


def test_what_is_not_a_stream_of_values_is_kept_exactly(monkeypatch):
    """Text that only starts like JSON, brackets that do not balance, and an element past the
    bound (a 100 MB single JSON document must not be held whole) are given up on: every byte is
    kept, and a key in them is still redacted as plain text."""
    monkeypatch.setattr(ndjson, "MAX_ELEMENT_BYTES", 4096)  # the framer's bound (wire.ndjson)
    redactor = Redactor(KEY, "c")
    key = "sk-ant-api03-" + "Wq4" * 30 + "AA"
    cases = {
        "text": f"{{not json}} at all\n}}}} closing first, then token={key}\n".encode(),
        "unbalanced": b'{"a": 1}\n]]\n' + f'{{"text": "{key}"}}\n'.encode(),
        "huge": json.dumps({"log": "x" * 20_000, "text": f"key {key}", "more": "y" * 20_000}).encode(),
    }
    for name, body in cases.items():
        stream = _Stream("application/json", None, redactor, BodyEncoder().streamed())
        for i in range(0, len(body), 1000):
            stream.feed([body[i:i + 1000]])
        out = b"".join(stream.finish_body().parts)
        assert key.encode() not in out, name
        start = out.index(b"[REDACTED:")
        placeholder = out[start:out.index(b"]", start) + 1]
        assert out.replace(placeholder, key.encode()) == body, name
        assert stream.framed is None or not stream.framed.held_bytes, name


def test_a_stream_of_values_holds_little_at_a_time():
    """A long NDJSON answer is released as it comes, not held to its end."""
    redactor = Redactor(KEY, "c")
    stream = JsonStreamRedactor(redactor)
    line = json.dumps({"model": "qwen3", "message": {"role": "assistant", "content": "word " * 20}}).encode() + b"\n"
    released = 0
    for _ in range(20_000):
        released += len(stream.feed(line))
        assert stream.held_bytes < 5 * 1024 * 1024
    assert released > len(line) * 10_000
    assert released + len(stream.finish()) == len(line) * 20_000


def test_only_streams_of_values_are_read_as_one():
    """An ordinary JSON body (a request, a single response, pretty-printed or not) is not framed."""
    assert looks_like_json_stream(b'[\n  {"candidates": []}\n]')
    assert looks_like_json_stream(b'{"a": 1}\n{"a": 2}\n')
    assert not looks_like_json_stream(json.dumps({"messages": [{"content": "x"}]}, indent=2).encode())
    assert not looks_like_json_stream(b'{"a": "}\\n{"}')
    assert not looks_like_json_stream(b"[1, 2, 3]")


def test_a_plain_stream_is_kept_whole_from_its_first_read():
    """What the first bytes do not make a stream of events or values is redacted in line segments,
    from the very first read on (a first version of the sniffing dropped that read)."""
    redactor = Redactor(KEY, "c")
    body = b"plain text answer\nsecond line\n" * 3000 + b"key sk-ant-api03-" + b"Pq5" * 30 + b"AA\nend"
    for content_type in ("text/plain", "application/octet-stream", "application/json"):
        stream = _Stream(content_type, None, redactor, BodyEncoder().streamed())
        for i in range(0, len(body), 7000):
            stream.feed([body[i:i + 7000]])
        out = b"".join(stream.finish_body().parts)
        assert out.startswith(b"plain text answer\nsecond line\n" * 3000 + b"key [REDACTED:anthropic-key:")
        assert out.endswith(b"]\nend"), content_type


def test_a_big_payload_is_not_parsed_for_a_generic_delta(monkeypatch):
    """A Codex request frame on the WebSocket (megabytes of history) names `content` and `text`
    everywhere; the generic rule is for small delta events, so such a frame is not parsed for one."""
    from ctxtap.redaction import streams

    frame = json.dumps({"type": "response.create", "input": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "x" * 1000}]}] * 100}).encode()
    small = json.dumps({"index": 0, "token": {"text": "hi"}}).encode()
    assert streams.delta_pieces(small)  # an unknown API's small delta is read
    monkeypatch.setattr(streams.json, "loads", lambda *a, **k: pytest.fail("a big frame was parsed"))
    assert streams.delta_pieces(frame) == []


_PLAIN = st.text(alphabet='{}[]",: \n\r\tabcxyz019\\.-_', max_size=400).map(str.encode)
_FRAMES = st.lists(st.sampled_from([
    b"", b"{", b"}", b"[", b"]", b",", b'"a"', b'"text"', b":", b'"x\\"y"', b"\n", b"data: ", b"\n\n", b"\x00\x00",
    b'{"message":{"content":"hi"}}\n', b'[{"candidates":[{"content":{"parts":[{"text":"a"}]}}]}', b"\xff\xfe",
]), max_size=40).map(b"".join)


@settings(max_examples=300, deadline=None)
@given(body=st.one_of(_PLAIN, _FRAMES), cuts=st.lists(st.integers(1, 64), max_size=20),
       content_type=st.sampled_from(["application/json", "application/x-ndjson", "text/event-stream", "text/plain",
                                     "application/vnd.amazon.eventstream", None]))
def test_a_stream_without_secrets_is_stored_byte_for_byte(body: bytes, cuts: list[int], content_type) -> None:
    """Whatever the first bytes make of a stream (values, events, frames, plain text), however it is cut:
    with nothing to redact, every byte comes out, in order, once (a dropped first read was a real bug)."""
    stream = _Stream(content_type, None, Redactor(KEY, "c"), BodyEncoder().streamed())
    at = 0
    for size in cuts:
        stream.feed([body[at:at + size]])
        at += size
    stream.feed([body[at:]])
    assert b"".join(stream.finish_body().parts) == body
