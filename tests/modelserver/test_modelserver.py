"""The scripted model server, over real loopback sockets."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from ctxtap.modelserver import Engine, Fault, ModelServer, Script
from ctxtap.modelserver.client import HttpClient, WsClient, WsRejected
from tests.modelserver.model_client import post

BASH = {
    "name": "Bash",
    "input_schema": {
        "type": "object",
        "properties": {"command": {"type": "string"}, "description": {"type": "string"}},
        "required": ["command"],
    },
}
BIG_SYSTEM = "You are a careful coding agent. " * 400  # ~12.8 KB: well above the 1024-token cache minimum


@pytest.fixture
def srv() -> Iterator[ModelServer]:
    with ModelServer() as server:
        yield server


def sse(raw: bytes) -> list[tuple[str | None, Any]]:
    events = []
    for block in raw.decode().split("\n\n"):
        name, data = None, []
        for line in block.splitlines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data.append(line[6:])
        if data:
            text = "\n".join(data)
            events.append((name, text if text == "[DONE]" else json.loads(text)))
    return events


def anthropic_body(
    messages: list[Any], *, stream: bool = True, system: str = BIG_SYSTEM, **extra: Any
) -> dict[str, Any]:
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "stream": stream,
        "tools": [BASH],
        "system": [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}],
        "messages": messages,
        **extra,
    }


def user(text: str) -> dict[str, Any]:
    return {
        "role": "user",
        "content": [{"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}],
    }


def anthropic_turn(
    srv: ModelServer, messages: list[Any], session: str, **kw: Any
) -> tuple[list[Any], dict[str, Any]]:
    """One streamed Anthropic request; returns (content blocks, final usage)."""
    status, _, raw = post(
        srv, "/v1/messages?beta=true", anthropic_body(messages, **kw), [("X-Claude-Code-Session-Id", session)]
    )
    assert status == 200
    blocks: dict[int, dict[str, Any]] = {}
    usage: dict[str, Any] = {}
    for _name, ev in sse(raw):
        if ev["type"] == "content_block_start":
            blocks[ev["index"]] = {**ev["content_block"], "_json": ""}
        elif ev["type"] == "content_block_delta" and ev["delta"]["type"] == "input_json_delta":
            blocks[ev["index"]]["_json"] += ev["delta"]["partial_json"]
        elif ev["type"] == "content_block_delta":
            blocks[ev["index"]]["text"] += ev["delta"]["text"]
        elif ev["type"] == "message_delta":
            usage = ev["usage"]
    content = []
    for i in sorted(blocks):
        block = blocks[i]
        raw_json = block.pop("_json")
        if block["type"] == "tool_use":
            block["input"] = json.loads(raw_json)
        content.append(block)
    return content, usage


def tool_results(content: list[Any], output: str = "ok") -> dict[str, Any]:
    """The tool_result message, with Claude Code's breakpoint on its last block."""
    blocks: list[dict[str, Any]] = [
        {"type": "tool_result", "tool_use_id": b["id"], "content": output}
        for b in content
        if b["type"] == "tool_use"
    ]
    blocks[-1]["cache_control"] = {"type": "ephemeral"}
    return {"role": "user", "content": blocks}


# -- Anthropic ---------------------------------------------------------------------------------


def test_anthropic_stream_tool_loop_with_parallel_calls(srv: ModelServer) -> None:
    messages = [user("list the directory")]
    content, usage = anthropic_turn(srv, messages, "s-loop")
    uses = [b for b in content if b["type"] == "tool_use"]
    assert [u["input"]["command"] for u in uses] == ["pwd", "ls"]
    assert all(
        u["name"] == "Bash" and u["id"].startswith("toolu_") and "description" in u["input"] for u in uses
    )
    assert usage["output_tokens"] > 1
    messages += [{"role": "assistant", "content": content}, tool_results(content)]
    content, _ = anthropic_turn(srv, messages, "s-loop")
    assert [b["type"] for b in content] == ["text"] and content[0]["text"]
    assert [e.kind for e in srv.exchanges] == ["tools", "final"]
    assert [e.step for e in srv.exchanges] == [1, 2]


def test_anthropic_stream_event_sequence(srv: ModelServer) -> None:
    status, headers, raw = post(srv, "/v1/messages", anthropic_body([user("hi")]))
    assert status == 200 and headers["content-type"].startswith("text/event-stream")
    assert headers["transfer-encoding"] == "chunked" and headers["request-id"].startswith("req_")
    events = sse(raw)
    assert all(name == ev["type"] for name, ev in events)
    types = [ev["type"] for _, ev in events]
    assert types[:2] == ["message_start", "ping"] and types[-2:] == ["message_delta", "message_stop"]
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"


