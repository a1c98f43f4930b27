"""The simulated demo agents against the scripted model server (loopback only)."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from ctxtap.demo import AGENTS, FakeShell, run_agent, run_all
from ctxtap.modelserver import ModelServer


@pytest.fixture
def srv() -> Iterator[ModelServer]:
    with ModelServer() as server:
        yield server


def check_summary(summary: Any, turns: int = 3) -> None:
    assert summary.ok and summary.error is None
    assert len(summary.final_texts) == turns and all(summary.final_texts)
    assert summary.tool_calls == 2 * turns and summary.commands == ["pwd", "ls"] * turns
    assert summary.errors == [429] and summary.retries == 1
    assert any(c.kind == "side" and c.status == 200 for c in summary.calls)
    main = summary.main_usage()
    assert len(main) == 2 * turns
    # Reads grow inside the session; the timestamp put early in the prompt at turn 3 causes one miss.
    turn3_first = 4
    assert main[1]["cache_read"] > 0 and main[3]["cache_read"] > main[1]["cache_read"]
    assert main[turn3_first]["cache_read"] < main[turn3_first - 1]["cache_read"]
    assert main[turn3_first + 1]["cache_read"] > 0


@pytest.mark.parametrize("name", AGENTS)
def test_each_agent_completes_its_loop(srv: ModelServer, name: str) -> None:
    summary = run_agent(name, srv.url, turns=3)
    check_summary(summary)
    kinds = [e.kind for e in srv.exchanges]
    assert kinds.count("tools") == 3 and kinds.count("final") == 3 and kinds.count("error") == 1
    if name != "gemini":  # Gemini sends no session id: the cache falls back to the client address
        assert all(
            e.session_key.endswith(summary.session_id) for e in srv.exchanges if e.kind in ("tools", "final")
        )


def test_claude_wire_layout(srv: ModelServer) -> None:
    summary = run_agent("claude", srv.url, turns=2)
    model_calls = [r for r in srv.received if r.path.startswith("/v1/messages")]
    assert all(r.path == "/v1/messages?beta=true" for r in model_calls)
    first = model_calls[0]
    assert first.header("User-Agent") == "claude-cli/2.1.332 (external, cli)"
    assert first.header("X-Claude-Code-Session-Id") == summary.session_id
    assert first.header("x-api-key").startswith("sk-ant-api03-")
    body = first.json
    assert body["system"][0]["text"].startswith("x-anthropic-billing-header:")
    assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert body["messages"][0]["content"][0]["text"].startswith("<system-reminder>")
    assert body["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert json.loads(body["metadata"]["user_id"])["session_id"] == summary.session_id
    title = next(r.json for r in model_calls if "tools" not in r.json)
    assert title["max_tokens"] <= 512 and "naming a coding session" in title["system"][-1]["text"]
    retried = [r for r in model_calls if r.header("x-ctxtap-inject")]
    assert len(retried) == 1
    after = model_calls[model_calls.index(retried[0]) + 1]
    assert after.header("X-Stainless-Retry-Count") == "1" and after.header("x-ctxtap-inject") is None


def test_codex_websocket_frames_are_incremental(srv: ModelServer) -> None:
    summary = run_agent("codex", srv.url, turns=3)
    assert summary.transport == "ws"
    handshake = next(r for r in srv.received if r.is_websocket)
    for header in ("originator", "session-id", "thread-id", "x-codex-turn-metadata", "authorization"):
        assert handshake.header(header), header
    assert handshake.header("openai-beta") == "responses_websockets=2026-02-06"
    assert handshake.header("authorization").startswith("Bearer sk-proj-")
    frames = [json.loads(f) for f in srv.frames(handshake.index)]
    assert frames[0]["generate"] is False and frames[0]["input"] == []
    first_turn = frames[1]
    assert first_turn["previous_response_id"] and first_turn["input"][0]["type"] == "additional_tools"
    texts = [p["text"] for i in first_turn["input"] if i.get("type") == "message" for p in i["content"]]
    assert any(t.startswith("<environment_context>") for t in texts)
    assert any(t.startswith("# AGENTS.md instructions for ") for t in texts)
    outputs = frames[2]
    assert outputs["previous_response_id"] and {i["type"] for i in outputs["input"]} == {
        "custom_tool_call_output"
    }
    full = [f for f in frames[1:] if "previous_response_id" not in f]
    assert len(full) == 1 and "Current time:" in json.dumps(full[0]["input"][1])  # turn 3: prefix changed
    compact = next(r for r in srv.received if r.path.endswith("/responses/compact"))
    assert compact.header("x-openai-subagent") == "compact"


def test_codex_falls_back_to_sse_when_websocket_is_refused(srv: ModelServer) -> None:
    srv.websocket = False
    summary = run_agent("codex", srv.url, turns=3)
    check_summary(summary)
    assert summary.transport == "sse"
    posts = [r for r in srv.received if r.method == "POST" and r.path == "/v1/responses"]
    assert len(posts) == 7 and all(r.header("accept") == "text/event-stream" for r in posts)


def test_kimi_wire_layout(srv: ModelServer) -> None:
    summary = run_agent("kimi", srv.url, turns=2)
    calls = [r for r in srv.received if r.path == "/coding/v1/chat/completions"]
    first = calls[0]
    assert (
        first.header("User-Agent") == "kimi-code-cli/2.1.0"
        and first.header("X-Msh-Platform") == "kimi_code_cli"
    )
    body = first.json
    assert body["prompt_cache_key"] == f"session_{summary.session_id}" and body["stream_options"] == {
        "include_usage": True
    }
    assert body["messages"][0]["role"] == "system" and body["messages"][0]["content"].startswith(
        "You are Kimi Code CLI"
    )
    assert any(m["content"].startswith("<system-reminder>") for m in body["messages"] if m["role"] == "user")
    assert any(m["role"] == "tool" for m in calls[1].json["messages"])
    compaction = calls[-1].json
    assert "tools" not in compaction and compaction["messages"][0]["content"].startswith(
        "You are a helpful assistant that compacts"
    )


def test_gemini_wire_layout(srv: ModelServer) -> None:
    run_agent("gemini", srv.url, turns=2)
    stream_calls = [r for r in srv.received if ":streamGenerateContent" in r.path]
    assert all(r.path == "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse" for r in stream_calls)
    first = stream_calls[0]
    assert first.header("x-goog-api-key").startswith("AIza")
    assert first.header("User-Agent") == "GeminiCLI/0.61.0/gemini-2.5-pro (linux; x64)"
    body = first.json
    assert body["tools"][0]["functionDeclarations"][0]["name"] == "run_shell_command"
    assert body["systemInstruction"]["parts"][0]["text"].startswith("You are Gemini CLI")
    second = stream_calls[1].json
    assert any("functionResponse" in p for c in second["contents"] for p in c["parts"])
    side = next(r for r in srv.received if r.path.endswith("gemini-2.5-flash:generateContent"))
    assert side.json["generationConfig"]["responseMimeType"] == "application/json"


def test_fake_shell_never_runs_commands() -> None:
    shell = FakeShell()
    assert shell.run("pwd") == ("/home/alice/work/demo-repo", False)
    assert shell.run("cat missing.txt")[1] is True
    assert shell.run("rm -rf /") == ("bash: rm: command not found", True)


class _RelayProxy:
    """A tiny forward proxy (CONNECT tunnels and absolute-form requests) to prove proxy plumbing."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.requests: list[bytes] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(client,), daemon=True).start()

    def _handle(self, client: socket.socket) -> None:
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = client.recv(65536)
            if not chunk:
                return
            head += chunk
        line = head.split(b"\r\n", 1)[0]
        self.requests.append(line)
        method, target, _ = line.split(b" ", 2)
        if method == b"CONNECT":
            host, port = target.rsplit(b":", 1)
            upstream = socket.create_connection((host.decode(), int(port)))
            client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            rest = head.split(b"\r\n\r\n", 1)[1]
        else:  # absolute-form: http://host:port/path -> origin-form
            authority, _, path = target.split(b"//", 1)[1].partition(b"/")
            host, port = authority.rsplit(b":", 1)
            upstream = socket.create_connection((host.decode(), int(port)))
            rest = head.replace(target, b"/" + path, 1)
        upstream.sendall(rest)
        threading.Thread(target=self._pipe, args=(upstream, client), daemon=True).start()
        self._pipe(client, upstream)

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()

    def close(self) -> None:
        self.sock.close()


def test_agents_through_a_proxy_in_parallel(srv: ModelServer) -> None:
    proxy = _RelayProxy()
    try:
        results = run_all(srv.url, proxy=f"http://127.0.0.1:{proxy.port}", turns=3, parallel=True)
    finally:
        proxy.close()
    for summary in results.values():
        check_summary(summary)
    assert any(r.startswith(b"CONNECT ") for r in proxy.requests)  # codex WebSocket tunnel
    assert any(r.startswith(b"POST http://127.0.0.1:") for r in proxy.requests)  # absolute-form HTTP


def test_run_all_reports_a_broken_agent_without_raising() -> None:
    results = run_all("http://127.0.0.1:9", agents=["kimi"], turns=1, timeout=2)
    assert results["kimi"].ok is False and results["kimi"].error
