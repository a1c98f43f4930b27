"""A client without rules is named from what the wire says, with the kind of evidence; its session
comes from a field named for a session, and its side requests join that session."""

from __future__ import annotations

import json

from ctxtap.analysis.parsing.parse import parse_exchanges
from ctxtap.analysis.threads.sessions import SessionAssigner
from ctxtap.capture.classify import classify_client, client_evidence
from tests.corpus import http_exchange


def _named(headers: list[tuple[str, str]]) -> tuple[str, str | None, str]:
    cc = classify_client(headers)
    return cc.client, cc.version, client_evidence(cc.rule)


def test_the_first_product_token_that_is_no_library_names_the_client() -> None:
    assert _named([("user-agent", "QwenCode/0.24.4 (linux; x64)")]) == ("qwen-code", "0.24.4", "user-agent")
    assert _named([("user-agent", "ai-sdk/openai/1.0.3 runtime/node.js/22 crush/0.9.1")]) == (
        "crush", "0.9.1", "user-agent")
    assert _named([("user-agent", "node-fetch/1.0 Bun/1.1 HelperBot/3.2")]) == ("helper-bot", "3.2", "user-agent")


def test_sdk_and_runtime_tokens_are_not_client_names() -> None:
    for ua in ("OpenAI/Python 1.40.0", "node", "python-requests/2.31", "axios/1.7.2", "undici", "Bun/1.1.0",
               "Deno/1.40", "curl/8.5.0", "AsyncOpenAI/Python 1.40.0", "Anthropic/JS 0.30.1", "litellm/1.110.2",
               "ai-sdk/anthropic/4.0.42 ai-sdk/provider-utils/5.0.30 runtime/bun/1.3.1",
               "OTel-OTLP-Exporter-JavaScript/0.214.0", "posthog-node/5.51.2"):
        client, version, evidence = _named([("user-agent", ua), ("x-stainless-lang", "js")])
        assert client.startswith("unknown") and version is None and evidence == "unattributed", ua


def test_behind_an_sdk_a_client_that_names_itself_to_the_model_is_named_so() -> None:
    sdk = [("user-agent", "ai-sdk/anthropic/4.0.42 runtime/bun/1.3.1")]
    body = json.dumps({"system": [{"type": "text", "text": "You are Zephyrix Code, a terminal agent. Be brief."}],
                       "messages": [{"role": "user", "content": "hi"}]}).encode()
    cc = classify_client(sdk, body)
    assert (cc.client, client_evidence(cc.rule)) == ("zephyrix-code", "self-name")
    for system in ("You are Claude, a large language model.", "You are a helpful assistant.", "You are GPT-5.",
                   "Act as an expert software developer."):
        cc = classify_client(sdk, json.dumps({"system": system}).encode())
        assert cc.client.startswith("unknown") and client_evidence(cc.rule) == "unattributed", system
    # a product token in the user agent still wins over the body
    assert classify_client([("user-agent", "QwenCode/0.24.4")], body).client == "qwen-code"


def test_openrouter_attribution_headers_name_an_app_behind_an_sdk() -> None:
    sdk = ("user-agent", "OpenAI/JS 4.67.0")
    assert _named([sdk, ("x-title", "Kilo Code"), ("http-referer", "https://kilocode.ai")]) == (
        "kilo-code", None, "x-title")
    assert _named([sdk, ("http-referer", "https://www.example-agent.dev/app")]) == (
        "example-agent.dev", None, "referer")


def test_a_known_client_stays_by_its_rule() -> None:
    assert _named([("user-agent", "claude-cli/2.0.1 (external, cli)")]) == ("claude-code", "2.0.1", "rule")


