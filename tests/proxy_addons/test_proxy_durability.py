"""Crash safety and bad input: a kill -9 loses no completed flow; malformed traffic is kept with a status."""

from __future__ import annotations

import json
import os
import socket
import threading
import time

from ctxtap.capture.store import Capture
from ctxtap.modelserver import Fault, ModelServer
from ctxtap.modelserver.client import HttpClient
from tests.proxyharness import routes_to, run_ctxtap, start_proxy


def _client_loop(proxy, index: int, completed: list[str], stop: threading.Event) -> None:
    client = HttpClient("https://api.anthropic.com", proxy=proxy.url, ca_file=proxy.ca_bundle, timeout=20)
    n = 0
    while not stop.is_set():
        marker = f"client{index}-req{n}"
        body = json.dumps({"model": "claude-haiku-4-5", "max_tokens": 5, "stream": n % 2 == 0,
                           "messages": [{"role": "user", "content": marker}]}).encode()
        try:
            resp = client.request("POST", "/v1/messages", body, [("content-type", "application/json")])
            data = resp.body()  # the whole response, to its end-of-message
        except Exception:
            return  # the proxy died under us: this request never completed
        if resp.status == 200 and data:
            completed.append(marker)
        n += 1


def test_kill_9_with_concurrent_clients_loses_no_completed_flow(tmp_path, ctxtap_config):
    with ModelServer(script="basic", chunk_delay_s=0.002) as server:
        pp = start_proxy(tmp_path / "cap", ctxtap_config, routes_to(server.url))
        completed: list[str] = []
        stop = threading.Event()
        threads = [threading.Thread(target=_client_loop, args=(pp, i, completed, stop)) for i in range(6)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 30
        while len(completed) < 60 and time.monotonic() < deadline:
            time.sleep(0.05)
        pp.kill9()
        stop.set()
        for t in threads:
            t.join(30)
    done = set(completed)
    assert len(done) >= 60
    assert (tmp_path / "cap" / "spool").exists()  # the recorder never finalized
    info = json.loads(run_ctxtap(["info", str(tmp_path / "cap"), "--json"], ctxtap_config).stdout)
    assert info["recovered"] is True
    cap = Capture.open(tmp_path / "cap")
    recorded = {}
    for flow in cap.flows().to_pylist():
        body = cap.body(flow["request_body_id"])
        if body:
            recorded[json.loads(body)["messages"][0]["content"]] = flow
    missing = done - set(recorded)
    assert not missing
    for marker in done:
        flow = recorded[marker]
        assert flow["state"] == "complete" and flow["status"] == 200
        assert cap.body(flow["response_body_id"])
    assert info["model_requests"] >= len(done)


def test_malformed_traffic_is_recorded_with_a_status(tmp_path, ctxtap_config):
    with ModelServer(script="basic", chunk_delay_s=0.01) as server:
        pp = start_proxy(tmp_path / "cap", ctxtap_config, routes_to(server.url))
        try:
            client = HttpClient("https://api.anthropic.com", proxy=pp.url, ca_file=pp.ca_bundle, timeout=60)
            # invalid JSON request body
            resp = client.request("POST", "/v1/messages", b'{"model": "x", "messages": [', [
                ("content-type", "application/json")])
            assert resp.status == 400
            resp.body()
            # binary request body with a lying content-encoding
            blob = os.urandom(4096)
            client.request("POST", "/v1/messages", blob, [("content-type", "application/octet-stream"),
                                                          ("content-encoding", "gzip")]).body()
            # a 50 MB body
            big = json.dumps({"model": "claude-haiku-4-5", "max_tokens": 5, "messages": [
                {"role": "user", "content": "x" * (50 * 1024 * 1024)}]}).encode()
            client.request("POST", "/v1/messages", big, [("content-type", "application/json")]).body()
            client.close()
            # truncated SSE: the server cuts the stream after 3 events
            server.inject(Fault(cut_after=3, path_contains="/v1/messages"))
            cut_client = HttpClient("https://api.anthropic.com", proxy=pp.url, ca_file=pp.ca_bundle)
            body = json.dumps({"model": "claude-haiku-4-5", "max_tokens": 5, "stream": True,
                               "messages": [{"role": "user", "content": "cut me"}]}).encode()
            try:
                cut_client.request("POST", "/v1/messages", body, [("content-type", "application/json")]).body()
            except Exception:
                pass
            cut_client.close()
            # a client that disconnects mid-request
            raw = socket.create_connection(("127.0.0.1", pp.port))
            raw.sendall(b"POST http://api.openai.com/v1/responses HTTP/1.1\r\nHost: api.openai.com\r\n"
                        b"Content-Length: 1000\r\n\r\n{\"partial")
            raw.close()
            time.sleep(0.5)
        finally:
            pp.stop()
    cap = Capture.open(tmp_path / "cap")
    flows = [f for f in cap.flows().to_pylist() if f["host"] == "api.anthropic.com"]
    assert len(flows) == 4
    invalid, binary, big_flow, cut = flows
    assert cap.body(invalid["request_body_id"]) == b'{"model": "x", "messages": ['
    assert invalid["status"] == 400 and invalid["state"] == "complete"
    assert binary["request_decode_status"].startswith("error:")
    assert cap.body(binary["request_body_id"]) == blob
    assert big_flow["request_bytes"] == len(big) and cap.body(big_flow["request_body_id"]) == big
    assert cut["state"] in ("error", "complete")
    if cut["state"] == "error":
        assert cut["error"]
    stored = cap.body(cut["response_body_id"]) or b""
    assert stored.count(b"event:") == 3  # what arrived before the cut is kept
    assert run_ctxtap(["info", str(tmp_path / "cap")], ctxtap_config).returncode == 0


def test_ctrl_c_to_the_process_group_finalizes_cleanly(tmp_path, ctxtap_config):
    """Ctrl-C reaches the proxy and its writer process alike; the capture must still finalize."""
    import os
    import signal
    import subprocess
    import sys

    from tests.proxyharness import ROOT, ctxtap_env, wait_accepting

    with ModelServer(script="basic") as server:
        cmd = [sys.executable, "-m", "ctxtap.cli.main", "proxy", "--port", "0", "--out", str(tmp_path / "cap")]
        for route in routes_to(server.url):
            cmd += ["--route", route]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                env=ctxtap_env(ctxtap_config), cwd=ROOT, start_new_session=True)
        try:
            lines = []
            for line in proc.stdout:
                lines.append(line)
                if line.startswith("export NODE_USE_ENV_PROXY"):
                    break
            port = int(lines[0].split()[5].rsplit(":", 1)[1].rstrip(","))
            ca = next(ln.split("=", 1)[1].strip().strip("'") for ln in lines if ln.startswith("export SSL_CERT_FILE="))
            wait_accepting(port, proc)  # the announcement comes just before the port accepts: wait for both
            client = HttpClient("https://api.anthropic.com", proxy=f"http://127.0.0.1:{port}", ca_file=ca)
            body = json.dumps({"model": "claude-haiku-4-5", "max_tokens": 5, "stream": True,
                               "messages": [{"role": "user", "content": "hi"}]}).encode()
            status = client.request("POST", "/v1/messages", body, [("content-type", "application/json")]).status
            client.close()
            assert status == 200
            os.killpg(proc.pid, signal.SIGINT)
            proc.wait(60)
        finally:
            if proc.poll() is None:  # never leave a proxy (or its writer) behind
                os.killpg(proc.pid, signal.SIGKILL)
    cap = Capture.open(tmp_path / "cap")
    assert cap.manifest.status == "finalized" and not cap.manifest.recovered
    assert cap.manifest.counts["model_requests"] == 1 and cap.manifest.ended_at


