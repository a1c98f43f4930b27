"""Every model request in the real-client corpus, checked against what a careful reader sees.

The corpus (../shared/real-clients) holds real CLI requests answered by a scripted
fake model server. These tests skip when it is absent (a user's clone).
"""

from __future__ import annotations

from functools import cache

import pytest

from ctxtap.analysis.parsing.models import ModelCall
from ctxtap.analysis.parsing.parse import parse_exchanges
from tests import corpus

pytestmark = pytest.mark.skipif(not corpus.available(), reason=corpus.SKIP_REASON)

EXPECTED_CALLS = {
    "basic/claude": 2,
    "basic/codex": 3,
    "basic/codex-sse": 2,
    "basic/grok": 2,
    "basic/kimi-code": 2,
    "long/claude": 6,
    "long/codex-sse": 6,
    "long/kimi-code": 6,
}
CLIENTS = {
    "claude": "claude-code",
    "codex": "codex",
    "codex-sse": "codex",
    "grok": "grok-cli",
    "kimi-code": "kimi-code",
}


@cache
def calls(run: str) -> tuple[ModelCall, ...]:
    return tuple(parse_exchanges(corpus.load_run(run)))


def sources(call: ModelCall, source: str) -> list:
    return [b for b in call.request.blocks if b.source == source]


@pytest.mark.parametrize("run", corpus.RUNS)
def test_model_call_count_matches_readme(run):
    assert len(calls(run)) == EXPECTED_CALLS[run]


@pytest.mark.parametrize("run", corpus.RUNS)
def test_every_call_parses_cleanly(run):
    for call in calls(run):
        assert call.request.parse_status == "ok", call.request.parse_error
        assert call.response.parse_status == "ok", call.response.parse_error
        assert call.response.error is None
        assert call.request.effective_input_complete
        assert call.identity.client == CLIENTS[run.split("/")[1]]
        assert call.request.blocks or call.purpose.purpose == "warmup"
        assert all(b.source != "unknown" for b in call.request.blocks)


@pytest.mark.parametrize("run", corpus.RUNS)
def test_usage_from_fake_server(run):
    for call in calls(run):
        u = call.response.usage
        assert u.input_total.status == "reported" and u.input_total.value > 0
        assert u.output.status == "reported"
        assert u.cache_read.status == "reported"
        expected = "additive" if call.api == "messages" else "inclusive"
        assert u.cache_semantics == expected
        if expected == "additive":
            assert u.input_total.value == u.input_uncached.value + u.cache_read.value + u.cache_write.value
        else:
            assert u.input_uncached.value == u.input_total.value - u.cache_read.value


@pytest.mark.parametrize("run", corpus.RUNS)
def test_tool_calls_link_to_results(run):
    history = calls(run)
    for previous, current in zip(history, history[1:], strict=False):
        called = {b.call_id: b for b in current.request.blocks if b.kind == "tool_call"}
        results = [b for b in current.request.blocks if b.kind == "tool_result"]
        for result in results:
            assert result.call_id in called, f"{result.path} answers an unknown call"
            assert result.tool_name == called[result.call_id].tool_name
            assert (result.source, result.authority, result.content_type) == ("tool_result", "data", "data")
        # the calls the model made in the previous response are replayed, each with its result
        for tool_call in previous.response.tool_calls:
            assert tool_call.call_id in called
            assert any(r.call_id == tool_call.call_id for r in results)


@pytest.mark.parametrize("run", corpus.RUNS)
def test_project_instruction_files_are_project_instructions(run):
    for call in calls(run):
        for block in call.request.blocks:
            head = block.text[:200]
            if head.startswith("# AGENTS.md instructions for") or "# claudeMd" in head:
                assert block.source == "project_instructions"


@pytest.mark.parametrize("run", ["basic/claude", "long/claude"])
def test_claude_code_layout(run):
    for call in calls(run):
        blocks = call.request.blocks
        assert [b.source for b in blocks[:12]] == ["tool_catalogue"] * 12
        assert blocks[12].rule_id == "claude.billing-header"
        (env,) = [b for b in blocks if b.text.startswith("# Environment")]
        # the role:"system" message after the task: its environment, its catalogues and its guidance apart
        assert (env.role, env.source, env.rule_id) == ("system", "mixed", "claude.env-message")
        by_source = {}
        for seg in env.segments:
            by_source[seg.source] = by_source.get(seg.source, 0) + seg.end - seg.start
        assert set(by_source) >= {"runtime_environment", "tool_catalogue", "plugin_catalogue"}
        catalogues = by_source["tool_catalogue"] + by_source["plugin_catalogue"]
        assert catalogues > 0.75 * env.bytes  # most of it is catalogues, not environment
        first = env.segments[0]
        assert first.source == "runtime_environment" and b"Primary working directory" in env.text.encode()[
            first.start:first.end]
        git = [b for b in blocks if "# gitStatus" in b.text]
        assert git and git[0].source == "runtime_environment"
        (task,) = sources(call, "user_task")
        assert task.text.startswith(("Read the current directory", "Get me oriented"))
        assert call.purpose.purpose == "main"
        assert call.identity.session_id and call.identity.turn_id
        assert call.identity.client_version == "2.1.332"


