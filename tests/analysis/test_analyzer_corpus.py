"""The analyzer on real CLI traffic (../shared/real-clients; skipped when absent)."""

from __future__ import annotations

import pytest

from ctxtap.analysis.db import connect
from tests.proxyharness import run_ctxtap

RUNS = ["basic/claude", "basic/codex", "basic/codex-sse", "basic/grok", "basic/kimi-code",
        "long/claude", "long/codex-sse", "long/kimi-code"]


@pytest.fixture(scope="module")
def captures(tmp_path_factory, ctxtap_config, request):
    from tests.conftest import REAL_CLIENTS

    if not (REAL_CLIENTS / "README.md").exists():
        pytest.skip("real-client corpus ../shared/real-clients is not present in this checkout")
    out = {}
    root = tmp_path_factory.mktemp("corpus")
    for run in RUNS:
        cap = root / run.replace("/", "-")
        run_ctxtap(["import", str(REAL_CLIENTS / run / "flows.mitm"), "--out", str(cap)], ctxtap_config)
        out[run] = cap
    run_ctxtap(["analyze", *map(str, out.values())], ctxtap_config)
    return out


def q(con, sql: str) -> list[dict]:
    cur = con.execute(sql)
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]


@pytest.mark.parametrize("run,n_main,n_side", [
    ("basic/claude", 2, 0), ("basic/codex", 2, 1), ("basic/codex-sse", 2, 0), ("basic/grok", 2, 0),
    ("basic/kimi-code", 2, 0), ("long/claude", 6, 0), ("long/codex-sse", 6, 0), ("long/kimi-code", 6, 0),
])
def test_every_call_parsed_one_session_one_main_thread(captures, run, n_main, n_side):
    con = connect([captures[run]])
    reqs = q(con, "SELECT * FROM requests ORDER BY ts_start")
    assert len(reqs) == n_main + n_side
    assert all(r["parse_status"] == "ok" for r in reqs)
    assert len({r["session_id"] for r in reqs}) == 1
    assert sum(r["thread_kind"] == "main" for r in reqs) == n_main
    assert sum(r["thread_kind"] == "side" for r in reqs) == n_side
    main = [r for r in reqs if r["thread_kind"] == "main"]
    assert [r["seq_in_thread"] for r in main] == list(range(n_main))
    # every main request carries more context than the one before (history is resent or chained)
    assert all(b["n_blocks"] > a["n_blocks"] for a, b in zip(main, main[1:], strict=False))
    assert all(r["input_tokens_reported"] and r["output_tokens"] is not None for r in main)
    # every tool call is linked to the result that came back in the next request
    calls = q(con, "SELECT * FROM tool_calls")
    assert len(calls) == n_main - 1 + 1  # the first step makes two parallel calls, the last none
    assert all(c["result_status"] == "ok" and c["result_request_id"] and c["orphan"] is None for c in calls)
    assert sorted(c["parallel_group_size"] for c in calls)[-2:] == [2, 2]


def test_claude_layout_and_its_per_request_hash(captures):
    con = connect([captures["long/claude"]])
    env = q(con, "SELECT DISTINCT path, role, source FROM segments WHERE source = 'runtime_environment'")
    assert {"path": "messages[1].content", "role": "system", "source": "runtime_environment"} in env
    divergences = q(con, "SELECT * FROM prefix WHERE divergence_kind = 'changed'")
    assert len(divergences) == 5
    assert all(d["first_divergent_path"] == "system[0]" for d in divergences)
    assert all("a per-request hash (cch=" in d["divergence_summary"] for d in divergences)
    assert all("outside the cache key" in d["divergence_summary"] for d in divergences)
    assert all(d["expected_cached_tokens"] > 5000 for d in divergences)
    [layout] = q(con, "SELECT * FROM layout")
    assert layout["rules_location"] == "system[0..3]"
    assert layout["tool_results_via"] == "tool_result blocks in user messages"
    assert layout["n_tools"] == 12 and layout["tool_definition_tokens"] > 1000
    assert "system[0]" in layout["dynamic_fields_before_stable"]


def test_codex_websocket_continuation_is_analysed_in_full(captures):
    ws = connect([captures["basic/codex"]])
    sse = connect([captures["basic/codex-sse"]])
    ws_main = q(ws, "SELECT * FROM requests WHERE thread_kind = 'main' ORDER BY ts_start")
    sse_main = q(sse, "SELECT * FROM requests WHERE thread_kind = 'main' ORDER BY ts_start")
    # over the socket the second request sends only new items, yet its effective input is complete
    assert ws_main[1]["previous_response_id"] and ws_main[1]["body_bytes"] < ws_main[0]["body_bytes"] / 5
    assert [r["n_blocks"] for r in ws_main] == [r["n_blocks"] for r in sse_main]
    sources = [r["source"] for r in q(ws, f"""SELECT source FROM blocks
        WHERE request_id = '{ws_main[1]["request_id"]}' ORDER BY position""")]
    for source in ("tool_catalogue", "platform_rules", "runtime_environment", "user_task", "tool_call", "tool_result"):
        assert source in sources
    [warmup] = q(ws, "SELECT * FROM requests WHERE thread_kind = 'side'")
    assert warmup["purpose"] == "warmup" and warmup["endpoint"] == "warmup"
    [verdict] = q(ws, f"SELECT cache_status FROM prefix WHERE request_id = '{warmup['request_id']}'")
    assert verdict["cache_status"] == "n/a"  # a warm-up generates nothing: no cache behaviour to judge


def test_cross_client_layout_comparison(captures):
    con = connect([captures[r] for r in ("basic/claude", "basic/codex-sse", "basic/grok", "basic/kimi-code")])
    layout = {row["client"]: row for row in q(con, "SELECT * FROM layout")}
    assert set(layout) == {"claude-code", "codex", "grok-cli", "kimi-code"}
    assert layout["claude-code"]["api"] == "messages"
    assert layout["codex"]["api"] == "responses" and "(developer)" in layout["codex"]["rules_location"]
    assert layout["codex"]["environment_location"].endswith("(user)")
    assert layout["kimi-code"]["tool_results_via"] == "tool messages"
    assert layout["codex"]["tool_results_via"] == "custom_tool_call_output input items"
    assert layout["grok-cli"]["tool_results_via"] == "tool messages"
    # Kimi's system message holds its rules, then its environment, the AGENTS.md slot and the skills list
    assert layout["kimi-code"]["rules_location"].startswith("messages[0] (system, part)")
    assert layout["kimi-code"]["environment_location"].startswith("messages[0] (system, part)")
    assert layout["kimi-code"]["project_instructions_location"] == "messages[0] (system, part)"
    # Grok's working directory at the end of its system prompt
    assert layout["grok-cli"]["environment_location"] == "messages[0] (system, part)"
    for row in layout.values():
        assert row["n_tools"] > 0 and row["system_tokens"] > 0 and row["task_location"]
