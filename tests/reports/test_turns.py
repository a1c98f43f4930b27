"""One definition of user turns, input totals and request numbers, read alike by every view and command.

The capture is imported from a HAR: a Claude-Code-like session whose user types "continue" four
times (a tool loop in turn 1, a 429 and its retry in turn 2, a start-up probe before anything was
typed), and a second, short session, so request numbers need a session selector.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ctxtap.analysis.db import connect, fetch_rows
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


def _sessions(cap: Path) -> dict[str, dict]:
    return {r["session_id"]: r for r in _rows(cap, "SELECT * FROM sessions")}


def _numbers(cap: Path) -> dict[str, int]:
    return {r["request_id"]: r["request_number"] for r in _rows(cap, "SELECT request_id, request_number FROM requests")}


def _diff(args: list[str], config: Path) -> dict:
    return json.loads(run_ctxtap(["diff", *args, "--json"], config).stdout)


def _replay_plan(cap: Path, config: Path, tmp: Path, *args: str):
    """`replay --send`'s plan (without --yes and a terminal it stops before sending anything)."""
    return run_ctxtap(["replay", str(cap), "--send", "--upstream", "http://127.0.0.1:9", "--out", str(tmp / "out"),
                       *args], config, check=False)


def test_every_view_and_command_gives_the_same_turns_inputs_and_request_numbers(capture, ctxtap_config, tmp_path):
    from ctxtap.reports.html.context import build_context
    from ctxtap.reports.live import queries
    from ctxtap.reports.live.sources import CaptureSource

    truth, numbers = _sessions(capture), _numbers(capture)
    a_id = f"claude-code:{SESSION_A}"
    # the views
    for p in _rows(capture, "SELECT * FROM process_efficiency"):
        assert (p["n_turns"], p["input_tokens"]) == (truth[p["session_id"]]["n_turns"],
                                                     truth[p["session_id"]]["input_tokens"])
    # stats: one input figure per session, the same in its process-efficiency line
    stats = run_ctxtap(["stats", str(capture)], ctxtap_config).stdout
    for sid, s in truth.items():
        lines = [line for line in stats.splitlines() if line.strip().startswith(sid)]
        assert len(lines) == 2, lines  # the sessions line and the process-efficiency line
        for line in lines:
            assert f"turns {s['n_turns']}," in line
            assert f"input {s['input_tokens']:,} incl. cache reads" in line
        assert f"{s['input_tokens_reported']:,} reported by the provider" in lines[0]
    # the report: its sessions' cards and every request's #N and turn
    ctx = build_context([capture])
    assert {v.session_id for v in ctx.sessions} == set(truth)
    for view in ctx.sessions:
        s = truth[view.session_id]
        assert (view.totals["n_turns"], view.totals["input_tokens"], view.totals["input_tokens_reported"]) == (
            s["n_turns"], s["input_tokens"], s["input_tokens_reported"])
        assert {r["request_id"]: r["num"] for r in view.requests} == {
            rid: n for rid, n in numbers.items() if rid in {r["request_id"] for r in view.requests}}
    # the live view: its sessions list, each session's timeline and a request's page
    src = CaptureSource(capture)
    listed = {r["session_id"]: r for r in queries.sessions_page(src, 0, 100)["rows"]}
    for sid, s in truth.items():
        assert (listed[sid]["n_turns"], listed[sid]["input_tokens_reported"]) == (s["n_turns"],
                                                                                  s["input_tokens_reported"])
        page = queries.requests_page(src, sid, 0, 100)["rows"]
        assert {r["request_id"]: r["num"] for r in page} == {r["request_id"]: numbers[r["request_id"]] for r in page}
    assert queries.request(src, "har-5-5")["num"] == numbers["har-5-5"] == 6
    # diff: a session's turns and inputs, and a request by its number
    d = _diff([f"{capture}#{a_id}", f"{capture}#{SESSION_B[:8]}"], ctxtap_config)
    metrics = {m["name"]: m for m in d["metrics"]}
    b_id = f"claude-code:{SESSION_B}"
    assert (metrics["user turns"]["a"], metrics["user turns"]["b"]) == (truth[a_id]["n_turns"], truth[b_id]["n_turns"])
    name = "input incl. cache reads (reported, else estimated)"
    assert (metrics[name]["a"], metrics[name]["b"]) == (truth[a_id]["input_tokens"], truth[b_id]["input_tokens"])
    assert (metrics["input tokens (reported)"]["a"]) == truth[a_id]["input_tokens_reported"]
    d = _diff([f"{capture}#aaaa1111#6", f"{capture}@har-6"], ctxtap_config)
    assert (d["a"]["request_id"], d["a"]["request_number"]) == ("har-5-5", 6)
    assert (d["b"]["request_id"], d["b"]["request_number"]) == ("har-6-6", numbers["har-6-6"])
    text = run_ctxtap(["diff", f"{capture}#aaaa1111#6", f"{capture}@har-6"], ctxtap_config).stdout
    assert "(A #6 har-5-5  vs  B #7 har-6-6)" in text
    # replay --send: the plan names each request by the same #N
    plan = _replay_plan(capture, ctxtap_config, tmp_path, "--session", "aaaa1111")
    assert "not sending without confirmation" in plan.stderr, plan.stderr
    named = [int(n) for n in re.findall(r"recorded request #(\d+) of session aaaa1111", plan.stderr)]
    answered = _rows(capture, "SELECT request_number FROM requests WHERE session_id = ? AND status = 200 "
                              "ORDER BY request_number", [a_id])
    assert named == [r["request_number"] for r in answered] == [1, 2, 3, 5, 6, 7]  # #4 was the 429


