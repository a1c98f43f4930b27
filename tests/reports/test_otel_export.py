"""`ctxtap export --otlp / --otlp-json`: GenAI spans, checked by decoding what was produced.

The protobuf and OTLP/JSON round trips always run; the OTLP/HTTP sender is checked against a
real HTTP server on loopback that decodes what it receives. The Phoenix test (a real OTLP
consumer) is in tests/reports/test_otel_phoenix.py.
"""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from ctxtap.analysis.db import connect
from ctxtap.reports.otel.otlp import from_json, to_json, to_request
from ctxtap.reports.otel.spans import build_spans
from tests.analysis.evidence_support import AWS_KEY, evidence_har
from tests.proxyharness import run_ctxtap


@pytest.fixture(scope="module")
def capture(tmp_path_factory, ctxtap_config) -> Path:
    tmp = tmp_path_factory.mktemp("otel")
    cap = tmp / "cap"
    run_ctxtap(["import", str(evidence_har(tmp / "s.har", retry_wait_s=3.5)), "--out", str(cap)], ctxtap_config)
    run_ctxtap(["analyze", str(cap)], ctxtap_config)
    return cap


def _value(v):
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [_value(x) for x in v.array_value.values]
    return getattr(v, kind)


def decoded(request: ExportTraceServiceRequest) -> list[dict]:
    out = []
    for rs in request.resource_spans:
        for ss in rs.scope_spans:
            for s in ss.spans:
                out.append({"trace": s.trace_id, "id": s.span_id, "parent": s.parent_span_id, "name": s.name,
                            "kind": s.kind, "start": s.start_time_unix_nano, "end": s.end_time_unix_nano,
                            "status": s.status.code, "attrs": {a.key: _value(a.value) for a in s.attributes}})
    return out


def _spans(capture: Path, **kw) -> list[dict]:
    con = connect([capture])
    try:
        wire = to_request(build_spans(con, **kw)).SerializeToString()
    finally:
        con.close()
    back = ExportTraceServiceRequest()
    back.ParseFromString(wire)
    return decoded(back)


def test_protobuf_round_trip_carries_genai_attributes(capture):
    spans = _spans(capture)
    by_op: dict[str, list[dict]] = {}
    for s in spans:
        by_op.setdefault(s["attrs"]["gen_ai.operation.name"], []).append(s)
    assert {k: len(v) for k, v in by_op.items()} == {"invoke_agent": 2, "chat": 6, "execute_tool": 3}
    agents = {s["id"]: s for s in by_op["invoke_agent"]}
    assert sorted(s["attrs"]["ctxtap.turn_index"] for s in agents.values()) == [1, 2]
    for s in by_op["chat"] + by_op["execute_tool"]:
        parent = agents[s["parent"]]  # every chat and tool span hangs under its turn's invoke_agent span
        assert s["trace"] == parent["trace"] and parent["start"] <= s["start"] <= s["end"] <= parent["end"]
    chat = next(s for s in by_op["chat"] if s["attrs"].get("http.response.status_code") == 200)
    a = chat["attrs"]
    assert a["gen_ai.provider.name"] == "anthropic" and a["gen_ai.request.model"] == "claude-sonnet-4-5"
    assert a["gen_ai.conversation.id"].startswith("claude-code:")
    # Anthropic reports cache on top of input: the convention's input count includes it
    assert a["gen_ai.usage.input_tokens"] == 100 + 1000 + 50
    assert a["gen_ai.usage.cache_read.input_tokens"] == 1000
    # the current name of the write count, and the old one beside it for consumers that read only that
    assert a["gen_ai.usage.cache_write.input_tokens"] == a["gen_ai.usage.cache_creation.input_tokens"] == 50
    assert a["gen_ai.usage.output_tokens"] == 10
    assert chat["kind"] == 3  # SPAN_KIND_CLIENT
    assert any(k.startswith("ctxtap.source_tokens.") for k in a)
    failed = [s for s in by_op["chat"] if s["attrs"].get("http.response.status_code") == 429]
    assert len(failed) == 1 and failed[0]["status"] == 2 and failed[0]["attrs"]["error.type"] == "rate_limit_error"
    tools = {s["attrs"]["gen_ai.tool.call.id"]: s for s in by_op["execute_tool"]}
    assert set(tools) == {"toolu_01", "toolu_02", "toolu_03"}
    assert all(t["attrs"]["gen_ai.tool.name"] == "Bash" for t in tools.values())
    assert tools["toolu_02"]["attrs"]["ctxtap.result_status"] == "truncated"
    assert tools["toolu_01"]["attrs"]["ctxtap.timing"] == "call_to_result_gap"


