"""The cache's three witnesses (bytes, provider diagnostics, client claim), subagents against their
parent, cold batches in flight, cache-key variants, the two verdict fixes and write pricing.

Provider responses are the documented shapes in tests/fixtures/cache_diagnostics (SOURCES.md says
where each comes from); captures are built in process (HAR entries and telemetry through the
capture writer, then the analysis), so the whole file runs in seconds.
"""

from __future__ import annotations

import json
from array import array
from pathlib import Path

import pytest

from ctxtap.analysis.build import ensure_analysis
from ctxtap.analysis.cache.cachecheck import CacheRule, ReqView, cache_verdict, expected_reads
from ctxtap.analysis.cache.prices import PriceTable
from ctxtap.analysis.db import connect, fetch_rows
from ctxtap.analysis.parsing.models import TokenCount, Usage
from ctxtap.analysis.protocols.anthropic import anthropic_usage
from ctxtap.analysis.protocols.anthropic import parse_response as parse_messages
from ctxtap.analysis.protocols.openai_responses import parse_response as parse_responses
from ctxtap.analysis.protocols.openai_responses import responses_usage
from ctxtap.capture.events import TelemetryEvent
from ctxtap.capture.finalize import finalize
from ctxtap.capture.manifest import Manifest
from ctxtap.capture.paths import redaction_key
from ctxtap.capture.writer import CaptureWriter
from ctxtap.ingest.importer import har_events
from tests.scenarios import _entry

FIXTURES = Path(__file__).parents[1] / "fixtures" / "cache_diagnostics"
SESSION = "7c1b2a90-5555-4aaa-8bbb-0123456789ab"
START = 1_800_000_000.0
RULES = "You are a careful coding agent. Follow the repository conventions and explain each step. " * 90
PACKET = "Search src/ for TODO comments and report every file with its count of TODO lines."
MESSAGES_URL = "https://api.anthropic.com/v1/messages?beta=true"


def _tool(name: str) -> dict:
    return {"name": name, "description": f"The {name} tool. " * 40,
            "input_schema": {"type": "object", "properties": {"x": {"type": "string"}}}}


TOOLS = [_tool("Bash"), _tool("Read"), _tool("Task")]


def _headers(extra: list[tuple[str, str]] = ()) -> list[tuple[str, str]]:
    return [("content-type", "application/json"), ("user-agent", "claude-cli/9.9.9 (external, cli)"),
            ("x-claude-code-session-id", SESSION), ("anthropic-version", "2023-06-01"), *extra]


def _messages_body(messages: list[dict], *, system: str = RULES, tools: list[dict] = TOOLS,
                   model: str = "claude-sonnet-4-5", diagnostics: object = "absent") -> bytes:
    body = {"model": model, "max_tokens": 4096, "stream": False, "tools": tools,
            "system": [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}],
            "messages": messages}
    if diagnostics != "absent":
        body["diagnostics"] = {"previous_message_id": diagnostics}
    return json.dumps(body).encode()


def _message(msg_id: str, text: str = "ok", *, read: int = 0, write: int = 0, uncached: int = 12,
             calls: list[dict] = ()) -> bytes:
    content = [{"type": "text", "text": text}, *calls]
    return json.dumps({"id": msg_id, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                       "content": content, "stop_reason": "tool_use" if calls else "end_turn", "stop_sequence": None,
                       "usage": {"input_tokens": uncached, "cache_creation_input_tokens": write,
                                 "cache_read_input_tokens": read, "output_tokens": 9}}).encode()


def _har(url: str, body: bytes, response: bytes, start: float, duration: float = 0.8,
         headers: list[tuple[str, str]] | None = None, sse: bool = False) -> dict:
    kind = "text/event-stream" if sse else "application/json"
    return _entry(url, headers or _headers(), body, 200, [("content-type", kind)], response, start, duration)


