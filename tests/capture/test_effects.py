"""Effect receipts, checked tool calls and gates (issue 38): a real `ctxtap record` of a small agent that
runs the scripted model server's tool calls in a real shell, then `ctxtap check` over the capture."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from ctxtap.capture.effects import compare
from ctxtap.capture.workspace import SnapshotLimits, take
from tests.capture.recorded_agent import _record, _workspace
from tests.proxyharness import ROOT, ctxtap_env


def _ctxtap(args: list[str], config: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ctxtap.cli.main", *args], cwd=ROOT, env=ctxtap_env(config),
                          capture_output=True, text=True, timeout=240)


def _sql(capture: Path, query: str) -> list[dict]:
    from ctxtap.analysis.build import ensure_analysis
    from ctxtap.analysis.db import connect, fetch_rows

    ensure_analysis(capture)
    con = connect([capture])
    try:
        return fetch_rows(con, query)
    finally:
        con.close()


@pytest.fixture(scope="module")
def web() -> Iterator[int]:
    """A non-model HTTP server on 127.0.0.1 for the agent's curl to reach through the proxy."""
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            self.send_response(200)
            self.send_header("content-length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()


@pytest.fixture(scope="module")
def read_only_run(tmp_path_factory, ctxtap_config, web) -> tuple[Path, subprocess.CompletedProcess]:
    curl = f'NO_PROXY= no_proxy= curl -s -x "$HTTP_PROXY" http://127.0.0.1:{web}/data.txt'
    steps = [{"calls": ["ls -a", "cat README.md .env", curl, "cat /etc/hostname"]}, {"text": "done"}]
    return _record(tmp_path_factory.mktemp("ro"), "ro", steps, ctxtap_config, check="--no-writes")


@pytest.fixture(scope="module")
def writing_run(tmp_path_factory, ctxtap_config) -> tuple[Path, subprocess.CompletedProcess]:
    steps = [{"calls": ["echo '.aider*' >> .gitignore", "echo hi > .aider.chat.history.md"]},
             {"calls": [{"command": "x", "tool": "Deploy", "arguments": {"target": "prod"}},
                        {"command": "y", "tool": "Read", "arguments": {"file_path": 42}}]},
             {"text": "done"}]
    return _record(tmp_path_factory.mktemp("rw"), "rw", steps, ctxtap_config, check="--no-writes")


def test_read_only_run_has_an_empty_receipt_and_passes_no_writes(read_only_run) -> None:
    out, done = read_only_run
    assert done.returncode == 0, done.stderr
    assert _sql(out, "SELECT * FROM effects") == []
    roots = _sql(out, "SELECT * FROM effect_roots")
    assert [(r["root_kind"], r["complete"]) for r in roots] == [("workspace", True)]
    assert roots[0]["files_before"] == 3  # .gitignore, README.md, .env: .git/ internals left out
    assert "--no-writes: ok" in done.stderr and "check: passed" in done.stderr


def test_writes_are_caught_by_no_writes_with_both_paths(writing_run, ctxtap_config) -> None:
    out, done = writing_run
    assert done.returncode == 3, done.stderr
    rows = _sql(out, "SELECT rel_path, change, inside_workspace, size_before, size_after, sha256_after "
                     "FROM effects ORDER BY rel_path")
    assert [(r["rel_path"], r["change"], r["inside_workspace"]) for r in rows] == [
        (".aider.chat.history.md", "created", True), (".gitignore", "modified", True)]
    assert rows[1]["size_before"] == 13 and rows[1]["size_after"] == 21 and len(rows[1]["sha256_after"]) == 64
    result = _ctxtap(["check", str(out), "--no-writes"], ctxtap_config)
    assert result.returncode == 3
    assert ".gitignore (modified)" in result.stdout and ".aider.chat.history.md (created)" in result.stdout
    assert "receipt: .gitignore modified in the working directory, 13 -> 21 bytes" in result.stdout
    allowed = _ctxtap(["check", str(out), "--no-writes", "--allow-write", ".aider*", "--json"], ctxtap_config)
    report = json.loads(allowed.stdout)
    assert allowed.returncode == 3 and [v["path"] for v in report["results"][0]["violations"]] == [".gitignore"]


def test_unoffered_tool_and_schema_violation_get_their_own_statuses(writing_run) -> None:
    out, _ = writing_run
    rows = {r["name"]: r for r in _sql(out, "SELECT name, result_status, check_status, check_detail FROM tool_calls")}
    assert rows["Deploy"]["check_status"] == "unknown_tool"
    assert "not offered" in rows["Deploy"]["check_detail"] and "Bash, Read" in rows["Deploy"]["check_detail"]
    assert rows["Read"]["check_status"] == "invalid_arguments"
    assert rows["Read"]["check_detail"].startswith("/file_path: 42 is not of type 'string'")
    assert rows["Bash"]["check_status"] == "ok"


def test_curl_to_a_non_model_host_through_the_proxy_breaks_no_network(read_only_run, ctxtap_config, web) -> None:
    out, _ = read_only_run
    result = _ctxtap(["check", str(out), "--no-network"], ctxtap_config)
    assert result.returncode == 3, result.stdout + result.stderr
    assert f"GET http://127.0.0.1:{web}/data.txt" in result.stdout
    assert "client's own traffic is kept apart" in result.stdout
    assert _ctxtap(["check", str(out), "--no-network", "--allow-host", "127.0.0.1"], ctxtap_config).returncode == 0


def test_no_outside_workspace_names_the_call_and_its_request(read_only_run, ctxtap_config) -> None:
    out, _ = read_only_run
    result = _ctxtap(["check", str(out), "--no-outside-workspace"], ctxtap_config)
    assert result.returncode == 3
    assert "Bash names /etc/hostname" in result.stdout and "request #1" in result.stdout


def _snap(root: Path, hash_small: bool = True, **limits):
    return take(root, "workspace", SnapshotLimits(**limits), hash_small=hash_small)


def test_compare_tells_created_modified_deleted_renamed_and_ignores_touches(tmp_path) -> None:
    ws = _workspace(tmp_path / "ws")
    (ws / "src").mkdir()
    (ws / "src" / "a.py").write_text("a = 1\n")
    (ws / "old.txt").write_text("moving\n")
    (ws / "gone.txt").write_text("bye\n")
    before = _snap(ws)
    (ws / "README.md").write_text("# demo\n")  # same bytes, new mtime: not a change
    os.utime(ws / "README.md", ns=(1, 1))
    (ws / "src" / "a.py").write_text("a = 2\n")
    (ws / "old.txt").rename(ws / "new.txt")
    (ws / "gone.txt").unlink()
    (ws / ".git" / "index").write_text("git internals are left out")
    (ws / "src" / "b.py").write_text("b\n")
    rows, _ = compare(before, _snap(ws, hash_small=False), 1 << 20)
    assert [(r["rel_path"], r["change"], r["renamed_from"]) for r in rows] == [
        ("gone.txt", "deleted", None), ("new.txt", "renamed", "old.txt"),
        ("src/a.py", "modified", None), ("src/b.py", "created", None)]
    assert all(r["sha256_before"] for r in rows if r["change"] != "created")


def test_a_bounded_snapshot_says_it_stopped_and_reports_only_what_it_walked(tmp_path) -> None:
    ws = _workspace(tmp_path / "ws")
    for i in range(20):
        (ws / f"f{i:02}").write_text("x")
    before = _snap(ws, max_files=10)
    assert before.stopped == "max files 10" and "" not in before.listed
    (ws / "zz-new").write_text("y")
    rows, _ = compare(before, _snap(ws, hash_small=False, max_files=10), 1 << 20)
    assert rows == []  # the root was not walked in full: no created/deleted guesses


def test_the_report_says_what_was_written_and_which_gate_it_breaks(writing_run, tmp_path) -> None:
    from ctxtap.reports.html.render import render_report

    out, _ = writing_run
    html = tmp_path / "report.html"
    render_report([out], html)
    text = html.read_text()
    assert "Effects and constraints" in text
    assert ("2 files written in the working directory: .aider.chat.history.md (created), .gitignore (modified)."
            in text)
    assert "Breaks --no-writes: .aider.chat.history.md (created); .gitignore (modified)." in text
    assert "Deploy — called a tool never offered" in text
    assert str(out.parent) not in text  # the snapshotted places' paths stay out of a shareable report


def test_publish_and_export_leave_the_receipts_paths_out(writing_run, tmp_path, ctxtap_config) -> None:
    out, _ = writing_run
    workspace = str(out.parent / "rw-ws")
    assert _sql(out, "SELECT root FROM effect_roots")[0]["root"] == workspace
    published = _ctxtap(["publish", str(out), "-o", str(tmp_path / "pub")], ctxtap_config)
    assert published.returncode == 0, published.stderr
    exported = _ctxtap(["export", str(out), "--otlp-json", str(tmp_path / "spans.jsonl"),
                        "--har", str(tmp_path / "run.har")], ctxtap_config)
    assert exported.returncode == 0, exported.stderr
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(files) >= 3
    for path in files:
        assert workspace not in path.read_text(errors="replace"), path


def _tool_result_log(call_id: str, ts_ns: int, **attrs: str) -> bytes:
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

    from tests.capture.otlp_logs import claude_tool_result_logs

    req = ExportLogsServiceRequest()
    req.ParseFromString(claude_tool_result_logs(ts_ns))
    record = req.resource_logs[0].scope_logs[0].log_records[0]
    for kv in record.attributes:
        if kv.key == "tool_use_id":
            kv.value.string_value = call_id
        if kv.key in attrs:
            kv.value.string_value = attrs.pop(kv.key)
    record.attributes.extend(KeyValue(key=k, value=AnyValue(string_value=v)) for k, v in attrs.items())
    return req.SerializeToString()


def test_client_telemetry_refines_check_status_to_denied_and_error(tmp_path, ctxtap_config) -> None:
    """The committed Claude Code recording with its OTLP tool_result events: one call the client reports
    failed, one whose permission was rejected."""
    from ctxtap.analysis.db import connect, fetch_rows
    from tests.realcli_fixtures import fixture_entries, otlp_event, write_capture

    entries = fixture_entries("claude")
    out = write_capture(tmp_path / "cap", entries, "tc1")
    calls = _sql(out, "SELECT call_id, check_status, request_id FROM tool_calls WHERE request_id IS NOT NULL "
                      "ORDER BY call_id")
    assert len(calls) >= 2 and {c["check_status"] for c in calls} == {"ok"}
    t0 = _sql(out, "SELECT min(ts_start) AS t FROM requests")[0]["t"]
    told = [{"success": "false"}, {"decision": "reject"}]
    out2 = write_capture(tmp_path / "cap2", entries, "tc2", [
        otlp_event(i, t0 + 5, _tool_result_log(call["call_id"], int((t0 + 1 + i) * 1e9), **attrs))
        for i, (call, attrs) in enumerate(zip(calls, told, strict=False))])
    from ctxtap.analysis.build import ensure_analysis

    ensure_analysis(out2)
    con = connect([out2])
    rows = {r["call_id"]: r for r in fetch_rows(con, "SELECT call_id, check_status, check_detail FROM tool_calls")}
    con.close()
    first, second = rows[calls[0]["call_id"]], rows[calls[1]["call_id"]]
    assert first["check_status"] == "error" and "reported failure" in first["check_detail"]
    assert second["check_status"] == "denied" and "permission rejected" in second["check_detail"]