def test_anthropic_json_and_count_tokens(srv: ModelServer) -> None:
    status, headers, raw = post(srv, "/v1/messages", anthropic_body([user("hi")], stream=False))
    body = json.loads(raw)
    assert status == 200 and headers["content-type"] == "application/json"
    assert int(headers["content-length"]) == len(raw)
    assert body["type"] == "message" and body["stop_reason"] == "tool_use"
    assert {
        "input_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
        "cache_creation",
    } <= set(body["usage"])
    status, _, raw = post(
        srv, "/v1/messages/count_tokens?beta=true", anthropic_body([user("hi")], stream=False)
    )
    assert status == 200 and json.loads(raw)["input_tokens"] > 1000


def test_side_request_without_tools_gets_text_and_does_not_advance(srv: ModelServer) -> None:
    body = {
        "model": "claude-haiku-4-5",
        "max_tokens": 64,
        "stream": False,
        "system": "You are naming a coding session so the user can pick it out of a long list of sessions. "
                  "Reply with JSON {\"title\": \"...\"} only.",
        "messages": [{"role": "user", "content": "<session>list files</session>"}],
    }
    status, _, raw = post(srv, "/v1/messages", body)
    assert status == 200
    text = json.loads(raw)["content"][0]["text"]
    assert json.loads(text)["title"]
    assert srv.exchanges[-1].kind == "side"


def test_title_request_that_does_not_ask_for_json_gets_a_bare_title(srv: ModelServer) -> None:
    """opencode's title generator: "You output ONLY a thread title"; it shows the answer verbatim."""
    body = {
        "model": "claude-haiku-4-5", "max_tokens": 48000, "stream": False,
        "system": [{"type": "text", "text": "You are a title generator. You output ONLY a thread title.\n"
                                            "<examples>\"look at @config.json\" → Config review</examples>"}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Generate a title for this conversation:"},
                                                  {"type": "text", "text": "list files"}]}],
    }
    text = json.loads(post(srv, "/v1/messages", body)[2])["content"][0]["text"]
    assert text and "\n" not in text and not text.lstrip().startswith("{")
    assert srv.exchanges[-1].kind == "side"


# -- prompt cache ------------------------------------------------------------------------------


def test_cache_read_grows_and_early_change_and_ttl(srv: ModelServer) -> None:
    messages = [user("list the directory")]
    content, u1 = anthropic_turn(srv, messages, "s-cache")
    assert u1["cache_read_input_tokens"] == 0 and u1["cache_creation_input_tokens"] > 1000
    assert u1["cache_creation"]["ephemeral_5m_input_tokens"] == u1["cache_creation_input_tokens"]
    messages += [{"role": "assistant", "content": content}, tool_results(content)]
    for m in messages[:-1]:
        for b in m["content"]:
            b.pop("cache_control", None)
    content, u2 = anthropic_turn(srv, messages, "s-cache")
    total1 = u1["input_tokens"] + u1["cache_creation_input_tokens"]
    assert u2["cache_read_input_tokens"] == total1  # read exactly up to the previous breakpoint
    assert u2["cache_creation_input_tokens"] > 0
    # A changed byte early in the system prompt: nothing before it is cached, so the read drops to 0.
    _, u3 = anthropic_turn(srv, messages, "s-cache", system="Now: 12:00\n" + BIG_SYSTEM)
    assert u3["cache_read_input_tokens"] == 0
    # Same prompt again: hit. Then jump 6 minutes: the 5-minute entries expired.
    _, u4 = anthropic_turn(srv, messages, "s-cache")
    assert u4["cache_read_input_tokens"] > u2["cache_read_input_tokens"]
    srv.clock_offset += 360
    _, u5 = anthropic_turn(srv, messages, "s-cache")
    assert u5["cache_read_input_tokens"] == 0 and u5["cache_creation_input_tokens"] > 0


def test_cache_is_per_session_and_needs_minimum_length(srv: ModelServer) -> None:
    anthropic_turn(srv, [user("a")], "s-one")
    _, other = anthropic_turn(srv, [user("a")], "s-two")
    assert other["cache_read_input_tokens"] == 0
    _, small1 = anthropic_turn(srv, [user("a")], "s-small", system="short")
    _, small2 = anthropic_turn(srv, [user("a")], "s-small", system="short")
    assert small1["cache_creation_input_tokens"] == small2["cache_read_input_tokens"] == 0