def test_claude_prefix_hashes_are_stable_across_requests():
    """Identical context hashes identically, so the next request's prefix can be compared."""
    history = calls("long/claude")
    for first, second in zip(history, history[1:], strict=False):
        a = [(b.path, b.content_hash) for b in first.request.blocks if b.rule_id != "claude.billing-header"]
        b = [(b.path, b.content_hash) for b in second.request.blocks if b.rule_id != "claude.billing-header"]
        # the env message is a one-block list in the first request and a string later: same hash
        assert [h for _, h in a] == [h for _, h in b[: len(a)]]
        assert len(b) > len(a)


def test_codex_websocket_prewarm_and_continuations():
    prewarm, first, last = calls("basic/codex")
    assert prewarm.purpose.purpose == "warmup" and prewarm.request.endpoint == "warmup"
    assert prewarm.request.blocks == []
    assert first.purpose.purpose == last.purpose.purpose == "main"
    assert last.request.previous_response_id == first.response.response_id
    kinds = [(b.kind, b.role, b.source) for b in last.request.blocks]
    # the last frame sent only the two tool outputs; the model read everything
    assert kinds.count(("tool_definition", "developer", "tool_catalogue")) == 3
    developer = [b for b in last.request.blocks if b.role == "developer" and b.kind == "instruction_text"]
    assert developer[0].text.startswith("You are Codex") and developer[0].source == "platform_rules"
    assert any(
        b.text.startswith("<skills_instructions>") and b.source == "plugin_catalogue" for b in developer
    )
    assert any(b.text.startswith("<multi_agent_role>") for b in developer)
    (env,) = [b for b in last.request.blocks if b.text.startswith("<environment_context>")]
    assert (env.role, env.source, env.rule_id) == ("user", "runtime_environment", "codex.environment-context")
    (task,) = sources(last, "user_task")
    assert task.text.startswith("Read the current directory")
    tool_calls = [b for b in last.request.blocks if b.kind == "tool_call"]
    results = [b for b in last.request.blocks if b.kind == "tool_result"]
    assert [b.wire_type for b in tool_calls] == ["custom_tool_call", "custom_tool_call"]
    assert [b.call_id for b in tool_calls] == [b.call_id for b in results]
    assert [b.inherited_from for b in results] == [None, None]
    assert all(
        b.inherited_from == first.response.response_id for b in last.request.blocks if b.kind != "tool_result"
    )
    assert "/home/alice/work/demo-repo" in results[0].text


def test_websocket_reconstruction_matches_http_transport():
    """Codex over WebSocket (incremental) and over HTTP (full history) carry the same context."""
    ws_last = calls("basic/codex")[-1]
    http_last = calls("basic/codex-sse")[-1]

    def layout(call):
        return [(b.path, b.kind, b.role, b.source, b.rule_id) for b in call.request.blocks]

    assert layout(ws_last) == layout(http_last)


@pytest.mark.parametrize("run", ["basic/codex", "basic/codex-sse", "long/codex-sse"])
def test_codex_identity(run):
    for call in calls(run):
        ident = call.identity
        assert ident.client_version == "0.171.0"
        assert ident.session_id and ident.thread_id and ident.prompt_cache_key == ident.thread_id
        if call.purpose.purpose == "main":
            assert ident.turn_id


@pytest.mark.parametrize("run", ["basic/kimi-code", "long/kimi-code"])
def test_kimi_layout(run):
    for call in calls(run):
        blocks = call.request.blocks
        system = [b for b in blocks if b.role == "system" and b.kind == "instruction_text"]
        assert [b.rule_id for b in system] == ["kimi.system-prompt"]
        reminders = [b for b in blocks if b.text.startswith("<system-reminder>")]
        assert {b.rule_id for b in reminders} == {"kimi.date-reminder", "kimi.system-reminder"}
        assert {b.source for b in reminders} == {"runtime_environment", "system_reminder"}
        (task,) = sources(call, "user_task")
        assert task.path == "messages[1].content"
        assert call.identity.session_id.startswith("session_")
        assert call.identity.client_version == "2.1.0"


def test_kimi_history_grows_with_tool_results():
    history = calls("long/kimi-code")
    counts = [len([b for b in c.request.blocks if b.kind == "tool_result"]) for c in history]
    assert counts == [0, 2, 3, 4, 5, 6]
    settings = [b for b in history[-1].request.blocks if "DO NOT COMMIT" in b.text]
    assert settings and all(b.source == "tool_result" and b.content_type == "data" for b in settings)


def test_grok_single_system_message():
    for call in calls("basic/grok"):
        system = [b for b in call.request.blocks if b.role == "system" and b.kind == "instruction_text"]
        assert [(b.source, b.rule_id) for b in system] == [("mixed", "grok.system-prompt")]
        (prompt,) = system
        data = prompt.text.encode()
        last = prompt.segments[-1]
        assert last.source == "runtime_environment"
        assert data[last.start:last.end].strip().startswith(b"Current working directory: /home/alice/work/demo-repo")
        assert prompt.segments[0].source == "platform_rules"
        assert call.request.n_tools == 7
        assert call.purpose.purpose == "main"
        assert call.transport == "json"
