"""Telemetry clients send their vendor through the proxy (Claude Code's `event_logging`) is
recorded in full and decoded into the capture's telemetry tables, redacted."""

from __future__ import annotations

import json

from ctxtap.capture.classify import telemetry_endpoint
from ctxtap.capture.store import Capture
from ctxtap.capture.telemetry_decode import decode_claude_event_logging, decode_otlp
from tests.proxyharness import run_ctxtap


def test_known_telemetry_endpoints() -> None:
    assert telemetry_endpoint("api.anthropic.com", "/api/event_logging/v2/batch") == ("claude-event-logging", "events")
    assert telemetry_endpoint("api.anthropic.com", "/api/event_logging/batch") == ("claude-event-logging", "events")
    assert telemetry_endpoint("ab.chatgpt.com", "/otlp/v1/metrics") == ("codex-otlp-metrics", "metrics")
    assert telemetry_endpoint("api.anthropic.com", "/v1/messages") is None
    assert telemetry_endpoint("api.anthropic.com", "/api/event_logging/v2/batch", "GET") is None


def test_claude_event_batch_decodes_base64_metadata_and_bad_input_gets_a_status() -> None:
    import base64

    meta = base64.b64encode(json.dumps({"toolUseID": "toolu_1", "durationMs": 12}).encode()).decode()
    body = json.dumps({"events": [{"event_type": "ClaudeCodeInternalEvent", "event_data": {
        "event_name": "tengu_tool_use_success", "client_timestamp": "2026-11-29T19:22:48.634Z",
        "session_id": "s1", "additional_metadata": meta}}]}).encode()
    decoded = decode_claude_event_logging(body)
    assert decoded.status == "ok" and len(decoded.records) == 1
    rec = decoded.records[0]
    assert rec["name"] == "tengu_tool_use_success" and rec["trace_id"] == "s1"
    assert json.loads(rec["attributes"])["additional_metadata"] == {"toolUseID": "toolu_1", "durationMs": 12}
    assert decode_claude_event_logging(b"{not json").status.startswith("error: not JSON")
    assert decode_claude_event_logging(b'{"x": 1}').status == "error: no `events` list"
    assert decode_otlp("logs", "application/json", b'{"foo": 1}').status.startswith("error: no resourceLogs")
    assert decode_otlp("logs", "application/x-protobuf", b"").status == "empty"


def test_imported_claude_run_has_its_event_logging_decoded(real_clients, tmp_path, ctxtap_config) -> None:
    out = tmp_path / "cap"
    run_ctxtap(["import", str(real_clients / "basic" / "claude" / "flows.mitm"), "--out", str(out)], ctxtap_config)
    cap = Capture.open(out)
    flows = [f for f in cap.flows().to_pylist() if f["telemetry_endpoint"] == "claude-event-logging"]
    assert flows and all(f["record_mode"] == "full" for f in flows)
    payloads = cap.telemetry().to_pylist()
    assert {p["source"] for p in payloads} == {"proxy:claude-event-logging"}
    assert {p["flow_id"] for p in payloads} == {f["flow_id"] for f in flows}
    assert all(p["parse_status"] == "ok" and p["signal"] == "events" for p in payloads)
    records = cap.telemetry_records().to_pylist()
    assert sum(p["n_records"] for p in payloads) == len(records)
    names = {r["name"] for r in records}
    assert {"tengu_tool_use_success", "tengu_tool_use_can_use_tool_allowed", "tengu_api_success"} <= names
    allowed = [json.loads(r["attributes"]) for r in records if r["name"] == "tengu_tool_use_can_use_tool_allowed"]
    assert all(a["additional_metadata"]["toolUseID"].startswith("toolu_") for a in allowed)


def test_a_metadata_only_telemetry_flow_adds_no_payload(tmp_path) -> None:
    """The committed Claude recording was made when event_logging was metadata only: no body, so
    nothing to decode, and no telemetry row claims a parse failure."""
    import gzip

    from ctxtap.capture.paths import redaction_key
    from ctxtap.ingest.importer import import_files
    from tests.realcli_fixtures import FIXTURES

    har = tmp_path / "claude.har"
    har.write_bytes(gzip.decompress((FIXTURES / "claude" / "basic.har.gz").read_bytes()))
    import_files([har], tmp_path / "cap", redaction_key())
    cap = Capture.open(tmp_path / "cap")
    assert [f for f in cap.flows().to_pylist() if f["telemetry_endpoint"] == "claude-event-logging"]
    assert cap.telemetry().num_rows == 0