def test_cache_1h_ttl_and_implicit_openai_cache() -> None:
    now = [1000.0]
    engine = Engine(clock=lambda: now[0])
    body = anthropic_body([user("x")], stream=False)
    body["system"][0]["cache_control"] = {"type": "ephemeral", "ttl": "1h"}
    first = engine.respond("POST", "/v1/messages", {"x-claude-code-session-id": "h"}, body).body["usage"]
    assert first["cache_creation"]["ephemeral_1h_input_tokens"] > 0
    now[0] += 1800  # 30 minutes: past 5 minutes, within 1 hour
    second = engine.respond("POST", "/v1/messages", {"x-claude-code-session-id": "h"}, body).body["usage"]
    assert second["cache_read_input_tokens"] > 0
    # OpenAI-style implicit caching: no write counter, cached_tokens is a subset of input_tokens.
    req = {"model": "gpt-5", "instructions": BIG_SYSTEM, "input": "hi", "prompt_cache_key": "k"}
    a = engine.respond("POST", "/v1/responses", {}, req).body["usage"]
    b = engine.respond("POST", "/v1/responses", {}, {**req, "input": "hi again"}).body["usage"]
    assert a["input_tokens_details"]["cached_tokens"] == 0
    assert 0 < b["input_tokens_details"]["cached_tokens"] < b["input_tokens"]


# -- OpenAI Responses ----------------------------------------------------------------------------


def responses_body(**extra: Any) -> dict[str, Any]:
    tools = [
        {
            "type": "function",
            "name": "shell_command",
            "parameters": {
                "type": "object",
                "properties": {"command": {"type": "string"}},
                "required": ["command"],
            },
        }
    ]
    return {
        "model": "gpt-5.1-codex",
        "instructions": BIG_SYSTEM,
        "tools": tools,
        "prompt_cache_key": "r1",
        "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "list"}]}],
        **extra,
    }


def test_responses_json_and_sse(srv: ModelServer) -> None:
    status, _, raw = post(srv, "/backend-api/codex/responses", responses_body(reasoning={"effort": "low"}))
    body = json.loads(raw)
    assert status == 200 and body["object"] == "response" and body["status"] == "completed"
    calls = [o for o in body["output"] if o["type"] == "function_call"]
    assert [json.loads(c["arguments"]) for c in calls] == [{"command": "pwd"}, {"command": "ls"}]
    assert (
        body["output"][0]["type"] == "reasoning"
        and body["usage"]["output_tokens_details"]["reasoning_tokens"] > 0
    )
    status, _, raw = post(srv, "/v1/responses", responses_body(stream=True))
    events = sse(raw)
    assert [ev["sequence_number"] for _, ev in events] == list(range(len(events)))
    assert events[0][1]["type"] == "response.created" and events[-1][1]["type"] == "response.completed"
    assert "response.function_call_arguments.delta" in {ev["type"] for _, ev in events}


def test_responses_code_mode_exec_tool_and_compact(srv: ModelServer) -> None:
    tools_item = {
        "type": "additional_tools",
        "role": "developer",
        "tools": [
            {
                "type": "namespace",
                "name": "functions",
                "tools": [{"type": "custom", "name": "exec", "format": {"type": "grammar"}}],
            }
        ],
    }
    body = {"model": "gpt-5", "input": [tools_item, {"type": "message", "role": "user", "content": "list"}]}
    out = json.loads(post(srv, "/v1/responses", body)[2])["output"]
    assert [o["type"] for o in out] == ["message", "custom_tool_call", "custom_tool_call"]
    assert 'tools.exec_command({cmd: "pwd"})' in out[1]["input"]
    status, _, raw = post(
        srv,
        "/v1/responses/compact",
        {"model": "gpt-5", "input": body["input"]},
        [("x-openai-subagent", "compact")],
    )
    compacted = json.loads(raw)
    assert status == 200 and compacted["object"] == "response.compaction"
    assert compacted["output"][-1]["type"] == "compaction"


def test_responses_previous_response_id_over_http(srv: ModelServer) -> None:
    first = json.loads(post(srv, "/v1/responses", responses_body(store=True))[2])
    outputs = [
        {"type": "function_call_output", "call_id": o["call_id"], "output": "x"}
        for o in first["output"]
        if o["type"] == "function_call"
    ]
    second = json.loads(
        post(
            srv, "/v1/responses", {**responses_body(), "input": outputs, "previous_response_id": first["id"]}
        )[2]
    )
    assert second["output"][0]["type"] == "message"
    assert second["usage"]["input_tokens_details"]["cached_tokens"] > 0
    status, _, raw = post(srv, "/v1/responses", {**responses_body(), "previous_response_id": "resp_nope"})
    assert status == 400 and "not found" in json.loads(raw)["error"]["message"]


