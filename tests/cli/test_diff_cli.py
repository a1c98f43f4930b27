"""`ctxtap diff A B` on two real captures of the simulated Claude Code agent that differ in one variable:
a timestamp at the top of the system prompt from turn 1 (A) or never (B)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxtap.analysis.compare.rundiff import TargetError, parse_target
from ctxtap.analysis.db import connect
from tests.proxyharness import run_ctxtap


@pytest.fixture(scope="module")
def pair(tmp_path_factory, ctxtap_config) -> tuple[Path, Path]:
    from tests.democaptures import agent_capture

    base = tmp_path_factory.mktemp("diff-pair")
    a = agent_capture(base / "stamped", ctxtap_config, "claude", turns=3, volatile_turn=1)
    b = agent_capture(base / "plain", ctxtap_config, "claude", turns=3, volatile_turn=99)
    return a, b


def diff_json(args: list[str], config: Path) -> dict:
    return json.loads(run_ctxtap(["diff", *args, "--json"], config).stdout)


def sql_one(capture: Path, query: str, params: list | None = None):
    return connect([capture]).execute(query, params or []).fetchone()


def test_the_changed_variable_is_the_first_divergence_and_the_deltas_match_sql(pair, ctxtap_config) -> None:
    a, b = pair
    d = diff_json([str(a), str(b), "--ignore-ids"], ctxtap_config)
    lay = d["layout"]
    not_same = [c for c in lay["changes"] if c["op"] != "same"]
    assert len(not_same) == 1  # exactly one block differs once ids are ignored
    first = lay["changes"][lay["first_divergence"]]
    assert first is not_same[0] or first == not_same[0]
    assert first["op"] == "changed" and first["a"]["path"] == first["b"]["path"] == "system[2]"
    assert first["a"]["text"].startswith("Current time:") and not first["b"]["text"].startswith("Current time:")
    assert "a timestamp removed" in lay["first_divergence_words"]
    assert first["text_diff"][1].startswith("-Current time: ")
    # the billing hash is the only other difference, and it is volatile
    assert [c["b"]["path"] for c in lay["changes"] if c["volatile"]] == ["system[0]"]
    # every delta equals B - A recomputed from each capture alone
    metrics = {m["name"]: m for m in d["metrics"]}
    for name, column in (("input tokens (estimated)", "input_tokens_estimated"), ("output tokens", "output_tokens"),
                         ("cache reads", "cache_read_tokens"), ("input tokens (reported)", "input_tokens_reported")):
        va, vb = (sql_one(c, f"SELECT sum({column}) FROM requests")[0] for c in (a, b))
        assert (metrics[name]["a"], metrics[name]["b"], metrics[name]["delta"]) == (va, vb, vb - va), name
    assert metrics["input tokens (estimated)"]["delta"] < 0  # B sends no timestamp
    calls = [sql_one(c, "SELECT count(*) FROM tool_calls WHERE request_id IS NOT NULL")[0] for c in (a, b)]
    assert (metrics["tool calls"]["a"], metrics["tool calls"]["b"]) == tuple(calls)
    cost = [sql_one(c, "SELECT sum(cost_usd) FROM requests")[0] for c in (a, b)]
    assert metrics["cost"]["a"] == pytest.approx(cost[0]) and metrics["cost"]["delta"] == pytest.approx(cost[1] - cost[0])
    # tokens by source of the first request: the timestamp is runtime environment
    first_rid = lay["a_request_id"]
    env_a = sql_one(a, "SELECT sum(tokens_estimated) FROM tokens_by_source WHERE request_id = ? "
                       "AND source = 'runtime_environment'", [first_rid])[0]
    env = next(s for s in d["sources"] if s["source"] == "runtime_environment")
    assert env["a_first"] == env_a and env["b_first"] < env["a_first"]


def test_with_strict_ids_the_billing_hash_comes_first(pair, ctxtap_config) -> None:
    a, b = pair
    d = diff_json([str(a), str(b), "--strict-ids"], ctxtap_config)
    first = d["layout"]["changes"][d["layout"]["first_divergence"]]
    assert first["b"]["path"] == "system[0]" and "a per-request hash" in d["layout"]["first_divergence_words"]


def test_ids_are_ignored_by_default(pair, ctxtap_config) -> None:
    """As in `experiment report`: every run has its own ids, so a diff that stops at them says nothing."""
    a, b = pair
    assert diff_json([str(a), str(b)], ctxtap_config) == diff_json([str(a), str(b), "--ignore-ids"], ctxtap_config)


def test_terminal_table_names_the_divergence_and_signs_deltas(pair, ctxtap_config) -> None:
    a, b = pair
    out = run_ctxtap(["diff", str(a), str(b), "--ignore-ids"], ctxtap_config).stdout
    assert "first divergence: block" in out and "system[2]" in out and "a timestamp removed" in out
    line = next(x for x in out.splitlines() if x.strip().startswith("input tokens (estimated)"))
    assert " -" in line and "better" in line


def test_sessions_and_requests_as_runs(pair, ctxtap_config) -> None:
    a, _ = pair
    con = connect([a])
    sid = con.execute("SELECT session_id FROM requests WHERE thread_kind = 'main' LIMIT 1").fetchone()[0]
    rows = con.execute("SELECT request_id, request_number FROM requests WHERE thread_kind = 'main' "
                       "AND session_id = ? ORDER BY seq_in_thread", [sid]).fetchall()
    (r0, n0), r3 = rows[0], rows[3][0]
    d = diff_json([f"{a}#{sid[:16]}#{n0}", f"{a}@{r3[:12]}"], ctxtap_config)  # the report's #N, an id's start
    assert (d["a"]["kind"], d["a"]["request_id"], d["b"]["request_id"]) == ("request", r0, r3)
    assert d["a"]["request_number"] == n0
    assert d["layout"]["a_request_id"] == r0 and d["layout"]["b_request_id"] == r3
    by_name = {m["name"]: m for m in d["metrics"]}
    assert by_name["model requests"]["a"] == by_name["model requests"]["b"] == 1
    # a session against itself: nothing differs
    same = diff_json([f"{a}#{sid}", f"{a}#{sid}"], ctxtap_config)
    assert same["layout"]["first_divergence"] is None
    assert all(m["delta"] in (0, None) for m in same["metrics"])


@pytest.mark.parametrize("run,words", [
    ("#nosuchsession", "no session 'nosuchsession'"),
    ("#{sid}#999", "has no request 999"),
    ("@nosuchrequest", "no request 'nosuchrequest'"),
])
def test_unknown_runs_are_refused_in_words(pair, ctxtap_config, run, words) -> None:
    a, b = pair
    sid = connect([a]).execute("SELECT any_value(session_id) FROM requests").fetchone()[0]
    result = run_ctxtap(["diff", str(a) + run.format(sid=sid), str(b)], ctxtap_config, check=False)
    assert result.returncode == 1 and words in result.stderr and "Traceback" not in result.stderr


def test_parse_target() -> None:
    dirs = {"cap", "with#hash"}
    t = parse_target("cap#s1#4", dirs.__contains__)
    assert (t.capture, t.session, t.number, t.request_id) == ("cap", "s1", 4, None)
    t = parse_target("cap#13", dirs.__contains__)  # the capture's only session
    assert (t.capture, t.session, t.number) == ("cap", None, 13)
    assert parse_target("cap#claude-code:auto:1", dirs.__contains__).session == "claude-code:auto:1"
    t = parse_target("cap@flow#3", dirs.__contains__)
    assert (t.capture, t.request_id) == ("cap", "flow#3")
    assert parse_target("with#hash", dirs.__contains__).capture == "with#hash"
    with pytest.raises(TargetError, match="names no capture directory"):
        parse_target("missing#x", dirs.__contains__)


@pytest.mark.browser
def test_the_html_page_shows_the_divergence_in_a_browser(pair, ctxtap_config, tmp_path) -> None:
    chromium = Path("/usr/bin/chromium")
    if not chromium.exists():
        pytest.skip("Chromium is not installed at /usr/bin/chromium")
    from playwright.sync_api import sync_playwright

    a, b = pair
    page_path = tmp_path / "diff.html"
    run_ctxtap(["diff", str(a), str(b), "--ignore-ids", "--html", str(page_path)], ctxtap_config)
    requests: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(chromium), args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page()
        page.on("request", lambda r: requests.append(r.url))
        page.goto(page_path.as_uri())
        assert "a timestamp removed" in page.inner_text("#first-divergence")
        assert page.locator("tr.first td").first.is_visible()
        assert page.locator("pre.textdiff .del").first.inner_text().startswith("-Current time:")
        assert page.locator("#numbers td.better").count() >= 1
        browser.close()
    assert requests == [page_path.as_uri()]  # self-contained: nothing else was loaded


def test_mask_ids_masks_ids_and_hashes_but_not_times() -> None:
    from ctxtap.analysis.compare.rundiff import mask_ids

    assert mask_ids("cch=74071; cch=c1b46; cch=bcaec;") == "cch=<id>; cch=<id>; cch=<id>;"  # all digits, all letters
    assert mask_ids("session 550e8400-e29b-41d4-a716-446655440000.") == "session <id>."
    assert mask_ids("Current time: 2026-12-01T11:35:01Z") == "Current time: 2026-12-01T11:35:01Z"
    assert mask_ids("a facade decade") == "a facade decade"  # hex-looking words without digits stay