def _analyse(out: Path, entries: list[dict], telemetry: list[TelemetryEvent] = ()) -> object:
    writer = CaptureWriter(out, redaction_key(), Manifest(capture_id=out.name, source="import"))
    for seq, entry in enumerate(entries):
        for event in har_events(entry, seq, f"har-{seq}", {}, False):
            writer.submit(event)
    for event in telemetry:
        writer.submit(event)
    writer.flush()
    writer.close()
    finalize(out)
    ensure_analysis(out)
    return connect([out])


def _by_order(con, view: str) -> list[dict]:
    return fetch_rows(con, f"SELECT v.* FROM {view} v JOIN requests r USING (capture_id, request_id) "
                           "ORDER BY r.ts_start")


# --- the provider's verdict, read from what it answered ---------------------------------------------

# (fixture, parser, outcome, reason, missed tokens); sources beside each in fixtures/cache_diagnostics/SOURCES.md
PARSED = [
    # anthropic-sdk-python types/beta/beta_message.py + beta_cache_miss_tools_changed.py: JSON message
    ("anthropic_message_tools_changed.json", "messages", "miss", "tools_changed", 4821),
    # beta_raw_message_start_event.py: a stream's diagnostics ride on message_start's message
    ("anthropic_stream_system_changed.sse", "messages", "miss", "system_changed", 2610),
    # beta_diagnostics.py: `cache_miss_reason: null` = the comparison is still pending
    ("anthropic_message_pending.json", "messages", "pending", None, None),
    # beta_cache_miss_previous_message_not_found.py: type only
    ("anthropic_message_not_found.json", "messages", "baseline_not_found", "previous_message_not_found", None),
    # beta_message.py: diagnostics "present (possibly null)"
    ("anthropic_message_no_divergence.json", "messages", "no_divergence", None, None),
    # openai-node resources/responses/responses.ts: Response.CacheMiss; the docs' renamed-tool example
    ("responses_cache_miss_tools_changed.json", "responses", "miss", "tools_changed", 1536),
    # responses.ts: Response.CacheHit
    ("responses_cache_hit.json", "responses", "hit", None, None),
    # responses.ts: the final response object of a stream (response.completed) carries the field
    ("responses_stream_input_changed.sse", "responses", "miss", "input_changed", 2048),
    # responses.ts: Response.ComparisonResponseNotFound
    ("responses_not_found.json", "responses", "baseline_not_found", None, None),
]


@pytest.mark.parametrize(("name", "api", "outcome", "reason", "missed"), PARSED)
def test_provider_diagnostics_are_read_from_json_and_streams(name, api, outcome, reason, missed) -> None:
    raw = (FIXTURES / name).read_bytes()
    sse = name.endswith(".sse")
    parsed = parse_messages(raw, sse, "generate") if api == "messages" else parse_responses(raw, sse)
    assert parsed.parse_status == "ok" and parsed.response_id
    diag = parsed.cache_diagnostics
    assert diag is not None and (diag.outcome, diag.reason, diag.missed_tokens) == (outcome, reason, missed)
    assert json.loads(diag.raw) is None or isinstance(json.loads(diag.raw), dict)


def test_a_response_without_diagnostics_has_none() -> None:
    assert parse_messages(_message("msg_plain"), False, "generate").cache_diagnostics is None


# --- three witnesses ----------------------------------------------------------------------------------


