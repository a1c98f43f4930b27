"""One definition of user turns, input totals and request numbers, read alike by every view and command.

The capture is imported from a HAR: a Claude-Code-like session whose user types "continue" four
times (a tool loop in turn 1, a 429 and its retry in turn 2, a start-up probe before anything was
typed), and a second, short session, so request numbers need a session selector.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analysis.db import connect, fetch_rows
from tests.proxyharness import run_ctxtap
from tests.scenarios import Recorded, _entry, write_har

URL = "https://api.anthropic.com/v1/messages"
SESSION_A = "aaaa1111-2222-4333-8444-555566667777"
SESSION_B = "bbbb1111-2222-4333-8444-555566667777"
SYSTEM = [{"type": "text", "text": "You are a coding agent working in a repository. " * 40}]
TOOLS = [{"name": "Bash", "description": "Run a shell command. " * 20,
          "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}]
RESPONSE_HEADERS = [("content-type", "application/json")]


def _headers(session: str) -> list[tuple[str, str]]:
    return [("content-type", "application/json"), ("x-claude-code-session-id", session),
            ("user-agent", "claude-cli/9.9.9 (external, cli)"), ("anthropic-version", "2023-06-01")]


def _reply(content: list[dict], stop: str, n_input: int) -> dict:
    usage = {"input_tokens": 40, "cache_read_input_tokens": n_input - 140, "cache_creation_input_tokens": 100,
             "output_tokens": 12}
    return {"id": f"msg_{n_input}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": content, "stop_reason": stop, "usage": usage}


def continue_four_times() -> Recorded:
    """The user types "continue" four times; the model answers with a tool call once, fails once with a 429."""
    rec = Recorded()
    now = [1_800_000_000.0]

    def send(session: str, body: dict, status: int, reply: dict) -> None:
        rec.entries.append(_entry(URL, _headers(session), json.dumps(body).encode(), status, RESPONSE_HEADERS,
                                  json.dumps(reply).encode(), now[0], 0.5))
        now[0] += 2.0

    def main(session: str, messages: list[dict]) -> dict:
        return {"model": "claude-sonnet-4-5", "max_tokens": 4000, "tools": TOOLS, "system": SYSTEM,
                "messages": json.loads(json.dumps(messages))}

    # a start-up probe, before the user typed anything
    send(SESSION_A, {"model": "claude-haiku-4-5", "max_tokens": 1, "messages": [{"role": "user", "content": "quota"}]},
         200, _reply([{"type": "text", "text": "ok"}], "max_tokens", 1000))
    messages: list[dict] = [{"role": "user", "content": "continue"}]
    tool_use = {"type": "tool_use", "id": "toolu_01", "name": "Bash", "input": {"command": "ls"}}
    send(SESSION_A, main(SESSION_A, messages), 200, _reply([tool_use], "tool_use", 2000))
    messages += [{"role": "assistant", "content": [tool_use]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01",
                                               "content": "README.md\nsrc"}]}]
    for turn in range(1, 5):
        if turn > 1:
            messages.append({"role": "user", "content": "continue"})
        if turn == 2:  # rate limited, then the same request again: a retry, not a turn
            send(SESSION_A, main(SESSION_A, messages), 429,
                 {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}})
        answer = f"Done with step {turn}."
        send(SESSION_A, main(SESSION_A, messages), 200,
             _reply([{"type": "text", "text": answer}], "end_turn", 3000 + 1000 * turn))
        messages.append({"role": "assistant", "content": [{"type": "text", "text": answer}]})
    other: list[dict] = [{"role": "user", "content": "Summarise the README."}]
    send(SESSION_B, main(SESSION_B, other), 200, _reply([{"type": "text", "text": "It is short."}], "end_turn", 2500))
    other += [{"role": "assistant", "content": "It is short."}, {"role": "user", "content": "Thanks."}]
    send(SESSION_B, main(SESSION_B, other), 200, _reply([{"type": "text", "text": "You are welcome."}], "end_turn",
                                                         2600))
    return rec


@pytest.fixture(scope="module")
def capture(tmp_path_factory, ctxtap_config) -> Path:
    tmp = tmp_path_factory.mktemp("turns")
    har = write_har(continue_four_times(), tmp / "continue.har")
    cap = tmp / "cap"
    run_ctxtap(["import", str(har), "--out", str(cap)], ctxtap_config)
    run_ctxtap(["analyze", str(cap)], ctxtap_config)
    return cap


def _rows(cap: Path, sql: str, params: list | None = None) -> list[dict]:
    return fetch_rows(connect([cap]), sql, params or [])


def test_continue_typed_four_times_is_four_turns(capture):
    reqs = _rows(capture, "SELECT * FROM requests WHERE session_id = ? ORDER BY request_number",
                 [f"claude-code:{SESSION_A}"])
    assert [(r["thread_kind"], r["status"], r["turn_index"]) for r in reqs] == [
        ("side", 200, 0),  # the probe came before anything was typed
        ("main", 200, 1), ("main", 200, 1),  # a tool call, then its result: one turn
        ("main", 429, 2), ("main", 200, 2),  # the retry resends the same conversation
        ("main", 200, 3), ("main", 200, 4)]
    assert [r["request_number"] for r in reqs] == list(range(1, 8))
    session = _rows(capture, "SELECT * FROM sessions WHERE session_id = ?", [f"claude-code:{SESSION_A}"])[0]
    efficiency = _rows(capture, "SELECT * FROM process_efficiency WHERE session_id = ?",
                       [f"claude-code:{SESSION_A}"])[0]
    assert session["n_turns"] == efficiency["n_turns"] == 4
    assert session["input_tokens"] == efficiency["input_tokens"]
    other = _rows(capture, "SELECT n_turns FROM sessions WHERE session_id = ?", [f"claude-code:{SESSION_B}"])[0]
    assert other["n_turns"] == 2
