"""`ctxtap replay --send --diagnostics`: ctxtap, as the sender, asks the provider why its cache missed; the
scripted model server answers in the providers' documented shapes (tests/fixtures/cache_diagnostics),
and the report sets the provider's verdict beside the bytes' and the client's."""

from __future__ import annotations

import json

from ctxtap.analysis.build import ensure_analysis
from ctxtap.analysis.cache.cachediag import ANTHROPIC_BETA
from ctxtap.analysis.db import connect, fetch_rows
from ctxtap.modelserver import Engine, ModelServer
from ctxtap.replay.cassette import load
from ctxtap.reports.html.render import render_report
from tests.replaycaptures import record, replay

FIXTURE_KEYS = {  # the field sets of the documented shapes (SOURCES.md beside the fixtures)
    "anthropic": {"cache_miss_reason"}, "anthropic_reason": {"type", "cache_missed_input_tokens"},
    "responses": {"type", "reason", "cache_missed_tokens", "comparison_reusable_tokens"},
}


def test_replay_send_diagnostics_records_the_providers_verdict_and_the_report_shows_it(
        tmp_path_factory, tmp_path, ctxtap_config) -> None:
    # Claude's demo session, a timestamp leading the system prompt from turn 2 on
    capture = record(tmp_path_factory.mktemp("diag-send"), ctxtap_config, "claude", turns=3, volatile_turn=2,
                     inject_error=False)
    recorded = load(capture)
    assert all(b'"diagnostics"' not in c.request_body for c in recorded.calls)  # the proxy never adds them
    out = tmp_path / "sent"
    with ModelServer() as server:
        result = replay(capture, out, ctxtap_config, "--send", "--upstream", server.url, "--yes", "--diagnostics",
                        agent=None)
        received = list(server.received)
    assert result.returncode == 0, result.stderr
    assert "asks the provider why its cache missed" in result.stderr
    asked = [r.json["diagnostics"] for r in received]
    assert asked[0] == {"previous_message_id": None}  # the first turn opts in
    assert all(a["previous_message_id"].startswith("msg_") for a in asked[1:])
    assert all(ANTHROPIC_BETA in (r.header("anthropic-beta") or "") for r in received)
    ensure_analysis(out)
    con = connect([out])
    rows = fetch_rows(con, "SELECT v.*, r.seq_in_thread FROM cache_verdicts v JOIN requests r "
                           "USING (capture_id, request_id) ORDER BY r.ts_start")
    assert rows[0]["provider_outcome"] == "not_compared"
    assert all(r["baseline_source"] == "provider-baseline" for r in rows[1:])
    changed = [r for r in rows if r["provider_reason"] == "system_changed"]
    assert changed and all(r["bytes_change"] == "system" and r["agreement"] == "agree" for r in changed)
    assert {r["provider_outcome"] for r in rows[1:]} <= {"miss", "no_divergence"}
    html = render_report([out], tmp_path / "report.html").path.read_text()
    assert "Cache: three witnesses of each miss" in html and "system_changed" in html


def test_the_scripted_server_answers_diagnostics_in_the_documented_shapes() -> None:
    engine = Engine(min_cache_tokens=10)
    rules = "You are careful. " * 300
    tools = [{"name": "Bash", "description": "run", "input_schema": {"type": "object"}}]

    def messages(system: str, previous: str | None, stream: bool = False):
        body = {"model": "claude-sonnet-4-5", "max_tokens": 64, "stream": stream, "tools": tools,
                "system": [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}],
                "messages": [{"role": "user", "content": "hi"}], "diagnostics": {"previous_message_id": previous}}
        return engine.respond("POST", "/v1/messages", [("content-type", "application/json")],
                              json.dumps(body).encode())
    first = messages(rules, None).body
    assert "diagnostics" in first and first["diagnostics"] is None  # beta_message.py: present, possibly null
    second = messages("Current time: 10:03\n" + rules, first["id"]).body
    reason = second["diagnostics"]["cache_miss_reason"]
    assert set(second["diagnostics"]) == FIXTURE_KEYS["anthropic"] and set(reason) == FIXTURE_KEYS["anthropic_reason"]
    assert reason["type"] == "system_changed" and reason["cache_missed_input_tokens"] > 1000
    streamed = messages("Current time: 10:03\n" + rules, second["id"], stream=True)
    assert streamed.events[0].data["message"]["diagnostics"] is None  # nothing diverged: on message_start
    unknown = messages(rules, "msg_never_answered").body["diagnostics"]
    assert unknown == {"cache_miss_reason": {"type": "previous_message_not_found"}}
    # a documented fixture replayed verbatim
    engine.forced_diagnostics.append({"cache_miss_reason": {"type": "tools_changed", "cache_missed_input_tokens": 7}})
    assert messages(rules, first["id"]).body["diagnostics"]["cache_miss_reason"]["type"] == "tools_changed"

    def responses(tool: str, compare: str | None):
        body = {"model": "gpt-5.6", "instructions": rules, "input": "What time is it?",
                "tools": [{"type": "function", "name": tool, "parameters": {"type": "object"}}]}
        if compare:
            body["prompt_cache_options"] = {"comparison_response_id": compare}
        return engine.respond("POST", "/v1/responses", [("content-type", "application/json")],
                              json.dumps(body).encode()).body
    base = responses("get_time", None)
    assert "prompt_cache_diagnostics" not in base  # not asked: not answered
    renamed = responses("get_date", base["id"])["prompt_cache_diagnostics"]  # the docs' own example
    assert set(renamed) == FIXTURE_KEYS["responses"]
    assert (renamed["type"], renamed["reason"]) == ("cache_miss", "tools_changed")
    assert responses("get_date", "resp_never")["prompt_cache_diagnostics"] == {"type": "comparison_response_not_found"}
