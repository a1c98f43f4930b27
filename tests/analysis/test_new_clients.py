"""Clients ctxtap has no rule for, end to end: segments, side requests and threads by structure alone."""

from __future__ import annotations

import json

from ctxtap.analysis.clients import registry
from ctxtap.analysis.parsing.parse import parse_exchanges as parse_with_every_rule
from ctxtap.analysis.threads.sessions import SessionAssigner
from tests.corpus import http_exchange


def parse_exchanges(exchanges):
    """Parsed with every client's own rules switched off: only the client-independent ones read them."""
    off = [c.name for c in registry.clients() if c.name != "generic"]
    return parse_with_every_rule(exchanges, disabled_clients=off)

RULES = ("You are Acme Agent, a careful coding assistant.\n\n# Working style\n\nRead before you edit. Keep changes "
         "small and explain each one. Never run destructive commands without asking.\n\n")
ENV = ("<env>\nWorking directory: /home/dev/shop\nIs directory a git repo: yes\nPlatform: linux\n"
       "OS Version: Linux 6.8.0\nToday's date: 2026-11-30\n</env>\n\n")
MORE_RULES = "# Tool use\n\nPrefer the dedicated tools. Run the tests after each change and report the result.\n"
TOOLS = [{"name": "bash", "description": "Run a shell command", "input_schema": {"type": "object"}},
         {"name": "read_file", "description": "Read a file", "input_schema": {"type": "object"}}]


def _anthropic_reply(text: str, tool: dict | None = None) -> dict:
    content = [{"type": "text", "text": text}]
    if tool:
        content.append({"type": "tool_use", "id": "toolu_1", "name": tool["name"], "input": tool["input"]})
    return {"id": "msg_1", "type": "message", "content": content, "stop_reason": "tool_use" if tool else "end_turn",
            "usage": {"input_tokens": 900, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0,
                      "output_tokens": 20}}


def test_an_anthropic_agent_with_its_environment_inside_a_long_system_prompt() -> None:
    task = "Find the failing test in tests/ and fix it."
    first = {"model": "claude-sonnet-4-5", "max_tokens": 8192, "tools": TOOLS,
             "system": [{"type": "text", "text": RULES + ENV + MORE_RULES}],
             "messages": [{"role": "user", "content": task}]}
    second = {**first, "messages": [
        {"role": "user", "content": task},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "bash",
                                           "input": {"command": "pytest -q"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "1 failed"}]},
    ]}
    headers = [("user-agent", "acme-agent/0.1 (node)")]
    exchanges = [
        http_exchange("/v1/messages", first, _anthropic_reply("Running the tests.", {"name": "bash", "input": {
            "command": "pytest -q"}}), headers=headers, flow_id="f1", ts=1000.0),
        http_exchange("/v1/messages", second, _anthropic_reply("Fixed."), headers=headers, flow_id="f2", ts=1010.0),
    ]
    calls = list(parse_exchanges(exchanges))
    system = next(b for b in calls[1].request.blocks if b.path == "system[0]")
    assert system.source == "mixed"
    text = system.text.encode()
    reading = [(g.source, text[g.start:g.end].decode().strip()[:20]) for g in system.segments]
    assert [s for s, _ in reading] == ["platform_rules", "runtime_environment", "platform_rules"]
    assert reading[1][1].startswith("<env>")
    task_blocks = [b for b in calls[1].request.blocks if b.source == "user_task"]
    assert [b.text for b in task_blocks] == [task]
    assigner = SessionAssigner()
    placements = [assigner.place(c, [b.content_hash for b in c.request.blocks if b.kind != "tool_definition"])
                  for c in calls]
    assert [p.thread_kind for p in placements] == ["main", "main"]
    assert placements[0].thread_id == placements[1].thread_id


def _chat_reply(text: str, model: str, tool_call: dict | None = None) -> dict:
    message = {"role": "assistant", "content": text}
    if tool_call:
        message["tool_calls"] = [tool_call]
    return {"id": "chatcmpl-1", "object": "chat.completion", "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if tool_call else "stop"}],
            "usage": {"prompt_tokens": 300, "completion_tokens": 10, "total_tokens": 310}}


def test_a_chat_client_with_a_title_call_on_another_model_first() -> None:
    task = "Add a --verbose flag to the CLI and document it in README.md."
    tools = [{"type": "function", "function": {"name": "shell", "parameters": {"type": "object"}}}]
    title = {"model": "small-fast-1", "max_tokens": 60, "messages": [
        {"role": "system", "content": "Name this conversation in at most six words, as a headline. "
                                      "Reply with the headline only."},
        {"role": "user", "content": task}]}
    loop_1 = {"model": "big-coder-2", "tools": tools, "messages": [
        {"role": "system", "content": "You are Foo CLI, a coding agent. Use the shell tool to inspect and edit."},
        {"role": "user", "content": task}]}
    call_1 = {"id": "call_1", "type": "function", "function": {"name": "shell", "arguments": json.dumps(
        {"command": "grep -n argparse -r src"})}}
    loop_2 = {**loop_1, "messages": [*loop_1["messages"],
                                     {"role": "assistant", "content": None, "tool_calls": [call_1]},
                                     {"role": "tool", "tool_call_id": "call_1", "content": "src/cli.py:3:import argparse"}]}
    headers = [("user-agent", "foo-cli/2.0")]
    exchanges = [
        http_exchange("/v1/chat/completions", title, _chat_reply("Add verbose flag", "small-fast-1"),
                      headers=headers, flow_id="t", ts=1000.0),
        http_exchange("/v1/chat/completions", loop_1, _chat_reply("", "big-coder-2", call_1),
                      headers=headers, flow_id="m1", ts=1000.5),
        http_exchange("/v1/chat/completions", loop_2, _chat_reply("Done.", "big-coder-2"),
                      headers=headers, flow_id="m2", ts=1005.0),
    ]
    calls = list(parse_exchanges(exchanges))
    assert calls[0].purpose.purpose == "title" and calls[0].purpose.rule_id == "generic.side-shape"
    assert [c.purpose.purpose for c in calls[1:]] == ["main", "main"]
    assigner = SessionAssigner()
    placements = [assigner.place(c, [b.content_hash for b in c.request.blocks if b.kind != "tool_definition"])
                  for c in calls]
    assert [p.thread_kind for p in placements] == ["side", "main", "main"]
    assert placements[1].thread_id == placements[2].thread_id != placements[0].thread_id


def test_a_tag_wrapped_first_user_part_is_not_the_task() -> None:
    body = {"model": "m", "max_tokens": 4096, "tools": TOOLS, "messages": [{"role": "user", "content": [
        {"type": "text", "text": "<workspace_hints>\nprefer ripgrep; keep diffs small\n</workspace_hints>"},
        {"type": "text", "text": "Rename parse_args to read_args everywhere."}]}]}
    (call,) = parse_exchanges([http_exchange("/v1/messages", body, _anthropic_reply("ok"),
                                             headers=[("user-agent", "zeta/1.0")])])
    first, task = [b for b in call.request.blocks if b.kind == "message_text"]
    assert (first.source, first.rule_id) == ("unknown", "generic.user-context-part")
    assert (task.source, task.text) == ("user_task", "Rename parse_args to read_args everywhere.")
