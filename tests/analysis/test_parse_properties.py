"""Property tests: arbitrary and mutated bodies and event streams never raise; they yield a parse status.

Seeds are the hand-written fixtures (and real-corpus bodies when the corpus is
present); mutations truncate, flip bytes, drop keys and swap value types.
"""

from __future__ import annotations

import copy
import json
from functools import cache

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxtap.analysis.parsing.models import ModelCall
from ctxtap.analysis.parsing.parse import ParseState, parse_exchange
from ctxtap.wire.sse import parse_sse
from tests import corpus
from tests.corpus import FIXTURES, http_exchange, ws_exchange, ws_fixture_frames

STATUSES = {"ok", "partial", "error", "not_applicable"}
PATHS = {
    "messages": "/v1/messages?beta=true",
    "responses": "/v1/responses",
    "chat-completions": "/v1/chat/completions",
    "gemini": "/v1internal:streamGenerateContent?alt=sse",
}
FIXTURE_DIRS = {
    "anthropic": "messages",
    "responses": "responses",
    "chat": "chat-completions",
    "gemini": "gemini",
}
PROFILE = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@cache
def seeds() -> tuple[tuple[str, bytes, bytes], ...]:
    """(api, request body, response body) pairs from fixtures and, if present, the real corpus."""
    out = []
    for folder, api in FIXTURE_DIRS.items():
        files = sorted((FIXTURES / folder).iterdir())
        requests = [f.read_bytes() for f in files if f.name.startswith("request")]
        responses = [f.read_bytes() for f in files if f.name.startswith(("response", "error"))]
        for i, req in enumerate(requests):
            for resp in responses[i % len(responses) :][:2]:
                out.append((api, req, resp))
    if corpus.available():
        for run in ("basic/claude", "basic/codex-sse", "basic/kimi-code", "basic/grok"):
            for ex in corpus.load_run(run):
                if ex.request_body and ex.status == 200 and ex.method == "POST" and ex.api != "other":
                    out.append((ex.api, ex.request_body, ex.response_body or b""))
    return tuple(out)


def check(calls: list[ModelCall]) -> None:
    for call in calls:
        assert isinstance(call, ModelCall)
        # the last-resort guard in parse_exchange must never be what saved us
        assert call.purpose.rule_id != "parse.failed", call.request.parse_error
        assert call.request.parse_status in STATUSES
        assert call.response.parse_status in STATUSES
        for position, block in enumerate(call.request.blocks):
            assert block.position == position
            assert block.bytes == len(block.text.encode("utf-8"))
            assert len(block.content_hash) == 64


def run_http(api: str, request: bytes | None, response: bytes | None, status: int = 200) -> list[ModelCall]:
    calls = parse_exchange(http_exchange(PATHS[api], request, response, status=status))
    assert len(calls) == 1
    check(calls)
    return calls


# --- mutation helpers ---------------------------------------------------------------

WRONG_TYPES = [None, 0, -1, 1.5, "", "x", [], {}, True, [None], {"type": None}]


def nodes(value, path=()):
    """Every (path, node) in a JSON value."""
    yield path, value
    if isinstance(value, dict):
        for k, v in value.items():
            yield from nodes(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from nodes(v, (*path, i))


def mutate_json(value, data) -> object:
    value = copy.deepcopy(value)
    targets = list(nodes(value))
    for _ in range(data.draw(st.integers(1, 4))):
        path, _node = data.draw(st.sampled_from(targets))
        if not path:
            return copy.deepcopy(data.draw(st.sampled_from(WRONG_TYPES)))
        parent = value
        try:
            for key in path[:-1]:
                parent = parent[key]
            action = data.draw(st.sampled_from(["drop", "retype", "retype"]))
            if action == "drop" and isinstance(parent, dict):
                parent.pop(path[-1], None)
            elif action == "drop" and isinstance(parent, list):
                del parent[path[-1]]
            else:
                parent[path[-1]] = copy.deepcopy(data.draw(st.sampled_from(WRONG_TYPES)))
        except (KeyError, IndexError, TypeError):
            continue  # an earlier mutation removed the path
    return value


def mutate_bytes(raw: bytes, data) -> bytes:
    action = data.draw(st.sampled_from(["truncate", "flip", "both"]))
    out = bytearray(raw)
    if action in ("flip", "both") and out:
        for _ in range(data.draw(st.integers(1, 8))):
            i = data.draw(st.integers(0, len(out) - 1))
            out[i] ^= data.draw(st.integers(1, 255))
    if action in ("truncate", "both"):
        out = out[: data.draw(st.integers(0, len(out)))]
    return bytes(out)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=20,
)


