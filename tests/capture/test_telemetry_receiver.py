"""The loopback OTLP receiver of `record --telemetry`: a real proxy with its writer child,
real OTLP protobuf and JSON over HTTP, and what ends up in the finalized capture."""

from __future__ import annotations

import http.client
import json
import socket
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from ctxtap.capture.store import Capture
from ctxtap.proxy_addons.runner import BackgroundProxy, ProxyConfig
from tests.capture.otlp_logs import SECRET, claude_tool_result_logs


def _post(url: str, body: bytes, ctype: str) -> int:
    req = urllib.request.Request(url, data=body, method="POST", headers={"content-type": ctype})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code


def _truncated_post(endpoint: str, path: str, body: bytes, declared: int) -> None:
    """Send fewer bytes than Content-Length says, then close (a client killed mid-export)."""
    host_port = endpoint.split("//", 1)[1].split("/", 1)[0]
    host, port = host_port.split(":")
    token = endpoint.rsplit("/", 1)[1]
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(f"POST /{token}{path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
                     f"Content-Length: {declared}\r\n\r\n".encode() + body)
        sock.shutdown(socket.SHUT_WR)
        sock.settimeout(5)
        try:
            sock.recv(100)
        except OSError:
            pass


@pytest.fixture
def recording(tmp_path: Path, ctxtap_config):
    out = tmp_path / "cap"
    proxy = BackgroundProxy(ProxyConfig(out=out, telemetry=True)).start()
    yield proxy, out
    proxy.stop()


def test_receiver_stores_protobuf_json_and_broken_payloads_redacted(recording) -> None:
    proxy, out = recording
    endpoint = proxy.telemetry_endpoint
    assert endpoint and endpoint.startswith("http://127.0.0.1:")
    ts_ns = 1_764_590_000_123_000_000
    assert _post(endpoint + "/v1/logs", claude_tool_result_logs(ts_ns), "application/x-protobuf") == 200
    metrics_json = {"resourceMetrics": [{"resource": {"attributes": [
        {"key": "service.name", "value": {"stringValue": "gemini-cli"}}]},
        "scopeMetrics": [{"metrics": [{"name": "gemini_cli.tool.call.latency", "unit": "ms", "histogram": {
            "dataPoints": [{"timeUnixNano": str(ts_ns), "sum": 17.5, "count": "2",
                            "attributes": [{"key": "function_name", "value": {"stringValue": "read_file"}}]}]}}]}]}]}
    assert _post(endpoint + "/v1/metrics", json.dumps(metrics_json).encode(), "application/json") == 200
    assert _post(endpoint + "/v1/logs", b"\xff\xfe not protobuf " + SECRET.encode(), "application/x-protobuf") == 200
    _truncated_post(endpoint, "/v1/traces", b"\x0a\x05abc", declared=1000)
    # without the per-run token: refused, never stored
    base = endpoint.rsplit("/", 1)[0]
    assert _post(base + "/v1/logs", claude_tool_result_logs(ts_ns), "application/x-protobuf") == 404
    assert _post(base + "/wrong-token/v1/logs", b"{}", "application/json") == 404
    proxy.note("client", {"injected": {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1/<token>"}})
    proxy.stop()

    cap = Capture.open(out)
    rows = sorted(cap.telemetry().to_pylist(), key=lambda r: r["telemetry_id"])
    assert [(r["signal"], r["payload_format"], r["received"]) for r in rows] == [
        ("logs", "protobuf", "complete"), ("metrics", "json", "complete"),
        ("logs", "protobuf", "complete"), ("traces", "protobuf", "truncated")]
    assert rows[0]["parse_status"] == "ok" and rows[1]["parse_status"] == "ok"
    assert rows[2]["parse_status"].startswith("error: not OTLP protobuf")
    assert rows[3]["parse_status"].startswith("error") and rows[3]["declared_bytes"] == 1000
    assert all(endpoint.rsplit("/", 1)[1] not in (r["path"] or "") for r in rows)  # the token is not stored
    records = cap.telemetry_records().to_pylist()
    log = next(r for r in records if r["kind"] == "log")
    attrs = json.loads(log["attributes"])
    assert log["name"] == "tool_result" and log["body"] == "claude_code.tool_result"
    assert attrs["tool_use_id"] == "toolu_01" and attrs["duration_ms"] == "42"
    assert log["ts"] == pytest.approx(ts_ns / 1e9)
    assert log["trace_id"] == "0af7651916cd43dd8448eb211c80319c" and log["service_name"] == "claude-code"
    assert SECRET not in attrs["tool_input"] and "[REDACTED:" in attrs["tool_input"]
    metric = next(r for r in records if r["kind"] == "metric")
    assert metric["name"] == "gemini_cli.tool.call.latency" and metric["value"] == 17.5
    assert json.loads(metric["attributes"])["function_name"] == "read_file"
    # nothing unredacted on disk, in any file of the capture
    for path in out.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
    stored = cap.body(rows[2]["body_id"])
    assert stored.startswith(b"\xff\xfe not protobuf ") and SECRET.encode() not in stored
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["telemetry"]["receiver"]["endpoint"].endswith("/<token>")
    assert manifest["telemetry"]["receiver_stats"] == {"received": 4, "refused": 2}
    assert manifest["telemetry"]["client"]["injected"]
    assert manifest["counts"]["telemetry_payloads"] == 4


def test_oversized_payload_is_kept_cut_and_the_receiver_goes_on(tmp_path: Path, ctxtap_config) -> None:
    from ctxtap.capture.finalize import finalize
    from ctxtap.capture.manifest import Manifest
    from ctxtap.capture.otlp_receiver import TelemetryReceiver
    from ctxtap.capture.paths import redaction_key
    from ctxtap.capture.writer import CaptureWriter

    out = tmp_path / "cap"
    writer = CaptureWriter(out, redaction_key(), Manifest(capture_id="c1"))
    receiver = TelemetryReceiver(writer.submit, max_bytes=1000).start()
    try:
        conn = http.client.HTTPConnection("127.0.0.1", receiver.port, timeout=10)
        conn.request("POST", f"/{receiver.token}/v1/logs", body=b"x" * 5000,
                     headers={"content-type": "application/x-protobuf"})
        assert conn.getresponse().status == 413
        conn.close()
        ok = claude_tool_result_logs(1_764_590_000_000_000_000)
        assert _post(receiver.endpoint + "/v1/logs", ok, "application/x-protobuf") == 200
    finally:
        receiver.stop()
    writer.close()
    finalize(out)
    rows = sorted(Capture.open(out).telemetry().to_pylist(), key=lambda r: r["telemetry_id"])
    assert [(r["received"], r["bytes_wire"], r["declared_bytes"]) for r in rows] == [
        ("oversized", 1000, 5000), ("complete", len(ok), len(ok))]
    assert rows[1]["parse_status"] == "ok" and rows[1]["n_records"] == 1


def test_receiver_listens_on_loopback_only(recording) -> None:
    proxy, _ = recording
    host = proxy.telemetry_endpoint.split("//", 1)[1].split(":", 1)[0]
    assert host == "127.0.0.1"
