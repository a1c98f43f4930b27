"""Client knowledge lives one module per client: the engines keep the rule order, and a client can be
switched off or added for one run."""

from __future__ import annotations

import json

import pytest

from ctxtap.analysis.clients import registry
from ctxtap.analysis.clients.registry import Client
from ctxtap.analysis.clients.rules import PLATFORM, TEXT_CLIENT, PurposeRule, Rule, info, starts
from ctxtap.analysis.parsing.parse import parse_exchange
from ctxtap.analysis.rules.attribution import attribute, rules
from ctxtap.analysis.threads.identity import steps
from ctxtap.analysis.threads.purpose import _table
from tests.corpus import fixture, http_exchange

# The table order from when all rules lived in one list: the stages must reproduce it exactly.
ATTRIBUTION_ORDER = [
    "generic.mcp-tool", "codex.additional-tools", "generic.tool-definition", "generic.tool-call",
    "generic.tool-result", "generic.reasoning", "generic.compaction-item", "claude.billing-header",
    "claude.identity", "claude.env-message", "claude.claude-md", "claude.git-status", "claude.date-reminder",
    "claude.compaction-request", "claude.compact-summary", "claude.quota-probe", "claude.system-reminder",
    "claude.system-prompt", "codex.base-instructions", "codex.skills", "codex.plugins", "codex.permissions",
    "codex.collaboration-mode", "codex.agents-md", "codex.environment-context", "codex.compaction-request",
    "codex.compaction-summary", "codex.harness-notice", "codex.item-kind", "kimi.system-prompt",
    "kimi.compaction-request", "kimi.compaction-summary", "kimi.date-reminder", "kimi.system-reminder",
    "grok.system-prompt", "gemini.system-prompt", "gemini.session-context", "gemini.compression-request",
    "gemini.state-snapshot", "opencode.system-prompt", "opencode.env", "argv.task", "argv.canned-exchange", "argv.not-the-task",
    "argv.canned-turn",
    "generic.date-reminder",
    "generic.system-reminder", "generic.project-file", "generic.environment", "generic.system-text",
    "generic.assistant-text", "generic.user-context-part", "generic.first-user-text-task", "generic.user-text-task", "generic.user-media",
    "generic.unknown",
]
PURPOSE_ORDER = [
    "count_tokens", "warmup", "compact_endpoint", "subagent_header", "turn_metadata_kind", "compaction_text",
    "probe", "max_tokens_1", "title", "side_call", "request_class", "structured_output", "side_shape", "turn",
    "tools_present", "user_task_no_tools",
]
IDENTITY_ORDER = [  # built-in profiles' steps are named for what they read (analysis/clients/*.toml)
    "generic.recorded_client", "gemini_cli.client_from_profile", "claude_code.version_in_body",
    "claude_code.session_header", "codex.sessions", "claude_code.user_id", "gemini_cli.session_id_from_body",
    "generic.session_header", "generic.thread_headers", "codex.threads", "grok.thread_id_from_header",
    "codex.parent_thread", "codex.turns", "claude_code.prompt_id", "gemini_cli.turn_id_from_body",
    "generic.prompt_cache_key", "kimi.session_id_from_cache_key", "grok.session_id_from_header",
    "kimi.user_id_from_header", "generic.body_user",
]


def _name(fn) -> str:
    return f"{fn.__module__.rsplit('.', 1)[-1]}.{fn.__name__}"


def test_engines_keep_the_rule_order():
    assert [r.id for r in rules()] == ATTRIBUTION_ORDER
    table, shared = _table(frozenset())
    assert [rule.decide.__name__ for rule in table] == PURPOSE_ORDER
    assert [_name(step.fill) for step in steps()] == IDENTITY_ORDER
    assert shared["compaction_rules"] == {"claude.compaction-request", "codex.compaction-request",
                                          "kimi.compaction-request", "gemini.compression-request"}


def test_every_client_module_owns_its_rules():
    for client in registry.clients():
        prefix = {"claude_code": ("claude.",), "gemini_cli": ("gemini.",),
                  "generic": ("generic.", "argv.")}.get(client.name, (client.name + ".",))  # argv: the run's own task
        assert all(rule.id.startswith(prefix) for rule in client.rules), client.name


def test_a_client_can_be_switched_off():
    body = json.loads(fixture("responses/request_codex_http.json"))
    ex = http_exchange("/v1/responses", body, None, status=None,
                       headers=[("user-agent", "codex_exec/0.171.0 (Linux)"), ("originator", "codex_exec")])
    (call,) = parse_exchange(ex)
    ids = {b.path: b.rule_id for b in call.request.blocks}
    assert any(rule.startswith("codex.") for rule in ids.values())

    from ctxtap.analysis.protocols import registry as protocols
    from ctxtap.analysis.protocols.registry import RequestContext

    draft = protocols.get("responses").parse_request(body, RequestContext("/v1/responses", protocols.get(
        "responses").new_state()))
    without = attribute(draft.blocks, "codex", "responses", disabled_clients={"codex"})
    assert [b.path for b in without] == list(ids)
    assert not any(b.rule_id.startswith("codex.") for b in without)
    changed = {(ids[b.path], b.rule_id) for b in without if b.rule_id != ids[b.path]}
    # only Codex's own rules gave way, to generic ones (and the task seen first moved with them)
    assert {old for old, _ in changed} - {"generic.first-user-text-task"} == {
        r for r in ids.values() if r.startswith("codex.")}
    assert all(new.startswith(("generic.", "detect.")) for _, new in changed)
    # Codex's environment message, read without Codex's rules: the client-independent detectors see it
    env = next(b for b in without if b.text.startswith("<environment_context>"))
    assert ids[env.path] == "codex.environment-context"
    assert (env.source, env.rule_id.split("-")[0]) == ("runtime_environment", "detect.environment")
    task = next(b for b in without if b.source == "user_task")
    assert task.kind == "message_text" and not task.text.startswith("<")
    # and the table for the full set is untouched
    assert [r.id for r in rules()] == ATTRIBUTION_ORDER


@pytest.fixture
def toy_client():
    client = registry.register(Client(
        name="toyagent",
        ids=frozenset({"toyagent"}),
        order=70,
        rules=(Rule("toyagent.system-prompt", "ToyAgent's system prompt", starts("You are ToyAgent"), PLATFORM,
                    stage=TEXT_CLIENT),),
        purposes=(PurposeRule(5, lambda f: info("probe", "toyagent.ping", "ping") if f.request.n_tools == 0
                              and any(b.text == "ping" for b in f.request.blocks) else None),),
    ))
    yield client
    registry.unregister("toyagent")
    assert [r.id for r in rules()] == ATTRIBUTION_ORDER  # gone again, nothing else moved


def test_a_new_client_is_one_registration(toy_client):
    body = {"model": "m", "max_tokens": 10, "system": "You are ToyAgent.", "messages": [
        {"role": "user", "content": "ping"}]}
    (call,) = parse_exchange(http_exchange("/v1/messages", body, None, status=None,
                                           headers=[("user-agent", "toyagent/0.1")]))
    assert [b.rule_id for b in call.request.blocks] == ["toyagent.system-prompt", "generic.first-user-text-task"]
    assert (call.purpose.purpose, call.purpose.rule_id) == ("probe", "toyagent.ping")