# -- WebSocket -------------------------------------------------------------------------------------


def ws_until_done(ws: WsClient) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    events = []
    while True:
        ev = ws.recv_json()
        events.append(ev)
        if ev["type"] in ("response.completed", "error"):
            return events, ev


def test_websocket_warmup_and_incremental_continuation(srv: ModelServer) -> None:
    ws = WsClient(
        srv.ws_url + "/v1/responses",
        headers=[("session-id", "ws1"), ("openai-beta", "responses_websockets=2026-02-06")],
    )
    ws.connect()
    base = responses_body()
    ws.send_json(
        {
            "type": "response.create",
            **{k: v for k, v in base.items() if k != "input"},
            "input": [],
            "generate": False,
        }
    )
    _, done = ws_until_done(ws)
    assert done["response"]["output"] == [] and srv.exchanges[-1].kind == "warmup"
    ws.send_json({"type": "response.create", **base, "previous_response_id": done["response"]["id"]})
    events, done = ws_until_done(ws)
    calls = [o for o in done["response"]["output"] if o["type"] == "function_call"]
    assert len(calls) == 2 and events[0]["type"] == "response.created"
    outputs = [{"type": "function_call_output", "call_id": c["call_id"], "output": "ok"} for c in calls]
    ws.send_json(
        {
            "type": "response.create",
            **{**base, "input": outputs},
            "previous_response_id": done["response"]["id"],
        }
    )
    _, done = ws_until_done(ws)
    assert done["response"]["output"][0]["type"] == "message"  # the chain was resolved: step 2 is due
    usage = done["response"]["usage"]
    assert usage["input_tokens_details"]["cached_tokens"] > 1000
    ws.send_json({"type": "response.create", **base, "previous_response_id": "resp_missing"})
    _, err = ws_until_done(ws)
    assert (
        err["type"] == "error"
        and err["status"] == 400
        and err["error"]["code"] == "previous_response_not_found"
    )
    ws.close()
    handshake = srv.received[0]
    assert handshake.is_websocket and handshake.header("session-id") == "ws1"
    frames = srv.frames(0)
    assert len(frames) == 4 and json.loads(frames[0])["generate"] is False
    assert srv.sent[0].status == 101 and srv.sent[0].frames


def test_websocket_permessage_deflate_negotiated(srv: ModelServer) -> None:
    sock = socket.create_connection(("127.0.0.1", srv.port))
    sock.sendall(
        b"GET /v1/responses HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
        b"Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n\r\n"
    )
    head = b""
    while b"\r\n\r\n" not in head:
        head += sock.recv(4096)
    sock.close()
    assert head.startswith(b"HTTP/1.1 101") and b"permessage-deflate" in head.lower()


def test_websocket_refused_with_426_and_injected_errors(srv: ModelServer) -> None:
    srv.websocket = False
    with pytest.raises(WsRejected) as info:
        WsClient(srv.ws_url + "/v1/responses").connect()
    assert info.value.status == 426
    srv.websocket = True
    with pytest.raises(WsRejected) as info:
        WsClient(srv.ws_url + "/v1/responses", headers=[("x-ctxtap-inject", "403")]).connect()
    assert info.value.status == 403
    ws = WsClient(srv.ws_url + "/v1/responses")
    ws.connect()
    ws.send_json(
        {"type": "response.create", **responses_body(), "client_metadata": {"x-ctxtap-inject": "429"}}
    )
    _, err = ws_until_done(ws)
    assert (
        err["status"] == 429
        and err["error"]["code"] == "rate_limit_exceeded"
        and err["headers"]["retry-after"] == "1"
    )
    ws.send_json(
        {"type": "response.create", **responses_body(), "client_metadata": {"x-ctxtap-inject": "cut=3"}}
    )
    got = [ws.recv_json() for _ in range(3)]
    with pytest.raises(ConnectionError):
        ws.recv_json()
    assert len(got) == 3 and srv.sent[-1].complete is False


# -- Chat Completions --------------------------------------------------------------------------------


def chat_body(**extra: Any) -> dict[str, Any]:
    tools = [
        {
            "type": "function",
            "function": {
                "name": "bash",
                "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
            },
        }
    ]
    return {
        "model": "kimi-for-coding",
        "tools": tools,
        "prompt_cache_key": "c1",
        "messages": [{"role": "system", "content": BIG_SYSTEM}, {"role": "user", "content": "list"}],
        **extra,
    }