def _witness_entries() -> list[dict]:
    task = [{"role": "user", "content": "Look around this repository and tell me what it contains."}]
    turn2 = [*task, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "Go on, please."}]
    turn3 = [*turn2, {"role": "assistant", "content": "The tool list changed, so the prefix was written again."},
             {"role": "user", "content": "And now?"}]
    entries = [
        # first turn opts in (`previous_message_id: null`): diagnostics null (beta_diagnostics_param.py)
        _har(MESSAGES_URL, _messages_body(task, diagnostics=None),
             (FIXTURES / "anthropic_message_no_divergence.json").read_bytes(), START),
        # the system prompt gains a line, yet the provider's fixture says tools_changed
        _har(MESSAGES_URL, _messages_body(turn2, system="Current time: 10:03\n" + RULES,
                                          diagnostics="msg_01DiagNoDivergence000000"),
             (FIXTURES / "anthropic_message_tools_changed.json").read_bytes(), START + 2),
        # the system changes again and the provider (streamed) says system_changed: they agree
        _har(MESSAGES_URL, _messages_body(turn3, system="Current time: 10:04\n" + RULES,
                                          diagnostics="msg_01DiagToolsChanged0000000"),
             (FIXTURES / "anthropic_stream_system_changed.sse").read_bytes(), START + 4, sse=True),
    ]
    return entries


def test_provider_says_tools_changed_where_the_bytes_saw_the_system_change_is_a_disagreement(
        tmp_path, ctxtap_config) -> None:
    rows = _by_order(_analyse(tmp_path / "witness", _witness_entries()), "cache_verdicts")
    first, second, third = rows
    assert first["provider_outcome"] == "not_compared" and first["agreement"] == "unknown"
    assert (second["bytes_change"], second["provider_reason"], second["provider_change"]) == (
        "system", "tools_changed", "tools")
    assert second["baseline_source"] == "provider-baseline" and second["provider_missed_tokens"] == 4821
    assert second["agreement"] == "disagree" and "bytes and provider differ" in second["agreement_detail"]
    assert "system[0] changed" in second["bytes_detail"]
    assert (third["bytes_change"], third["provider_change"], third["agreement"]) == ("system", "system", "agree")


def test_the_report_and_the_live_request_page_show_the_three_witnesses(tmp_path, ctxtap_config) -> None:
    import http.client

    from ctxtap.reports.html.render import render_report
    from ctxtap.reports.live.server import LiveUI
    from ctxtap.reports.live.sources import CaptureSource

    cap = tmp_path / "shown"
    _analyse(cap, _witness_entries())
    html = render_report([cap], tmp_path / "report.html").path.read_text()
    section = html[html.index("Cache: three witnesses of each miss"):]
    section = section[:section.index("</details>")]
    assert section.index(">disagree<") < section.index(">agree<")  # disagreements first
    assert "tools_changed, 4,821 tokens missed" in section and "system[0] changed" in section
    ui = LiveUI([CaptureSource(cap)])
    ui.bind(0)
    ui.start_thread()
    try:
        second = fetch_rows(connect([cap]), "SELECT request_id FROM requests ORDER BY ts_start")[1]["request_id"]
        con = http.client.HTTPConnection("127.0.0.1", ui.port, timeout=30)
        con.request("GET", f"/c/0/request?id={second}", headers={"Host": f"127.0.0.1:{ui.port}",
                                                                 "Cookie": f"{ui.cookie}={ui.token}"})
        page = con.getresponse().read().decode()
    finally:
        ui.stop()
    assert "Cache: three witnesses" in page and ">disagree<" in page
    assert "tools_changed" in page and "bytes and provider differ" in page


def test_openai_renamed_tool_agrees_with_the_bytes(tmp_path, ctxtap_config) -> None:
    """The docs' own example: the same request with the function tool renamed get_time -> get_date."""
    def body(tool: str, compare: str | None) -> bytes:
        req = {"model": "gpt-5.6", "instructions": RULES, "input": "What time is it?",
               "tools": [{"type": "function", "name": tool, "parameters": {"type": "object"}}]}
        if compare:
            req["prompt_cache_options"] = {"comparison_response_id": compare}
        return json.dumps(req).encode()
    baseline = json.dumps({"id": "resp_diag_baseline_0000", "object": "response", "status": "completed",
                           "model": "gpt-5.6", "output": [], "usage": {
                               "input_tokens": 1610, "input_tokens_details": {"cached_tokens": 0},
                               "output_tokens": 9, "output_tokens_details": {"reasoning_tokens": 0}}}).encode()
    headers = [("content-type", "application/json"), ("user-agent", "my-app/1.0")]
    url = "https://api.openai.com/v1/responses"
    con = _analyse(tmp_path / "openai", [
        _har(url, body("get_time", None), baseline, START, headers=headers),
        _har(url, body("get_date", "resp_diag_baseline_0000"),
             (FIXTURES / "responses_cache_miss_tools_changed.json").read_bytes(), START + 2, headers=headers),
    ])
    second = _by_order(con, "cache_verdicts")[1]
    assert (second["bytes_change"], second["provider_reason"], second["agreement"]) == (
        "tools", "tools_changed", "agree")
    assert second["provider_reusable_tokens"] == 1536


