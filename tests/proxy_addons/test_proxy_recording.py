"""Recording through a real `ctxtap proxy` process to the scripted model server."""

from __future__ import annotations

import gzip
import hashlib
import json
import stat
import time

import pytest
import zstandard

from ctxtap.capture.store import Capture
from ctxtap.modelserver import ModelServer, Script
from ctxtap.modelserver.client import HttpClient, WsClient
from tests.proxyharness import routes_to, run_ctxtap, start_proxy

STREAM_SCRIPT = Script.model_validate({"steps": [{"events": 12, "event_bytes": 40}]})
ANTHROPIC_TOOLS = [{"name": "Bash", "description": "run", "input_schema": {"type": "object"}}]


@pytest.fixture
def server():
    with ModelServer(script=STREAM_SCRIPT, chunk_delay_s=0.1) as srv:
        yield srv


@pytest.fixture
def proxy(tmp_path, ctxtap_config, server):
    pp = start_proxy(tmp_path / "cap", ctxtap_config, routes_to(server.url))
    yield pp
    pp.stop()


def _client(proxy, base: str) -> HttpClient:
    return HttpClient(base, proxy=proxy.url, ca_file=proxy.ca_bundle, timeout=60)


def _stream(resp) -> tuple[list, float, float]:
    """Read SSE events, returning them with the arrival times of the first and last."""
    events, first, last = [], None, None
    for ev in resp.events():
        now = time.monotonic()
        first = first or now
        last = now
        events.append(ev)
    return events, first, last


def _flows(capture_dir):
    cap = Capture.open(capture_dir)
    return cap, cap.flows().to_pylist()


def test_anthropic_sse_streams_live_and_is_recorded(proxy, server):
    client = _client(proxy, "https://api.anthropic.com")
    body = json.dumps({"model": "claude-sonnet-4-5", "max_tokens": 100, "stream": True, "tools": ANTHROPIC_TOOLS,
                       "messages": [{"role": "user", "content": "hi"}]}).encode()
    resp = client.request("POST", "/v1/messages?beta=true", body,
                          [("content-type", "application/json"), ("x-api-key", "sk-ant-api03-" + "A" * 80),
                           ("user-agent", "claude-cli/2.1.0 (external, cli)")])
    events, first, last = _stream(resp)
    client.close()
    assert resp.status == 200 and len(events) > 12
    # Passed through live: the first event arrived long before the last was sent.
    assert last - first > 0.8
    proxy.stop()
    cap, flows = _flows(proxy.out)
    [flow] = [f for f in flows if f["is_model"]]
    assert flow["url"] == "https://api.anthropic.com/v1/messages?beta=true"
    assert flow["upstream_url"].startswith(server.url)
    assert (flow["provider"], flow["api"], flow["transport"], flow["client"]) == (
        "anthropic", "messages", "sse", "claude-code")
    assert flow["client_version"] == "2.1.0"
    assert flow["streamed"] and flow["state"] == "complete" and flow["integrity_ok"]
    assert flow["ts_first_byte"] < flow["ts_response_end"] - 0.8
    # Per-read arrival offsets (for replay pacing): growing, ending at the body's size, spread like the stream.
    offsets = json.loads(flow["response_chunk_offsets"])
    assert len(offsets) > 5
    assert [o[0] for o in offsets] == sorted(o[0] for o in offsets) and offsets[-1][0] == flow["response_bytes_wire"]
    assert offsets[0][1] == 0 and offsets[-1][1] > 800
    assert cap.body(flow["request_body_id"]) == body
    stored = cap.body(flow["response_body_id"])
    assert stored == server.sent[-1].body  # the reassembled stream, byte for byte
    assert flow["request_sha256_client"] == hashlib.sha256(server.received[-1].raw_body).hexdigest()
    assert "[REDACTED:anthropic-key:" in flow["request_headers"]
    assert cap.manifest.counts["model_requests"] == 1


