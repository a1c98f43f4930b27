"""Content streams joined before redaction: split secrets go whole, events stay valid, holds stay bounded."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxtap.capture.events import RequestEvent, ResponseEvent, WsEndEvent, WsMessageEvent
from ctxtap.capture.finalize import finalize
from ctxtap.capture.manifest import Manifest
from ctxtap.capture.store import Capture
from ctxtap.capture.writer import CaptureWriter
from ctxtap.redaction import Redactor
from ctxtap.redaction.streams import MAX_HELD_BYTES, SseRedactor, StreamRedactor
from tests.secret_examples.matrix import SSE_SHAPES, _pieces_for, _sse_events

KEY = b"\x01" * 32
TOKEN = "ghp_" + "Q7xk2MZpL9" * 4  # its first 40 characters are a valid key by themselves


def _data_lines(body: bytes) -> list[dict]:
    return [json.loads(line[5:]) for line in body.decode().splitlines() if line.startswith("data:")]


def test_tail_after_a_valid_first_fragment_goes_too_in_every_shape() -> None:
    redactor = Redactor(KEY, "c")
    for shape in SSE_SHAPES:
        for cuts in ((40,), (10, 40), (1, 43)):
            body = b"".join(_sse_events(shape, _pieces_for(shape, TOKEN, TOKEN, cuts), 0))
            out = redactor.redact_bytes(body)
            assert b"Q7xk" not in out and b"pL9" not in out, (shape, cuts)
            assert out.count(b"[REDACTED:github-token:") == 1
            events = _data_lines(out)  # every event still parses, the placeholder inside a string
            assert len(events) == len(cuts) + 1
            assert redactor.redact_bytes(out) == out  # nothing left to find


def test_incremental_feeding_matches_the_whole_body_at_any_cut() -> None:
    redactor = Redactor(KEY, "c")
    body = b"".join(_sse_events("chat-tool", _pieces_for("chat-tool", TOKEN, TOKEN, (7, 30)), 0))
    whole = redactor.redact_bytes(body)
    for size in (1, 3, 17, len(body)):
        sse = SseRedactor(redactor)
        out = b"".join(sse.feed(body[i : i + size]) for i in range(0, len(body), size)) + sse.finish()
        assert out == whole
        assert sse.redactions["github-token"] == 1


def test_what_a_stream_holds_stays_bounded() -> None:
    redactor = Redactor(KEY, "c")
    joiner = StreamRedactor(redactor)
    event = json.dumps({"type": "content_block_delta", "index": 0,
                        "delta": {"type": "text_delta", "text": "word " * 40}}).encode()
    released = 0
    for _ in range(3 * MAX_HELD_BYTES // len(event)):
        released += len(joiner.feed(None, event))
        assert joiner.held_bytes <= MAX_HELD_BYTES + len(event)
    assert released > 0  # released long before the stream ended
    assert released + len(joiner.finish()) == 3 * MAX_HELD_BYTES // len(event)


class _Measured:
    """A redactor that notes how many bytes each joined-text scan reads."""

    def __init__(self) -> None:
        self.inner = Redactor(KEY, "c")
        self.counts = self.inner.counts
        self.scanned = 0

    def redact_payload(self, data: bytes) -> bytes:
        self.scanned += len(data)
        return self.inner.redact_payload(data)


def test_a_batch_of_events_is_scanned_about_once() -> None:
    """Events arriving together (a writer catching up) are joined and scanned with only the held
    tail and some context read again, not the whole of the previous batch."""
    redactor = _Measured()
    joiner = StreamRedactor(redactor)
    text = "the quick brown fox jumps over the lazy dog " * 186  # ~8 KB per delta, as big streams send
    event = json.dumps({"type": "content_block_delta", "index": 0,
                        "delta": {"type": "text_delta", "text": text}}).encode()
    batches, per_batch = 24, 8
    for _ in range(batches):
        joiner.feed_many([(None, event, 0, None)] * per_batch)
    joiner.finish()
    total = batches * per_batch * len(text)
    # each scan re-reads what is held (8 KB, rounded up to whole events) and 1 KB of context, up to
    # 17 KB per 64 KB batch; reading the previous batch again as well would make it 2x
    assert redactor.scanned <= total * 1.35, redactor.scanned / total


def test_websocket_deltas_are_joined_across_frames_and_kept_in_order(tmp_path) -> None:
    out = tmp_path / "cap"
    writer = CaptureWriter(out, KEY, Manifest(capture_id="ws"))
    writer.submit(RequestEvent(
        flow_id="w", seq=0, record_full=True, is_model=True, provider="openai", api="responses",
        endpoint="generate", websocket=True, method="GET", scheme="https", host="api.openai.com", port=443,
        path="/v1/responses", url="https://api.openai.com/v1/responses", upstream_url=None,
        http_version="HTTP/1.1", headers=[], body_in=b"", body_out=b"", ts_start=1.0, ts_end=1.0))
    writer.submit(ResponseEvent(flow_id="w", status=101, reason="", http_version="HTTP/1.1", headers=[],
                                body_in=b"", body_out=b"", streamed=False, ts_headers=1.0, ts_first_byte=None,
                                ts_end=1.0))
    frames = [{"type": "response.create", "input": "hi"}]
    frames += [{"type": "response.output_text.delta", "item_id": "m", "output_index": 0, "content_index": 0,
                "delta": piece} for piece in ("key: " + TOKEN[:40], TOKEN[40:], " ok")]
    frames.append({"type": "response.completed", "response": {"id": "r"}})
    for i, frame in enumerate(frames):
        writer.submit(WsMessageEvent("w", i, i == 0, 1.0, True, json.dumps(frame).encode()))
    writer.submit(WsEndEvent("w", 2.0, 1000, True, len(frames))).result(10)
    writer.close()
    finalize(out)
    cap = Capture.open(out)
    rows = cap.ws_messages().to_pylist()
    assert [r["idx"] for r in rows] == list(range(len(frames)))
    stored = [json.loads(cap.body(r["body_id"])) for r in rows]
    text = "".join(f["delta"] for f in stored if f["type"].endswith(".delta"))
    assert "Q7xk" not in text and text.startswith("key: [REDACTED:github-token:") and text.endswith(" ok")
    assert sum(json.loads(r["redactions"]).get("github-token", 0) for r in rows) == 1


def test_delta_strings_are_found_exactly_as_a_json_tokenizer_finds_them() -> None:
    """The fast key search (`_field_spans`) agrees with the tokenizer on escapes, spacing and repeats."""
    from ctxtap.redaction.json_escapes import string_end
    from ctxtap.redaction.streams import _string_spans, delta_pieces

    values = ["plain", 'a "quoted" word', "ends in a backslash \\", '\\"', '"text": "inner"', "", "é ☃", "x" * 9000]
    for value in values:
        for sep, ascii_only in ((":", False), (" : ", True), (":\t", False)):
            payload = ('{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text"' + sep
                       + json.dumps(value, ensure_ascii=ascii_only) + "}}").encode()
            pieces = delta_pieces(payload)
            assert len(pieces) == 1, payload
            _, lo, hi = pieces[0]
            assert (lo, hi) == _string_spans(payload)[("delta", "text")]
            assert json.loads(b'"' + payload[lo:hi] + b'"') == value
            assert string_end(payload, lo) == hi
    # the key twice (a nested copy): the tokenizer decides, and still finds the delta's own string
    twice = b'{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a"},"x":{"text":"b"}}'
    (_, lo, hi), = delta_pieces(twice)
    assert twice[lo:hi] == b"a"
    assert string_end(b'"ab\\\\"', 1) == 5 and string_end(b'"ab\\"', 1) == -1


def test_an_event_shaped_like_the_last_gets_the_pieces_a_parse_would_give() -> None:
    """`StreamRedactor._pieces` skips the JSON parse for an event made of the last one's bytes around
    a new delta string; for every valid event, in any order, it agrees with `delta_pieces`."""
    import random

    from ctxtap.redaction.streams import delta_pieces

    def anthropic(text: str, index: int = 0) -> bytes:
        return json.dumps({"type": "content_block_delta", "index": index,
                           "delta": {"type": "text_delta", "text": text}}).encode()

    def chat(text: str) -> bytes:
        return json.dumps({"id": "c1", "choices": [{"index": 0, "delta": {"content": text}}]}).encode()

    def responses(text: str, seq: int) -> bytes:
        return json.dumps({"type": "response.output_text.delta", "item_id": "m1", "output_index": 0,
                           "content_index": 0, "delta": text, "sequence_number": seq}).encode()

    texts = ["hi", "", 'a "quote"', "back\\", "\\", '"', "}}", '"}}', "é", "x" * 3000, "sk-ant-api03-"]
    rnd = random.Random(7)
    payloads = [anthropic(t) for t in texts] + [anthropic(t, 1) for t in texts] + [chat(t) for t in texts]
    payloads += [responses(t, i) for i, t in enumerate(texts)]
    # the shape with something spliced where the delta string ends: not the same structure
    payloads += [anthropic("a")[:-3] + b'", "extra": "b"}}', b'{"type": "content_block_delta", "index": 0}']
    for _ in range(3):
        rnd.shuffle(payloads)
        redactor = StreamRedactor(Redactor(KEY))
        for payload in payloads:
            # the payload inside its SSE block: pieces come in the block's offsets
            head = b"event: delta\ndata: "
            block = head + payload + b"\n\n"
            start, stop = len(head), len(head) + len(payload)
            expected = [(key, start + lo, start + hi) for key, lo, hi in delta_pieces(payload)]
            assert redactor._pieces(block, start, stop, None)[0] == expected, payload


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=0, max_size=60).map(lambda b: bytes(b"\n\r x:"[c % 5] for c in b)), st.integers(0, 60))
def test_event_ends_are_where_a_blank_line_ends(data: bytes, start: int) -> None:
    """The newline-by-newline search finds the ends the blank-line regex finds, from any offset."""
    from ctxtap.wire.sse import EVENT_END_RE, event_ends

    start = min(start, len(data))
    assert event_ends(bytearray(data), start) == [m.end() for m in EVENT_END_RE.finditer(data, start)]


def test_crlf_events_fed_in_any_cuts_match_the_whole_body() -> None:
    """Events ending in CRLF blank lines, cut anywhere (a blank line split across reads too)."""
    redactor = Redactor(KEY, "c")
    lf = b"".join(_sse_events("anthropic-text", _pieces_for("anthropic-text", TOKEN, TOKEN, (7, 30)), 0))
    body = lf.replace(b"\n", b"\r\n")
    assert b"Q7xk" in body and b"\r\n\r\n" in body
    whole = redactor.redact_bytes(body)
    assert b"Q7xk" not in whole and whole.count(b"\r\n\r\n") == body.count(b"\r\n\r\n")
    for size in (1, 2, 3, 5, 64, len(body)):
        sse = SseRedactor(redactor)
        out = b"".join(sse.feed(body[i : i + size]) for i in range(0, len(body), size)) + sse.finish()
        assert out == whole, size


def _chat_tool_stream() -> bytes:
    """A compatible server's tool-call stream: `content` is "" in every chunk (DeepSeek, Kimi, vLLM)."""
    events = [{"id": "c1", "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]},
              {"id": "c1", "choices": [{"index": 0, "delta": {"content": "", "tool_calls": [
                  {"index": 0, "id": "call_1", "function": {"name": "ls", "arguments": ""}}]}}]},
              {"id": "c1", "choices": [{"index": 0, "delta": {"content": "", "tool_calls": [
                  {"index": 0, "function": {"arguments": "{}"}}]}}]},
              {"id": "c1", "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "tool_calls"}]}]
    return "".join(f"data: {json.dumps(e)}\n\n" for e in events).encode() + b"data: [DONE]\n\n"


def test_a_stream_whose_text_stays_empty_keeps_every_event() -> None:
    """A content stream that never grew (every piece "") was never scanned, and at the end its events
    counted as still open: they were dropped from the stored body (512 bytes stored as 258)."""
    redactor = Redactor(KEY, "c")
    body = _chat_tool_stream()
    assert redactor.redact_bytes(body) == body
    for size in (1, 7, 64):
        sse = SseRedactor(redactor)
        out = b"".join(sse.feed(body[i:i + size]) for i in range(0, len(body), size)) + sse.finish()
        assert out == body, size


_TEXTS = st.text(alphabet="ab \n\"\\é{}", max_size=6)


@settings(max_examples=200, deadline=None)
@given(texts=st.lists(st.tuples(st.sampled_from(["chat", "chat-tool", "anthropic", "responses", "gemini"]), _TEXTS),
                      max_size=25),
       size=st.integers(1, 200))
def test_events_without_secrets_are_kept_byte_for_byte(texts: list[tuple[str, str]], size: int) -> None:
    """Any mix of delta events (empty ones included) of the known APIs, read in any cuts: with nothing to
    redact, the stored body is the body."""
    shapes = {
        "chat": lambda t: {"choices": [{"index": 0, "delta": {"content": t}}]},
        "chat-tool": lambda t: {"choices": [{"index": 0, "delta": {"content": "", "tool_calls": [
            {"index": 0, "function": {"arguments": t}}]}}]},
        "anthropic": lambda t: {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}},
        "responses": lambda t: {"type": "response.output_text.delta", "item_id": "m", "output_index": 0,
                                "content_index": 0, "delta": t},
        "gemini": lambda t: {"candidates": [{"content": {"parts": [{"text": t}]}, "index": 0}]},
    }
    body = "".join(f"data: {json.dumps(shapes[shape](text))}\n\n" for shape, text in texts).encode()
    sse = SseRedactor(Redactor(KEY, "c"))
    out = b"".join(sse.feed(body[i:i + size]) for i in range(0, len(body), size)) + sse.finish()
    assert out == body


@settings(max_examples=25, deadline=None)
@given(frames=st.lists(st.one_of(
    st.builds(lambda t: json.dumps({"type": "response.output_text.delta", "item_id": "m", "output_index": 0,
                                    "content_index": 0, "delta": t}).encode(), _TEXTS),
    st.builds(lambda t: json.dumps({"type": "response.create", "input": t}).encode(), _TEXTS),
    st.builds(lambda t: json.dumps({"index": 0, "token": {"text": t}}).encode(), _TEXTS),
    st.binary(max_size=30)), min_size=1, max_size=15))
def test_websocket_messages_without_secrets_are_kept_byte_for_byte(frames: list[bytes]) -> None:
    """Every message of a socket, whatever it holds (deltas, empty ones, requests, an unknown API's
    tokens, binary), comes back from the capture as it was sent, in order."""
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cap"
        writer = CaptureWriter(out, KEY, Manifest(capture_id="ws-bytes"))
        writer.submit(RequestEvent(
            flow_id="w", seq=0, record_full=True, is_model=True, provider="openai", api="responses",
            endpoint="generate", websocket=True, method="GET", scheme="https", host="api.openai.com", port=443,
            path="/v1/responses", url="https://api.openai.com/v1/responses", upstream_url=None,
            http_version="HTTP/1.1", headers=[], body_in=b"", body_out=b"", ts_start=1.0, ts_end=1.0))
        writer.submit(ResponseEvent(flow_id="w", status=101, reason="", http_version="HTTP/1.1", headers=[],
                                    body_in=b"", body_out=b"", streamed=False, ts_headers=1.0, ts_first_byte=None,
                                    ts_end=1.0))
        for i, frame in enumerate(frames):
            writer.submit(WsMessageEvent("w", i, b"response.create" in frame, 1.0, True, frame))
        writer.submit(WsEndEvent("w", 2.0, 1000, True, len(frames))).result(10)
        writer.close()
        finalize(out)
        cap = Capture.open(out)
        rows = cap.ws_messages().to_pylist()
        assert [cap.body(r["body_id"]) if r["body_id"] is not None else b"" for r in rows] == frames


def _delta_event(text: str, framing: str = "text") -> bytes:
    payload = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", framing: text}}
    return b"event: content_block_delta\ndata: " + json.dumps(payload).encode() + b"\n\n"


def _feed_all(redactor: SseRedactor, events: list[bytes]) -> bytes:
    return b"".join(redactor.feed(e) for e in events) + redactor.finish()


def test_events_in_a_clean_framing_skip_the_per_event_pass_and_secrets_still_go() -> None:
    """A long answer's deltas sit in one framing: judged clean once, they skip the second pass; a key
    whole in one delta, or split across three, is still replaced (the joined stream finds it)."""
    key = "ghp_" + "Zq4Xw9Rt2Yp6Lm8Nb3Vc7Kd1Hs5Jf0Ga2Qe"
    events = [_delta_event(f"word {i} ") for i in range(200)]
    events[50] = _delta_event(f"the token is {key} ok")
    events[120:123] = [_delta_event(key[:9]), _delta_event(key[9:20]), _delta_event(key[20:] + " done")]
    redactor = Redactor(KEY, "c")
    passes = []
    sse = SseRedactor(redactor)
    original = redactor.redact_payload
    redactor.redact_payload = lambda data: (passes.append(len(data)), original(data))[1]  # type: ignore[method-assign]
    out = _feed_all(sse, events)
    assert key[4:12].encode() not in out and out.count(b"[REDACTED:") == 2
    assert b"word 199 " in out
    assert sum(passes) < sum(len(e) for e in events) // 4  # most events were not scanned a second time


def test_a_framing_that_names_a_credential_or_holds_a_secret_keeps_the_per_event_pass() -> None:
    """`"password": "<delta>"`: the name marks each value; a framing holding a key is redacted in every event."""
    value = "Xk9#mQ2vL7pR"
    events = [_delta_event(f"v{i}", "password") for i in range(20)] + [_delta_event(value, "password")]
    out = _feed_all(SseRedactor(Redactor(KEY, "c")), events)
    assert value.encode() not in out
    key = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
    framed = [_delta_event(f"w{i} ").replace(b'"index": 0', f'"index": 0, "k": "{key}"'.encode()) for i in range(20)]
    out = _feed_all(SseRedactor(Redactor(KEY, "c")), framed)
    assert key[8:16].encode() not in out and out.count(b"[REDACTED:") == 20
