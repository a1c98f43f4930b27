"""The evidence tables' own fixture as HAR: an Anthropic session with secrets from several sources, a cut
result, a 429 retried, side traffic (a support module, no tests: test_evidence_tables.py and the report's
evidence and OpenTelemetry tests build their captures from it)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.scenarios import _entry

AWS_KEY = "AKIA" + "QYLPMN5HHHFPZAM2"  # a key-shaped dummy, split so scanners of this repo stay quiet
SESSION = "6a0f9c1e-2b7d-4c55-9e1a-0d3b5f7a9c21"


def _get(url: str, status: int, start: float, body: bytes = b"") -> dict:
    entry = _entry(url, [("user-agent", "claude-cli/9.9.9 (external, cli)")], body, status, [], b"{}", start, 0.05)
    entry["request"]["method"] = "GET" if not body else "POST"
    if not body:
        entry["request"].pop("postData")
    return entry


def _request(messages: list, response: dict, status: int, start: float, resp_headers=()) -> dict:
    headers = [("content-type", "application/json"), ("user-agent", "claude-cli/9.9.9 (external, cli)"),
               ("x-claude-code-session-id", SESSION), ("anthropic-version", "2023-06-01")]
    body = {"model": "claude-sonnet-4-5", "max_tokens": 4096,
            "tools": [{"name": "Bash", "description": "Run a shell command",
                       "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}],
            "system": [{"type": "text", "text": "You are a coding agent.\n\n# Environment\nWorking directory: "
                                                "/home/alice/work/demo\nPlatform: linux"}],
            "messages": messages}
    return _entry("https://api.anthropic.com/v1/messages", headers, json.dumps(body).encode(), status,
                  [("content-type", "application/json"), *resp_headers], json.dumps(response).encode(), start, 0.4)


def _reply(content: list, stop: str = "tool_use") -> dict:
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": content,
            "stop_reason": stop, "usage": {"input_tokens": 100, "cache_read_input_tokens": 1000,
                                         "cache_creation_input_tokens": 50, "output_tokens": 10}}


def _tool_use(call_id: str, command: str) -> dict:
    return {"type": "tool_use", "id": call_id, "name": "Bash", "input": {"command": command}}


def evidence_har(path: Path, *, retry_wait_s: float) -> Path:
    """Six model requests: a user task with a key pasted in, a `cat .env` whose result carries two
    secrets, a truncated result, a repeated call in a later turn, a 429 with Retry-After 3 s retried
    after `retry_wait_s`, plus side traffic to telemetry and a package registry."""
    t = 1_800_000_000.0
    task = f"Deploy with key {AWS_KEY} and mail me at alice.liddell@example.com when done."
    env_text = ("DATABASE_URL=postgres://app:Sup3rS3cretPw@db.internal:5432/app\n"
                "GITHUB_TOKEN=ghp_" + "R2dV7kLmN8pQ4sT6uW1xY3zA5bC9dE0fG2hJ\n")
    truncated = "line 1\nline 2\n[... 52311 bytes omitted]\nline 9000"
    u1 = {"role": "user", "content": [{"type": "text", "text": task}]}
    a1 = {"role": "assistant", "content": [_tool_use("toolu_01", "cat .env")]}
    r1 = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": env_text}]}
    a2 = {"role": "assistant", "content": [_tool_use("toolu_02", "cat big.log")]}
    r2 = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_02", "content": truncated}]}
    a3 = {"role": "assistant", "content": [{"type": "text", "text": "Done."}]}
    u2 = {"role": "user", "content": [{"type": "text", "text": "Now check the .env again please."}]}
    a4 = {"role": "assistant", "content": [_tool_use("toolu_03", "cat .env")]}
    r4 = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_03", "content": env_text}]}
    entries = [
        _get("https://api.anthropic.com/api/event_logging/v2/batch", 200, t - 1, b'{"events": []}'),
        _request([u1], _reply([_tool_use("toolu_01", "cat .env")]), 200, t),
        _request([u1, a1, r1], _reply([_tool_use("toolu_02", "cat big.log")]), 200, t + 2),
        _request([u1, a1, r1, a2, r2], _reply([{"type": "text", "text": "Done."}], "end_turn"), 200, t + 4),
        _get("https://registry.npmjs.org/@anthropic-ai/claude-code", 404, t + 5),
        _get("https://registry.npmjs.org/@anthropic-ai/claude-code", 404, t + 5.5),
        _request([u1, a1, r1, a2, r2, a3, u2], _reply([_tool_use("toolu_03", "cat .env")]), 200, t + 6),
        _request([u1, a1, r1, a2, r2, a3, u2, a4, r4],
                 {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}, 429, t + 8,
                 [("retry-after", "3")]),
        _request([u1, a1, r1, a2, r2, a3, u2, a4, r4], _reply([{"type": "text", "text": "Same."}], "end_turn"), 200,
                 t + 8.4 + retry_wait_s),
    ]
    path.write_text(json.dumps({"log": {"version": "1.2", "creator": {"name": "ctxtap-tests", "version": "1"},
                                        "entries": entries}}))
    return path
