"""Threads by structure: subagents only when a delegation call (or the client) says so, honest labels for
retries and flattened histories, side requests apart, and a task packet that is no new user turn."""

from __future__ import annotations

import json

from ctxtap.analysis.blocks.drafts import BlockDraft, finalize
from ctxtap.analysis.parsing.models import (
    Block,
    CallIdentity,
    ModelCall,
    ParsedRequest,
    ParsedResponse,
    PurposeInfo,
    ToolCall,
)
from ctxtap.analysis.threads.sessions import SessionAssigner

SYSTEM = "You are a coding agent. Use the tools to inspect the repository and answer precisely."
TASK = "Find every TODO comment under src/ and tell me which file has the most."


def _block(i: int, role: str, text: str, kind: str = "message_text", source: str = "user_task") -> Block:
    draft = BlockDraft(path=f"messages[{i}].content", kind=kind, role=role, wire={"role": role, "content": text},
                       text=text)
    attrs = {"source": source, "authority": "user", "scope": "turn", "lifetime": "turn", "content_type": "instruction"}
    return finalize(draft, i, attrs, "test")


def _call(n: int, texts: list[tuple[str, str, str]], tool_calls: list[ToolCall] | None = None,
          purpose: str = "main", thread_id: str | None = None, parent: str | None = None,
          n_tools: int = 3) -> ModelCall:
    blocks = [_block(0, "system", SYSTEM, "instruction_text", "platform_rules")]
    blocks += [_block(i + 1, role, text, kind, source) for i, (role, text, source) in enumerate(texts)
               for kind in ["tool_result" if source == "tool_result" else "message_text"]]
    return ModelCall(
        call_key=f"f{n}", flow_id=f"f{n}", provider="anthropic", api="messages", transport="sse",
        ts_start=1000.0 + n, ts_end=1000.5 + n,
        identity=CallIdentity(client="newcli", session_id="s1", thread_id=thread_id, parent_thread_id=parent),
        purpose=PurposeInfo(purpose=purpose, rule_id="test"),
        request=ParsedRequest(api="messages", endpoint="generate", blocks=blocks, n_tools=n_tools),
        response=ParsedResponse(tool_calls=tool_calls or []),
    )


def _place(assigner: SessionAssigner, call: ModelCall):
    return assigner.place(call, [b.content_hash for b in call.request.blocks])


def test_a_delegation_call_starts_a_subagent_linked_to_its_parent() -> None:
    packet = "Search src/ for TODO comments and report each file with its count of TODO lines."
    spawn = ToolCall(call_id="call_spawn", name="dispatch_helper",
                     arguments=json.dumps({"description": "count TODOs", "instructions": packet}))
    a = SessionAssigner()
    first = _place(a, _call(0, [("user", TASK, "user_task")], [spawn]))
    child = _place(a, _call(1, [("user", packet, "user_task")]))
    parent_again = _place(a, _call(2, [("user", TASK, "user_task"), ("user", "src/app.py: 3 TODOs", "tool_result")]))
    assert first.thread_kind == "main"
    assert child.thread_kind == "subagent" and child.thread_rule == "delegation-call"
    assert child.parent_thread_id == first.thread_id and child.parent_call_id == "call_spawn"
    assert parent_again.thread_id == first.thread_id
    assert child.turn_index == first.turn_index == parent_again.turn_index == 1  # the packet is no new turn


def test_a_new_thread_without_delegation_is_not_called_a_subagent() -> None:
    a = SessionAssigner()
    main = _place(a, _call(0, [("user", TASK, "user_task")], thread_id="t-main"))
    retry = _place(a, _call(1, [("user", TASK, "user_task")], thread_id="t-retry"))
    new_task = _place(a, _call(2, [("user", "Now rename the function main to run everywhere.", "user_task")],
                               thread_id="t-new"))
    assert main.thread_kind == "main"
    assert retry.thread_kind == "retry" and retry.thread_rule == "task-already-seen"
    assert new_task.thread_kind == "main" and new_task.thread_rule == "new-task"
    assert new_task.turn_index == 2 and retry.turn_index == 1


def test_a_flattened_history_is_labelled_as_such() -> None:
    result_a = "README.md\nconfig\ndata.csv\ndocs\npyproject.toml\nsrc — the first listing of the repository"
    result_b = "src/app.py:12: TODO handle empty files; src/app.py:40: TODO close the reader properly"
    a = SessionAssigner()
    main = _place(a, _call(0, [("user", TASK, "user_task"), ("user", result_a, "tool_result"),
                               ("user", result_b, "tool_result")]))
    flat = _place(a, _call(1, [("user", f"Earlier you saw:\n{result_a}\nand then\n{result_b}\n{TASK}", "user_task")],
                           thread_id="flat"))
    assert flat.thread_kind == "flattened" and flat.parent_thread_id == main.thread_id


def test_the_client_saying_subagent_is_enough() -> None:
    a = SessionAssigner()
    main = _place(a, _call(0, [("user", TASK, "user_task")], thread_id="root"))
    sub = _place(a, _call(1, [("user", "Look at docs/ only.", "user_task")], thread_id="kid", parent="root"))
    assert sub.thread_kind == "subagent" and sub.parent_thread_id == main.thread_id


def test_a_title_request_first_does_not_become_the_main_thread() -> None:
    a = SessionAssigner()
    title = _place(a, _call(0, [("user", TASK, "user_task")], purpose="title", n_tools=0))
    loop = _place(a, _call(1, [("user", TASK, "user_task")]))
    assert title.thread_kind == "side"
    assert loop.thread_kind == "main"
