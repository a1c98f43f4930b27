"""A synthetic Claude-Code-shaped session as HAR (a support module: builders, no tests).

Real captures of 1000 requests are not in the corpus, so the report's size bound
and load time are checked on a generated session: HAR -> `ctxtap import` ->
analysis, exactly the path a user's HAR export takes. The session has what a
long real one has: a tool catalogue and a long system prompt resent every time,
a billing header in system[0], growing history with parallel tool
calls, a title request, a 429 and its retry, an error result and a repeat, a
volatile timestamp from one third on, a 6-minute gap (TTL expiry), periodic
compaction, one very large tool result and one hostile one (HTML/JS as text).

Also imported by `benchmarks/bench_report.py`.
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HOSTILE = "<script>alert(1)</script></script><img src=x onerror=alert(2)> & \"quotes\" 'single' \u2028"
SESSION_ID = "5e55a7e1-0000-4000-8000-00000000cafe"
CLAUDE_VERSION = "2.1.332"
TOOL_NAMES = ("Bash", "Read", "Grep", "Glob", "Edit", "Write", "WebFetch", "TodoWrite", "Task", "LS", "MultiEdit",
              "NotebookEdit")
COMPACT_EVERY = 60
TURN_EVERY = 40
BYTES_PER_TOKEN = 4
T0 = datetime(2026, 7, 27, 9, 0, tzinfo=UTC).timestamp()
COMPACTION_PROMPT = ("Your task is to create a detailed summary of the conversation so far. "
                     "CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.")


def _tools() -> list[dict[str, Any]]:
    words = "read write search list edit run fetch plan delegate files paths patterns output safely".split()
    tools = []
    for i, name in enumerate(TOOL_NAMES):
        desc = f"{name}: " + " ".join(words[(i + k) % len(words)] for k in range(50))
        tools.append({"name": name, "description": desc, "input_schema": {
            "type": "object", "properties": {"command": {"type": "string", "description": "what to run"},
                                             "path": {"type": "string"}}, "required": ["command"]}})
    return tools


SYSTEM_PROMPT = "You are an interactive CLI agent that helps users with software engineering tasks.\n\n" + "\n".join(
    f"- Rule {i}: keep changes small, explain the plan, run the tests, never push without asking." for i in range(45)
)


def _result_text(rng: random.Random, request: int, call: int, command: str) -> tuple[str, bool]:
    if request == 5 and call == 0:
        return HOSTILE, False
    if command.startswith("cat missing"):
        return f"cat: missing-{request}.txt: No such file or directory", True
    size = rng.choice((80, 150, 300, 450, 700, 1200))
    line = f"{command} -> line of output for request {request} call {call} "
    return (line * (size // len(line) + 1))[:size], False


class _Session:
    """Builds the main thread request by request, with Anthropic-style simulated cache usage."""

    def __init__(self, n: int, seed: int, compact_every: int = COMPACT_EVERY) -> None:
        self.n = n
        self.compact_every = compact_every
        self.rng = random.Random(seed)
        self.tools = _tools()
        self.messages: list[dict[str, Any]] = []
        self.entries: list[dict[str, Any]] = []
        self.t = T0
        self.turn = 0
        self.stamp: str | None = None
        self.prev_tokens = 0
        self.prev_prefix_ok = False
        self.big_at = min(n - 2, compact_every - 3) if n > 10 else -1
        self.last_command = ""

    # -- request shaping -------------------------------------------------------------------------

    def system(self) -> list[dict[str, Any]]:
        cch = "5e55a"  # fixed: with the real per-request hash the analyzer expects no reads at all
        prompt = (f"Current time: {self.stamp}\n" if self.stamp else "") + SYSTEM_PROMPT
        return [{"type": "text", "text": f"x-anthropic-billing-header: cc_version={CLAUDE_VERSION}.307; "
                                         f"cc_entrypoint=cli; cch={cch};"},
                {"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude."},
                {"type": "text", "text": prompt, "cache_control": {"type": "ephemeral"}}]

    def new_turn(self) -> None:
        self.turn += 1
        blocks = []
        if self.turn == 1:
            blocks.append({"type": "text", "text": "<system-reminder>\nAs you answer the user's questions, you can use "
                           "the following context:\n# gitStatus\nCurrent branch: main\n\nStatus:\n(clean)\n"
                           "</system-reminder>"})
        blocks.append({"type": "text", "text": f"Task {self.turn}: read the repository and fix failing test "
                                               f"number {self.turn}; do not access the network."})
        self.messages.append({"role": "user", "content": blocks})

    def with_breakpoint(self) -> list[dict[str, Any]]:
        out = []
        for i, msg in enumerate(self.messages):
            blocks = [dict(b) for b in msg["content"]]
            if i == len(self.messages) - 1:
                blocks[-1]["cache_control"] = {"type": "ephemeral"}
            out.append({"role": msg["role"], "content": blocks})
        return out

    def headers(self, retry: int = 0) -> list[dict[str, str]]:
        return [{"name": k, "value": v} for k, v in (
            ("content-type", "application/json"), ("user-agent", f"claude-cli/{CLAUDE_VERSION} (external, cli)"),
            ("x-claude-code-session-id", SESSION_ID), ("anthropic-version", "2023-06-01"),
            ("x-stainless-retry-count", str(retry)))]

    # -- entries ---------------------------------------------------------------------------------

    def add(self, body: dict[str, Any], status: int, response: dict[str, Any], duration_s: float,
            retry: int = 0, text: str | None = None) -> None:
        started = datetime.fromtimestamp(self.t, UTC).isoformat().replace("+00:00", "Z")
        self.entries.append({
            "startedDateTime": started, "time": duration_s * 1000,
            "request": {"method": "POST", "url": "https://api.anthropic.com/v1/messages?beta=true",
                        "httpVersion": "HTTP/1.1", "headers": self.headers(retry),
                        "postData": {"mimeType": "application/json", "text": text or json.dumps(body)}},
            "response": {"status": status, "statusText": "OK" if status == 200 else "Error", "httpVersion": "HTTP/1.1",
                         "headers": [{"name": "content-type", "value": "application/json"}],
                         "content": {"mimeType": "application/json", "text": json.dumps(response)}},
            "timings": {"send": 1, "wait": duration_s * 400, "receive": duration_s * 600},
        })
        self.t += duration_s

    def usage(self, text: str, cacheable: bool) -> dict[str, int]:
        total = len(text) // BYTES_PER_TOKEN
        read = min(self.prev_tokens, total - 3) if cacheable else 0
        write = total - 3 - read
        self.prev_tokens = total
        return {"input_tokens": 3, "cache_creation_input_tokens": write, "cache_read_input_tokens": read,
                "output_tokens": self.rng.randrange(40, 400)}

    def main_request(self, i: int) -> None:
        body = {"model": "claude-sonnet-4-5", "max_tokens": 32000, "stream": False, "tools": self.tools,
                "system": self.system(), "messages": self.with_breakpoint(),
                "metadata": {"user_id": json.dumps({"session_id": SESSION_ID})}}
        if i == 3:  # rate limited once, retried after a second
            self.add(body, 429, {"type": "error", "error": {"type": "rate_limit_error",
                                                            "message": "Number of requests has exceeded your rate limit"}},
                     0.05)
            self.t += 1.0
        cacheable = self.prev_prefix_ok
        text = json.dumps(body)  # the HAR's request text and the usage's size: dumped once
        final = (i + 1) % TURN_EVERY == 0 or i == self.n - 1
        content: list[dict[str, Any]] = [{"type": "text", "text": f"Step {i}: checking the next thing."}]
        calls = []
        if not final:
            for c in range(self.rng.choice((1, 1, 2, 3))):
                if i == self.big_at and c == 0:
                    command = "cat build.log"
                elif i == 6 and c == 0:
                    command = "echo '<script>alert(3)</script>'"
                elif self.rng.random() < 0.04:
                    command = f"cat missing-{i}.txt"
                elif self.rng.random() < 0.05 and self.last_command:
                    command = self.last_command
                else:
                    command = f"grep -n test_{i}_{c} src/module_{i % 17}.py"
                self.last_command = command
                call_id = f"toolu_{i:04d}_{c}"
                calls.append((call_id, command))
                content.append({"type": "tool_use", "id": call_id, "name": TOOL_NAMES[c % 3],
                                "input": {"command": command}})
        else:
            content = [{"type": "text", "text": f"Done with task {self.turn}: the failing test now passes."}]
        response = {"id": f"msg_{i:05d}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                    "content": content, "stop_reason": "tool_use" if calls else "end_turn",
                    "usage": self.usage(text, cacheable)}
        self.add(body, 200, response, self.rng.uniform(0.8, 3.0), retry=1 if i == 3 else 0, text=text)
        self.prev_prefix_ok = True
        self.messages.append({"role": "assistant", "content": content})
        if calls:
            results = []
            for c, (call_id, command) in enumerate(calls):
                if command == "cat build.log":
                    text, failed = ("build step ok: compiled module, ran checks, wrote artifacts\n" * 3000), False
                else:
                    text, failed = _result_text(self.rng, i, c, command)
                results.append({"type": "tool_result", "tool_use_id": call_id, "content": text, "is_error": failed})
            self.messages.append({"role": "user", "content": results})
            self.t += self.rng.uniform(0.05, 2.0)  # tool execution
        else:
            self.t += self.rng.uniform(5, 20)  # the user reads and types the next task

    def title_request(self) -> None:
        body = {"model": "claude-haiku-4-5", "max_tokens": 512, "stream": False,
                "system": [{"type": "text", "text": "You are naming a coding session so the user can pick it out of a "
                                                    "long list of sessions. Reply with JSON {\"title\": \"...\"} only."}],
                "messages": [{"role": "user", "content": "<session>\nUser: Task 1: read the repository\n</session>"}]}
        response = {"id": "msg_title", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
                    "content": [{"type": "text", "text": "{\"title\": \"Fix failing tests\"}"}], "stop_reason": "end_turn",
                    "usage": {"input_tokens": 60, "output_tokens": 9}}
        self.add(body, 200, response, 0.4)

    def compact(self, i: int) -> None:
        body = {"model": "claude-sonnet-4-5", "max_tokens": 20000, "stream": False, "system": self.system(),
                "messages": self.messages + [{"role": "user", "content": [{"type": "text", "text": COMPACTION_PROMPT}]}]}
        summary = (f"This session is being continued from a previous conversation that ran out of context. "
                   f"Summary up to request {i}: tasks 1..{self.turn} read the repository, ran grep, fixed tests.")
        response = {"id": f"msg_compact_{i}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                    "content": [{"type": "text", "text": summary}], "stop_reason": "end_turn",
                    "usage": {"input_tokens": len(json.dumps(body)) // BYTES_PER_TOKEN, "output_tokens": 300}}
        self.add(body, 200, response, 4.0)
        self.messages = [{"role": "user", "content": [{"type": "text", "text": summary}]}]
        self.new_turn()
        self.prev_prefix_ok = False

    def build(self) -> list[dict[str, Any]]:
        self.new_turn()
        for i in range(self.n):
            if i == self.n // 3 and self.n >= 6:
                self.stamp = "2026-07-27T09:30:00Z"
                self.prev_prefix_ok = False
            if i == self.n // 2 and self.n >= 6:
                self.t += 360  # past the 5-minute TTL
                self.prev_prefix_ok = False
            if i and i % self.compact_every == 0:
                self.compact(i)
            self.main_request(i)
            if i == 1:
                self.title_request()
            if self.messages[-1]["role"] == "assistant" and i != self.n - 1:
                self.new_turn()
        return self.entries


def synthetic_har(n_requests: int, seed: int = 7, compact_every: int = COMPACT_EVERY) -> dict[str, Any]:
    """A HAR 1.2 document with `n_requests` main-loop requests (plus a title, compactions and one 429);
    a smaller `compact_every` keeps the resent history, and so the bytes per request, shorter."""
    entries = _Session(n_requests, seed, compact_every).build()
    return {"log": {"version": "1.2", "creator": {"name": "ctxtap-synthetic", "version": "1"}, "entries": entries}}


def synthetic_capture(directory: Path, n_requests: int, compact_every: int = COMPACT_EVERY) -> Path:
    """Generate, import and analyse a synthetic session into `directory/capture` (reused when present).

    Needs CTXTAP_CONFIG_DIR pointing at a private config dir (the import uses its redaction key).
    """
    from ctxtap.analysis.build import ensure_analysis
    from ctxtap.capture.paths import redaction_key
    from ctxtap.ingest.importer import import_files

    capture = directory / "capture"
    if not (capture / "manifest.json").exists():
        directory.mkdir(parents=True, exist_ok=True)
        har = directory / "session.har"
        har.write_text(json.dumps(synthetic_har(n_requests, compact_every=compact_every)))
        import_files([har], capture, redaction_key())
        har.unlink()
    ensure_analysis(capture)
    return capture


def scripted_capture(directory: Path, config_dir: Path, turns: int = 3) -> Path:
    """The four simulated agents (Claude, Codex, Kimi, Gemini shapes) recorded through the real proxy
    to the scripted model server, analysed; reused when `directory/capture` already exists."""
    from ctxtap.analysis.build import ensure_analysis
    from ctxtap.demo import run_all
    from ctxtap.modelserver import ModelServer
    from tests.proxyharness import routes_to, start_proxy

    capture = directory / "capture"
    if not (capture / "manifest.json").exists():
        directory.mkdir(parents=True, exist_ok=True)
        with ModelServer() as server:
            proxy = start_proxy(capture, config_dir, routes_to(server.url))
            try:
                results = run_all(proxy=proxy.url, ca_file=proxy.ca_bundle, turns=turns)
            finally:
                proxy.stop()
        failed = {name: r.error for name, r in results.items() if not r.ok}
        assert not failed, failed
    ensure_analysis(capture)
    return capture


def corpus_captures_in(directory: Path) -> list[Path]:
    """The real-client corpus runs imported and analysed under `directory` (reused when present)."""
    from ctxtap.analysis.build import ensure_analysis
    from ctxtap.capture.paths import redaction_key
    from ctxtap.ingest.importer import import_files
    from tests import corpus

    out = []
    for run in corpus.RUNS:
        capture = directory / run.replace("/", "-")
        if not (capture / "manifest.json").exists():
            import_files([corpus.CORPUS_ROOT / run / "flows.mitm"], capture, redaction_key())
        ensure_analysis(capture)
        out.append(capture)
    return out