def test_diff_and_replay_take_a_request_number_or_an_id_prefix(capture, ctxtap_config, tmp_path):
    from ctxtap.analysis.compare.rundiff import capture_id_of
    from ctxtap.analysis.threads.requestref import RefError, resolve_request

    con, cid = connect([capture]), capture_id_of(capture)
    assert resolve_request(con, cid, "#3", f"claude-code:{SESSION_A}").request_id == "har-2-2"
    assert resolve_request(con, cid, "bbbb1111#2").request_id == "har-8-8"  # the id without its client prefix
    assert resolve_request(con, cid, "har-4").request_number == 5
    with pytest.raises(RefError, match="2 sessions"):
        resolve_request(con, cid, "3")  # which session's #3?
    with pytest.raises(RefError, match="starts 9 request ids: har-0-0 .*give more of the id"):
        resolve_request(con, cid, "har-")
    # diff
    d = _diff([f"{capture}#claude-code:{SESSION_A}#3", f"{capture}@har-2"], ctxtap_config)
    assert d["a"]["request_id"] == d["b"]["request_id"] == "har-2-2" and d["a"]["request_number"] == 3
    for run, words in (("#3", "say which as SESSION#3"), ("@har-", "starts 9 request ids"),
                       ("#aaaa1111#99", "has no request 99 (its requests are #1..#7)")):
        result = run_ctxtap(["diff", f"{capture}{run}", str(capture)], ctxtap_config, check=False)
        assert result.returncode == 1 and words in result.stderr and "Traceback" not in result.stderr, result.stderr
    # the live view's request diff reads what it is asked for alike
    from ctxtap.reports.live import queries
    from ctxtap.reports.live.sources import CaptureSource

    src = CaptureSource(capture)
    assert [queries.resolve_request(src, ref) for ref in ("aaaa1111#6", "har-5", "har-", "6")] == [
        "har-5-5", "har-5-5", None, None]  # an ambiguous start, a number without its session: none
    assert queries.resolve_request(src, "#6", f"claude-code:{SESSION_A}") == "har-5-5"
    # replay --send --request
    for ref in ("aaaa1111#6", "#6 --session aaaa1111", "har-5"):
        plan = _replay_plan(capture, ctxtap_config, tmp_path, "--request", *ref.split())
        assert "will send 1 requests of request #6 of session" in plan.stderr, plan.stderr
        assert "recorded request #6 of session aaaa1111" in plan.stderr
    refused = _replay_plan(capture, ctxtap_config, tmp_path, "--request", "har-")
    assert refused.returncode == 1 and "cannot re-send" in refused.stderr and "har-0-0 (#1 of" in refused.stderr
    refused = _replay_plan(capture, ctxtap_config, tmp_path, "--request", "aaaa1111#4")
    assert "was not answered (HTTP 429)" in refused.stderr