def test_no_content_unless_asked(capture):
    for s in _spans(capture):
        assert not any(k.startswith(("gen_ai.input", "gen_ai.output", "gen_ai.system", "gen_ai.tool.call.arg"))
                       for k in s["attrs"])
        assert "REDACTED" not in json.dumps(s["attrs"], default=str)


def test_ids_are_stable_across_exports(capture):
    first, second = _spans(capture), _spans(capture)
    assert [(s["trace"], s["id"]) for s in first] == [(s["trace"], s["id"]) for s in second]


def test_otlp_json_file_round_trips_and_content_is_redacted(capture, ctxtap_config, tmp_path):
    out = tmp_path / "spans.jsonl"
    result = run_ctxtap(["export", str(capture), "--otlp-json", str(out), "--content"], ctxtap_config)
    assert "11 spans" in result.stdout
    text = out.read_text()
    assert AWS_KEY not in text and "alice.liddell@example.com" not in text and "Sup3rS3cretPw" not in text
    line = json.loads(text.splitlines()[0])
    span0 = line["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert len(span0["traceId"]) == 32 and len(span0["spanId"]) == 16  # OTLP/JSON: hex ids
    request = from_json(line)
    assert to_json(request) == line
    spans = decoded(request)
    chats = [s for s in spans if s["attrs"]["gen_ai.operation.name"] == "chat"]
    first = json.loads(chats[0]["attrs"]["gen_ai.input.messages"])
    task = first[0]["parts"][0]["content"]
    assert "[REDACTED:aws-access-key:" in task and "<email-1>" in task  # pseudonymised at export
    assert json.loads(chats[0]["attrs"]["gen_ai.system_instructions"])[0]["content"].startswith("You are")
    tool_args = [s["attrs"]["gen_ai.tool.call.arguments"] for s in spans if "gen_ai.tool.call.arguments" in s["attrs"]]
    assert json.loads(tool_args[0]) == {"command": "cat .env"}


class _Collector(http.server.BaseHTTPRequestHandler):
    received: list[tuple[str, dict, bytes]] = []

    def do_POST(self):  # noqa: N802
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.headers.get("Authorization") != "Bearer t0ken":
            self.send_response(401)
            self.end_headers()
            return
        type(self).received.append((self.path, dict(self.headers), body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def collector() -> Iterator[str]:
    _Collector.received = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_otlp_http_sends_protobuf_to_v1_traces(capture, ctxtap_config, collector):
    result = run_ctxtap(["export", str(capture), "--otlp", collector, "--otlp-header", "Authorization=Bearer t0ken"],
                        ctxtap_config, extra_env={"HTTP_PROXY": "http://127.0.0.1:9", "http_proxy": "http://127.0.0.1:9"})
    assert "sent 11 spans" in result.stdout
    ((path, headers, body),) = _Collector.received
    assert path == "/v1/traces" and headers["Content-Type"] == "application/x-protobuf"
    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    assert len(decoded(request)) == 11


def test_otlp_http_refused_is_one_clear_line(capture, ctxtap_config, collector):
    result = run_ctxtap(["export", str(capture), "--otlp", collector], ctxtap_config, check=False)
    assert result.returncode != 0 and "answered 401" in result.stderr and "Traceback" not in result.stderr


def test_export_needs_a_target(capture, ctxtap_config):
    result = run_ctxtap(["export", str(capture)], ctxtap_config, check=False)
    assert result.returncode == 2 and "--otlp" in result.stderr


def test_large_exports_are_sent_in_batches(collector, monkeypatch):
    from ctxtap.reports.otel import otlp
    from ctxtap.reports.otel.spans import Span

    monkeypatch.setattr(otlp, "BATCH", 100)
    spans = [Span(b"\x01" * 16, i.to_bytes(8, "big"), None, f"chat {i}", i, i + 1, "client",
                  {"gen_ai.operation.name": "chat"}) for i in range(1, 251)]
    assert otlp.send(collector, spans, {"Authorization": "Bearer t0ken"}) == 3
    got = []
    for _path, _headers, body in _Collector.received:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        got += [s["name"] for s in decoded(request)]
    assert got == [f"chat {i}" for i in range(1, 251)]