def _reply(text: str, model: str) -> dict:
    return {"id": "c", "object": "chat.completion", "model": model, "choices": [
        {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 50, "completion_tokens": 5, "total_tokens": 55}}


def test_a_session_header_and_a_side_request_at_the_end() -> None:
    tools = [{"type": "function", "function": {"name": "shell", "parameters": {"type": "object"}}}]
    task = "Rename the config loader and update its callers."
    loop_1 = {"model": "coder-1", "tools": tools, "messages": [
        {"role": "system", "content": "You are Helper, a coding agent."}, {"role": "user", "content": task}]}
    loop_2 = {**loop_1, "messages": [*loop_1["messages"], {"role": "assistant", "content": "Looking."},
                                     {"role": "user", "content": "go on"}]}
    summary = {"model": "small-1", "max_tokens": 200, "messages": [
        {"role": "system", "content": "Summarize this conversation in two sentences."},
        {"role": "user", "content": json.dumps(loop_2["messages"])}]}
    ua = ("user-agent", "HelperAgent/1.4.0 (darwin; arm64) node/22")

    def run(session: str, t0: float) -> list:
        h = [ua, ("x-helper-session-id", session), ("x-request-id", f"r-{t0}")]
        return [http_exchange("/v1/chat/completions", loop_1, _reply("Looking.", "coder-1"), headers=h,
                              flow_id=f"a{t0}", ts=t0),
                http_exchange("/v1/chat/completions", loop_2, _reply("Done.", "coder-1"), headers=h,
                              flow_id=f"b{t0}", ts=t0 + 5),
                http_exchange("/v1/chat/completions", summary, _reply("Renamed it.", "small-1"),
                              headers=[("user-agent", "OpenAI/JS 4.67.0")], flow_id=f"c{t0}", ts=t0 + 8)]

    calls = list(parse_exchanges(run("run-1", 1000.0) + run("run-2", 9000.0)))
    assert {(c.identity.client, c.identity.client_version) for c in calls[:2]} == {("helper-agent", "1.4.0")}
    assert calls[0].identity.session_id == "run-1" and calls[0].identity.evidence["header.x-helper-session-id"]
    assert calls[2].purpose.purpose in ("structured_side", "title")
    assigner = SessionAssigner()
    placed = [assigner.place(c, [b.content_hash for b in c.request.blocks]) for c in calls]
    sessions = [p.session_id for p in placed]
    assert sessions[0] == sessions[1] == sessions[2] != sessions[3]
    assert sessions[3] == sessions[4] == sessions[5]
    assert placed[2].thread_kind == "side"


def test_the_program_a_recorded_command_ran_names_a_client_nothing_on_the_wire_names() -> None:
    from ctxtap.analysis.threads.runfacts import program_of

    assert program_of(["/opt/venv/bin/python3", "/opt/venv/bin/aider", "--model", "gpt-4.1"]) == "aider"
    assert program_of(["python", "-m", "swe_tool.cli", "-t", "fix it"]) == "swe_tool"
    assert program_of(["npx", "-y", "@acme/coder@1.2.0", "run"]) == "coder"
    assert program_of(["node", "/usr/lib/node_modules/@acme/zed-agent/cli.js"]) == "zed-agent"
    assert program_of(["env", "FOO=1", "nice", "/usr/local/bin/helper", "go"]) == "helper"
    assert program_of([]) is None and program_of(None) is None


def test_named_by_the_recorded_command_only_where_the_wire_names_nobody() -> None:
    from ctxtap.analysis.threads import runfacts

    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi there, list the files"}]}).encode()
    sdk = http_exchange("/v1/chat/completions", body, headers=[
        ("user-agent", "OpenAI/Python 2.20.0"), ("content-type", "application/json")])
    own = http_exchange("/v1/chat/completions", body, headers=[
        ("user-agent", "HelperBot/3.2"), ("content-type", "application/json")])
    with runfacts.using({}, ["/opt/venv/bin/python3", "/opt/venv/bin/aider", "--message", "list the files"]):
        behind, named = (next(iter(parse_exchanges([ex]))).identity for ex in (sdk, own))
    assert (behind.client, client_evidence(behind.client_rule)) == ("aider", "argv")
    assert (named.client, client_evidence(named.client_rule)) == ("helper-bot", "user-agent")
    alone = next(iter(parse_exchanges([sdk]))).identity
    assert alone.client.startswith("unknown") and client_evidence(alone.client_rule) == "unattributed"
