"""The `events` view: the minimum trace, joined from the wire and the client's own telemetry.

Real recordings: the committed real-CLI fixtures (always present) and the shared corpus
(skipped when absent); client telemetry comes through the capture writer exactly as the
receiver and the proxy hand it on.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxtap.analysis.db import connect, fetch_rows
from ctxtap.analysis.tables.events import wall_time_ms
from ctxtap.capture.paths import redaction_key
from ctxtap.ingest.importer import import_files
from tests.capture.otlp_logs import claude_tool_result_logs
from tests.proxyharness import run_ctxtap
from tests.realcli_fixtures import fixture_entries, otlp_event, write_capture

ORDER = ["task_started", "model_requested", "model_responded", "tool_requested", "permission_decided",
         "tool_started", "tool_finished", "tool_result_returned", "task_finished"]


def _events(capture: Path, config: Path) -> list[dict]:
    run_ctxtap(["analyze", str(capture)], config)
    con = connect([capture])
    rows = con.execute("SELECT * FROM events ORDER BY session_id, seq").fetchall()
    names = [d[0] for d in con.description]
    return [dict(zip(names, r, strict=True)) for r in rows]


def _check_trace(events: list[dict], causal_order: bool = True) -> None:
    """Whatever the evidence: seq is 0..n-1 per session in time order, predecessors exist (and come
    first, unless a client's own times put a tool's start before the response that proposed it)."""
    by_session: dict[str, list[dict]] = {}
    for e in events:
        by_session.setdefault(e["session_id"], []).append(e)
    for rows in by_session.values():
        assert [e["seq"] for e in rows] == list(range(len(rows)))
        times = [e["ts"] for e in rows if e["ts"] is not None]
        assert times == sorted(times)
        for e in rows:
            assert e["predecessor_seq"] is None or 0 <= e["predecessor_seq"] < len(rows), e
            if causal_order:
                assert e["predecessor_seq"] is None or e["predecessor_seq"] < e["seq"], e
            assert e["event"] in ORDER and e["evidence"] in ("wire", "client-telemetry", "inferred")


def test_wall_time_parsing() -> None:
    assert wall_time_ms("Exit code: 0\nWall time: 0.02 seconds\nOutput:\n/repo") == pytest.approx(20)
    assert wall_time_ms("Wall time: 15 ms") == 15
    assert wall_time_ms("no timing here") is None and wall_time_ms(None) is None


def test_without_telemetry_tool_times_are_the_call_to_result_gap_and_say_so(tmp_path, ctxtap_config) -> None:
    har = tmp_path / "grok.har"
    har.write_text(json.dumps({"log": {"entries": fixture_entries("grok")}}))
    out = tmp_path / "cap"
    import_files([har], out, redaction_key())
    events = _events(out, ctxtap_config)
    _check_trace(events)
    finished = [e for e in events if e["event"] == "tool_finished"]
    assert finished and all(e["evidence"] == "inferred" for e in finished)
    assert {e["evidence_detail"] for e in finished} <= {"call->result gap", "result text: Wall time"}
    returned = {e["tool_call_id"] for e in events if e["event"] == "tool_result_returned"}
    assert returned == {e["tool_call_id"] for e in events if e["event"] == "tool_requested"}
    assert [e["event"] for e in events][:3] == ["task_started", "model_requested", "model_responded"]
    assert events[-1]["event"] == "task_finished"
    stats = run_ctxtap(["stats", str(out)], ctxtap_config).stdout
    n_calls = sum(e["event"] == "model_requested" for e in events)
    assert "process efficiency (per session)" in stats and f"model calls {n_calls}," in stats
    assert f"tools ({len(finished)}: {len(finished)} only the call-to-result gap)" in stats
    assert "approximate: response-header time" in stats  # an imported HAR


def test_client_otlp_tool_result_gives_tool_start_finish_and_decision(tmp_path, ctxtap_config) -> None:
    """The committed Claude Code recording, plus the `claude_code.tool_result` events Claude Code
    exports over OTLP for its two tool calls, written through the capture writer."""
    entries = fixture_entries("claude")
    out = write_capture(tmp_path / "cap", entries, "ev1")
    events = _events(out, ctxtap_config)
    calls = [e for e in events if e["event"] == "tool_requested"]
    assert len(calls) >= 2
    # now the same run with the client's OTLP: tool_result events 50 ms after the proposing response
    out2 = write_capture(tmp_path / "cap2", entries, "ev2", [
        otlp_event(i, call["ts"] + 1, _logs_for(call["tool_call_id"], int((call["ts"] + 0.050 + i * 0.001) * 1e9)))
        for i, call in enumerate(calls)])
    events = _events(out2, ctxtap_config)
    _check_trace(events)
    for call in calls:
        mine = {e["event"]: e for e in events if e["tool_call_id"] == call["tool_call_id"]}
        assert list(mine) == ["tool_requested", "tool_started", "tool_finished", "tool_result_returned"]
        fin, start = mine["tool_finished"], mine["tool_started"]
        assert fin["evidence"] == "client-telemetry" and fin["evidence_detail"] == "claude_code.tool_result"
        assert fin["duration_ms"] == 42 and fin["success"] is True
        assert fin["ts"] - start["ts"] == pytest.approx(0.042, abs=1e-3)
        assert fin["predecessor_seq"] == start["seq"] and fin["telemetry_id"] is not None
        assert mine["tool_result_returned"]["predecessor_seq"] == fin["seq"]
        assert fin["ts_ingested"] > fin["ts"]  # the telemetry arrived after the fact


def _logs_for(call_id: str, ts_ns: int) -> bytes:
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

    req = ExportLogsServiceRequest()
    req.ParseFromString(claude_tool_result_logs(ts_ns))
    for kv in req.resource_logs[0].scope_logs[0].log_records[0].attributes:
        if kv.key == "tool_use_id":
            kv.value.string_value = call_id
    return req.SerializeToString()


def test_claude_vendor_events_time_the_tools_of_a_real_run(real_clients, tmp_path, ctxtap_config) -> None:
    out = tmp_path / "cap"
    run_ctxtap(["import", str(real_clients / "basic" / "claude" / "flows.mitm"), "--out", str(out)], ctxtap_config)
    events = _events(out, ctxtap_config)
    _check_trace(events)
    requested = [e for e in events if e["event"] == "tool_requested"]
    decided = [e for e in events if e["event"] == "permission_decided"]
    finished = [e for e in events if e["event"] == "tool_finished"]
    assert len(requested) == 2 and len(decided) == 2 and len(finished) == 2
    assert all(e["decision"] == "accept" and e["evidence"] == "client-telemetry" for e in decided)
    assert all(e["evidence_detail"] == "tengu_tool_use_success" and e["duration_ms"] > 0 for e in finished)
    con = connect([out])
    row = con.execute("SELECT n_calls, n_turns, n_ttfb_approximate, n_tools_from_telemetry, tool_max_ms "
                      "FROM process_efficiency").fetchone()
    assert row[0] == 2 and row[1] == 1 and row[2] == 2 and row[3] == 2 and row[4] == max(e["duration_ms"] for e in finished)
    kinds = con.execute("SELECT DISTINCT ttfb_kind FROM requests").fetchall()
    assert kinds == [("approximate",)]  # a mitmproxy flow file has no first-body-byte time
    stats = run_ctxtap(["stats", str(out)], ctxtap_config).stdout
    assert "tools (2: 2 from client telemetry)" in stats and "turns 1, model calls 2" in stats


def test_recorded_streams_keep_the_exact_first_byte_time(demo_capture) -> None:
    """The demo runs simulated clients through the real recording proxy: its streamed responses
    have the first body byte the proxy saw, so their TTFB is exact."""
    con = connect([demo_capture])
    kinds = dict(con.execute("SELECT transport, list(DISTINCT ttfb_kind) FROM requests "
                             "WHERE transport IN ('sse', 'websocket') GROUP BY 1").fetchall())
    assert kinds and all(v == ["exact"] for v in kinds.values()), kinds
    assert con.execute("SELECT count(*) FROM events WHERE event = 'model_responded'").fetchone()[0] > 0


def test_gemini_tool_spans_time_calls_that_have_no_id_on_the_wire(tmp_path, ctxtap_config) -> None:
    """Gemini's functionCall has no id (the parser numbers it `run_shell_command#0`); Gemini CLI's
    `tool_call` spans carry its own id ending in the same index, and their start and end."""
    entries = fixture_entries("gemini")
    out = write_capture(tmp_path / "plain", entries, "g1")
    calls = [e for e in _events(out, ctxtap_config) if e["event"] == "tool_requested"]
    assert [c["tool_call_id"].rsplit("#", 1)[1] for c in calls] == ["0", "1"]

    def span(call: dict, start: float, end: float) -> dict:
        index = call["tool_call_id"].rsplit("#", 1)[1]
        attrs = {"gen_ai.operation.name": "tool_call", "gen_ai.tool.name": call["tool_name"],
                 "gen_ai.tool.call_id": f"{call['tool_name']}__{call['tool_name']}_1796126708001_{index}"}
        return {"traceId": "ab" * 16, "spanId": f"{int(index) + 1:016x}", "name": "tool_call",
                "startTimeUnixNano": str(int(start * 1e9)), "endTimeUnixNano": str(int(end * 1e9)),
                "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attrs.items()]}

    t = calls[0]["ts"]
    # the second call runs first and longer: pairing by index, not by order of completion
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [span(calls[1], t + 0.010, t + 0.300),
                                                         span(calls[0], t + 0.020, t + 0.070)]}]}]}
    out2 = write_capture(tmp_path / "with-spans", entries, "g2", [
        otlp_event(0, t + 1, json.dumps(doc).encode(), signal="traces", content_type="application/json")])
    events = _events(out2, ctxtap_config)
    _check_trace(events)
    fin = {e["tool_call_id"]: e for e in events if e["event"] == "tool_finished"}
    assert fin[calls[0]["tool_call_id"]]["duration_ms"] == pytest.approx(50, abs=1)
    assert fin[calls[1]["tool_call_id"]]["duration_ms"] == pytest.approx(290, abs=1)
    assert {e["evidence_detail"] for e in fin.values()} == {"span tool_call"}
    start = {e["tool_call_id"]: e for e in events if e["event"] == "tool_started"}
    assert start[calls[1]["tool_call_id"]]["ts"] == pytest.approx(t + 0.010, abs=1e-3)


def test_calls_timed_by_telemetry_say_whether_they_overlapped(tmp_path, ctxtap_config) -> None:
    """`tool_calls.concurrent` is filled from client-telemetry tool times, null without them."""
    entries = fixture_entries("claude")
    plain = write_capture(tmp_path / "plain", entries, "cc0")
    calls = [e for e in _events(plain, ctxtap_config) if e["event"] == "tool_requested"]
    assert len(calls) >= 2
    assert {r["concurrent"] for r in fetch_rows(connect([plain]), "SELECT concurrent FROM tool_calls")} == {None}
    # the same run with both tools timed by telemetry: the first two at the same moment, the rest apart
    base = calls[0]["ts"] + 0.050
    # 42 ms runs: the first two overlap, later ones do not
    ends = [base if i < 2 else base + 10.0 * i for i in range(len(calls))]
    timed = write_capture(tmp_path / "timed", entries, "cc1", [
        otlp_event(i, base + 20, _logs_for(call["tool_call_id"], int(end * 1e9)))
        for i, (call, end) in enumerate(zip(calls, ends, strict=True))])
    _events(timed, ctxtap_config)  # analysed
    rows = {r["call_id"]: r["concurrent"] for r in fetch_rows(connect([timed]), "SELECT call_id, concurrent FROM tool_calls")}
    ids = [c["tool_call_id"] for c in calls]
    assert rows[ids[0]] is True and rows[ids[1]] is True
    assert all(rows[i] is False for i in ids[2:])
