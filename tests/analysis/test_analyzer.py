"""The analyzer's views hold exactly the values a scripted scenario dictates."""

from __future__ import annotations

import json
import time

import polars as pl
import pyarrow.dataset as ds
import pytest

from ctxtap.analysis.build import AnalyzeOptions, ensure_analysis
from ctxtap.analysis.db import connect, dataset_dir
from tests.proxyharness import run_ctxtap
from tests.scenarios import SESSION, anthropic_session, write_har


@pytest.fixture(scope="module")
def scenario(tmp_path_factory, ctxtap_config):
    """The Anthropic scenario: tool loop with parallel, repeated and failing calls, a timestamp
    injected into the system rules at request 3, a 6-minute gap before request 6, a 429 at
    request 7 that is retried, and a title side request after request 2."""
    tmp = tmp_path_factory.mktemp("scenario")
    recorded = anthropic_session()
    har = write_har(recorded, tmp / "scenario.har")
    cap = tmp / "cap"
    run_ctxtap(["import", str(har), "--out", str(cap)], ctxtap_config)
    run_ctxtap(["analyze", str(cap)], ctxtap_config)
    return cap, recorded


def rows(con, query: str) -> list[dict]:
    cur = con.execute(query)
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]


def test_requests_sessions_and_threads(scenario):
    cap, recorded = scenario
    con = connect([cap])
    reqs = rows(con, "SELECT * FROM requests ORDER BY ts_start")
    assert len(reqs) == len(recorded.entries) == 9
    assert [r["purpose"] for r in reqs] == ["main", "main", "title", *["main"] * 6]
    assert [r["thread_kind"] for r in reqs].count("side") == 1
    assert {r["session_id"] for r in reqs} == {f"claude-code:{SESSION}"}
    assert [r["seq_in_session"] for r in reqs] == list(range(9))
    main = [r for r in reqs if r["thread_kind"] == "main"]
    assert [r["seq_in_thread"] for r in main] == list(range(8))
    # usage is what the scripted provider reported, request by request
    reported = [u["usage"] for u in recorded.requests if u.get("usage")]
    ok = [r for r in reqs if r["status"] == 200 and r["purpose"] == "main"]
    assert [r["cache_read_tokens"] for r in ok] == [u["cache_read"] for u in reported]
    assert [r["output_tokens"] for r in ok] == [u["output"] for u in reported]
    # Anthropic semantics: total input = uncached + cache read + cache write
    assert all(r["input_tokens_reported"] == r["input_uncached_tokens"] + r["cache_read_tokens"]
               + r["cache_write_tokens"] for r in ok)
    assert all(r["cache_semantics"] == "additive" for r in ok)
    assert all(r["input_tokens_estimated"] > 0 and r["estimate_encoding"].startswith("cl100k_base") for r in reqs)
    assert all(r["cost_usd"] and r["cost_usd"] > 0 for r in ok)
    # the 429 is a rate-limit error with Retry-After, and is retried with the same body
    [limited] = [r for r in reqs if r["status"] == 429]
    assert (limited["error_layer"], limited["retry_after_s"], limited["retryable"]) == ("rate_limit", 2.0, True)
    assert limited["output_tokens"] is None and limited["usage_status"] == "not_available"
    session = rows(con, "SELECT * FROM sessions")[0]
    assert (session["n_requests"], session["n_main"], session["n_side"], session["n_turns"]) == (9, 8, 1, 1)
    assert session["n_errors"] == 1
    assert session["cache_read_tokens"] == sum(u["cache_read"] for u in reported)
    # the denominator is every request that reported input and cache counts, side requests included
    reporting = [r for r in reqs if r["input_tokens_reported"] is not None and r["cache_read_tokens"] is not None]
    expected_rate = session["cache_read_tokens"] / sum(r["input_tokens_reported"] for r in reporting)
    assert session["cache_hit_rate"] == pytest.approx(expected_rate)


def test_prefix_and_cache_verdicts(scenario):
    cap, _ = scenario
    con = connect([cap])
    main = rows(con, """SELECT p.*, r.seq_in_thread FROM prefix p JOIN requests r USING (request_id)
                        WHERE r.thread_kind = 'main' ORDER BY r.ts_start""")
    verdicts = [(p["cache_status"], p["miss_cause"]) for p in main]
    assert verdicts == [
        ("miss", "cold_start"),
        ("hit", None),
        ("miss", "prefix_change"),  # request 3: the timestamp line entered system[1]
        ("hit", None),
        ("hit", None),
        ("miss", "ttl_expired"),  # request 6, after 6 minutes
        ("n/a", None),  # the 429: no usage reported
        ("hit", None),
    ]
    injected = main[2]
    assert injected["divergence_kind"] == "changed"
    assert injected["first_divergent_path"] == "system[1]"
    # the timestamp line is the environment, the rest of the block rules: a block of two sources
    assert injected["first_divergent_source"] == "mixed"
    assert "a timestamp inserted" in injected["divergence_summary"]
    assert injected["common_prefix_blocks"] == 3  # two tool definitions and the billing block
    gap = main[5]
    assert gap["gap_s"] == pytest.approx(360.3, abs=0.5)
    assert gap["miss_explanation"] == "TTL expired after a 6 min gap (5 min TTL)"
    assert gap["divergence_kind"] == "extended"
    steady = main[3]
    assert steady["divergence_kind"] == "extended" and steady["expected_cached_tokens"] > 1000


