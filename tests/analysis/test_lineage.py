"""Context lineage and delegation: `context_generations` (each compaction, trimming or rewind of a thread's
history) and `delegations` (each subagent against its parent), and the OTel export's nested agent span.

The compaction fixture is the synthetic Claude-Code-shaped session of tests/synthetic.py, which
compacts every N requests; the trimming, rewind and delegation fixtures are small Messages sessions built in
process (HAR entries through the capture writer, then the analysis), so the file runs in seconds. The real
clients' recordings (../shared, skipped when absent) must show neither.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxtap.analysis.build import ensure_analysis
from ctxtap.analysis.db import connect, fetch_rows
from ctxtap.capture.finalize import finalize
from ctxtap.capture.manifest import Manifest
from ctxtap.capture.paths import redaction_key
from ctxtap.capture.writer import CaptureWriter
from ctxtap.ingest.importer import har_events
from ctxtap.reports.otel.spans import build_spans
from tests import corpus
from tests.scenarios import _entry
from tests.synthetic import synthetic_capture

SESSION = "1a2b3c4d-0000-4000-8000-00000000beef"
START = 1_800_000_000.0
URL = "https://api.anthropic.com/v1/messages?beta=true"
RULES = "You are a careful coding agent. Follow the repository conventions and explain each step. " * 20
TASK = "Find every TODO comment in this repository and fix the three oldest ones, then run the tests."
PACKET = "Search src/ for TODO comments and report every file with its count of TODO lines."
OTHER_PACKET = "Read every module under lib/ and list the public functions each one defines, one line each."


def _tool(name: str) -> dict:
    return {"name": name, "description": f"The {name} tool. " * 10,
            "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}


TOOLS = [_tool("Bash"), _tool("Read"), _tool("Task")]


def _body(messages: list[dict], tools: list[dict] = TOOLS, system: str = RULES) -> bytes:
    return json.dumps({"model": "claude-sonnet-4-5", "max_tokens": 4096, "stream": False, "tools": tools,
                       "system": [{"type": "text", "text": system}], "messages": messages}).encode()


def _answer(msg_id: str, content: list[dict], input_tokens: int = 500) -> bytes:
    calls = any(c["type"] == "tool_use" for c in content)
    return json.dumps({"id": msg_id, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                       "content": content, "stop_reason": "tool_use" if calls else "end_turn",
                       "usage": {"input_tokens": input_tokens, "output_tokens": 20}}).encode()


def _entry_at(body: bytes, answer: bytes, start: float, duration: float = 0.8) -> dict:
    headers = [("content-type", "application/json"), ("user-agent", "claude-cli/9.9.9 (external, cli)"),
               ("x-claude-code-session-id", SESSION), ("anthropic-version", "2023-06-01")]
    return _entry(URL, headers, body, 200, [("content-type", "application/json")], answer, start, duration)


def _analyse(out: Path, entries: list[dict]):
    writer = CaptureWriter(out, redaction_key(), Manifest(capture_id=out.name, source="import"))
    for seq, entry in enumerate(entries):
        for event in har_events(entry, seq, f"har-{seq}", {}, False):
            writer.submit(event)
    writer.flush()
    writer.close()
    finalize(out)
    ensure_analysis(out)
    return connect([out])


def _step(k: int) -> tuple[dict, dict]:
    """One tool step of the main loop: the assistant's call and the user's result."""
    call = {"type": "tool_use", "id": f"toolu_{k:02d}", "name": "Bash", "input": {"command": f"grep -n TODO src/m{k}.py"}}
    result = {"type": "tool_result", "tool_use_id": f"toolu_{k:02d}",
              "content": f"src/m{k}.py:{k}: TODO: step {k} " + "output line " * (20 + k)}
    return ({"role": "assistant", "content": [{"type": "text", "text": f"Looking at module {k}."}, call]},
            {"role": "user", "content": [result]})


def _loop(n: int) -> list[list[dict]]:
    """The message lists of a main loop of n requests, each extending the last by one tool step."""
    history = [{"role": "user", "content": TASK}]
    out = []
    for k in range(n):
        out.append(list(history))
        history.extend(_step(k))
    return out


def _session(histories: list[list[dict]], gap: float = 2.0) -> list[dict]:
    entries = []
    for i, messages in enumerate(histories):
        nxt = histories[i + 1] if i + 1 < len(histories) else None
        # the response is the next request's assistant message when there is one (a consistent loop)
        content = ([b for b in nxt[len(messages)]["content"]] if nxt and len(nxt) > len(messages)
                   and nxt[len(messages)]["role"] == "assistant" else [{"type": "text", "text": "Done."}])
        entries.append(_entry_at(_body(messages), _answer(f"msg_{i:02d}", content), START + i * gap))
    return entries


# --- compaction: the synthetic session ----------------------------------------------------------------


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory, ctxtap_config):
    cap = synthetic_capture(tmp_path_factory.mktemp("lineage") / "s30", 30, compact_every=10)
    con = connect([cap])
    yield cap, con
    con.close()


def test_each_compaction_of_the_synthetic_session_is_a_generation_with_its_replaced_range(synthetic) -> None:
    _cap, synthetic = synthetic
    rows = fetch_rows(synthetic, "SELECT * FROM context_generations ORDER BY request_number")
    # compactions before main requests 10 and 20; the timestamp added to the system prompt at request 10
    # and the TTL gap at 15 change no history, so they start no generation
    assert [(r["kind"], r["kind_rule"], r["generation"]) for r in rows] == [
        ("compaction", "summary-block", 2), ("compaction", "summary-block", 3)]
    requests = {r["request_id"]: r for r in fetch_rows(synthetic, "SELECT * FROM requests")}
    n_tools_and_system = 12 + 3  # the synthetic client's tool list and system prompt are kept
    first, second = rows
    for row in rows:
        prev, cur = requests[row["previous_request_id"]], requests[row["request_id"]]
        assert prev["thread_id"] == cur["thread_id"] == row["thread_id"] and prev["purpose"] == "main"
        assert row["placed_in_thread_id"] is None
        assert row["previous_request_number"] == prev["request_number"] < row["request_number"]
        # the whole message history of the previous request was replaced; nothing of it kept
        assert row["replaced_from_position"] == n_tools_and_system
        assert row["replaced_to_position"] == prev["n_blocks"] - 1
        assert row["replaced_blocks"] == prev["n_blocks"] - n_tools_and_system
        assert row["dropped_where"] == "all" and row["kept_blocks"] == 0
        assert row["tokens_basis"] == "reported"
        assert row["tokens_before"] == prev["input_tokens_reported"]
        assert row["tokens_after"] == cur["input_tokens_reported"]
        assert row["ratio"] == pytest.approx(row["tokens_after"] / row["tokens_before"]) and row["ratio"] < 1
        assert row["summary_blocks"] == 1 and 0 < row["summary_tokens"] < row["replaced_tokens"]
        assert row["summary_ratio"] == pytest.approx(row["summary_tokens"] / row["replaced_tokens"])
        # the summary request: the compaction-purpose request between the two, its answer carried
        comp = requests[row["compaction_request_id"]]
        assert comp["purpose"] == "compaction" == row["compaction_purpose"]
        assert row["compaction_purpose_rule"] == comp["purpose_rule"] and row["compaction_match"] == "answer-carried"
        assert prev["request_number"] < row["compaction_request_number"] == comp["request_number"] < cur["request_number"]
    # the first compaction replaced history from the session's first request on; the second, what entered
    # since the first compaction (its first request is the one the first row starts)
    assert (first["replaced_first_request_number"], first["replaced_last_request_number"]) == (
        1, first["previous_request_number"])
    assert (second["replaced_first_request_number"], second["replaced_last_request_number"]) == (
        first["request_number"], second["previous_request_number"])
    # the big tool result at request 7 was in the first generation: that compaction shrank the input most
    assert first["ratio"] < 0.1 < second["ratio"]


# --- trimming, rewind and an unread compaction answer ----------------------------------------------------


def test_history_dropped_without_a_summary_is_trimming_and_the_newest_alone_a_rewind(tmp_path, ctxtap_config) -> None:
    loop = _loop(6)  # requests 1..6; request k carries the task and k-1 tool steps
    full = loop[-1]
    # request 7 keeps the task, drops the two oldest steps (a sliding window) and adds a step
    trimmed = [full[0], *full[5:], *_step(6)]
    # request 8 rewinds: it drops the step request 7 added and asks again
    rewound = [*trimmed[:-2], {"role": "assistant", "content": "Let me try another way."},
               {"role": "user", "content": "Try the lib/ folder instead."}]
    con = _analyse(tmp_path / "trim", _session([*loop, trimmed, rewound]))
    rows = fetch_rows(con, "SELECT * FROM context_generations ORDER BY request_number")
    assert [(r["kind"], r["kind_rule"], r["dropped_where"]) for r in rows] == [
        ("trimming", "dropped-without-summary", "oldest"), ("rewind", "dropped-newest-only", "newest")]
    trim, rewind = rows
    blocks = fetch_rows(con, "SELECT b.position, b.path FROM blocks b JOIN requests r USING (capture_id, request_id) "
                             "WHERE r.request_number = 6 ORDER BY b.position")
    path_at = {b["position"]: b["path"] for b in blocks}
    # the oldest two steps (messages 1..4: an answer with its call, a result, twice) of request 6 were replaced
    assert (trim["request_number"], trim["previous_request_number"]) == (7, 6)
    assert path_at[trim["replaced_from_position"]] == "messages[1].content[0]"
    assert path_at[trim["replaced_to_position"]] == "messages[4].content[0]"
    assert trim["replaced_blocks"] == 6  # two answers with a text and a call each, two results
    assert (trim["replaced_first_request_number"], trim["replaced_last_request_number"]) == (2, 3)
    assert trim["kept_blocks"] > 0 and trim["summary_blocks"] == 0 and trim["summary_ratio"] is None
    assert trim["compaction_request_id"] is None and trim["compaction_match"] is None
    assert trim["generation"] == 2 and rewind["generation"] == 3
    # the rewind dropped the step request 7 added (its call and result), nothing older
    assert (rewind["replaced_first_request_number"], rewind["replaced_last_request_number"]) == (7, 7)
    assert rewind["replaced_blocks"] == 3


def test_a_window_that_keeps_too_little_to_stay_in_its_thread_is_still_that_thread_s_trimming(
        tmp_path, ctxtap_config) -> None:
    loop = _loop(8)
    full = loop[-1]  # the task and seven steps
    # request 9 keeps the task and the two newest steps only: too little of the thread to join it
    window = [full[0], *full[-4:], *_step(8)]
    # request 10 sends the task again, alone: a retry, no generation of anything
    con = _analyse(tmp_path / "window", _session([*loop, window, [full[0]]]))
    threads = {r["request_number"]: r for r in fetch_rows(con, "SELECT request_number, thread_id, thread_kind, "
                                                                "thread_rule FROM requests")}
    assert threads[9]["thread_id"] != threads[8]["thread_id"] and threads[9]["thread_kind"] == "retry"
    (row,) = fetch_rows(con, "SELECT * FROM context_generations")
    assert (row["request_number"], row["previous_request_number"], row["kind"], row["dropped_where"]) == (
        9, 8, "trimming", "oldest")
    assert row["thread_id"] == threads[8]["thread_id"] and row["placed_in_thread_id"] == threads[9]["thread_id"]
    assert row["replaced_blocks"] == 15 and (row["replaced_first_request_number"],
                                            row["replaced_last_request_number"]) == (2, 6)
    assert row["kept_blocks"] == 7 and row["generation"] == 2


def test_cleared_tool_results_are_trimming_and_an_edit_in_place_is_not(tmp_path, ctxtap_config) -> None:
    loop = _loop(6)
    full = loop[-1]

    def cleared(message: dict) -> dict:
        return {"role": "user", "content": [{**message["content"][0], "content": "[Old tool result content cleared]"}]}

    # request 7 clears the results of the two oldest steps in place (context editing) and adds a step
    seventh = [full[0], full[1], cleared(full[2]), full[3], cleared(full[4]), *full[5:], *_step(6)]
    # request 8 only changes a date in the task, in place, and adds a step: an edit, no new generation
    eighth = [{"role": "user", "content": TASK + " Today is 2026-07-28."}, *seventh[1:], *_step(7)]
    seventh[0] = {"role": "user", "content": TASK + " Today is 2026-07-27."}
    con = _analyse(tmp_path / "cleared", _session([*loop, seventh, eighth]))
    rows = fetch_rows(con, "SELECT * FROM context_generations ORDER BY request_number")
    assert [(r["request_number"], r["kind"], r["dropped_where"]) for r in rows] == [(7, "trimming", "scattered")]
    (row,) = rows
    assert row["replaced_blocks"] == 2 and row["kept_blocks"] > 10
    assert (row["replaced_first_request_number"], row["replaced_last_request_number"]) == (2, 3)
    assert row["ratio"] is not None and row["summary_blocks"] == 0


def test_a_compaction_request_whose_answer_is_not_found_leaves_the_kind_unknown(tmp_path, ctxtap_config) -> None:
    loop = _loop(6)
    full = loop[-1]
    entries = _session(loop)
    compact_body = _body([*full, {"role": "user", "content": "Your task is to create a detailed summary of the "
                                  "conversation so far. Respond with TEXT ONLY. Do NOT call any tools."}], tools=[])
    entries.append(_entry_at(compact_body, _answer("msg_compact", [{"type": "text", "text": "Summary: steps 0 to 4 "
                                                                    "grepped the modules for TODO comments."}]),
                             START + 20))
    # the next request drops the oldest steps without carrying the summary anywhere
    entries.append(_entry_at(_body([full[0], *full[5:]]), _answer("msg_after", [{"type": "text", "text": "Done."}]),
                             START + 30))
    con = _analyse(tmp_path / "unread", entries)
    (row,) = fetch_rows(con, "SELECT * FROM context_generations")
    comp = fetch_rows(con, "SELECT request_id, request_number FROM requests WHERE purpose = 'compaction'")
    assert (row["kind"], row["kind_rule"], row["compaction_match"]) == ("unknown", "compaction-answer-not-found",
                                                                          "between")
    assert row["compaction_request_id"] == comp[0]["request_id"]


def _codex_entry(path: str, body: dict, output: list[dict], start: float, kind: str = "turn") -> dict:
    headers = [("content-type", "application/json"), ("user-agent", "codex_exec/0.171.0 (Linux; x86_64)"),
               ("originator", "codex_exec"), ("session-id", SESSION), ("thread-id", SESSION)]
    obj = "response.compaction" if path.endswith("/compact") else "response"
    answer = {"id": f"resp_{int(start)}", "object": obj, "status": "completed", "model": "gpt-5.5", "output": output,
              "usage": {"input_tokens": 800, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 40,
                        "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 840}}
    return _entry(f"https://api.openai.com{path}", headers, json.dumps(body).encode(), 200,
                  [("content-type", "application/json")], json.dumps(answer).encode(), start, 0.8)


def test_a_responses_compaction_item_replacing_the_history_is_a_compaction(tmp_path, ctxtap_config) -> None:
    developer = {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": RULES}]}
    task = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": TASK}]}
    tools = [{"type": "function", "name": "shell", "description": "Run a shell command. " * 10,
              "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}}]
    history = [developer, task]
    entries = []
    for k in range(4):
        call = {"type": "function_call", "call_id": f"call_{k}", "name": "shell",
                "arguments": json.dumps({"cmd": f"grep -n TODO src/m{k}.py"})}
        body = {"model": "gpt-5.5", "input": list(history), "tools": tools, "stream": False,
                "prompt_cache_key": SESSION}
        entries.append(_codex_entry("/v1/responses", body, [call], START + 2 * k))
        history += [call, {"type": "function_call_output", "call_id": f"call_{k}",
                           "output": f"src/m{k}.py:{k}: TODO " + "line " * 40}]
    compacted = [task, {"type": "compaction", "encrypted_content": "gAAAA" + "x" * 400}]
    entries.append(_codex_entry("/v1/responses/compact", {"model": "gpt-5.5", "input": history, "instructions": ""},
                                compacted, START + 10))
    after = [developer, *compacted, {"type": "message", "role": "user",
                                     "content": [{"type": "input_text", "text": "Now run the tests."}]}]
    entries.append(_codex_entry("/v1/responses", {"model": "gpt-5.5", "input": after, "tools": tools,
                                                  "stream": False, "prompt_cache_key": SESSION},
                                [{"type": "message", "role": "assistant",
                                  "content": [{"type": "output_text", "text": "Done."}]}], START + 12))
    con = _analyse(tmp_path / "codex", entries)
    (row,) = fetch_rows(con, "SELECT * FROM context_generations")
    comp = fetch_rows(con, "SELECT request_id, request_number, purpose, endpoint FROM requests "
                           "WHERE endpoint = 'compact'")
    assert (row["kind"], row["kind_rule"]) == ("compaction", "summary-block")
    assert (row["request_number"], row["previous_request_number"]) == (6, 4)
    # the three calls and outputs request 4 carried were replaced; the task the compaction kept stays
    assert row["replaced_blocks"] == 6 and row["kept_blocks"] == 1 and row["dropped_where"] == "newest"
    assert (row["replaced_first_request_number"], row["replaced_last_request_number"]) == (2, 4)
    assert row["summary_blocks"] == 1
    # its answer is encrypted: the compaction request is named for running between the two
    assert row["compaction_request_id"] == comp[0]["request_id"] and row["compaction_match"] == "between"


# --- delegation: a parent's Task calls and their children ------------------------------------------------


def _delegation_entries() -> list[dict]:
    spawn = {"type": "tool_use", "id": "toolu_spawn", "name": "Task",
             "input": {"description": "count TODOs", "prompt": PACKET}}
    spawn2 = {"type": "tool_use", "id": "toolu_spawn2", "name": "Task",
              "input": {"description": "list functions", "prompt": OTHER_PACKET}}
    history = [{"role": "user", "content": TASK}]
    for k in range(3):
        history.extend(_step(k))
    after = [*history, {"role": "assistant", "content": [spawn, spawn2]},
             {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_spawn", "content": "3 files"},
                                          {"type": "tool_result", "tool_use_id": "toolu_spawn2", "content": "f, g"}]}]
    return [
        _entry_at(_body(history), _answer("msg_parent_1", [spawn, spawn2], 1200), START),
        # a fresh child: the packet alone, Bash and Read only (no Task: it cannot delegate again)
        _entry_at(_body([{"role": "user", "content": PACKET}], tools=TOOLS[:2]),
                  _answer("msg_child_1", [{"type": "text", "text": "3 files."}], 300), START + 1.5),
        # a child that carries the parent's task before its packet, and is offered Glob the parent never had
        _entry_at(_body([{"role": "user", "content": TASK}, {"role": "assistant", "content": "Delegated."},
                         {"role": "user", "content": OTHER_PACKET}], tools=[TOOLS[0], _tool("Glob")]),
                  _answer("msg_child_2", [{"type": "text", "text": "f, g"}], 400), START + 1.6),
        _entry_at(_body(after), _answer("msg_parent_2", [{"type": "text", "text": "Done."}], 1300), START + 4),
    ]


@pytest.fixture(scope="module")
def delegation(tmp_path_factory, ctxtap_config):
    cap = tmp_path_factory.mktemp("delegation") / "cap"
    con = _analyse(cap, _delegation_entries())
    yield cap, con
    con.close()


def test_each_subagent_is_a_delegation_with_its_packet_context_and_tool_subset(delegation) -> None:
    _cap, con = delegation
    rows = fetch_rows(con, "SELECT * FROM delegations ORDER BY first_request_number")
    assert len(rows) == 2
    fresh, forked = rows
    parent = fetch_rows(con, "SELECT * FROM requests WHERE request_number = 1")[0]
    for row in rows:
        assert row["thread_rule"] == "delegation-call" and row["parent_match"] == "delegation-call"
        assert row["parent_thread_id"] == parent["thread_id"] and row["parent_request_id"] == parent["request_id"]
        assert row["parent_request_number"] == 1 and row["parent_tool_name"] == "Task"
        assert row["child_requests"] == 1 and row["parent_tools"] == 3
    assert (fresh["parent_call_id"], forked["parent_call_id"]) == ("toolu_spawn", "toolu_spawn2")
    # the packet: the child's first user message, as the block store holds it
    assert fresh["packet_blocks"] == 1 and fresh["packet_bytes"] == len(PACKET.encode())
    assert fresh["packet_tokens"] > 0
    assert fresh["call_arguments_bytes"] == len(json.dumps(
        {"description": "count TODOs", "prompt": PACKET}, separators=(",", ":")))
    # fresh: only the tool list and system prompt in common, none of the parent's conversation
    assert fresh["context"] == "fresh" and fresh["inherited_blocks"] == 0 and fresh["inherited_tokens"] == 0
    assert fresh["shared_prefix_blocks"] == 2  # Bash and Read; Task is where the child's system prompt is
    assert fresh["tools_subset"] is True and fresh["child_tools"] == 2
    assert fresh["tools_removed"] == "Task" and fresh["tools_added"] is None
    # inherited: it carries the parent's task (the first user message is then the task itself)
    assert forked["context"] == "inherited" and forked["inherited_blocks"] == 1
    assert 0 < forked["inherited_tokens"] < forked["parent_history_tokens"]
    assert forked["packet_bytes"] == len(TASK.encode())
    assert forked["tools_subset"] is False and forked["tools_added"] == "Glob"
    assert forked["tools_removed"] == "Read, Task"
    assert forked["child_input_tokens"] == 400 and forked["child_output_tokens"] == 20
    # the children's history is their own: neither compaction nor trimming anywhere
    assert fetch_rows(con, "SELECT * FROM context_generations") == []


def test_the_child_agent_span_hangs_under_the_parent_tool_span(delegation) -> None:
    _cap, con = delegation
    spans = build_spans(con)
    tools = {s.attributes.get("gen_ai.tool.call.id"): s for s in spans
             if s.attributes["gen_ai.operation.name"] == "execute_tool"}
    agents = [s for s in spans if s.attributes["gen_ai.operation.name"] == "invoke_agent"]
    children = {s.attributes.get("ctxtap.parent_call_id"): s for s in agents if s.attributes.get("ctxtap.parent_call_id")}
    assert set(children) == {"toolu_spawn", "toolu_spawn2"}
    chats = [s for s in spans if s.attributes["gen_ai.operation.name"] == "chat"]
    by_id = {s.span_id: s for s in spans}
    for call_id, agent in children.items():
        tool = tools[call_id]
        assert agent.parent_id == tool.span_id and agent.trace_id == tool.trace_id
        assert agent.attributes["ctxtap.thread_kind"] == "subagent"
        assert tool.start_ns <= agent.start_ns <= agent.end_ns <= tool.end_ns
        mine = [c for c in chats if c.parent_id == agent.span_id]
        assert len(mine) == 1 and mine[0].attributes["ctxtap.thread_id"] == agent.attributes["ctxtap.thread_id"]
        # the tool span itself hangs under the parent's turn, which holds the child's time too
        turn = by_id[tool.parent_id]
        assert turn.attributes["gen_ai.operation.name"] == "invoke_agent" and turn.parent_id is None
        assert turn.start_ns <= agent.start_ns and agent.end_ns <= turn.end_ns
    # the parent's own chats stay under its turn
    parent_chats = [c for c in chats if c.attributes["ctxtap.thread_kind"] == "main"]
    assert len(parent_chats) == 2 and all(by_id[c.parent_id].parent_id is None for c in parent_chats)
    # and so on the wire: OTLP protobuf, decoded again
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    from ctxtap.reports.otel.otlp import to_request

    back = ExportTraceServiceRequest()
    back.ParseFromString(to_request(spans).SerializeToString())
    wire = {s.span_id: s for rs in back.resource_spans for ss in rs.scope_spans for s in ss.spans}
    for call_id, agent in children.items():
        assert wire[agent.span_id].parent_span_id == tools[call_id].span_id
        assert wire[agent.span_id].name.startswith("invoke_agent")


# --- the real clients: nothing invented ----------------------------------------------------------------


@pytest.mark.skipif(not corpus.available(), reason=corpus.SKIP_REASON)
def test_real_client_sessions_show_no_invented_generation_or_delegation(tmp_path, ctxtap_config) -> None:
    from tests.synthetic import corpus_captures_in

    con = connect(corpus_captures_in(tmp_path / "corpus"))
    # none of the recorded runs compacted, trimmed or delegated, though Claude Code and Kimi offer an Agent tool
    assert fetch_rows(con, "SELECT * FROM context_generations") == []
    assert fetch_rows(con, "SELECT * FROM delegations") == []
    offered = {r["client"] for r in fetch_rows(con, "SELECT DISTINCT r.client FROM blocks b JOIN requests r "
                                                    "USING (capture_id, request_id) WHERE b.tool_name = 'Agent'")}
    assert {"claude-code", "kimi-code"} <= offered
    assert fetch_rows(con, "SELECT count(*) AS n FROM requests WHERE thread_kind = 'main'")[0]["n"] >= 20


# --- the session page ------------------------------------------------------------------------------------


def test_the_session_page_names_each_generation_and_what_started_each_subagent(synthetic, delegation,
                                                                               tmp_path) -> None:
    import re

    from ctxtap.reports.html.render import render_report

    cap, _con = delegation
    html = render_report([cap], tmp_path / "delegation.html").path.read_text()
    text = re.sub(r"<[^>]+>", "", html)
    assert "Started by the Task call toolu_spawn of request #1" in " ".join(text.split())
    assert "fresh context" in text and "inherited context" in text and "not a subset of the parent" in text
    html = render_report([synthetic[0]], tmp_path / "synthetic.html").path.read_text()
    assert html.count('<table class="generations">') == 1  # the main thread's
    rows = re.findall(r'<table class="generations">(.*?)</table>', html, re.S)[0]
    assert rows.count("compaction</span>") == 2 and "answer-carried" in rows