def test_chat_json_and_stream_with_usage_chunk(srv: ModelServer) -> None:
    body = json.loads(post(srv, "/v1/chat/completions", chat_body())[2])
    msg = body["choices"][0]["message"]
    assert body["choices"][0]["finish_reason"] == "tool_calls"
    assert [json.loads(t["function"]["arguments"]) for t in msg["tool_calls"]] == [
        {"command": "pwd"},
        {"command": "ls"},
    ]
    raw = post(
        srv, "/coding/v1/chat/completions", chat_body(stream=True, stream_options={"include_usage": True})
    )[2]
    events = [ev for _, ev in sse(raw)]
    assert events[-1] == "[DONE]"
    usage_chunk = events[-2]
    assert usage_chunk["choices"] == [] and usage_chunk["usage"]["prompt_tokens_details"]["cached_tokens"] > 0
    assert all(e["usage"] is None for e in events[:-2])
    raw = post(srv, "/v1/chat/completions", chat_body(stream=True))[2]
    assert all("usage" not in e for e in [ev for _, ev in sse(raw)][:-1])


def test_chat_moonshot_usage_style_and_tool_messages(srv: ModelServer) -> None:
    body = chat_body(stream=True, stream_options={"include_usage": True})
    raw = post(srv, "/coding/v1/chat/completions", body, [("Host", "api.kimi.com")])[2]
    events = [ev for _, ev in sse(raw)]
    last = events[-2]
    assert last["choices"][0]["finish_reason"] == "tool_calls"
    assert "cached_tokens" in last["choices"][0]["usage"] and "usage" not in last
    calls = {}
    for ev in events[:-1]:
        for tc in ev["choices"][0]["delta"].get("tool_calls", []):
            calls.setdefault(tc["index"], tc.get("id"))
    messages = body["messages"] + [
        {
            "role": "assistant",
            "tool_calls": [
                {"id": cid, "type": "function", "function": {"name": "bash", "arguments": "{}"}}
                for cid in calls.values()
            ],
        },
        *[{"role": "tool", "tool_call_id": cid, "content": "out"} for cid in calls.values()],
    ]
    final = json.loads(
        post(
            srv,
            "/v1/chat/completions",
            {**body, "messages": messages, "stream": False},
            [("x-ctxtap-usage-style", "moonshot")],
        )[2]
    )
    assert final["choices"][0]["finish_reason"] == "stop" and "cached_tokens" in final["usage"]


# -- Gemini -------------------------------------------------------------------------------------------


def gemini_body() -> dict[str, Any]:
    decl = {
        "name": "run_shell_command",
        "parametersJsonSchema": {
            "type": "object",
            "properties": {"command": {"type": "string"}, "description": {"type": "string"}},
        },
    }
    return {
        "systemInstruction": {"parts": [{"text": BIG_SYSTEM}]},
        "tools": [{"functionDeclarations": [decl]}],
        "contents": [{"role": "user", "parts": [{"text": "list"}]}],
    }


def test_gemini_generate_stream_and_code_assist(srv: ModelServer) -> None:
    headers = [("x-goog-api-key", "AIza-test")]
    body = json.loads(post(srv, "/v1beta/models/gemini-2.5-pro:generateContent", gemini_body(), headers)[2])
    parts = body["candidates"][0]["content"]["parts"]
    assert [p["functionCall"]["args"]["command"] for p in parts if "functionCall" in p] == ["pwd", "ls"]
    assert body["modelVersion"] == "gemini-2.5-pro"
    raw = post(srv, "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", gemini_body(), headers)[2]
    chunks = [ev for _, ev in sse(raw)]
    assert chunks[-1]["candidates"][0]["finishReason"] == "STOP"
    assert (
        chunks[-1]["usageMetadata"]["cachedContentTokenCount"] > 0
    )  # second identical prompt from this client
    wrapped = {
        "model": "gemini-2.5-pro",
        "project": "p",
        "user_prompt_id": "u1",
        "request": {**gemini_body(), "session_id": "g1"},
    }
    raw = post(srv, "/v1internal:streamGenerateContent?alt=sse", wrapped)[2]
    envelopes = [ev for _, ev in sse(raw)]
    assert all("response" in e and "traceId" in e for e in envelopes)
    assert srv.exchanges[-1].session_key == "gemini:g1"
    count = json.loads(post(srv, "/v1beta/models/gemini-2.5-pro:countTokens", gemini_body())[2])
    assert count["totalTokens"] > 1000


# -- scripts -------------------------------------------------------------------------------------------