def test_tool_loop(scenario):
    cap, _ = scenario
    con = connect([cap])
    calls = rows(con, "SELECT * FROM tool_calls ORDER BY result_request_id NULLS LAST, call_index")
    assert [c["command"] for c in calls] == ["pwd", "ls", "cat README.md", "cat README.md", "cat missing.txt",
                                             "cat missing.txt", "wc -l data.csv"]
    assert [c["parallel_group_size"] for c in calls] == [2, 2, 1, 1, 1, 1, 1]
    assert [c["result_status"] for c in calls] == ["ok", "ok", "ok", "ok", "error", "error", "ok"]
    assert [c["repeat_of"] is not None for c in calls] == [False, False, False, True, False, True, False]
    assert [c["stuck_on_error"] for c in calls] == [False] * 5 + [True, False]
    assert all(c["orphan"] is None and c["result_request_id"] for c in calls)
    # each result is carried by every later main request (its lifetime), the 429 included
    assert [c["carried_requests"] for c in calls] == [7, 7, 6, 5, 4, 3, 2]
    assert all(c["carried_tokens"] == c["carried_requests"] * c["result_tokens"] for c in calls)
    assert all(c["gap_ms"] > 0 for c in calls)
    assert calls[5]["gap_ms"] > 360_000  # the 6-minute pause sits between call and result


def test_blocks_view_and_growth(scenario):
    cap, _ = scenario
    con = connect([cap])
    first = rows(con, """SELECT b.* FROM blocks b JOIN requests r USING (request_id)
                         WHERE r.seq_in_session = 0 ORDER BY position""")
    assert [b["path"] for b in first] == ["tools[0]", "tools[1]", "system[0]", "system[1]",
                                          "messages[0].content[0]", "messages[0].content[1]"]
    assert [b["source"] for b in first] == ["tool_catalogue", "tool_catalogue", "platform_rules", "platform_rules",
                                            "runtime_environment", "user_task"]
    assert first[3]["is_cache_breakpoint"] and first[3]["cache_breakpoint"] == "ephemeral"
    assert first[5]["authority"] == "user" and first[5]["content_type"] == "instruction"
    results = rows(con, "SELECT DISTINCT source, authority, content_type FROM blocks WHERE kind = 'tool_result'")
    assert results == [{"source": "tool_result", "authority": "data", "content_type": "data"}]
    # the blocks view agrees with per-request counts, and positions are dense
    counts = rows(con, """SELECT r.request_id, r.n_blocks, count(b.position) AS n, max(b.position) AS top
                          FROM requests r LEFT JOIN blocks b USING (request_id) GROUP BY ALL""")
    assert all(c["n"] == c["n_blocks"] and (c["top"] is None or c["top"] == c["n"] - 1) for c in counts)
    growth = rows(con, "SELECT * FROM growth WHERE thread_kind = 'main'")[0]
    assert growth["n_requests"] == 8 and growth["input_basis"] == "reported"
    assert growth["fit_m"] > 0 and growth["fit_p"] > 1000
    reported = [r["input_tokens_reported"] for r in rows(
        con, "SELECT input_tokens_reported FROM requests WHERE thread_kind = 'main' AND status = 200")]
    assert growth["total_input_tokens"] == sum(reported)  # the 429 carries no usage and is left out


def test_content_addressed_storage(scenario):
    cap, _ = scenario
    meta = json.loads((dataset_dir(cap) / "_meta.json").read_text())
    stats = meta["stats"]
    # every distinct block tokenised once: tokenised bytes equal unique block bytes
    assert stats["bytes_tokenised"] == stats["unique_block_bytes"]
    assert stats["context_bytes_total"] > 4 * stats["unique_block_bytes"]
    con = connect([cap])
    n_runs, n_blocks = con.execute(
        "SELECT (SELECT count(*) FROM t_request_block_runs), (SELECT count(*) FROM blocks)").fetchone()
    assert n_runs < n_blocks / 4  # requests reference shared history by runs, not row by row