def _logs(ts: float, attributes: dict) -> TelemetryEvent:
    """An OTLP/JSON logs export carrying one record with these attributes."""
    attrs = [{"key": k, "value": {"stringValue": v}} for k, v in attributes.items()]
    doc = {"resourceLogs": [{"resource": {"attributes": [{"key": "service.name", "value": {
        "stringValue": "claude-code"}}]}, "scopeLogs": [{"logRecords": [{
            "timeUnixNano": str(int(ts * 1e9)), "body": {"stringValue": "claude_code.api_request"},
            "attributes": attrs}]}]}]}
    return TelemetryEvent(seq=0, ts=ts, source="otlp-receiver", flow_id=None, path="/v1/logs", signal="logs",
                          content_type="application/json", content_encoding=None, user_agent="otel",
                          body=json.dumps(doc).encode())


def test_the_clients_claim_is_read_from_its_telemetry(tmp_path, ctxtap_config) -> None:
    task = [{"role": "user", "content": "Look around this repository and tell me what it contains."}]
    turn2 = [*task, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "Go on, please."}]
    entries = [
        _har(MESSAGES_URL, _messages_body(task), _message("msg_claim_1", write=2200), START),
        _har(MESSAGES_URL, _messages_body(turn2, tools=[TOOLS[1], TOOLS[0], TOOLS[2]]),
             _message("msg_claim_2", write=2300), START + 2),
    ]
    # Claude Code's `prompt_cache.last_miss_cause` after the miss, naming its session
    claim = _logs(START + 3.5, {"event.name": "api_request", "session.id": SESSION,
                                "prompt_cache.last_miss_cause": "tools_changed"})
    rows = _by_order(_analyse(tmp_path / "claim", entries, [claim]), "cache_verdicts")
    assert rows[0]["client_claim"] is None
    second = rows[1]
    assert (second["client_claim"], second["client_change"], second["bytes_change"]) == (
        "tools_changed", "tools", "tools")
    assert second["client_source"] == "api_request: prompt_cache.last_miss_cause"
    assert second["agreement"] == "agree"
    # the transcript's form (`message.diagnostics.cache_miss_reason`) names its message: matched by id
    nested = _logs(START + 9, {"message.id": "msg_claim_1", "message.diagnostics.cache_miss_reason":
                               json.dumps({"type": "system_changed", "cache_missed_input_tokens": 10})})
    rows = _by_order(_analyse(tmp_path / "claim2", entries, [nested]), "cache_verdicts")
    assert rows[0]["client_claim"] == "system_changed" and rows[1]["client_claim"] is None


# --- across threads and in flight ---------------------------------------------------------------------