def test_responses_sse_chat_sse_and_gemini_sse(proxy, server):
    openai = _client(proxy, "https://api.openai.com")
    body = json.dumps({"model": "gpt-5", "stream": True, "input": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}]}).encode()
    resp = openai.request("POST", "/v1/responses", body, [("content-type", "application/json"),
                                                          ("originator", "codex_exec"),
                                                          ("user-agent", "codex_exec/0.171.0 (Linux)")])
    r_events, *_ = _stream(resp)
    kimi = _client(proxy, "https://api.kimi.com")
    body = json.dumps({"model": "kimi-for-coding", "stream": True, "stream_options": {"include_usage": True},
                       "messages": [{"role": "user", "content": "hi"}]}).encode()
    resp = kimi.request("POST", "/coding/v1/chat/completions", body,
                        [("content-type", "application/json"), ("user-agent", "kimi-code-cli/2.1.0")])
    c_events, *_ = _stream(resp)
    gem = _client(proxy, "https://generativelanguage.googleapis.com")
    body = json.dumps({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}).encode()
    resp = gem.request("POST", "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", body,
                       [("content-type", "application/json"), ("x-goog-api-key", "AIza" + "B" * 35),
                        ("user-agent", "GeminiCLI/0.61.0/gemini-2.5-pro (linux; x64)")])
    g_events, *_ = _stream(resp)
    for c in (openai, kimi, gem):
        c.close()
    assert r_events and c_events and g_events
    proxy.stop()
    cap, flows = _flows(proxy.out)
    model = {f["api"]: f for f in flows if f["is_model"]}
    assert set(model) == {"responses", "chat-completions", "gemini"}
    assert model["responses"]["client"] == "codex"
    assert model["chat-completions"]["client"] == "kimi-code"
    assert model["gemini"]["client"] == "gemini-cli"
    assert "x-goog-api-key" in model["gemini"]["request_headers"]
    assert "AIza" + "B" * 35 not in model["gemini"]["request_headers"]
    for f in model.values():
        assert f["transport"] == "sse" and f["state"] == "complete"
        assert b"data:" in cap.body(f["response_body_id"])
    chat = cap.body(model["chat-completions"]["response_body_id"])
    assert chat.rstrip().endswith(b"data: [DONE]")


def test_compressed_request_bodies_are_stored_decoded(proxy, server):
    client = _client(proxy, "https://api.openai.com")
    payload = json.dumps({"model": "gpt-5", "stream": True, "input": "compressed " * 200}).encode()
    for encoding, data in (("zstd", zstandard.ZstdCompressor(write_content_size=False).compress(payload)),
                           ("gzip", gzip.compress(payload))):
        resp = client.request("POST", "/v1/responses", data, [("content-type", "application/json"),
                                                              ("content-encoding", encoding)])
        _stream(resp)
        assert server.received[-1].raw_body == data  # forwarded unchanged
    client.close()
    proxy.stop()
    cap, flows = _flows(proxy.out)
    model = [f for f in flows if f["is_model"]]
    assert [f["request_content_encoding"] for f in model] == ["zstd", "gzip"]
    for f in model:
        assert f["request_decode_status"] == "decoded"
        assert cap.body(f["request_body_id"]) == payload
        assert f["request_bytes"] == len(payload) and f["request_bytes_wire"] < len(payload)