# --- properties -----------------------------------------------------------------------


@PROFILE
@given(
    api=st.sampled_from(sorted(PATHS)),
    request=st.binary(max_size=300),
    response=st.binary(max_size=300),
    status=st.sampled_from([200, 400, 429, 500]),
)
def test_arbitrary_bytes_never_raise(api, request, response, status):
    run_http(api, request, response, status)


@PROFILE
@given(api=st.sampled_from(sorted(PATHS)), request=json_values, response=json_values)
def test_arbitrary_json_never_raises(api, request, response):
    run_http(api, json.dumps(request).encode(), json.dumps(response).encode())


@PROFILE
@given(data=st.data())
def test_mutated_request_bodies(data):
    api, request, response = data.draw(st.sampled_from(seeds()))
    body = json.loads(request)
    mutated = mutate_json(body, data)
    (call,) = run_http(api, json.dumps(mutated).encode(), response)
    assert call.request.parse_status in STATUSES


@PROFILE
@given(data=st.data())
def test_mutated_response_bodies(data):
    api, request, response = data.draw(st.sampled_from(seeds()))
    (call,) = run_http(api, request, mutate_bytes(response, data))
    if call.response.parse_status == "ok" and call.response.error is None:
        # an intact-looking answer must still carry usage statuses from the vocabulary
        assert call.response.usage.input_total.status in ("reported", "estimated", "not_available")


@PROFILE
@given(data=st.data())
def test_mutated_request_bytes(data):
    api, request, response = data.draw(st.sampled_from(seeds()))
    run_http(api, mutate_bytes(request, data), response)


@PROFILE
@given(data=st.data())
def test_shuffled_and_mutated_event_streams(data):
    api, request, response = data.draw(
        st.sampled_from([s for s in seeds() if s[2].lstrip()[:5] in (b"event", b"data:")])
    )
    events = response.split(b"\n\n")
    events = data.draw(st.permutations(events)) if data.draw(st.booleans()) else events
    keep = data.draw(st.lists(st.booleans(), min_size=len(events), max_size=len(events)))
    stream = b"\n\n".join(e for e, k in zip(events, keep, strict=True) if k)
    if data.draw(st.booleans()):
        chunks = stream.split(b"data: ")
        i = data.draw(st.integers(0, len(chunks) - 1))
        try:
            obj = json.loads(chunks[i].split(b"\n")[0])
            chunks[i] = json.dumps(mutate_json(obj, data)).encode() + b"\n"
        except ValueError:
            pass
        stream = b"data: ".join(chunks)
    run_http(api, request, stream)


@PROFILE
@given(data=st.data())
def test_mutated_websocket_frames(data):
    frames = ws_fixture_frames("responses/ws_frames.jsonl")
    if corpus.available() and data.draw(st.booleans()):
        (ws,) = [ex for ex in corpus.load_run("basic/codex") if ex.kind == "websocket"]
        frames = [(m.from_client, m.content) for m in ws.ws_messages]
    out = []
    for from_client, content in frames:
        roll = data.draw(st.integers(0, 9))
        if roll == 0:
            continue
        if roll == 1:
            content = mutate_bytes(content, data)
        elif roll == 2:
            content = json.dumps(mutate_json(json.loads(content), data)).encode()
        out.append((from_client, content))
    calls = parse_exchange(ws_exchange(out), ParseState())
    check(calls)


@PROFILE
@given(st.binary(max_size=500) | st.text(max_size=500))
def test_sse_parser_total(raw):
    stream = parse_sse(raw)
    assert all(isinstance(e.data, str) for e in stream.events)


def test_deeply_nested_json_is_a_parse_status_not_a_crash():
    for depth in (400, 5000):
        deep = "[" * depth + "]" * depth
        body = '{"model":"m","messages":[{"role":"user","content":[{"type":"weird","x":' + deep + "}]}]}"
        (call,) = run_http(
            "messages", body.encode(), ('{"type":"message","content":[],"x":' + deep + "}").encode()
        )
        assert call.request.parse_status in ("ok", "error")
        if call.request.parse_status == "error":
            assert "nested too deeply" in call.request.parse_error