def test_a_subagent_whose_prefix_parts_from_its_parents_at_the_tool_list_is_named(tmp_path, ctxtap_config) -> None:
    task = [{"role": "user", "content": "Count the TODO comments in this repository, per file."}]
    other = "Read every module under lib/ and list the public functions each one defines, with a line each."
    spawn = {"type": "tool_use", "id": "toolu_spawn", "name": "Task",
             "input": {"description": "count TODOs", "prompt": PACKET}}
    spawn2 = {"type": "tool_use", "id": "toolu_spawn2", "name": "Task",
              "input": {"description": "list functions", "prompt": other}}
    after = [*task, {"role": "assistant", "content": [spawn, spawn2]},
             {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_spawn", "content": "3"},
                                          {"type": "tool_result", "tool_use_id": "toolu_spawn2", "content": "f"}]}]
    entries = [
        _har(MESSAGES_URL, _messages_body(task), _message("msg_parent_1", calls=[spawn, spawn2], write=2400), START),
        # one child keeps Bash and offers Glob where the parent has Read and Task
        _har(MESSAGES_URL, _messages_body([{"role": "user", "content": PACKET}], tools=[TOOLS[0], _tool("Glob")]),
             _message("msg_child_1", write=300, read=0), START + 1.5),
        # the other keeps Bash and Read and drops Task: its system prompt comes where the parent's Task is
        _har(MESSAGES_URL, _messages_body([{"role": "user", "content": other}], tools=TOOLS[:2]),
             _message("msg_child_2", write=300, read=0), START + 1.6),
        _har(MESSAGES_URL, _messages_body(after), _message("msg_parent_2", read=2400, write=40), START + 4),
    ]
    con = _analyse(tmp_path / "subagent", entries)
    first, second = fetch_rows(con, "SELECT * FROM subagent_prefix ORDER BY shared_prefix_blocks")
    assert first["parent_match"] == "delegation-call" and first["parent_call_id"] == "toolu_spawn"
    assert (first["divergent_change"], first["child_divergent_path"], first["parent_divergent_path"]) == (
        "tools", "tools[1]", "tools[1]")
    assert first["shared_prefix_blocks"] == 1 and first["shared_prefix_tokens"] > 0 and first["same_model"]
    assert first["divergence_summary"].startswith("tools[1] changed")
    assert second["parent_call_id"] == "toolu_spawn2" and second["shared_prefix_blocks"] == 2
    assert (second["divergent_change"], second["child_divergent_path"], second["parent_divergent_path"]) == (
        "tools", "system[0]", "tools[2]")


def test_a_cold_batch_of_three_parallel_requests_and_its_extra_cost(tmp_path, ctxtap_config) -> None:
    task = [{"role": "user", "content": "Review the three modules in parallel."}]
    # three requests with one cached prefix start within 0.2 s; each runs 3 s and writes it again
    entries = [_har(MESSAGES_URL, _messages_body(task), _message(f"msg_cold_{k}", write=2500, uncached=12),
                    START + 0.1 * k, duration=3.0) for k in range(3)]
    # a fourth starts after the first write landed: it reads, and is no member
    entries.append(_har(MESSAGES_URL, _messages_body(task), _message("msg_warm", read=2500, uncached=12),
                        START + 5, duration=1.0))
    con = _analyse(tmp_path / "cold", entries)
    rows = fetch_rows(con, "SELECT * FROM cold_batches ORDER BY started_after_writer_s")
    assert [r["role"] for r in rows] == ["writer", "member", "member"]
    assert {r["n_in_batch"] for r in rows} == {3} and len({r["batch_id"] for r in rows}) == 1
    members = rows[1:]
    assert all(r["writer_left_s"] > 2.5 and r["cache_read_tokens"] == 0 for r in members)
    # each member wrote the prefix again at $3.75/MTok where a read costs $0.30 (claude-sonnet-4-5)
    for r in members:
        assert r["unread_tokens"] == pytest.approx(2512, rel=0.03)
        assert r["extra_cost_usd"] == pytest.approx(2500 * (3.75 - 0.30) / 1e6
                                                    + (r["unread_tokens"] - 2500) * (3.0 - 0.30) / 1e6, rel=1e-6)
    assert rows[0]["batch_extra_cost_usd"] == pytest.approx(sum(r["extra_cost_usd"] for r in members))