def test_custom_script_repeated_and_failing_calls_from_json() -> None:
    script = Script.load(
        json.dumps(
            {
                "steps": [
                    {"calls": ["ls"]},
                    {"calls": ["ls"]},
                    {"calls": ["cat missing.txt"]},
                    {"text": "done"},
                ]
            }
        )
    )
    engine = Engine(script)
    messages: list[Any] = [{"role": "user", "content": "go"}]
    seen = []
    for _ in range(4):
        body = engine.respond(
            "POST", "/v1/messages", {}, {"model": "m", "tools": [BASH], "messages": messages}
        ).body
        uses = [b for b in body["content"] if b["type"] == "tool_use"]
        if not uses:
            assert body["content"][0]["text"] == "done"
            break
        seen += [u["input"]["command"] for u in uses]
        messages += [
            {"role": "assistant", "content": body["content"]},
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": u["id"],
                        "content": "x",
                        "is_error": u["input"]["command"].startswith("cat"),
                    }
                    for u in uses
                ],
            },
        ]
    assert seen == ["ls", "ls", "cat missing.txt"]
    # A new user turn after the final answer starts the script again.
    messages += [
        {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
        {"role": "user", "content": "again"},
    ]
    body = engine.respond(
        "POST", "/v1/messages", {}, {"model": "m", "tools": [BASH], "messages": messages}
    ).body
    assert body["content"][0]["input"]["command"] == "ls"


def test_builtin_script_by_header_and_forced_tool(srv: ModelServer) -> None:
    body = json.loads(
        post(srv, "/v1/messages", anthropic_body([user("x")], stream=False), [("x-ctxtap-script", "quirks")])[
            2
        ]
    )
    assert [b["input"]["command"] for b in body["content"] if b["type"] == "tool_use"] == ["ls"]
    engine = Engine(
        Script.model_validate(
            {"steps": [{"calls": [{"command": "x", "tool": "Read", "arguments": {"file_path": "/a"}}]}]}
        )
    )
    tools = [BASH, {"name": "Read", "input_schema": {"type": "object"}}]
    out = engine.respond(
        "POST", "/v1/messages", {}, {"model": "m", "tools": tools, "messages": [user("x")]}
    ).body
    assert out["content"][0]["name"] == "Read" and out["content"][0]["input"] == {"file_path": "/a"}


# -- errors and faults ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "status", "check"),
    [
        ("/v1/messages", 529, lambda b: b["error"]["type"] == "overloaded_error"),
        ("/v1/messages", 402, lambda b: b["error"]["type"] == "billing_error"),
        ("/v1/messages", 403, lambda b: b["error"]["type"] == "permission_error"),
        ("/v1/responses", 401, lambda b: b["error"]["code"] == "invalid_api_key"),
        ("/v1/responses", 500, lambda b: b["error"]["type"] == "server_error"),
        ("/v1/chat/completions", 429, lambda b: b["error"]["code"] == "rate_limit_exceeded"),
        ("/v1beta/models/g:generateContent", 429, lambda b: b["error"]["status"] == "RESOURCE_EXHAUSTED"),
    ],
)
def test_injected_error_shapes(srv: ModelServer, path: str, status: int, check: Any) -> None:
    code, headers, raw = post(srv, path, {"model": "m", "messages": []}, [("x-ctxtap-inject", str(status))])
    assert code == status and check(json.loads(raw))
    if status in (429, 529):
        assert headers["retry-after"] == "1"


def test_fault_by_request_number_and_path_with_retry_after(srv: ModelServer) -> None:
    srv.inject(Fault(status=429, on_request=2, retry_after_s=3))
    srv.inject(status=500, path_contains="/chat/completions")
    assert post(srv, "/v1/messages", anthropic_body([user("a")], stream=False))[0] == 200
    code, headers, raw = post(srv, "/v1/messages", anthropic_body([user("a")], stream=False))
    assert code == 429 and headers["retry-after"] == "3" and headers["x-should-retry"] == "true"
    assert json.loads(raw)["error"]["type"] == "rate_limit_error"
    assert post(srv, "/v1/messages", anthropic_body([user("a")], stream=False))[0] == 200
    assert post(srv, "/v1/chat/completions", chat_body())[0] == 500
    assert post(srv, "/v1/chat/completions", chat_body())[0] == 200  # times=1
    assert [e.status for e in srv.exchanges] == [200, 429, 200, 500, 200]


def test_stream_cut_mid_way(srv: ModelServer) -> None:
    client = HttpClient(srv.url)
    resp = client.request(
        "POST",
        "/v1/messages",
        json.dumps(anthropic_body([user("a")])).encode(),
        [("x-ctxtap-inject", "cut=3")],
    )
    with pytest.raises(http.client.IncompleteRead):
        resp.raw.read()
    client.close()
    assert srv.sent[-1].complete is False and srv.sent[-1].body.count(b"data: ") == 3
    srv.inject(Fault(cut_after=1, api="chat"))
    client = HttpClient(srv.url)
    resp = client.request("POST", "/v1/chat/completions", json.dumps(chat_body(stream=True)).encode())
    with pytest.raises(http.client.IncompleteRead):
        resp.raw.read()
    client.close()


