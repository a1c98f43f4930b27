"""Bedrock's binary event streams: a key the model echoes (whole, or in pieces across frames) is
redacted inside the base64 or JSON payloads, and every frame stays valid."""

from __future__ import annotations

import base64
import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxtap.capture.bodies import BodyEncoder
from ctxtap.capture.writer import _Stream
from ctxtap.redaction import Redactor
from tests.redaction.eventstream_frames import (
    _header,
    converse_stream,
    frame,
    frames_of,
    invoke_stream,
    streamed_text,
)
from tests.secret_corpus import _chunks, generate_secrets

KEY = b"\x03" * 32
SECRETS = [s for s in generate_secrets(seed=13) if s.standalone]
CONTENT_TYPE = "application/vnd.amazon.eventstream"


SHAPES = {"invoke": invoke_stream, "converse": converse_stream}


def _planted(shape: str, secret) -> bytes:
    return SHAPES[shape](_chunks(f"Found it in the config: {secret.in_context} -- rotate it.", secret.value))


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_secret_streamed_in_frames_is_redacted_whole_and_the_frames_stay_valid(shape: str) -> None:
    redactor = Redactor(KEY, "c")
    for secret in SECRETS:
        body = _planted(shape, secret)
        out = redactor.redact_bytes(body)
        text = streamed_text(out)  # every frame still checks out, every payload still parses
        for fragment in secret.fragments():
            assert fragment not in text, (shape, secret.kind)
        assert text.startswith("Found it in the config: ") and text.endswith(" -- rotate it."), text
        assert "[REDACTED:" in text
        before, after = frames_of(body), frames_of(out)
        assert len(before) == len(after)
        # frames the secret never touched are kept byte for byte
        untouched = sum(a == b for a, b in zip(before, after, strict=True))
        assert untouched >= len(before) - len(secret.in_context) // 2 - 2


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_stream_read_in_any_cuts_is_redacted_as_the_whole_body(shape: str) -> None:
    rng = random.Random(shape)
    redactor = Redactor(KEY, "c")
    for secret in SECRETS[:10]:
        body = _planted(shape, secret)
        whole = redactor.redact_bytes(body)
        assert whole != body
        for content_type in (CONTENT_TYPE, "application/octet-stream"):
            stream = _Stream(content_type, None, redactor, BodyEncoder().streamed())
            at = 0
            while at < len(body):
                size = rng.choice((1, 5, 12, 100, 4000))
                stream.feed([body[at:at + size]])
                at += size
            assert b"".join(stream.finish_body().parts) == whole, (shape, secret.kind)


def test_a_key_in_a_header_value_or_an_exception_goes_too() -> None:
    key = "sk-ant-api03-" + "Hd3" * 30 + "AA"
    body = frame(b'{"message":"denied"}', "chunk", _header(":note", f"debug {key}"))
    body += frame(json.dumps({"message": f"The security token {key} is invalid"}).encode(), "exception")
    out = Redactor(KEY, "c").redact_bytes(body)
    assert key.encode() not in out
    (h1, p1), (h2, p2) = frames_of(out)
    assert b"debug [REDACTED:anthropic-key:" in h1 and p1 == b'{"message":"denied"}'
    assert json.loads(p2)["message"].startswith("The security token [REDACTED:")


def test_a_frame_that_does_not_check_out_keeps_every_byte() -> None:
    """A corrupt checksum, or a body cut mid-frame: the framing is given up and the rest is
    redacted as plain bytes (a key visible there still goes), nothing dropped."""
    key = "sk-ant-api03-" + "Cr9" * 30 + "AA"
    good = frame(b'{"bytes":"' + base64.b64encode(b'{"delta":{"text":"hi"}}') + b'","p":"a"}')
    bad = bytearray(frame(json.dumps({"message": f"token {key}"}).encode()))
    bad[-1] ^= 0xFF
    redactor = Redactor(KEY, "c")
    for body in (good + bytes(bad) + good, good + frame(f'{{"message":"token {key}"}}'.encode())[:-4]):
        stream = _Stream(CONTENT_TYPE, None, redactor, BodyEncoder().streamed())
        for i in range(0, len(body), 7):
            stream.feed([body[i:i + 7]])
        out = b"".join(stream.finish_body().parts)
        assert key.encode() not in out and out.startswith(good)
        start = out.index(b"[REDACTED:")
        assert out[:start] + key.encode() + out[out.index(b"]", start) + 1:] == body


_PAYLOADS = st.lists(st.one_of(
    st.builds(lambda t: json.dumps({"bytes": base64.b64encode(json.dumps(
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}}).encode()).decode(),
        "p": "ab"}).encode(), st.text(max_size=30)),
    st.builds(lambda t: json.dumps({"contentBlockIndex": 0, "delta": {"text": t}}).encode(), st.text(max_size=30)),
    st.binary(max_size=40)), min_size=1, max_size=12)


@settings(max_examples=200, deadline=None)
@given(payloads=_PAYLOADS, cuts=st.lists(st.integers(1, 50), max_size=15), flip=st.integers(-1, 10_000))
def test_frames_without_secrets_are_stored_byte_for_byte(payloads: list[bytes], cuts: list[int], flip: int) -> None:
    """Valid frames, or the same with one byte flipped anywhere (a checksum that no longer holds), cut
    anywhere: with nothing to redact, every byte comes out unchanged, in order, once."""
    body = bytearray(b"".join(frame(p) for p in payloads))
    if 0 <= flip < len(body):
        body[flip] ^= 0x5A
    body = bytes(body)
    stream = _Stream(CONTENT_TYPE, None, Redactor(KEY, "c"), BodyEncoder().streamed())
    at = 0
    for size in cuts:
        stream.feed([body[at:at + size]])
        at += size
    stream.feed([body[at:]])
    assert b"".join(stream.finish_body().parts) == body