def test_cache_key_variants_of_a_session_say_what_varied(tmp_path, ctxtap_config) -> None:
    task = [{"role": "user", "content": "Look around this repository and tell me what it contains."}]
    turn2 = [*task, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "Go on, please."}]
    turn3 = [*turn2, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "Thanks."}]
    entries = [
        _har(MESSAGES_URL, _messages_body(task), _message("msg_v1", write=2200), START),
        _har(MESSAGES_URL, _messages_body(turn2, tools=[TOOLS[1], TOOLS[0], TOOLS[2]]), _message("msg_v2"), START + 2),
        _har(MESSAGES_URL, _messages_body(turn3, model="claude-opus-4-5"), _message("msg_v3"), START + 4),
    ]
    rows = fetch_rows(_analyse(tmp_path / "variants", entries), "SELECT * FROM cache_key_variants ORDER BY variant")
    assert [r["n_variants"] for r in rows] == [3, 3, 3]
    assert rows[0]["varied"] is None and rows[0]["client_session_id"] == SESSION
    assert rows[1]["varied"] == "tool order (same 3 tools)"
    assert rows[2]["varied"] == "model claude-sonnet-4-5 -> claude-opus-4-5"
    assert rows[0]["tool_order"] != rows[1]["tool_order"] and rows[0]["tool_order"] == rows[2]["tool_order"]


# --- the two verdict fixes ----------------------------------------------------------------------------


class _Tokens:
    def __init__(self, per_block: int) -> None:
        self.per_block = per_block

    def upto(self, p: int) -> int:
        return p * self.per_block


def _view(n: int, *, read: int | None, calibration: float | None, ts: float = 0.0) -> ReqView:
    keys = array("q", range(n))
    return ReqView(request_id=f"r{n}-{ts}", provider="anthropic", model="claude-sonnet-4-5", ts_start=ts, ts_end=ts,
                   hashes=keys, cache_keys=keys, tokens=_Tokens(300), paths=[f"messages[{i}]" for i in range(n)],
                   kinds=["message_text"] * n, sources=["user_task"] * n, texts=None, breakpoints={n - 1: "ephemeral"},
                   auto_breakpoint=None, cache_read=read, cache_write=None, calibration=calibration)


def test_below_minimum_compares_the_figure_it_shows() -> None:
    rule = CacheRule(mode="breakpoints", min_tokens=1024)
    prev = _view(3, read=0, calibration=1.52)
    # 900 estimated tokens shared; the provider counts 1.52x as many: 1,368, above its 1,024 minimum
    cur = _view(4, read=0, calibration=1.52, ts=10)
    expected, facts = expected_reads(prev, cur, rule, gap_s=10.0)
    assert facts["cacheable_reported"] == 1368 and not facts["below_minimum"] and expected == 900
    _, status, cause, words = cache_verdict(prev, cur, rule, expected, facts, 10.0)
    assert (status, cause) == ("miss", "unexplained") and "below" not in (words or "")
    # uncalibrated, the same prefix is 900 tokens: below the minimum, and the words say the figure compared
    cur = _view(4, read=0, calibration=None, ts=10)
    expected, facts = expected_reads(prev, cur, rule, gap_s=10.0)
    _, status, cause, words = cache_verdict(prev, cur, rule, expected, facts, 10.0)
    assert cause == "below_minimum" and words == "shared prefix ~900 tokens, below the 1,024-token minimum"


def test_a_read_where_none_was_expected_is_no_hit() -> None:
    rule = CacheRule(mode="breakpoints", min_tokens=1024)
    first = _view(5, read=4000, calibration=1.0)
    expected, facts = expected_reads(None, first, rule, gap_s=None)
    exp, status, cause, words = cache_verdict(None, first, rule, expected, facts, None)
    assert (exp, status, cause) == (0, "unexpected_read", None)
    assert words.startswith("4,000 tokens read on the first request of its thread")
    # an expected read is still a hit
    prev, cur = _view(5, read=0, calibration=1.0), _view(6, read=1500, calibration=1.0, ts=5)
    expected, facts = expected_reads(prev, cur, rule, gap_s=5.0)
    assert cache_verdict(prev, cur, rule, expected, facts, 5.0)[1] == "hit"


