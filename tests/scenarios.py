"""Scripted sessions with exact timing, written as HAR for `ctxtap import`.

The scripted model server's engine answers (tool calls, usage with a simulated
prompt cache) while a synthetic clock stands in for time, so a test can have a
6-minute gap without waiting. Each scenario is a list of `Turn`s driving one
Anthropic-style agent loop; the HAR carries the exact bodies and timestamps.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ctxtap.modelserver import Engine, Fault, Script

SESSION = "0b3c9d7e-1111-4222-8333-944455556666"
TOOLS = [
    {"name": "Bash", "description": "Run a shell command in the repository. " * 20,
     "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}},
    {"name": "Read", "description": "Read a file. " * 30,
     "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]}},
]
RULES = "You are a careful coding agent. Follow the repository conventions.\n" + (
    "Prefer small, verifiable steps and explain what you run. " * 120)
BILLING = "x-anthropic-billing-header: cc_version=9.9.9; cc_entrypoint=cli;"
TIMESTAMP_LINE = "Current time: 2026-11-29T10:03:00Z\n"

# The scripted model's loop: parallel calls, a repeated call, a failing call, then the answer.
LOOP = Script.model_validate({"steps": [
    {"calls": ["pwd", "ls"]},
    {"calls": ["cat README.md"]},
    {"calls": ["cat README.md"]},
    {"calls": ["cat missing.txt"]},
    {"calls": ["cat missing.txt"]},
    {"calls": ["wc -l data.csv"]},
    {"text": "All done: the repository has a README and a data file."},
]})

OUTPUTS = {
    "pwd": "/repo",
    "ls": "README.md\ndata.csv\nsrc",
    "cat README.md": "# Demo\nA demo repository.\n" * 20,
    "cat missing.txt": "cat: missing.txt: No such file or directory",
    "wc -l data.csv": "42 data.csv",
}


@dataclass
class Event:
    """Something that happens before a given model request (1-based request number)."""

    timestamp_from: int = 3  # the system rules gain a timestamp line from this request on
    gap_before: int = 6  # 6 minutes pass before this request
    gap_s: float = 360.0
    rate_limit_at: int = 7  # this request gets a 429 with Retry-After, and is retried
    title_after: int = 2  # a title side request after this request


@dataclass
class Recorded:
    entries: list[dict] = field(default_factory=list)
    requests: list[dict] = field(default_factory=list)  # what each model request was, for assertions


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _sse(reply) -> bytes:
    out = []
    for ev in reply.events:
        data = ev.data if isinstance(ev.data, str) else json.dumps(ev.data)
        out.append((f"event: {ev.name}\n" if ev.name else "") + f"data: {data}\n\n")
    return "".join(out).encode()


def _entry(url: str, headers: list[tuple[str, str]], body: bytes, status: int, resp_headers: list[tuple[str, str]],
           resp_body: bytes, start: float, duration: float) -> dict:
    return {
        "startedDateTime": _iso(start),
        "time": duration * 1000,
        "request": {"method": "POST", "url": url, "httpVersion": "HTTP/1.1",
                    "headers": [{"name": k, "value": v} for k, v in headers],
                    "postData": {"mimeType": "application/json", "text": body.decode()}},
        "response": {"status": status, "statusText": "", "httpVersion": "HTTP/1.1",
                     "headers": [{"name": k, "value": v} for k, v in resp_headers],
                     "content": {"size": len(resp_body), "mimeType": "", "text": resp_body.decode()}},
        "timings": {"send": 1, "wait": duration * 1000 / 2, "receive": duration * 1000 / 2},
    }


def _tool_calls(sse: bytes) -> list[dict]:
    calls: dict[int, dict] = {}
    for chunk in sse.decode().split("\n\n"):
        data = next((ln[6:] for ln in chunk.splitlines() if ln.startswith("data: ")), None)
        if not data:
            continue
        ev = json.loads(data)
        if ev.get("type") == "content_block_start" and ev["content_block"]["type"] == "tool_use":
            calls[ev["index"]] = {**ev["content_block"], "json": ""}
        elif ev.get("type") == "content_block_delta" and ev["delta"].get("type") == "input_json_delta":
            calls[ev["index"]]["json"] += ev["delta"]["partial_json"]
    return [{"id": c["id"], "name": c["name"], "input": json.loads(c["json"] or "{}")} for c in calls.values()]


def anthropic_session(events: Event | None = None, start: float = 1_800_000_000.0) -> Recorded:
    """One Claude-Code-like session: the LOOP script, with the given events."""
    events = events or Event()
    now = [start]
    engine = Engine(LOOP, clock=lambda: now[0], min_cache_tokens=1024)
    rec = Recorded()
    messages: list[dict] = [{"role": "user", "content": [
        {"type": "text", "text": "<system-reminder>\nAs you answer the user's questions, you can use the following "
                                 "context:\n# currentDate\nToday's date is 2026-11-29.\n</system-reminder>"},
        {"type": "text", "text": "Look around this repository and tell me what it contains."}]}]
    headers = [("content-type", "application/json"), ("x-api-key", "sk-ant-api03-" + "Z" * 90),
               ("user-agent", "claude-cli/9.9.9 (external, cli)"), ("x-claude-code-session-id", SESSION),
               ("anthropic-version", "2023-06-01")]
    n = 0
    while True:
        n += 1
        if n == events.gap_before:
            now[0] += events.gap_s
        rules = (TIMESTAMP_LINE if n >= events.timestamp_from else "") + RULES
        body = {"model": "claude-sonnet-4-5", "max_tokens": 32000, "stream": True, "tools": TOOLS,
                "system": [{"type": "text", "text": BILLING},
                           {"type": "text", "text": rules, "cache_control": {"type": "ephemeral"}}],
                "messages": _with_breakpoint(messages)}
        raw = json.dumps(body).encode()
        attempt_headers = list(headers)
        if n == events.rate_limit_at:
            engine.inject(Fault(status=429, retry_after_s=2.0))
            reply = engine.respond("POST", "/v1/messages?beta=true", attempt_headers, raw)
            rec.entries.append(_entry("https://api.anthropic.com/v1/messages?beta=true", attempt_headers, raw,
                                      reply.status, reply.headers, json.dumps(reply.body).encode(), now[0], 0.05))
            rec.requests.append({"n": n, "status": reply.status, "kind": "rate_limited"})
            now[0] += 2.5
        reply = engine.respond("POST", "/v1/messages?beta=true", attempt_headers, raw)
        sse = _sse(reply)
        rec.entries.append(_entry("https://api.anthropic.com/v1/messages?beta=true", attempt_headers, raw, 200,
                                  reply.headers, sse, now[0], 0.8))
        ex = engine.exchanges[-1]
        rec.requests.append({"n": n, "status": 200, "kind": ex.kind, "usage": ex.usage, "calls": ex.calls})
        now[0] += 0.8
        calls = _tool_calls(sse)
        if not calls:
            break
        messages.append({"role": "assistant", "content": [
            {"type": "tool_use", "id": c["id"], "name": c["name"], "input": c["input"]} for c in calls]})
        results = []
        for c in calls:
            command = c["input"].get("command", "")
            output = OUTPUTS.get(command, "ok")
            result = {"type": "tool_result", "tool_use_id": c["id"], "content": output}
            if "No such file" in output:
                result["is_error"] = True
            results.append(result)
        messages.append({"role": "user", "content": results})
        now[0] += 0.3  # the tools ran
        if n == events.title_after:
            _title(engine, rec, headers, now)
    return rec


def _with_breakpoint(messages: list[dict]) -> list[dict]:
    """Claude Code marks the newest message block as a cache breakpoint."""
    out = json.loads(json.dumps(messages))
    last = out[-1]["content"][-1]
    last["cache_control"] = {"type": "ephemeral"}
    return out


def _title(engine: Engine, rec: Recorded, headers: list[tuple[str, str]], now: list[float]) -> None:
    body = {"model": "claude-haiku-4-5", "max_tokens": 64, "stream": False,
            "system": [{"type": "text", "text": "You are naming a coding session so the user can pick it out of a "
                        "long list of sessions. Answer with JSON {\"title\": ...}."}],
            "messages": [{"role": "user", "content": "<session>Look around this repository</session>"}]}
    raw = json.dumps(body).encode()
    reply = engine.respond("POST", "/v1/messages?beta=true", headers, raw)
    rec.entries.append(_entry("https://api.anthropic.com/v1/messages?beta=true", headers, raw, 200,
                              [("content-type", "application/json")], json.dumps(reply.body).encode(), now[0], 0.2))
    rec.requests.append({"n": None, "status": 200, "kind": "title"})
    now[0] += 0.2


def write_har(recorded: Recorded, path: Path) -> Path:
    har: dict[str, Any] = {"log": {"version": "1.2", "creator": {"name": "ctxtap-tests", "version": "1"},
                                   "entries": recorded.entries}}
    path.write_text(json.dumps(har))
    return path
