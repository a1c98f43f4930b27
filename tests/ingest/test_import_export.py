"""`ctxtap import` of real-client flow files and HAR, `ctxtap export --har`, and `ctxtap record`."""

from __future__ import annotations

import json
import re
import sys

import pytest
from mitmproxy import io as mitm_io

from ctxtap.capture.store import Capture
from ctxtap.modelserver import ModelServer
from tests.proxyharness import all_stored_bytes, routes_to, run_ctxtap

# README.md of the corpus: flows, model requests, client, api, transport per run.
CORPUS = {
    "basic/claude": (11, 2, "claude-code", "messages", "sse"),
    "basic/codex": (8, 3, "codex", "responses-websocket", "websocket"),
    "basic/codex-sse": (10, 2, "codex", "responses", "sse"),
    "basic/grok": (2, 2, "grok-cli", "chat-completions", "json"),
    "basic/kimi-code": (3, 2, "kimi-code", "chat-completions", "sse"),
    "long/claude": (16, 6, "claude-code", "messages", "sse"),
    "long/codex-sse": (14, 6, "codex", "responses", "sse"),
    "long/kimi-code": (7, 6, "kimi-code", "chat-completions", "sse"),
}
_CREDENTIAL_HEADERS = {"authorization", "x-api-key", "statsig-api-key", "x-goog-api-key", "cookie"}


def _dummy_keys(path) -> set[str]:
    keys = set()
    with open(path, "rb") as fh:
        for flow in mitm_io.FlowReader(fh).stream():
            for name, value in flow.request.headers.items(multi=True):
                if name.lower() in _CREDENTIAL_HEADERS:
                    keys.add(value.split()[-1])
    return {k for k in keys if len(k) >= 20}


@pytest.mark.parametrize("run", sorted(CORPUS))
def test_import_real_client_flows(run, real_clients, tmp_path, ctxtap_config):
    flows_file = real_clients / run / "flows.mitm"
    out = tmp_path / "cap"
    run_ctxtap(["import", str(flows_file), "--out", str(out)], ctxtap_config)
    n_flows, n_model, client, api, transport = CORPUS[run]
    info = json.loads(run_ctxtap(["info", str(out), "--json"], ctxtap_config).stdout)
    assert info["flows"] == n_flows
    assert info["model_requests"] == n_model
    assert info["by_client"] == {client: n_model}
    assert info["by_api"] == {api: n_model}
    assert info["by_transport"] == {transport: n_model}
    keys = _dummy_keys(flows_file)
    assert keys, "the corpus carries dummy keys in its headers"
    for where, data in all_stored_bytes(out):
        for key in keys:
            assert key.encode() not in data, f"dummy key stored in {where}"
    assert info["redactions"]
    if transport == "websocket":  # the frames are the traffic: they count in the byte totals
        assert info["request_bytes"] > 70_000 and info["response_bytes"] > 10_000


def test_har_export_round_trips_through_import(real_clients, tmp_path, ctxtap_config):
    out = tmp_path / "cap"
    run_ctxtap(["import", str(real_clients / "basic/codex/flows.mitm"), "--out", str(out)], ctxtap_config)
    har_path = tmp_path / "cap.har"
    run_ctxtap(["export", str(out), "--har", str(har_path)], ctxtap_config)
    har = json.loads(har_path.read_text())
    entries = har["log"]["entries"]
    assert har["log"]["version"] == "1.2" and len(entries) == 8
    [ws] = [e for e in entries if e.get("_resourceType") == "websocket"]
    sends = [m for m in ws["_webSocketMessages"] if m["type"] == "send"]
    assert len(sends) == 3 and json.loads(sends[0]["data"])["generate"] is False
    # bodies exactly as stored
    cap = Capture.open(out)
    stored = {f["flow_id"]: f for f in cap.flows().to_pylist()}
    for entry in entries:
        flow = stored[entry["_ctxtap"]["flow_id"]]
        body = cap.body(flow["response_body_id"]) or b""
        assert entry["response"]["content"].get("text", "").encode() == body
    # and HAR imports back into an equivalent capture
    again = tmp_path / "again"
    run_ctxtap(["import", str(har_path), "--out", str(again)], ctxtap_config)
    info = json.loads(run_ctxtap(["info", str(again), "--json"], ctxtap_config).stdout)
    assert info["model_requests"] == 3 and info["by_api"] == {"responses-websocket": 3}


def test_import_rejects_non_flow_files(tmp_path, ctxtap_config):
    bad = tmp_path / "notes.txt"
    bad.write_text("hello")
    result = run_ctxtap(["import", str(bad), "--out", str(tmp_path / "x")], ctxtap_config, check=False)
    assert result.returncode != 0 and "not a mitmproxy flow file or HAR" in result.stderr