# --- the cost arithmetic against the providers' published rules ---------------------------------------


def test_write_pricing_follows_the_published_multipliers_and_input_semantics() -> None:
    """Anthropic (https://platform.claude.com/docs/en/build-with-claude/prompt-caching, pricing): a 5-minute
    write costs 1.25x base input, a 1-hour write 2x, a read 0.1x; usage is additive ("total input tokens
    is the summation of input_tokens, cache_creation_input_tokens and cache_read_input_tokens",
    anthropic-sdk-python types/message.py). OpenAI (https://developers.openai.com/api/docs/guides/prompt-caching):
    cached_tokens are inside input_tokens, with no write fee."""
    prices = PriceTable.load()
    for price in prices.prices:
        if price.match.startswith("claude-"):
            assert price.cache_write_5m == pytest.approx(1.25 * price.input)
            assert price.cache_write_1h == pytest.approx(2 * price.input)
            assert price.cache_read == pytest.approx(0.1 * price.input)
    # Sonnet at $3/MTok: 100,000 tokens written for an hour and 50 uncached, output left out
    one_hour = anthropic_usage({"input_tokens": 50, "cache_creation_input_tokens": 100_000,
                                "cache_read_input_tokens": 0, "output_tokens": 0,
                                "cache_creation": {"ephemeral_5m_input_tokens": 0,
                                                   "ephemeral_1h_input_tokens": 100_000}})
    assert one_hour.input_total.value == 100_050
    assert prices.cost("claude-sonnet-4-5", one_hour) == pytest.approx(50 * 3e-6 + 100_000 * 6e-6)
    five = one_hour.model_copy(update={"cache_write_5m": TokenCount(value=100_000, status="reported"),
                                       "cache_write_1h": TokenCount(value=0, status="reported")})
    assert prices.cost("claude-sonnet-4-5", five) == pytest.approx(50 * 3e-6 + 100_000 * 3.75e-6)
    # a later request reading those 100,000 tokens pays a tenth of base input for them
    read = anthropic_usage({"input_tokens": 50, "cache_creation_input_tokens": 0,
                            "cache_read_input_tokens": 100_000, "output_tokens": 0})
    assert prices.cost("claude-sonnet-4-5", read) == pytest.approx(50 * 3e-6 + 100_000 * 0.3e-6)
    # OpenAI: 2,006 input tokens of which 1,920 cached; the cached ones at the cached rate, no write fee
    inclusive = responses_usage({"input_tokens": 2006, "input_tokens_details": {"cached_tokens": 1920},
                                 "output_tokens": 0})
    assert inclusive.input_uncached.value == 86
    assert prices.cost("gpt-5.1", inclusive) == pytest.approx(86 * 1.25e-6 + 1920 * 0.125e-6)


def test_a_write_without_its_ttl_split_is_priced_at_the_requests_ttl() -> None:
    """Where the provider reports only cache_creation_input_tokens, a request whose breakpoints are all
    1-hour wrote for an hour: priced at 2x, not at the 5-minute 1.25x."""
    prices = PriceTable.load()
    usage = Usage(input_uncached=TokenCount(value=0, status="reported"),
                  cache_read=TokenCount(value=0, status="reported"),
                  cache_write=TokenCount(value=10_000, status="reported"),
                  output=TokenCount(value=0, status="reported"), cache_semantics="additive")
    assert prices.cost("claude-sonnet-4-5", usage) == pytest.approx(10_000 * 3.75e-6)
    assert prices.cost("claude-sonnet-4-5", usage, write_ttl="1h") == pytest.approx(10_000 * 6e-6)