def test_responses_websocket_several_turns_on_one_socket(tmp_path, ctxtap_config):
    with ModelServer(script="basic") as server:
        pp = start_proxy(tmp_path / "cap", ctxtap_config, routes_to(server.url))
        try:
            ws = WsClient("wss://api.openai.com/v1/responses", proxy=pp.url, ca_file=pp.ca_bundle,
                          headers=[("originator", "codex_exec"), ("user-agent", "codex_exec/0.171.0"),
                                   ("authorization", "Bearer sk-proj-" + "C" * 60)])
            ws.connect()
            tools = [{"type": "function", "name": "shell_command", "parameters": {"type": "object"}}]
            ws.send_json({"type": "response.create", "model": "gpt-5", "generate": False, "input": [],
                          "tools": tools})
            previous = _until_done(ws)["response"]["id"]
            user = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "list"}]}
            ws.send_json({"type": "response.create", "model": "gpt-5", "previous_response_id": previous,
                          "input": [user], "tools": tools})
            done = _until_done(ws)
            calls = [o for o in done["response"]["output"] if o["type"] == "function_call"]
            assert len(calls) == 2
            outputs = [{"type": "function_call_output", "call_id": c["call_id"], "output": "ok"} for c in calls]
            ws.send_json({"type": "response.create", "model": "gpt-5",
                          "previous_response_id": done["response"]["id"], "input": outputs, "tools": tools})
            _until_done(ws)
            ws.close()
        finally:
            pp.stop()
        frames = server.frames(0)
    cap = Capture.open(tmp_path / "cap")
    [flow] = [f for f in cap.flows().to_pylist() if f["kind"] == "websocket"]
    assert (flow["api"], flow["transport"], flow["model_requests"]) == ("responses-websocket", "websocket", 3)
    msgs = [m for m in cap.ws_messages().to_pylist() if m["flow_id"] == flow["flow_id"]]
    client_frames = [cap.body(m["body_id"]).decode() for m in sorted(msgs, key=lambda m: m["idx"])
                     if m["from_client"]]
    assert client_frames == frames  # every request frame, exactly as the server got it
    kinds = [m["msg_type"] for m in sorted(msgs, key=lambda m: m["idx"])]
    assert kinds.count("response.create") == 3 and kinds.count("response.completed") == 3
    assert "C" * 60 not in flow["request_headers"]


def _until_done(ws) -> dict:
    while True:
        msg = ws.recv_json()
        if msg.get("type") in ("response.completed", "response.failed", "error"):
            return msg


def test_ca_key_is_private_and_proxy_listens_on_loopback(proxy, ctxtap_config):
    key = ctxtap_config / "ca" / "mitmproxy-ca.pem"
    assert key.exists() and stat.S_IMODE(key.stat().st_mode) == 0o600
    assert stat.S_IMODE((ctxtap_config / "redaction.key").stat().st_mode) == 0o600
    assert "listening on 127.0.0.1:" in proxy.stdout_lines[0]


def test_info_json_keys(proxy, server, ctxtap_config):
    client = _client(proxy, "https://api.x.ai")
    resp = client.request("POST", "/v1/chat/completions", json.dumps(
        {"model": "grok-code-fast-1", "messages": [{"role": "system", "content": "You are Grok CLI"},
                                                   {"role": "user", "content": "hi"}]}).encode(),
        [("content-type", "application/json"), ("user-agent", "OpenAI/JS 5.23.2")])
    resp.body()
    client.close()
    proxy.stop()
    info = json.loads(run_ctxtap(["info", str(proxy.out), "--json"], ctxtap_config).stdout)
    for key in ("capture_id", "flows", "model_requests", "by_client", "by_api", "by_transport", "redactions",
                "integrity_mismatches", "recovered"):
        assert key in info
    assert info["model_requests"] == 1 and info["by_client"] == {"grok-cli": 1}
    assert info["by_api"] == {"chat-completions": 1} and info["by_transport"] == {"json": 1}
    assert info["recovered"] is False and info["integrity_mismatches"] == 0



def test_info_reads_a_live_capture_without_finalizing_it(proxy, server, ctxtap_config):
    client = _client(proxy, "https://api.anthropic.com")
    body = json.dumps({"model": "claude-haiku-4-5", "max_tokens": 5,
                       "messages": [{"role": "user", "content": "hi"}]}).encode()
    assert client.request("POST", "/v1/messages", body, [("content-type", "application/json")]).status == 200
    client.close()
    live = json.loads(run_ctxtap(["info", str(proxy.out), "--json"], ctxtap_config).stdout)
    assert live["status"] == "live" and live["model_requests"] == 1 and not live["recovered"]
    assert (proxy.out / "spool").exists()  # still recording: nothing was finalized under the recorder
    proxy.stop()
    done = json.loads(run_ctxtap(["info", str(proxy.out), "--json"], ctxtap_config).stdout)
    assert done["status"] == "finalized" and done["model_requests"] == 1
