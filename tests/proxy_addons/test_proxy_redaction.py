"""No credential reaches disk, whatever the placement; upstream still gets the original bytes."""

from __future__ import annotations

import http.server
import json
import threading
import time
from urllib.parse import quote

import pytest
import zstandard

from ctxtap.capture.store import Capture
from ctxtap.modelserver import ModelServer
from ctxtap.modelserver.client import HttpClient, WsClient
from tests.proxyharness import all_stored_bytes, routes_to, start_proxy
from tests.secret_corpus import generate_secrets, plant_header, plant_many, plant_sse, plant_ws_frame

SECRETS = generate_secrets(seed=7)


class SplitSSE(http.server.BaseHTTPRequestHandler):
    """An upstream that writes each SSE body in two network writes, cut inside the secret."""

    protocol_version = "HTTP/1.1"
    bodies: list[bytes] = []
    cuts: list[int] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        index = int(self.path.rsplit("=", 1)[1])  # /v1/chat/completions?i=<index>
        body, cut = self.bodies[index], self.cuts[index]
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for part in (body[:cut], body[cut:]):
            self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            self.wfile.flush()
            time.sleep(0.05)
        self.wfile.write(b"0\r\n\r\n")

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def split_server():
    SplitSSE.bodies, SplitSSE.cuts = [], []
    for secret in SECRETS:
        planted = plant_sse(secret)
        fragment = secret.fragments()[0]
        position = planted.data.find(json.dumps(fragment)[1:-1].encode())
        assert position > 0
        SplitSSE.bodies.append(planted.data)
        SplitSSE.cuts.append(position + len(fragment) // 2)
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), SplitSSE)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()


def test_no_planted_secret_is_stored_anywhere(tmp_path, ctxtap_config, split_server):
    with ModelServer(script="basic") as server:
        routes = routes_to(server.url) + [f"api.mistral.ai={split_server}"]
        pp = start_proxy(tmp_path / "cap", ctxtap_config, routes)
        sent_bodies: list[bytes] = []
        try:
            anthropic = HttpClient("https://api.anthropic.com", proxy=pp.url, ca_file=pp.ca_bundle)
            # headers: bearer, x-api-key and cookie forms of every token secret
            for secret in SECRETS:
                if not secret.token:
                    continue
                for style in ("bearer", "x-api-key", "cookie"):
                    headers, _ = plant_header(secret, style)
                    headers = [(k, v) for k, v in headers if k.lower() != "host"]
                    body = json.dumps({"model": "claude-haiku-4-5", "max_tokens": 5,
                                       "messages": [{"role": "user", "content": "hi"}]}).encode()
                    anthropic.request("POST", "/v1/messages", body, headers).body()
            # bodies: plain JSON, escaped and double-escaped JSON, env files, URLs in text; some zstd
            for i, (data, _group) in enumerate(plant_many(SECRETS, seed=3, per_body=4)):
                body = json.dumps({"model": "claude-haiku-4-5", "max_tokens": 5, "messages": [
                    {"role": "user", "content": data.decode()}]}).encode()
                headers = [("content-type", "application/json")]
                if i % 2:
                    body = zstandard.ZstdCompressor().compress(body)
                    headers.append(("content-encoding", "zstd"))
                sent_bodies.append(body)
                anthropic.request("POST", "/v1/messages", body, headers).body()
            anthropic.close()
            # query strings
            gemini = HttpClient("https://generativelanguage.googleapis.com", proxy=pp.url, ca_file=pp.ca_bundle)
            for secret in SECRETS:
                if secret.token:
                    path = f"/v1beta/models/gemini-2.5-pro:generateContent?key={quote(secret.value, safe='')}"
                    gemini.request("POST", path, b'{"contents": []}', [("content-type", "application/json")]).body()
            gemini.close()
            # SSE payloads split across two network reads, inside the secret
            mistral = HttpClient("https://api.mistral.ai", proxy=pp.url, ca_file=pp.ca_bundle)
            for i in range(len(SECRETS)):
                resp = mistral.request("POST", f"/v1/chat/completions?i={i}", b"{}",
                                       [("content-type", "application/json")])
                assert resp.body() == SplitSSE.bodies[i]
            mistral.close()
            # WebSocket frames
            ws = WsClient("wss://api.openai.com/v1/responses", proxy=pp.url, ca_file=pp.ca_bundle)
            ws.connect()
            frames = []
            for secret in SECRETS:
                frame = plant_ws_frame(secret).data.decode()
                frame = json.dumps({**json.loads(frame), "model": "gpt-5", "previous_response_id": None})
                frames.append(frame)
                ws.send_text(frame)
                while json.loads(ws.recv_text())["type"] not in ("response.completed", "response.failed", "error"):
                    pass
            ws.close()
        finally:
            pp.stop()
        received = server.received
    # Upstream got the original bytes.
    raw = [r.raw_body for r in received if r.raw_body]
    for body in sent_bodies:
        assert body in raw
    ws_frames = [f for r in received for f in r.ws_frames]
    assert ws_frames == frames
    # Nothing secret anywhere under the capture directory: raw files, decoded bodies, every cell.
    stored = all_stored_bytes(tmp_path / "cap")
    leaks = []
    for secret in SECRETS:
        for fragment in secret.fragments():
            forms = {fragment, json.dumps(fragment)[1:-1], json.dumps(json.dumps(fragment)[1:-1])[1:-1]}
            forms.add(quote(fragment, safe=""))
            for where, data in stored:
                for form in forms:
                    if form.encode() in data:
                        leaks.append((secret.kind, where))
    assert leaks == []
    cap = Capture.open(tmp_path / "cap")
    split = [f for f in cap.flows().to_pylist() if f["host"] == "api.mistral.ai"]
    assert len(split) == len(SECRETS)
    for flow in split:  # recorded in full, the secret replaced in the reassembled stream
        assert flow["record_mode"] == "full" and b"[REDACTED:" in cap.body(flow["response_body_id"])
    counts = cap.manifest.counts["redactions"]
    assert sum(counts.values()) >= len(SECRETS) * 4