def test_error_event_inside_200_stream(srv: ModelServer) -> None:
    raw = post(srv, "/v1/messages", anthropic_body([user("a")]), [("x-ctxtap-inject", "stream-error=2")])[2]
    events = sse(raw)
    assert len(events) == 3 and events[-1] == (
        "error",
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    )
    raw = post(srv, "/v1/responses", responses_body(stream=True), [("x-ctxtap-inject", "stream-error=1")])[2]
    assert [ev["type"] for _, ev in sse(raw)] == ["response.created", "error", "response.failed"]


def test_malformed_input_gets_provider_400(srv: ModelServer) -> None:
    code, _, raw = post(srv, "/v1/messages", b"{not json")
    assert code == 400 and json.loads(raw)["error"]["type"] == "invalid_request_error"
    code, _, raw = post(srv, "/v1/chat/completions", b"[1, 2]")
    assert code == 400 and "error" in json.loads(raw)
    code, _, raw = post(srv, "/v1beta/models/g:generateContent", b"\xff\xfe")
    assert code == 400 and json.loads(raw)["error"]["status"] == "INVALID_ARGUMENT"
    code, _, raw = post(srv, "/v1/messages", {"model": "m", "messages": 5})
    assert code == 400 and "messages" in json.loads(raw)["error"]["message"]
    code, _, raw = post(
        srv, "/v1/chat/completions", {"model": "m", "messages": [5, "x", {"role": 3}], "tools": [1]}
    )
    assert code == 200  # odd items inside valid lists are skipped, never a crash
    code, _, raw = post(srv, "/v1/unknown", {})
    assert code == 404
    raw_bad = b"not zstd at all"
    client = HttpClient(srv.url)
    resp = client.request("POST", "/v1/messages", raw_bad, [("Content-Encoding", "zstd")])
    assert resp.status == 400 and "zstd" in resp.json()["error"]["message"]
    client.close()
    assert post(srv, "/v1/messages", anthropic_body([user("a")], stream=False))[0] == 200  # still serving


# -- transport details ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("encoding", ["zstd", "gzip", "br", "deflate"])
def test_compressed_request_bodies_are_decoded_and_raw_bytes_kept(srv: ModelServer, encoding: str) -> None:
    body = chat_body()
    code, _, raw = post(srv, "/v1/chat/completions", body, [("X-Custom-Case", "Kept")], encoding=encoding)
    assert code == 200 and json.loads(raw)["choices"][0]["message"]["tool_calls"]
    rec = srv.received[-1]
    assert json.loads(rec.body) == body and rec.json == body
    assert rec.raw_body != rec.body and rec.header("content-encoding") == encoding
    assert ("X-Custom-Case", "Kept") in rec.headers


def test_chunked_request_body_and_keepalive(srv: ModelServer) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", srv.port)
    payload = json.dumps(chat_body()).encode()
    conn.request(
        "POST",
        "/v1/chat/completions",
        body=iter([payload[:100], payload[100:]]),
        headers={"Content-Type": "application/json"},
        encode_chunked=True,
    )
    assert conn.getresponse().read() and srv.received[-1].json == chat_body()
    conn.request("POST", "/v1/chat/completions", body=payload, headers={"Content-Type": "application/json"})
    assert conn.getresponse().status == 200
    conn.close()
    assert srv.received[0].client == srv.received[1].client  # same keep-alive connection


def test_chunk_pacing_and_big_streams(srv: ModelServer) -> None:
    srv.chunk_delay_s = 0.01
    start = time.monotonic()
    raw = post(srv, "/v1/messages", anthropic_body([user("a")]))[2]
    assert time.monotonic() - start >= 0.01 * (len(sse(raw)) - 1)
    srv.chunk_delay_s = 0.0
    raw = post(srv, "/v1/chat/completions", chat_body(stream=True), [("x-ctxtap-big-stream", "200x1000")])[2]
    text = "".join(ev["choices"][0]["delta"].get("content") or "" for _, ev in sse(raw)[:-1] if ev["choices"])
    assert len(text) == 200_000
    big = Engine(Script.model_validate({"steps": [{"events": 50, "event_bytes": 64}]}))
    reply = big.respond("POST", "/v1/responses", {}, {"model": "m", "stream": True, "input": "x"})
    assert sum(1 for e in reply.events or [] if e.name == "response.output_text.delta") == 50


