"""Evidence tables: exposures, network, retries and the tool-result contract on tool_calls.

Own fixtures are HAR files built by evidence_support.py (imported and analysed through the real
CLI); the shared corpus's long runs (planted `config/settings.env` credentials, real side traffic)
are checked where present.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ctxtap.analysis.db import connect
from ctxtap.analysis.threads.toolloop import read_result
from tests.analysis.evidence_support import AWS_KEY, evidence_har
from tests.proxyharness import run_ctxtap

PLACEHOLDER = re.compile(r"\[REDACTED:[a-z0-9-]+:[0-9a-f]{6}\]|<[a-z-]+-[0-9a-f]{6}>")


def rows(con, query: str, *params) -> list[dict]:
    cur = con.execute(query, list(params))
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]


# --- the tool-result contract, rule by rule --------------------------------------------------


GEMINI_SHELL_OK = ("Command: ls\nDirectory: (root)\nOutput: README.md\nsrc\nError: (none)\nExit Code: 0\n"
                   "Signal: (none)\nBackground PIDs: (none)\nProcess Group PGID: 4242")


@pytest.mark.parametrize(("text", "is_error", "status", "rule"), [
    (GEMINI_SHELL_OK, None, "ok", "result.exit-code-line"),
    (json.dumps({"output": GEMINI_SHELL_OK}), None, "ok", "result.exit-code-line"),
    (GEMINI_SHELL_OK.replace("Exit Code: 0", "Exit Code: 2"), None, "error", "result.exit-code-line"),
    ("Error: (none)\nall good", None, "ok", "result.no-error-signal"),
    ("Process exited with code 1\nboom", None, "error", "result.exit-code-line"),
    ('{"exit_code": 0, "stdout": "fine"}', None, "ok", "result.json-exit-code"),
    ('{"exit_code": 127, "stdout": ""}', None, "error", "result.json-exit-code"),
    ('{"success": false, "message": "nope"}', None, "error", "result.json-success"),
    ('{"success": true}', None, "ok", "result.json-success"),
    ('{"isError": true, "content": "x"}', None, "error", "result.json-is-error"),
    ("cat: missing.txt: No such file or directory", True, "error", "result.client-error-flag"),
    ("cat: missing.txt: No such file or directory", None, "error", "result.error-text"),
    ("The user doesn't want to proceed with this tool use.", True, "denied", "result.denied-text"),
    ("Tool execution denied by policy.", None, "denied", "result.denied-text"),
    ("cat: secret.txt: Permission denied\nExit code 1", None, "error", "result.exit-code-line"),
    ("", None, "unknown", "result.empty"),
    ("hello", None, "ok", "result.no-error-signal"),
])
def test_result_status_by_rule(text, is_error, status, rule):
    reading = read_result(text, is_error)
    assert (reading.status, reading.rule) == (status, rule)


def test_exit_code_zero_with_error_none_is_ok_not_error():
    """The bug of the issue: a shell result saying `Error: (none)` and `Exit Code: 0` counted as an error."""
    reading = read_result(GEMINI_SHELL_OK, None)
    assert reading.status == "ok" and reading.exit_code == 0


@pytest.mark.parametrize(("text", "rule", "region", "omitted", "original", "unit"), [
    ("head of output\n[... 4096 bytes omitted]\ntail of output", "truncation.n-omitted", "middle", 4096, None, "bytes"),
    ("Total output lines: 900\n\nline 1\n[... omitted 700 of 900 lines ...]\nline 900", "truncation.omitted-of",
     "middle", 700, 900, "lines"),
    ("some text\u20261,234 tokens truncated\u2026more text", "truncation.n-truncated", "middle", 1234, None, "tokens"),
    ("first lines\n(output truncated)", "truncation.marker", "tail", None, None, None),
    ("[... 20 lines truncated ...]\nlast lines", "truncation.n-omitted", "head", 20, None, "lines"),
    ("first lines\nOutput too large (45.5KB). Full output saved to: /tmp/out.txt", "truncation.too-large", "tail",
     None, 46592, "bytes"),
])
def test_truncation_markers(text, rule, region, omitted, original, unit):
    reading = read_result(text, None)
    assert reading.status == "truncated" and reading.truncated
    assert (reading.truncation_rule, reading.truncation_region) == (rule, region)
    assert (reading.omitted_amount, reading.original_amount, reading.amount_unit) == (omitted, original, unit)


def test_truncated_error_stays_an_error_but_is_marked_truncated():
    reading = read_result("Traceback (most recent call last):\n[... 900 bytes omitted]\nValueError", None)
    assert reading.status == "error" and reading.truncated and reading.omitted_amount == 900


def test_no_marker_no_truncation():
    # an ellipsis in ordinary output is not a cut
    assert not read_result("def f(...):\n    ...\n", None).truncated


# --- own fixture: an Anthropic session with secrets from several sources -----------------------


@pytest.fixture(scope="module")
def evidence_captures(tmp_path_factory, ctxtap_config) -> dict[str, Path]:
    out = {}
    for name, wait in (("honoured", 3.5), ("ignored", 0.5)):
        tmp = tmp_path_factory.mktemp(f"evidence-{name}")
        har = evidence_har(tmp / "session.har", retry_wait_s=wait)
        cap = tmp / "cap"
        run_ctxtap(["import", str(har), "--out", str(cap), "--redact", "pii"], ctxtap_config)
        run_ctxtap(["analyze", str(cap)], ctxtap_config)
        out[name] = cap
    return out


def test_exposures_name_each_secret_its_source_and_first_request(evidence_captures):
    con = connect([evidence_captures["honoured"]])
    summary = {r["kind"]: r for r in rows(con, "SELECT * FROM exposure_summary")}
    # the key pasted into the task: user text, from the first request on, carried by all six
    aws = summary["aws-access-key"]
    assert aws["category"] == "credential" and aws["first_source"] == "user text"
    assert aws["first_seq_in_session"] == 0 and aws["requests_carrying"] == 6 and aws["hosts"] == "api.anthropic.com"
    # the .env read by a tool: a tool result of `cat .env`, from the second request on
    for kind in ("github-token", "url-password"):
        assert summary[kind]["first_source"] == "tool result of cat .env"
        assert summary[kind]["first_segment_source"] == "tool_result"
        assert summary[kind]["first_seq_in_session"] == 1 and summary[kind]["requests_carrying"] == 5
    # the same secret read again in the second turn: one placeholder, two placements
    assert summary["github-token"]["n_placements"] == 2
    # a pseudonymised email in the user's text
    assert summary["email"]["category"] == "personal" and summary["email"]["first_source"] == "user text"
    # personal data the environment carries (the home path) is attributed to the environment
    assert any(r["first_source"] == "environment" for r in summary.values() if r["category"] == "personal")


def test_exposures_hold_placeholders_never_values(evidence_captures):
    con = connect([evidence_captures["honoured"]])
    for row in rows(con, "SELECT * FROM exposures"):
        assert PLACEHOLDER.fullmatch(row["placeholder"])
        text = json.dumps(row, default=str)
        assert AWS_KEY not in text and "Sup3rS3cretPw" not in text and "alice.liddell@example.com" not in text


def test_network_lists_non_model_destinations(evidence_captures):
    con = connect([evidence_captures["honoured"]])
    net = {(r["host"], r["path"]): r for r in rows(con, "SELECT * FROM network")}
    assert set(net) == {("api.anthropic.com", "/api/event_logging/v2/batch"),
                        ("registry.npmjs.org", "/@anthropic-ai/claude-code")}
    telemetry = net[("api.anthropic.com", "/api/event_logging/v2/batch")]
    assert telemetry["category"] == "telemetry" and telemetry["is_provider_host"] and telemetry["method"] == "POST"
    assert telemetry["request_bytes"] == len(b'{"events": []}')
    registry = net[("registry.npmjs.org", "/@anthropic-ai/claude-code")]
    assert registry["category"] == "package_registry" and registry["n_flows"] == 2 and registry["statuses"] == "404 x2"
    hosts = rows(con, "SELECT * FROM network_hosts ORDER BY host")
    assert [h["host"] for h in hosts] == ["api.anthropic.com", "registry.npmjs.org"]


def test_tool_calls_contract_in_a_capture(evidence_captures):
    con = connect([evidence_captures["honoured"]])
    calls = {r["call_id"]: r for r in rows(con, "SELECT * FROM tool_calls")}
    big = calls["toolu_02"]
    assert big["result_status"] == "truncated" and big["truncated"] and big["omitted_amount"] == 52311
    assert big["amount_unit"] == "bytes" and big["truncation_region"] == "middle"
    # the same call in a new user turn is not a repeat
    assert calls["toolu_01"]["turn_index"] == 1 and calls["toolu_03"]["turn_index"] == 2
    assert calls["toolu_03"]["repeat_of"] is None
    # overlap of start and finish is not known from the wire: never claimed
    assert all(c["concurrent"] is None for c in calls.values())


@pytest.mark.parametrize(("name", "honoured"), [("honoured", True), ("ignored", False)])
def test_retry_after_honoured_or_not(evidence_captures, name, honoured):
    con = connect([evidence_captures[name]])
    (retry,) = rows(con, "SELECT * FROM retries")
    assert retry["status"] == 429 and retry["error_layer"] == "rate_limit" and retry["retry_after_s"] == 3.0
    assert retry["retry_request_id"] is not None and retry["attempt"] == 1 and retry["same_context"]
    assert retry["honoured"] is honoured and retry["retry_failed"] is False
    assert retry["delay_s"] == pytest.approx(3.5 if honoured else 0.5, abs=0.1)


# --- the shared corpus's long runs ------------------------------------------------------------


@pytest.fixture(scope="module")
def long_runs(tmp_path_factory, ctxtap_config) -> dict[str, Path]:
    from tests.conftest import REAL_CLIENTS

    if not (REAL_CLIENTS / "long").is_dir():
        pytest.skip("real-client corpus ../shared/real-clients is not present in this checkout")
    out = {}
    for run in ("claude", "codex-sse", "kimi-code"):
        cap = tmp_path_factory.mktemp(f"long-{run}") / "cap"
        run_ctxtap(["import", str(REAL_CLIENTS / "long" / run / "flows.mitm"), "--out", str(cap)], ctxtap_config)
        run_ctxtap(["analyze", str(cap)], ctxtap_config)
        out[run] = cap
    return out


PLANTED = {"aws-access-key", "aws-secret-key", "github-token", "url-password", "slack-webhook"}


@pytest.mark.parametrize(("run", "host"), [("claude", "api.anthropic.com"), ("codex-sse", "api.openai.com"),
                                           ("kimi-code", "api.kimi.com")])
def test_long_runs_show_the_planted_credentials(long_runs, run, host):
    con = connect([long_runs[run]])
    summary = rows(con, "SELECT * FROM exposure_summary WHERE category = 'credential'")
    assert {r["kind"] for r in summary} == PLANTED
    for r in summary:
        assert r["first_source"] == "tool result of cat config/settings.env" and r["hosts"] == host
        # read at step 3 (request 4, 0-based 3), then carried by the rest of the loop
        assert r["first_seq_in_session"] == 3 and r["requests_carrying"] == 3
        assert PLACEHOLDER.fullmatch(r["placeholder"])


def test_long_runs_planted_values_never_in_the_dataset(long_runs):
    from tests.conftest import REAL_CLIENTS

    raw = (REAL_CLIENTS / "long" / "claude" / "flows.mitm").read_bytes()
    secrets = set(re.findall(rb"AKIA[0-9A-Z]{16}", raw)) | set(re.findall(rb"ghp_[0-9A-Za-z]{36}", raw))
    assert secrets, "the corpus should carry its planted credentials"
    con = connect([long_runs["claude"]])
    dumped = json.dumps(rows(con, "SELECT * FROM exposures"), default=str).encode()
    assert not any(s in dumped for s in secrets)


@pytest.mark.parametrize(("run", "expected"), [
    ("claude", {("api.anthropic.com", "/api/event_logging/v2/batch", "telemetry")}),
    ("codex-sse", {("ab.chatgpt.com", "/otlp/v1/metrics", "telemetry"),
                   ("api.github.com", "/repos/openai/plugins", "forge_api"),
                   ("chatgpt.com", "/backend-api/codex/models", "client_config")}),
    ("kimi-code", {("telemetry-logs.kimi.com", "/v1/event", "telemetry")}),
])
def test_long_runs_network(long_runs, run, expected):
    con = connect([long_runs[run]])
    net = rows(con, "SELECT * FROM network")
    assert expected <= {(r["host"], r["path"], r["category"]) for r in net}
    # model calls are never listed as network
    assert not any(r["path"].endswith(("/v1/messages", "/v1/responses", "/chat/completions")) for r in net)


# --- the analyzer's Anthropic scenario: a failing call retried, a 429 retried after its Retry-After -------


@pytest.fixture(scope="module")
def scenario_capture(tmp_path_factory, ctxtap_config) -> Path:
    from tests.scenarios import anthropic_session, write_har

    tmp = tmp_path_factory.mktemp("evidence-scenario")
    cap = tmp / "cap"
    run_ctxtap(["import", str(write_har(anthropic_session(), tmp / "s.har")), "--out", str(cap)], ctxtap_config)
    run_ctxtap(["analyze", str(cap)], ctxtap_config)
    return cap


def test_a_call_retried_after_an_error_is_linked_as_its_second_attempt(scenario_capture):
    con = connect([scenario_capture])
    calls = rows(con, "SELECT * FROM tool_calls WHERE command = 'cat missing.txt' ORDER BY result_request_id")
    first, second = calls
    assert first["result_status"] == "error" and first["status_rule"] == "result.client-error-flag"
    assert (first["attempt"], first["attempt_of"]) == (1, None)
    assert (second["attempt"], second["attempt_of"]) == (2, first["call_id"])
    # an ok call repeated is a repeat, not an attempt
    readme = rows(con, "SELECT * FROM tool_calls WHERE command = 'cat README.md' ORDER BY result_request_id")
    assert readme[1]["repeat_of"] == readme[0]["call_id"] and readme[1]["attempt"] == 1
    (loop,) = rows(con, "SELECT * FROM tool_loop")
    assert loop["n_retried_after_error"] == 1 and loop["n_truncated"] == 0


def test_the_scenario_429_waited_its_retry_after(scenario_capture):
    con = connect([scenario_capture])
    (retry,) = rows(con, "SELECT * FROM retries")
    assert retry["status"] == 429 and retry["retry_after_s"] == 2.0
    assert retry["delay_s"] == pytest.approx(2.45, abs=0.05) and retry["honoured"] is True


def test_gemini_shell_results_recorded_through_the_proxy_read_by_their_exit_code(demo_capture):
    """The simulated Gemini CLI's shell tool answers `Error: (none)` / `Exit Code: 0` on success: ok, not error."""
    con = connect([demo_capture])
    calls = rows(con, "SELECT t.* FROM tool_calls t JOIN requests r USING (capture_id, request_id) "
                      "WHERE r.client = 'gemini-cli' AND t.result_status <> 'missing'")
    assert calls
    texts = {r["call_id"]: r for r in calls}
    for c in texts.values():
        assert c["status_rule"] == "result.exit-code-line", c
        assert c["result_status"] == ("ok" if c["exit_code"] == 0 else "error")
    assert any(c["exit_code"] == 0 and c["result_status"] == "ok" for c in calls)
