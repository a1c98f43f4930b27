"""Clients no rule was written for still get a sensible layout; `unknown` only where nothing is known."""

from __future__ import annotations

import json

from ctxtap.analysis.parsing.parse import parse_exchange
from ctxtap.analysis.rules.attribution import RULE_IDS
from tests.corpus import http_exchange


def test_anthropic_client_with_one_plain_system_string():
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 4096,
        "system": "You are TinyAgent. Be concise and never run destructive commands.",
        "messages": [
            {"role": "user", "content": "Summarise README.md"},
            {"role": "assistant", "content": "Sure."},
            {"role": "user", "content": "Also list the tests."},
        ],
    }
    headers = [("user-agent", "tinyagent/0.3 (python)"), ("x-session-id", "tiny-1")]
    resp = {
        "id": "msg_u",
        "type": "message",
        "content": [{"type": "text", "text": "ok"}],
        "stop_reason": "end_turn",
        "usage": {
            "input_tokens": 40,
            "cache_read_input_tokens": 0,
            "cache_creation_input_tokens": 0,
            "output_tokens": 2,
        },
    }
    (call,) = parse_exchange(http_exchange("/v1/messages", body, resp, headers=headers))
    layout = [(b.path, b.role, b.source, b.authority, b.rule_id) for b in call.request.blocks]
    assert layout == [
        ("system", "system", "platform_rules", "platform", "generic.system-text"),
        ("messages[0].content", "user", "user_task", "user", "generic.first-user-text-task"),
        ("messages[1].content", "assistant", "assistant_output", "data", "generic.assistant-text"),
        ("messages[2].content", "user", "user_task", "user", "generic.user-text-task"),
    ]
    assert (call.identity.client, call.identity.client_version) == ("tinyagent", "0.3")
    assert call.identity.session_id == "tiny-1"
    assert call.purpose.purpose == "main" and call.purpose.rule_id == "generic.user-task-no-tools"
    assert call.response.usage.input_total.status == "reported"