def test_dataset_reads_in_duckdb_polars_and_pyarrow(scenario):
    cap, _ = scenario
    root = dataset_dir(cap)
    for table in ("requests", "block_content", "block_occurrences", "request_block_runs", "tool_calls", "prefix"):
        path = root / table
        frame = pl.scan_parquet(str(path / "**" / "*.parquet"), hive_partitioning=True).collect()
        arrow = ds.dataset(str(path), format="parquet", partitioning="hive").to_table()
        con = connect([cap])
        n = con.execute(f"SELECT count(*) FROM t_{table}").fetchone()[0]
        assert frame.height == arrow.num_rows == n > 0
        assert "capture_id" in frame.columns and "capture_id" in arrow.column_names


def test_analysis_is_cached_and_rebuilt_when_inputs_change(scenario, tmp_path):
    cap, _ = scenario
    out, built = ensure_analysis(cap)
    assert not built  # the module fixture already analysed it
    mtime = (out / "_meta.json").stat().st_mtime_ns
    time.sleep(0.01)
    assert ensure_analysis(cap)[1] is False and (out / "_meta.json").stat().st_mtime_ns == mtime
    prices = tmp_path / "prices.toml"
    prices.write_text('as_of = "2026-01-01"\n[[model]]\nmatch = "claude-sonnet-*"\ninput = 100.0\noutput = 100.0\n')
    assert ensure_analysis(cap, AnalyzeOptions(prices=prices))[1] is True
    con = connect([cap])
    cost, match = con.execute("SELECT max(cost_usd), any_value(price_match) FROM requests "
                              "WHERE purpose = 'main' AND status = 200").fetchone()
    assert match == "user:claude-sonnet-*" and cost > 0.1
    assert ensure_analysis(cap)[1] is True  # back to the default table: rebuilt again


def test_sql_and_stats_commands(scenario, ctxtap_config):
    cap, _ = scenario
    out = run_ctxtap(["sql", str(cap), "SELECT purpose, count(*) AS n FROM requests GROUP BY 1 ORDER BY 1",
                      "--format", "json"], ctxtap_config).stdout
    assert json.loads(out) == [{"purpose": "main", "n": 8}, {"purpose": "title", "n": 1}]
    csv_out = run_ctxtap(["sql", str(cap), "SELECT miss_cause FROM prefix WHERE miss_cause = 'ttl_expired'",
                          "--format", "csv"], ctxtap_config).stdout
    assert csv_out.splitlines() == ["miss_cause", "ttl_expired"]
    bad = run_ctxtap(["sql", str(cap), "SELECT nope FROM requests"], ctxtap_config, check=False)
    assert bad.returncode != 0 and "nope" in bad.stderr
    stats = run_ctxtap(["stats", str(cap)], ctxtap_config).stdout
    assert "ttl_expired" in stats and "system[1] changed: a timestamp inserted" in stats
    assert "rate_limit" in stats


def _har_entry(url: str, body: dict, response: dict, start: float) -> dict:
    from tests.scenarios import _entry

    return _entry(url, [("content-type", "application/json"), ("user-agent", "GeminiCLI/0.61.0/gemini-2.5-pro (linux; x64)")],
                  json.dumps(body).encode(), 200, [("content-type", "application/json")],
                  json.dumps(response).encode(), start, 0.5)


def test_gemini_calls_without_ids_link_through_the_clients_own_ids(tmp_path, ctxtap_config):
    """Gemini may answer a functionCall without an id; Gemini CLI then invents one for the replay and the result."""
    from tests.scenarios import Recorded

    url = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-pro:generateContent"
    tools = [{"functionDeclarations": [{"name": "run_shell_command", "parameters": {"type": "object"}}]}]
    task = {"role": "user", "parts": [{"text": "list the files"}]}
    call = {"functionCall": {"name": "run_shell_command", "args": {"command": "ls"}}}
    usage = {"promptTokenCount": 50, "candidatesTokenCount": 5, "totalTokenCount": 55}
    first = _har_entry(url, {"contents": [task], "tools": tools},
                       {"candidates": [{"content": {"role": "model", "parts": [call]}, "finishReason": "STOP"}],
                        "usageMetadata": usage}, 1_800_000_000)
    replay = {"role": "model", "parts": [{"functionCall": {"id": "cli-7", "name": "run_shell_command",
                                                           "args": {"command": "ls"}}}]}
    result = {"role": "user", "parts": [{"functionResponse": {"id": "cli-7", "name": "run_shell_command",
                                                              "response": {"output": "README.md"}}}]}
    second = _har_entry(url, {"contents": [task, replay, result], "tools": tools},
                        {"candidates": [{"content": {"role": "model", "parts": [{"text": "One file."}]},
                                         "finishReason": "STOP"}], "usageMetadata": usage}, 1_800_000_002)
    har = write_har(Recorded(entries=[first, second]), tmp_path / "gemini.har")
    run_ctxtap(["import", str(har), "--out", str(tmp_path / "cap")], ctxtap_config)
    run_ctxtap(["analyze", str(tmp_path / "cap")], ctxtap_config)
    con = connect([tmp_path / "cap"])
    [row] = rows(con, "SELECT * FROM tool_calls")
    assert row["name"] == "run_shell_command" and row["command"] == "ls"
    assert row["result_request_id"] is not None and row["result_status"] == "ok" and row["orphan"] is None