CLIENT = """
import json, os, sys
sys.path.insert(0, {root!r})
from ctxtap.modelserver.client import HttpClient
c = HttpClient("https://api.anthropic.com", proxy=os.environ["HTTPS_PROXY"], ca_file=os.environ["SSL_CERT_FILE"])
body = json.dumps({{"model": "claude-haiku-4-5", "max_tokens": 5, "stream": True,
                   "messages": [{{"role": "user", "content": "hi"}}]}}).encode()
r = c.request("POST", "/v1/messages", body, [("content-type", "application/json"),
              ("x-api-key", "sk-ant-api03-" + "Q" * 90), ("user-agent", "claude-cli/9.9.9 (external, cli)")])
print(r.status, len(r.body()))
assert os.environ["NODE_USE_ENV_PROXY"] == "1" and os.environ["NO_PROXY"].startswith("localhost")
sys.exit(7)
"""


def test_record_wraps_a_command_and_passes_its_exit_code(tmp_path, ctxtap_config):
    from tests.proxyharness import ROOT

    script = tmp_path / "client.py"
    script.write_text(CLIENT.format(root=str(ROOT)))
    with ModelServer(script="basic") as server:
        args = ["record", "--out", str(tmp_path / "cap")]
        for route in routes_to(server.url):
            args += ["--route", route]
        result = run_ctxtap(args + ["--", sys.executable, str(script)], ctxtap_config, check=False)
    assert result.returncode == 7
    assert result.stdout.startswith("200 ")
    assert re.search(r"model requests 1", result.stderr)
    assert "claude-code=1" in result.stderr and "anthropic-key=1" in result.stderr
    cap = Capture.open(tmp_path / "cap")
    assert cap.manifest.command[-1] == str(script)
    assert cap.manifest.status == "finalized" and not cap.manifest.recovered


def test_addons_work_under_plain_mitmdump(tmp_path, ctxtap_config):
    """`mitmdump -s proxy_addons/recorder.py` records the same capture format."""
    import os
    import shutil
    import signal
    import socket
    import subprocess
    import time

    from ctxtap.modelserver.client import HttpClient
    from tests.proxyharness import ROOT, ctxtap_env

    mitmdump = shutil.which("mitmdump", path=os.path.dirname(sys.executable))
    assert mitmdump, "mitmdump is installed with mitmproxy"
    out = tmp_path / "cap"
    with ModelServer(script="basic") as server:
        # picked once the model server holds its own port: picking first let the kernel hand the freed
        # port to the model server, which then answered the client's CONNECT itself (501)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        cmd = [mitmdump, "-q", "--listen-host", "127.0.0.1", "-p", str(port),
               "--set", f"confdir={ctxtap_config / 'ca'}", "-s", str(ROOT / "proxy_addons" / "recorder.py"),
               "--set", f"ctxtap_out={out}", "--set", f"ctxtap_route=api.anthropic.com={server.url}"]
        proc = subprocess.Popen(cmd, env=ctxtap_env(ctxtap_config), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    time.sleep(0.1)
            ca = ctxtap_config / "ca" / "mitmproxy-ca-cert.pem"
            client = HttpClient("https://api.anthropic.com", proxy=f"http://127.0.0.1:{port}", ca_file=str(ca))
            body = json.dumps({"model": "claude-haiku-4-5", "max_tokens": 5,
                               "messages": [{"role": "user", "content": "hi"}]}).encode()
            assert client.request("POST", "/v1/messages", body, [("content-type", "application/json")]).status == 200
            client.close()
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(30)
    cap = Capture.open(out)
    assert cap.manifest.status == "finalized" and cap.manifest.counts["model_requests"] == 1


def test_offline_answers_unrouted_hosts_locally(tmp_path, ctxtap_config):
    from ctxtap.modelserver.client import HttpClient
    from tests.proxyharness import start_proxy

    with ModelServer(script="basic") as server:
        pp = start_proxy(tmp_path / "cap", ctxtap_config, [f"api.anthropic.com={server.url}"], extra=["--offline"])
        try:
            telemetry = HttpClient("https://telemetry.example.com", proxy=pp.url, ca_file=pp.ca_bundle)
            assert telemetry.request("POST", "/v1/event", b'{"e": 1}', [("content-type", "application/json")]).json() == {}
            assert telemetry.request("GET", "/config").status == 404
            telemetry.close()
            model = HttpClient("https://api.anthropic.com", proxy=pp.url, ca_file=pp.ca_bundle)
            body = json.dumps({"model": "claude-haiku-4-5", "max_tokens": 5,
                               "messages": [{"role": "user", "content": "hi"}]}).encode()
            assert model.request("POST", "/v1/messages", body, [("content-type", "application/json")]).json()["content"]
            model.close()
        finally:
            pp.stop()
        assert len(server.received) == 1  # only the routed model call left the proxy
    flows = Capture.open(tmp_path / "cap").flows().to_pylist()
    assert [(f["host"], f["status"]) for f in flows] == [
        ("telemetry.example.com", 200), ("telemetry.example.com", 404), ("api.anthropic.com", 200)]
