"""Request serialisers: edited blocks back to wire bytes, everything not edited byte for byte.

Each protocol's `serialise(raw, edits)` is checked on hand-written fixtures (pretty-printed bodies,
one per protocol) and on every request body of the real-client corpus (compact bodies): no edits give
the very same bytes, each edit kind changes exactly what it names, and re-parsing the result gives the
blocks one expects.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from ctxtap.analysis.protocols import registry
from ctxtap.analysis.protocols.editing import (
    DropBlock,
    EditError,
    MoveBlock,
    RemoveCacheBreakpoint,
    ReplaceText,
    SetCacheBreakpoint,
    rebuild,
)
from ctxtap.analysis.protocols.registry import Protocol, RequestContext
from tests import corpus

FIXTURES = {
    "messages": ("anthropic/request_claude_code.json", "/v1/messages"),
    "responses": ("responses/request_codex_http.json", "/v1/responses"),
    "chat-completions": ("chat/request_kimi.json", "/coding/v1/chat/completions"),
    "gemini": ("gemini/request_cloudcode.json", "/v1internal:streamGenerateContent?alt=sse"),
}


def _blocks(protocol: Protocol, raw: bytes, path: str) -> list[tuple[str, str, str]]:
    draft = protocol.parse_request(json.loads(raw), RequestContext(path, protocol.new_state()))
    return [(b.path, b.kind, b.text) for b in draft.blocks]


def _fixture(api: str) -> tuple[Protocol, bytes, str]:
    name, path = FIXTURES[api]
    protocol = registry.get(api)
    assert protocol is not None
    return protocol, corpus.fixture(name), path


def _first(blocks: list[tuple[str, str, str]], kind: str, prefix: str) -> int:
    return next(i for i, b in enumerate(blocks) if b[1] == kind and b[0].startswith(prefix))


# --- each edit kind, per protocol ---------------------------------------------------------------


@pytest.mark.parametrize("api", sorted(FIXTURES))
def test_no_edits_give_the_same_bytes(api):
    protocol, raw, _ = _fixture(api)
    assert protocol.serialise(raw) is raw
    assert rebuild(raw, json.loads(raw)) == raw  # the writer itself, with nothing changed
    before = _blocks(protocol, raw, FIXTURES[api][1])
    # an edit that changes nothing leaves every byte where it was
    i = _first(before, "message_text", "")
    assert protocol.serialise(raw, [ReplaceText(path=before[i][0], text=before[i][2])]) == raw


@pytest.mark.parametrize("api", sorted(FIXTURES))
def test_replace_text(api):
    protocol, raw, path = _fixture(api)
    before = _blocks(protocol, raw, path)
    i = _first(before, "message_text", "")
    out = protocol.serialise(raw, [ReplaceText(path=before[i][0], text="Rewritten: « do less »")])
    after = _blocks(protocol, out, path)
    assert after[i] == (before[i][0], before[i][1], "Rewritten: « do less »")
    assert after[:i] + after[i + 1:] == before[:i] + before[i + 1:]
    assert json.loads(out) != json.loads(raw)
    assert len(out.splitlines()) == len(raw.splitlines())  # pretty layout kept: one line changed
    changed = [a for a, b in zip(out.splitlines(), raw.splitlines(), strict=True) if a != b]
    assert len(changed) == 1


@pytest.mark.parametrize("api", sorted(FIXTURES))
def test_drop_block(api):
    protocol, raw, path = _fixture(api)
    before = _blocks(protocol, raw, path)
    tool = _first(before, "tool_definition", "")
    out = protocol.serialise(raw, [DropBlock(path=before[tool][0])])
    after = _blocks(protocol, out, path)
    assert [b[1:] for b in after] == [b[1:] for b in before[:tool] + before[tool + 1:]]
    assert after[tool][0] == before[tool][0]  # the next tool took its place
    assert json.loads(out) == _dropped(json.loads(raw), protocol, before[tool][0])


@pytest.mark.parametrize("api", sorted(FIXTURES))
def test_move_block(api):
    protocol, raw, path = _fixture(api)
    before = _blocks(protocol, raw, path)
    tools = [i for i, b in enumerate(before) if b[1] == "tool_definition"]
    assert len(tools) >= 2
    last = before[tools[-1]]
    out = protocol.serialise(raw, [MoveBlock(path=last[0], to=0)])
    after = _blocks(protocol, out, path)
    assert [b[2] for b in after if b[1] == "tool_definition"] == (
        [last[2]] + [before[i][2] for i in tools[:-1]])
    assert [b for b in after if b[1] != "tool_definition"] == [b for b in before if b[1] != "tool_definition"]


def test_several_edits_address_the_original_body():
    protocol, raw, path = _fixture("messages")
    before = _blocks(protocol, raw, path)
    edits = [DropBlock(path="messages[0].content[1]"), ReplaceText(path="messages[0].content[2]", text="task"),
             DropBlock(path="tools[0]")]
    after = _blocks(protocol, protocol.serialise(raw, edits), path)
    texts = [b[2] for b in after]
    assert before[6][2] not in texts and "task" in texts and before[0][2] not in texts
    assert len(after) == len(before) - 2


def test_anthropic_cache_breakpoints_move_and_keep_everything_else():
    protocol, raw, path = _fixture("messages")
    body = json.loads(raw)
    marked = [i for i, part in enumerate(body["system"]) if "cache_control" in part]
    assert marked == [2]
    out = protocol.serialise(raw, [RemoveCacheBreakpoint(path="system[2]"),
                                   SetCacheBreakpoint(path="system[1]", ttl="1h"),
                                   SetCacheBreakpoint(path="messages[1].content")])
    edited = json.loads(out)
    assert "cache_control" not in edited["system"][2]
    assert edited["system"][1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    # a string content becomes one text part, the form that can carry a breakpoint
    assert edited["messages"][1]["content"] == [
        {"type": "text", "text": body["messages"][1]["content"], "cache_control": {"type": "ephemeral"}}]
    call = protocol.parse_request(edited, RequestContext(path))
    points = {b.path: b.cache_breakpoint for b in _finished(call.blocks)}
    assert points["system[1]"] == "1h" and points["system[2]"] is None
    assert points["messages[1].content[0]"] == "ephemeral"
    # the thinking block and its signature are untouched bytes
    thinking = [part for m in body["messages"] for part in (m["content"] if isinstance(m["content"], list) else [])
                if isinstance(part, dict) and part.get("type") == "thinking"]
    for part in thinking:
        assert json.dumps(part["signature"]).encode() in out


@pytest.mark.parametrize("api", ["responses", "chat-completions", "gemini"])
def test_cache_breakpoints_only_where_the_protocol_has_them(api):
    protocol, raw, path = _fixture(api)
    first = _blocks(protocol, raw, path)[0][0]
    with pytest.raises(EditError, match="no per-block cache breakpoints"):
        protocol.serialise(raw, [SetCacheBreakpoint(path=first)])


def test_bad_edits_say_why():
    protocol, raw, _ = _fixture("messages")
    with pytest.raises(EditError, match="no element"):
        protocol.serialise(raw, [DropBlock(path="messages[99]")])
    with pytest.raises(EditError, match="not a block path"):
        protocol.serialise(raw, [DropBlock(path="[0]")])
    with pytest.raises(EditError, match="no text"):
        protocol.serialise(raw, [ReplaceText(path="tools[0]", text="x")])
    with pytest.raises(EditError, match="already dropped"):
        protocol.serialise(raw, [DropBlock(path="tools[0]"), DropBlock(path="tools[0]")])
    with pytest.raises(EditError, match="not JSON"):
        protocol.serialise(b"{nope", [DropBlock(path="tools[0]")])


def test_gemini_paths_reach_into_the_code_assist_envelope():
    protocol, raw, path = _fixture("gemini")
    out = protocol.serialise(raw, [ReplaceText(path="systemInstruction.parts[0]", text="Be brief."),
                                   DropBlock(path="contents[1].parts[0]")])
    edited = json.loads(out)
    assert edited["request"]["systemInstruction"]["parts"] == [{"text": "Be brief."}]
    assert edited["request"]["contents"][1]["parts"] == []
    assert {k: v for k, v in edited.items() if k != "request"} == {
        k: v for k, v in json.loads(raw).items() if k != "request"}


def test_rebuild_keeps_unchanged_values_of_an_edited_body():
    raw = b'{"b": 1,  "a": [ {"x": "\\u00e9"}, {"y": 2} ], "c": "keep\\/me"}'
    body = json.loads(raw)
    body["a"].append({"z": "é"})
    out = rebuild(raw, body)
    assert json.loads(out) == body
    assert out.startswith(b'{"b": 1,  "a": [ {"x": "\\u00e9"}, {"y": 2}')  # untouched bytes, escapes and all
    assert out.endswith(b'], "c": "keep\\/me"}')
    assert b'"z": "\\u00e9"' in out  # new text follows the body's escaping


# --- the real-client corpus -------------------------------------------------------------------


def _corpus_bodies() -> list[tuple[str, Protocol, str, bytes]]:
    from ctxtap.analysis.parsing.parse import route

    out = []
    for run in corpus.RUNS:
        for ex in corpus.load_run(run):
            r = route(ex)
            if r is None:
                continue
            if ex.kind == "http" and ex.request_body:
                out.append((run, r.protocol, ex.path, ex.request_body))
            for turn in r.protocol.ws_turns(ex.ws_messages) if ex.kind == "websocket" else ():
                if turn.obj is not None:  # the frame minus its `type` is the request body
                    out.append((run, r.protocol, ex.path, turn.request.content))
    return out


@pytest.fixture(scope="module")
def corpus_bodies() -> list[tuple[str, Protocol, str, bytes]]:
    if not corpus.available():
        pytest.skip(corpus.SKIP_REASON)
    return _corpus_bodies()


def test_corpus_bodies_round_trip_and_edit(corpus_bodies):
    apis = set()
    for run, protocol, path, raw in corpus_bodies:
        apis.add(protocol.api)
        assert protocol.serialise(raw) is raw
        assert rebuild(raw, json.loads(raw)) == raw, run
        before = _blocks(protocol, raw, path)
        texts = [i for i, b in enumerate(before[:-1]) if b[1] in ("message_text", "instruction_text")]
        if not texts:
            continue
        i, last = texts[0], before[-1]
        out = protocol.serialise(raw, [ReplaceText(path=before[i][0], text="edited"), DropBlock(path=last[0])])
        expected = [*before[:i], (before[i][0], before[i][1], "edited"), *before[i + 1:-1]]
        assert _blocks(protocol, out, path) == expected, run
        # a replaced text is the only change: the other bytes stay exactly where they were
        only = protocol.serialise(raw, [ReplaceText(path=before[i][0], text="edited")])
        assert _spliced(raw, before[i][2], b"edited", only), run
    assert {"messages", "responses", "chat-completions"} <= apis


def test_corpus_blocks_move_back_to_the_same_bytes(corpus_bodies):
    for run, protocol, _path, raw in corpus_bodies:
        body = json.loads(raw)
        tools = body.get("tools") if isinstance(body, dict) else None
        if not isinstance(tools, list) or len(tools) < 2:
            continue
        moved = protocol.serialise(raw, [MoveBlock(path=f"tools[{len(tools) - 1}]", to=0)])
        assert json.loads(moved)["tools"] == [tools[-1], *tools[:-1]], run
        back = protocol.serialise(moved, [MoveBlock(path="tools[0]", to=len(tools) - 1)])
        assert back == raw, run  # each element's bytes were kept, so undoing the move restores the body


# --- helpers ------------------------------------------------------------------------------------


def _finished(drafts: list) -> list:
    from ctxtap.analysis.blocks.drafts import finalize

    return [finalize(d, i, {"source": "unknown", "authority": "data", "scope": "turn", "lifetime": "turn",
                            "content_type": "data"}, "test") for i, d in enumerate(drafts)]


def _dropped(body: Any, protocol: Protocol, path: str) -> Any:
    steps = protocol.wire_path(body, path)
    target = body
    for step in steps[:-1]:
        target = target[step]
    del target[steps[-1]]
    return body


def _spliced(raw: bytes, old: str, new: bytes, out: bytes) -> bool:
    """`out` is `raw` with one occurrence of the JSON string `old` replaced by `new`."""
    needle = json.dumps(old, ensure_ascii=False)[1:-1].encode()
    if needle not in raw:  # escaped differently on the wire (e.g. \u00e9): compare values instead
        return json.loads(out) != json.loads(raw)
    at = raw.find(needle)
    while at >= 0:
        if out == raw[:at] + new + raw[at + len(needle):]:
            return True
        at = raw.find(needle, at + 1)
    return False
