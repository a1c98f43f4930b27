"""`ctxtap demo` runs the whole path offline and shows what the issue promises."""

from __future__ import annotations

from ctxtap.analysis.db import connect
from tests.proxyharness import run_ctxtap


def test_demo_end_to_end(tmp_path, ctxtap_config):
    out = tmp_path / "demo"
    result = run_ctxtap(["demo", "-o", str(out)], ctxtap_config, timeout=300)
    assert f"capture:  {out}" in result.stdout
    assert "Traceback" not in result.stderr and "CancelledError" not in result.stderr  # a clean first output
    report_line = next(line for line in result.stdout.splitlines() if line.startswith("report:"))
    report = report_line.split(None, 1)[1].strip()
    assert report.endswith(".html") and open(report).read().lower().startswith("<!doctype html>")
    con = connect([out])
    sessions = {r[0]: r[1:] for r in con.execute(
        "SELECT client, n_main, n_side, n_turns, n_errors FROM sessions").fetchall()}
    assert set(sessions) == {"claude-code", "codex", "kimi-code", "gemini-cli"}
    for client, (n_main, n_side, n_turns, n_errors) in sessions.items():
        assert n_main >= 6 and n_side >= 1 and n_turns == 3 and n_errors == 1, client
    # each client hit one rate limit, and its retry went through
    errors = dict(con.execute("SELECT client, any_value(error_layer) FROM errors GROUP BY 1").fetchall())
    assert errors == dict.fromkeys(sessions, "rate_limit")
    # the timestamp the clients put early in their prompt at turn 3 shows up as a prefix change
    changed = con.execute("""
        SELECT r.client, p.first_divergent_path, p.divergence_summary FROM prefix p JOIN requests r USING (request_id)
        WHERE p.divergence_summary LIKE '%a timestamp inserted%'""").fetchall()
    assert {c for c, _, _ in changed} >= {"codex", "kimi-code", "gemini-cli"}
    # the tool loop ran: parallel calls linked to their results
    linked, parallel = con.execute("""SELECT count(*) FILTER (WHERE result_request_id IS NOT NULL),
                                             count(*) FILTER (WHERE parallel_group_size > 1) FROM tool_calls""").fetchone()
    assert linked > 40 and parallel > 0
    # every client's calls each answered once, after the call (Gemini's id-less calls too)
    per_client = con.execute("""SELECT r.client, count(DISTINCT t.result_request_id), min(t.gap_ms)
                                FROM tool_calls t JOIN requests r USING (request_id) GROUP BY 1""").fetchall()
    assert len({n for _, n, _ in per_client}) == 1 and all(gap >= 0 for _, _, gap in per_client), per_client
    # side requests are kept apart from the main threads
    side = dict(con.execute("SELECT client, list(purpose) FROM requests WHERE thread_kind = 'side' GROUP BY 1").fetchall())
    assert "warmup" in side["codex"] and "title" in side["claude-code"]
    info = run_ctxtap(["info", str(out), "--json"], ctxtap_config).stdout
    assert '"recovered": false' in info