def test_keys_in_the_recorded_command_and_routes_stay_off_disk(tmp_path, ctxtap_config):
    """`ctxtap record -- env OPENAI_API_KEY=sk-... <agent>` and a route through a gateway with its
    credentials in the URL: the manifest keeps the command and routes, redacted (they were stored
    as typed)."""
    import subprocess
    import sys

    from tests.proxyharness import ROOT, ctxtap_env

    key = "sk-proj-" + "Tq4x" * 12
    password = "Gw-Pass-7731-zq"
    out = tmp_path / "cap"
    result = subprocess.run(
        [sys.executable, "-m", "ctxtap.cli.main", "record", "--offline", "--out", str(out),
         "--route", f"api.openai.com=https://gateway:{password}@127.0.0.1:9",
         "--", "env", f"OPENAI_API_KEY={key}", "true"],
        capture_output=True, text=True, env=ctxtap_env(ctxtap_config), cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["command"][0] == "env" and manifest["command"][2] == "true"
    assert manifest["command"][1].startswith("OPENAI_API_KEY=[REDACTED:")
    assert manifest["options"]["routes"][0].startswith("api.openai.com=https://gateway:[REDACTED:")
    for where, data in all_stored_bytes(out):
        assert key.encode() not in data and password.encode() not in data, where


def test_a_key_in_a_file_attached_as_base64_stays_off_disk(tmp_path, ctxtap_config):
    """A `.env` attached to a Claude, OpenAI Responses and Gemini call (base64 document, data URL,
    inlineData), through a real proxy: nothing on disk decodes to the key (before, each body was
    stored as sent and `base64 -d` read it)."""
    import base64

    from tests.redaction.base64_files import DOC, KEY, PASSWORD, _carriers, _readable

    encoded = base64.b64encode(DOC).decode()
    bodies = _carriers(encoded)
    paths = {"anthropic document": ("api.anthropic.com", "/v1/messages"),
             "openai input_file": ("api.openai.com", "/v1/responses"),
             "gemini inlineData": ("generativelanguage.googleapis.com",
                                   "/v1beta/models/gemini-2.5-pro:generateContent")}
    with ModelServer(script="basic") as server:
        pp = start_proxy(tmp_path / "cap", ctxtap_config, routes_to(server.url))
        try:
            for shape, (host, path) in paths.items():
                client = HttpClient(f"https://{host}", proxy=pp.url, ca_file=pp.ca_bundle, timeout=30)
                client.request("POST", path, json.dumps(bodies[shape]).encode(),
                               [("content-type", "application/json")]).body()
                client.close()
        finally:
            pp.stop()
    cap = Capture.open(tmp_path / "cap")
    requests = [cap.body(f["request_body_id"]) for f in cap.flows().to_pylist() if f["request_body_id"] is not None]
    assert len(requests) == 3 and all(b"[REDACTED:" in body for body in requests)
    for where, data in all_stored_bytes(tmp_path / "cap"):
        readable = _readable(data)
        assert KEY.encode() not in readable and PASSWORD.encode() not in readable, where


class ChattyUpstream(http.server.BaseHTTPRequestHandler):
    """An upstream (or a client's own words) putting a key in the short strings a flow row keeps
    in columns of their own: the reason phrase, content type and encoding."""

    protocol_version = "HTTP/1.1"
    key = ""

    def _answer(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        body = b'{"ok": true}'
        self.send_response(200, f"OK {self.key}")
        self.send_header("content-type", f"application/json; x-debug={self.key}")
        self.send_header("content-encoding", f"x-debug, {self.key}")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, *args) -> None:
        pass


def test_keys_in_reason_phrases_content_types_user_agents_and_message_types_stay_off_disk(tmp_path, ctxtap_config):
    """The columns copied from the wire beside the redacted headers and bodies (`reason`,
    `*_content_type`, `*_content_encoding`, `client_version`, telemetry `user_agent`, a WebSocket
    message's `msg_type`) were stored as received, in full and in metadata-only flows alike."""
    key = "sk-ant-api03-" + "Vb7" * 30 + "AA"
    ChattyUpstream.key = key
    upstream = http.server.ThreadingHTTPServer(("127.0.0.1", 0), ChattyUpstream)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    chatty = f"http://127.0.0.1:{upstream.server_address[1]}"
    with ModelServer(script="basic") as server:
        routes = [r for r in routes_to(server.url) if not r.startswith("api.anthropic.com=")]
        pp = start_proxy(tmp_path / "cap", ctxtap_config, routes + [f"api.anthropic.com={chatty}"])
        try:
            client = HttpClient("https://api.anthropic.com", proxy=pp.url, ca_file=pp.ca_bundle, timeout=30)
            said = [("content-type", f"application/json; x-debug={key}"), ("user-agent", f"probe/1.0 {key}")]
            client.request("POST", "/v1/messages", b'{"model": "claude-haiku-4-5", "messages": []}', said).raw.read()
            client.request("POST", "/api/event_logging/batch", b'{"events": []}', said).raw.read()
            client.request("GET", "/v1/organizations/x", b"",  # a side call: recorded as metadata only
                           [("originator", "codex_cli_rs"), ("version", key)]).raw.read()
            client.close()
            ws = WsClient("wss://api.openai.com/v1/responses", proxy=pp.url, ca_file=pp.ca_bundle)
            ws.connect()
            ws.send_text(json.dumps({"type": key}))
            ws.send_text(json.dumps({"type": "response.create", "model": "gpt-5", "input": "hi"}))
            while json.loads(ws.recv_text())["type"] not in ("response.completed", "response.failed", "error"):
                pass
            ws.close()
        finally:
            pp.stop()
            upstream.shutdown()
    cap = Capture.open(tmp_path / "cap")
    flows = {f["path"]: f for f in cap.flows().to_pylist()}
    model = flows["/v1/messages"]
    assert model["status"] == 200 and model["reason"].startswith("OK [REDACTED:")
    assert model["request_content_type"].startswith("application/json; x-debug=[REDACTED:")
    assert model["response_content_type"].startswith("application/json; x-debug=[REDACTED:")
    assert model["response_content_encoding"].startswith("x-debug, [REDACTED:")
    side = flows["/v1/organizations/x"]
    assert side["record_mode"] == "metadata" and side["client_version"].startswith("[REDACTED:")
    (tel,) = cap.telemetry().to_pylist()
    assert tel["user_agent"].startswith("probe/1.0 [REDACTED:")
    types = [m["msg_type"] for m in cap.ws_messages().to_pylist() if m["from_client"]]
    assert types[0].startswith("[REDACTED:") and types[1] == "response.create"
    for where, data in all_stored_bytes(tmp_path / "cap"):
        assert key.encode() not in data, where


class ValuesUpstream(http.server.BaseHTTPRequestHandler):
    """A model answering with a stream that is not SSE: Gemini's chunks as one JSON array
    (`streamGenerateContent` without `alt=sse`), Ollama's NDJSON and Bedrock's binary event
    frames, in network writes cut inside the secret."""

    protocol_version = "HTTP/1.1"
    bodies: dict[str, list[bytes]] = {}

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        parts = self.bodies[self.path]
        self.send_response(200)
        self.send_header("content-type", "application/x-ndjson" if self.path == "/api/chat" else
                         "application/vnd.amazon.eventstream" if "invoke" in self.path else "application/json")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for part in parts:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            self.wfile.flush()
            time.sleep(0.01)
        self.wfile.write(b"0\r\n\r\n")

    def log_message(self, *args) -> None:
        pass


def test_a_key_streamed_in_json_values_or_bedrock_frames_stays_off_disk(tmp_path, ctxtap_config):
    """A key a model echoes in pieces across the elements of a JSON-array stream, the lines of
    an NDJSON one or Bedrock's frames (no single element holds it) went to disk in pieces: only
    SSE and WebSocket deltas were joined, and Bedrock's base64 payloads were not read at all."""
    from tests.redaction.eventstream_frames import invoke_stream, streamed_text
    from tests.redaction.json_stream_bodies import _gemini_array, _ollama_chat

    key = "sk-ant-api03-" + "Jt5" * 30 + "AA"
    chunks = ["Your key is ", key[:9], key[9:31], key[31:70], key[70:], ", keep it safe."]
    gemini_path = "/v1beta/models/gemini-2.5-pro:streamGenerateContent"
    bedrock_path = "/model/anthropic.claude-sonnet-4-5-v1:0/invoke-with-response-stream"
    bodies = {gemini_path: _gemini_array(chunks), "/api/chat": _ollama_chat(chunks),
              bedrock_path: invoke_stream(chunks)}
    for name, body in bodies.items():
        middle = len(body) // 2
        starts = sorted({0, middle, *(i + 1 for i in range(len(body)) if body[i:i + 1] in b"}\n")})
        starts = [s for s in starts if s < len(body)]
        ValuesUpstream.bodies[name] = [body[a:b] for a, b in zip(starts, [*starts[1:], len(body)], strict=True)]
    upstream = http.server.ThreadingHTTPServer(("127.0.0.1", 0), ValuesUpstream)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    there = f"http://127.0.0.1:{upstream.server_address[1]}"
    pp = start_proxy(tmp_path / "cap", ctxtap_config,  # an Ollama server the user names as a model host
                     [f"generativelanguage.googleapis.com={there}", f"ollama.internal={there}",
                      f"bedrock-runtime.us-east-1.amazonaws.com={there}"],
                     ["--model-host", "ollama.internal=ollama"])
    try:
        for host, path in (("generativelanguage.googleapis.com", gemini_path), ("ollama.internal", "/api/chat"),
                           ("bedrock-runtime.us-east-1.amazonaws.com", bedrock_path)):
            client = HttpClient(f"https://{host}", proxy=pp.url, ca_file=pp.ca_bundle)
            answer = client.request("POST", path, b"{}", [("content-type", "application/json")]).body()
            assert answer == bodies[path]  # the client gets the original bytes
            client.close()
    finally:
        pp.stop()
        upstream.shutdown()
    for where, data in all_stored_bytes(tmp_path / "cap"):
        for piece in chunks[1:5]:
            assert piece.encode() not in data, (where, piece)
    cap = Capture.open(tmp_path / "cap")
    flows = {f["path"]: f for f in cap.flows().to_pylist()}
    assert {f["record_mode"] for f in flows.values()} == {"full"}
    stored = {path: cap.body(f["response_body_id"]) for path, f in flows.items()}
    gemini = json.loads(stored[gemini_path])  # still the JSON it was, the key replaced inside it
    text = "".join(e["candidates"][0]["content"]["parts"][0]["text"] for e in gemini)
    assert text.startswith("Your key is [REDACTED:anthropic-key:") and text.endswith(", keep it safe.")
    lines = [json.loads(line) for line in stored["/api/chat"].splitlines()]
    assert "".join(v["message"]["content"] for v in lines).startswith("Your key is [REDACTED:anthropic-key:")
    assert streamed_text(stored[bedrock_path]).startswith("Your key is [REDACTED:anthropic-key:")