def test_a_compressed_body_that_does_not_decode_whole_reaches_disk_decoded_and_redacted(tmp_path, ctxtap_config):
    """A gzip request cut short and one with a bad checksum, through a real proxy: what decoded is
    stored and redacted (before, the compressed bytes were kept and `zcat` read the key out)."""
    import gzip
    import zlib

    secret = "sk-ant-api03-" + "Hv4" * 30 + "AA"
    body = json.dumps({"model": "claude-haiku-4-5", "max_tokens": 5, "messages": [
        {"role": "user", "content": f"ANTHROPIC_API_KEY={secret}"},
        {"role": "user", "content": os.urandom(60_000).hex()}]}).encode()
    packed = gzip.compress(body)
    bad_crc = bytearray(packed)
    bad_crc[-8] ^= 0xFF
    sent = {"cut": packed[: len(packed) // 2], "bad-crc": bytes(bad_crc)}
    with ModelServer(script="basic") as server:
        pp = start_proxy(tmp_path / "cap", ctxtap_config, routes_to(server.url))
        try:
            client = HttpClient("https://api.anthropic.com", proxy=pp.url, ca_file=pp.ca_bundle, timeout=60)
            for name, data in sent.items():
                client.request("POST", f"/v1/messages?case={name}", data, [
                    ("content-type", "application/json"), ("content-encoding", "gzip")]).body()
            client.close()
        finally:
            pp.stop()
    cap = Capture.open(tmp_path / "cap")
    flows = {f["path"].split("case=")[1]: f for f in cap.flows().to_pylist() if "case=" in (f["path"] or "")}
    assert set(flows) == set(sent)
    for name, flow in flows.items():
        stored = cap.body(flow["request_body_id"])
        assert stored.startswith(b'{"model": "claude-haiku-4-5"') and b"[REDACTED:" in stored, name
        try:
            readable = zlib.decompressobj(31).decompress(stored)
        except zlib.error:
            readable = b""
        assert secret.encode() not in stored + readable, name
        assert flow["request_decode_status"].startswith("error: gzip: "), flow["request_decode_status"]
        assert flow["request_bytes_wire"] == len(sent[name])


def test_a_proxy_error_that_quotes_the_wire_is_stored_redacted(tmp_path, ctxtap_config):
    """mitmproxy's error messages quote what it could not parse (`Invalid header line: b'...'`): a
    server answering with a malformed header line that holds a key must not put the key on disk."""
    secret = "sk-ant-api03-" + "Qw9" * 30 + "AA"
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def answer() -> None:
        conn, _ = server.accept()
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nx-debug-key " + secret.encode() + b"\r\ncontent-length: 2\r\n\r\n{}")
            time.sleep(0.5)

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    pp = start_proxy(tmp_path / "cap", ctxtap_config, [f"api.anthropic.com=http://127.0.0.1:{port}"])
    try:
        client = HttpClient("https://api.anthropic.com", proxy=pp.url, ca_file=pp.ca_bundle, timeout=30)
        resp = client.request("POST", "/v1/messages", b'{"model": "claude-haiku-4-5", "messages": []}',
                              [("content-type", "application/json")])
        resp.body()
        assert resp.status == 502
        client.close()
    finally:
        pp.stop()
        server.close()
    cap = Capture.open(tmp_path / "cap")
    (flow,) = [f for f in cap.flows().to_pylist() if f["host"] == "api.anthropic.com"]
    assert flow["state"] == "error" and "x-debug-key" in flow["error"] and "[REDACTED:" in flow["error"]
    on_disk = b"".join(p.read_bytes() for p in (tmp_path / "cap").rglob("*") if p.is_file())
    assert secret.encode() not in on_disk