def test_compaction_continues_the_main_thread(tmp_path, ctxtap_config):
    """After a compaction the main loop restarts from a summary: same thread, new context generation."""
    from tests.scenarios import Recorded, _entry

    url = "https://api.anthropic.com/v1/messages"
    headers = [("content-type", "application/json"), ("x-claude-code-session-id", "compact-session"),
               ("user-agent", "claude-cli/9.9.9 (external, cli)")]
    tools = [{"name": "Bash", "description": "run", "input_schema": {"type": "object"}}]
    system = [{"type": "text", "text": "You are a coding agent. " * 50}]
    usage = {"input_tokens": 10, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0, "output_tokens": 5}

    def reply(text: str) -> dict:
        return {"id": "msg", "type": "message", "role": "assistant", "content": [{"type": "text", "text": text}],
                "stop_reason": "end_turn", "usage": usage}

    history = [{"role": "user", "content": "first task"}, {"role": "assistant", "content": "done"},
               {"role": "user", "content": "second task"}]
    bodies = [
        {"model": "claude-sonnet-4-5", "max_tokens": 100, "tools": tools, "system": system, "messages": history[:1]},
        {"model": "claude-sonnet-4-5", "max_tokens": 100, "tools": tools, "system": system, "messages": history},
        {"model": "claude-sonnet-4-5", "max_tokens": 100, "tools": tools, "system": system, "messages": history + [
            {"role": "user", "content": "CRITICAL: Respond with TEXT ONLY. Do NOT call any tools. Your task is to "
                                        "create a detailed summary of the conversation so far."}]},
        {"model": "claude-sonnet-4-5", "max_tokens": 100, "tools": tools, "system": system, "messages": [
            {"role": "user", "content": "This session is being continued from a previous conversation that ran out "
                                        "of context. Summary: two tasks were done."},
            {"role": "user", "content": "third task"}]},
    ]
    entries = [_entry(url, headers, json.dumps(b).encode(), 200, [("content-type", "application/json")],
                      json.dumps(reply("ok")).encode(), 1_800_000_000 + 5 * i, 0.5) for i, b in enumerate(bodies)]
    har = write_har(Recorded(entries=entries), tmp_path / "compact.har")
    run_ctxtap(["import", str(har), "--out", str(tmp_path / "cap")], ctxtap_config)
    run_ctxtap(["analyze", str(tmp_path / "cap")], ctxtap_config)
    reqs = rows(connect([tmp_path / "cap"]), "SELECT purpose, thread_kind, turn_index FROM requests ORDER BY ts_start")
    assert [(r["purpose"], r["thread_kind"]) for r in reqs] == [
        ("main", "main"), ("main", "main"), ("compaction", "side"), ("main", "main")]
    assert [r["turn_index"] for r in reqs] == [1, 2, 2, 3]


def test_billing_header_changes_do_not_count_as_cache_breaks(tmp_path, ctxtap_config):
    """Claude Code's billing line changes per request; it is reported, but outside the cache key."""
    recorded = anthropic_session()
    for i, entry in enumerate(recorded.entries):
        entry["request"]["postData"]["text"] = entry["request"]["postData"]["text"].replace(
            "cc_entrypoint=cli;", f"cc_entrypoint=cli; cch={i:05x};")
    har = write_har(recorded, tmp_path / "s.har")
    run_ctxtap(["import", str(har), "--out", str(tmp_path / "cap")], ctxtap_config)
    run_ctxtap(["analyze", str(tmp_path / "cap")], ctxtap_config)
    main = rows(connect([tmp_path / "cap"]), """SELECT p.* FROM prefix p JOIN requests r USING (request_id)
        WHERE r.thread_kind = 'main' ORDER BY r.ts_start""")
    steady = main[1]
    assert steady["first_divergent_path"] == "system[0]"
    assert "outside the cache key" in steady["divergence_summary"]
    assert steady["cache_status"] == "hit" and steady["expected_cached_tokens"] > 1000
    # the real breaks are still found
    assert [p["miss_cause"] for p in main][2] == "prefix_change" and [p["miss_cause"] for p in main][5] == "ttl_expired"