def test_chat_client_with_tools():
    body = {
        "model": "some-model",
        "tools": [{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}],
        "messages": [
            {"role": "system", "content": "You are HelperBot."},
            {"role": "user", "content": "Working directory: /srv/app\nPlatform: linux\nShell: zsh"},
            {"role": "user", "content": "open main.py"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "t1",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": '{"path":"main.py"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "t1", "content": "print('hi')"},
            {"role": "assistant", "content": [{"type": "mystery_part", "payload": 1}]},
        ],
    }
    headers = [("user-agent", "OpenAI/Python 1.99.0"), ("x-grok-conv-id", "conv-5")]
    (call,) = parse_exchange(http_exchange("/v1/chat/completions", body, None, host="api.x.ai", status=None))
    sources = [(b.path, b.source, b.rule_id) for b in call.request.blocks]
    assert sources == [
        ("tools[0]", "tool_catalogue", "generic.tool-definition"),
        ("messages[0].content", "platform_rules", "generic.system-text"),
        ("messages[1].content", "runtime_environment", "generic.environment"),
        ("messages[2].content", "user_task", "generic.first-user-text-task"),
        ("messages[3].tool_calls[0]", "tool_call", "generic.tool-call"),
        ("messages[4]", "tool_result", "generic.tool-result"),
        ("messages[5].content[0]", "assistant_output", "generic.assistant-text"),
    ]
    assert call.purpose.purpose == "main" and call.purpose.rule_id == "generic.tools-present"
    assert call.response.parse_status == "not_applicable"  # no response recorded
    assert call.response.error.layer == "model_service"
    (with_header,) = parse_exchange(
        http_exchange("/v1/chat/completions", body, None, host="api.x.ai", headers=headers)
    )
    assert with_header.identity.session_id == "conv-5" and with_header.identity.thread_id == "conv-5"


def test_unknown_only_when_nothing_is_known():
    body = {
        "model": "m",
        "input": [{"type": "item_reference", "id": "ref_1"}, {"type": "brand_new_item", "x": 1}],
    }
    (call,) = parse_exchange(
        http_exchange("/v1/responses", body, {"id": "r", "status": "completed", "output": []})
    )
    assert [(b.kind, b.source, b.rule_id) for b in call.request.blocks] == [
        ("other", "unknown", "generic.unknown"),
        ("other", "unknown", "generic.unknown"),
    ]
    assert call.request.blocks[1].wire_type == "brand_new_item"


def test_every_rule_id_is_named():
    assert all(rule_id.count(".") >= 1 for rule_id in RULE_IDS)
    assert {
        "claude.billing-header",
        "claude.env-message",
        "codex.environment-context",
        "codex.agents-md",
        "kimi.system-reminder",
        "generic.tool-result",
        "generic.first-user-text-task",
    } <= RULE_IDS


def test_codex_subagent_header_and_parent_thread():
    body = {"model": "gpt-5", "input": "review the diff", "tools": [{"type": "function", "name": "shell"}]}
    headers = [
        ("originator", "codex_exec"),
        ("x-openai-subagent", "review"),
        ("x-codex-parent-thread-id", "parent-1"),
        (
            "x-codex-turn-metadata",
            json.dumps({"thread_id": "child-1", "parent_thread_id": "parent-1", "subagent_kind": "review"}),
        ),
    ]
    (call,) = parse_exchange(
        http_exchange(
            "/v1/responses", body, {"id": "r", "status": "completed", "output": []}, headers=headers
        )
    )
    assert call.purpose.purpose == "subagent" and call.purpose.rule_id == "codex.subagent-header"
    assert call.identity.parent_thread_id == "parent-1" and call.identity.thread_id == "child-1"
    assert call.identity.client == "codex"


def test_user_words_are_not_mistaken_for_injected_context():
    body = {
        "model": "m",
        "max_tokens": 8000,
        "messages": [
            {"role": "user", "content": "What's the current date, and which shell am I using?"},
            {"role": "assistant", "content": "Let me check."},
            {"role": "user", "content": "Then update the AGENTS.md instructions for the repo."},
        ],
    }
    (call,) = parse_exchange(http_exchange("/v1/messages", body, None, status=None))
    assert [b.source for b in call.request.blocks] == ["user_task", "assistant_output", "user_task"]


def test_generic_project_files_and_user_level_claude_md():
    body = {
        "model": "m",
        "max_tokens": 8000,
        "system": [
            {"type": "text", "text": "You are some agent."},
            {"type": "text", "text": "Instructions from: /srv/app/AGENTS.md\nUse tabs."},
            {
                "type": "text",
                "text": "Here is some useful information about the environment you are running in:\nWorking directory: /srv/app\nPlatform: linux\nToday's date: 2026-11-29",
            },
        ],
        "messages": [
            {
                "role": "user",
                "content": [
                    {
                        "type": "text",
                        "text": "<system-reminder>\n# claudeMd\nContents of /home/bob/.claude/CLAUDE.md (user's private global instructions for all projects):\n\nBe terse.\n</system-reminder>",
                    },
                    {"type": "text", "text": "go"},
                ],
            }
        ],
    }
    (call,) = parse_exchange(http_exchange("/v1/messages", body, None, status=None))
    blocks = {b.path: b for b in call.request.blocks}
    assert (blocks["system[1]"].source, blocks["system[1]"].rule_id, blocks["system[1]"].scope) == (
        "project_instructions",
        "generic.project-file",
        "repository",
    )
    assert (blocks["system[2]"].source, blocks["system[2]"].rule_id) == (
        "runtime_environment",
        "generic.environment",
    )
    user_md = blocks["messages[0].content[0]"]
    assert (user_md.source, user_md.authority, user_md.scope) == ("project_instructions", "user", "global")
    assert blocks["messages[0].content[1]"].source == "user_task"