def test_parallel_clients(srv: ModelServer) -> None:
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            code, _, _ = post(
                srv, "/v1/messages", anthropic_body([user(f"w{i}")]), [("X-Claude-Code-Session-Id", f"p{i}")]
            )
            assert code == 200
        except BaseException as exc:  # collected and re-raised in the main thread
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(srv.exchanges) == 24


def test_only_loopback() -> None:
    with pytest.raises(ValueError):
        ModelServer(host="0.0.0.0")
    with ModelServer() as server:
        assert server.url.startswith("http://127.0.0.1:") and server.port > 0


def test_cli_prints_url_and_stops_on_sigterm() -> None:
    with subprocess.Popen(
        [sys.executable, "-m", "ctxtap.modelserver", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    ) as proc:
        try:
            url = (proc.stdout.readline() if proc.stdout else "").strip()
            assert url.startswith("http://127.0.0.1:")
            client = HttpClient(url)
            assert (
                client.request("POST", "/v1/chat/completions", json.dumps(chat_body()).encode()).status == 200
            )
            client.close()
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=5) == 0
        finally:
            if proc.poll() is None:
                proc.kill()


def test_claude_on_bedrock_and_vertex_is_served_as_those_platforms_answer():
    """The model named in the path; Bedrock's stream as AWS event-stream frames (each Anthropic event
    in base64), Vertex's as Anthropic's own SSE; a non-streamed invoke as the Messages JSON."""
    import base64

    from ctxtap.wire.eventstream import read_messages

    body = {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}
    with ModelServer(script="basic") as server:
        client = HttpClient(server.url)
        model = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
        streamed = client.request("POST", f"/model/{model.replace(':', '%3A')}/invoke-with-response-stream",
                                  json.dumps(body).encode(), [("content-type", "application/json")])
        assert ("content-type", "application/vnd.amazon.eventstream") in [(k.lower(), v) for k, v in streamed.headers]
        messages, complete = read_messages(streamed.body())
        assert complete and {m.headers[":event-type"] for m in messages} == {"chunk"}
        events = [json.loads(base64.b64decode(json.loads(m.payload)["bytes"])) for m in messages]
        assert events[0]["type"] == "message_start" and events[0]["message"]["model"] == model
        assert events[-1]["type"] == "message_stop"
        whole = client.request("POST", f"/model/{model}/invoke", json.dumps(body).encode(),
                               [("content-type", "application/json")])
        assert json.loads(whole.body())["type"] == "message"
        vertex = "/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929"
        sse = client.request("POST", f"{vertex}:streamRawPredict", json.dumps(body).encode(),
                             [("content-type", "application/json")]).body()
        assert sse.startswith(b"event: message_start") and b'"model": "claude-sonnet-4-5@20250929"' in sse
        client.close()


def test_bedrock_converse_is_served_in_its_own_shapes():
    """Converse (what the AI SDK's Bedrock provider speaks): the request read through the Anthropic
    family, the answer as Converse JSON or as ConverseStream frames named by `:event-type`."""
    from ctxtap.analysis.protocols.bedrock_converse import parse_response
    from ctxtap.wire.eventstream import read_messages

    body = {"messages": [{"role": "user", "content": [{"text": "list the files"}]}], "system": [{"text": "Be brief."}],
            "toolConfig": {"tools": [{"toolSpec": {"name": "bash", "description": "run a command", "inputSchema": {
                "json": {"type": "object", "properties": {"command": {"type": "string"}}}}}}]}}
    with ModelServer(script="basic") as server:
        client = HttpClient(server.url)
        path = "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse"
        streamed = client.request("POST", path + "-stream", json.dumps(body).encode(),
                                  [("content-type", "application/json")]).body()
        messages, complete = read_messages(streamed)
        kinds = [m.headers[":event-type"] for m in messages]
        assert complete and kinds[0] == "messageStart" and kinds[-2:] == ["messageStop", "metadata"]
        assert "contentBlockStart" in kinds and "contentBlockDelta" in kinds
        answer = parse_response(streamed, False)
        assert answer.parse_status == "ok" and [c.name for c in answer.tool_calls] == ["bash", "bash"]
        whole = json.loads(client.request("POST", path, json.dumps(body).encode(),
                                          [("content-type", "application/json")]).body())
        assert whole["stopReason"] == "tool_use" and whole["output"]["message"]["content"][1]["toolUse"]["name"] == "bash"
        assert whole["usage"]["totalTokens"] >= whole["usage"]["inputTokens"] > 0
        client.close()
