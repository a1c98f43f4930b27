"""`ctxtap experiment run|report`: specs refused by line, the estimators, and 2 variants x 5 repeats end to end
through the real recording proxy to the scripted model server, the report checked against SQL over the captures."""

from __future__ import annotations

import itertools
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ctxtap.analysis.compare.experiment import (
    bootstrap_median_diff,
    pass_at_k,
    pass_hat_k,
    quantile,
    read_manifest,
    read_runs,
)
from ctxtap.analysis.db import connect
from ctxtap.experiment.spec import SpecError, load_spec
from tests.proxyharness import ROOT, ctxtap_env, run_ctxtap

# -- the spec --------------------------------------------------------------------------------

GOOD = """\
name = "t"
command = "{python} -m ctxtap.demo {agent} --turns 2"
repeats = 2

[variants.A]
agent = "claude"

[variants.B]
agent = "kimi"
"""


def spec_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "spec.toml"
    path.write_text(text)
    return path


def test_a_good_spec_loads(tmp_path) -> None:
    spec = load_spec(spec_file(tmp_path, GOOD))
    assert [v.name for v in spec.variants] == ["A", "B"] and spec.variants[1].vars == {"agent": "kimi"}
    assert spec.argv()[1:3] == ["-m", "ctxtap.demo"]


@pytest.mark.parametrize("text,line,words", [
    (GOOD.replace('repeats = 2', 'repeats = '), 3, "not valid TOML"),
    (GOOD.replace("{agent}", "{agnet}"), 2, "uses {agnet}, which variant 'A' (line 5) does not set"),
    (GOOD.replace('agent = "kimi"', 'model = "x"'), 2, "variant 'B' (line 8) does not set"),
    (GOOD.replace('repeats = 2', 'repeats = 0'), 3, "greater than or equal to 1"),
    (GOOD.replace('repeats = 2', 'repeats = 2\nretries = 3'), 4, "unknown key"),
    (GOOD.split("[variants.A]")[0], 1, "no variants"),
    (GOOD.replace('repeats = 2', 'repeats = 2\nfixture = "nowhere"'), 4, "is not a directory"),
    (GOOD.replace('repeats = 2', 'repeats = 2\ncheck = "test {server_url}"'), 4, "no [server] table"),
    (GOOD.replace('command = "', 'command = "\'unbalanced '), 2, "command:"),
])
def test_a_bad_spec_is_refused_naming_the_line(tmp_path, text, line, words) -> None:
    path = spec_file(tmp_path, text)
    with pytest.raises(SpecError) as err:
        load_spec(path)
    message = str(err.value)
    assert words in message, message
    assert f"{path}:{line}:" in message or f"line {line}" in message, message


def test_the_cli_refuses_a_bad_spec_before_anything_runs(tmp_path, ctxtap_config) -> None:
    path = spec_file(tmp_path, GOOD.replace("{agent}", "{nope}"))
    out = tmp_path / "exp"
    result = run_ctxtap(["experiment", "run", str(path), "--out", str(out)], ctxtap_config, check=False)
    assert result.returncode == 1 and "nothing ran" in result.stderr and f"{path}:2:" in result.stderr
    assert not out.exists()


# -- the estimators ----------------------------------------------------------------------------


def brute(n: int, c: int, k: int, every: bool) -> float:
    outcomes = [True] * c + [False] * (n - c)
    draws = list(itertools.combinations(range(n), k))
    hits = sum(1 for d in draws if (all if every else any)(outcomes[i] for i in d))
    return hits / len(draws)


@pytest.mark.parametrize("n,c", [(5, 0), (5, 2), (5, 5), (7, 3), (1, 1)])
def test_pass_at_k_and_pass_hat_k_are_the_unbiased_estimators(n, c) -> None:
    for k in range(1, n + 1):
        assert pass_at_k(n, c, k) == pytest.approx(brute(n, c, k, every=False))
        assert pass_hat_k(n, c, k) == pytest.approx(brute(n, c, k, every=True))
    assert pass_at_k(n, c, n + 1) is None and pass_hat_k(n, c, n + 1) is None


def test_quantile_and_bootstrap() -> None:
    import duckdb

    values = [3.0, 1.0, 10.0, 7.0, 2.0]
    for q in (0.5, 0.95):
        expected = duckdb.connect().execute(f"SELECT quantile_cont(x, {q}) FROM (SELECT unnest({values}) AS x)").fetchone()[0]
        assert quantile(values, q) == pytest.approx(float(expected))
    point, lo, hi = bootstrap_median_diff([1.0, 2.0, 3.0] * 4, [11.0, 12.0, 13.0] * 4)
    assert point == 10.0 and 8.0 <= lo <= 10.0 <= hi <= 12.0
    assert bootstrap_median_diff([], [1.0]) is None


# -- end to end -----------------------------------------------------------------------------------

E2E = """\
name = "e2e"
command = "{python} agent.py claude --turns 2 --clock {clock} --answer answer.json"
check = "{python} check.py {variant} {repeat}"
repeats = 5
timeout = 120
fixture = "fixture"
pass_k = [1, 3, 9]

[server]

[variants.system]
clock = "system"

[variants.message]
clock = "message"
"""

# repeat 1 of `message` fails on auth before the tool loop (a not-executed run); the check fails repeat 3
# of `system`; every check also asserts the fixture arrived fresh (nothing left by an earlier run).
CHECK = """\
import json, pathlib, sys
variant, repeat = sys.argv[1], int(sys.argv[2])
assert not pathlib.Path("dirty").exists(), "the fixture was not fresh"
pathlib.Path("dirty").write_text("x")
json.load(open("answer.json"))
sys.exit(1 if (variant, repeat) == ("system", 3) else 0)
"""


# A variant's values cannot depend on the repeat, so the one not-executed run is made by a shim in the
# fixture: it reads the run id the runner sets and asks the server for a 401 on the very first request.
SHIM = """\
import os, runpy, sys
if os.environ["CTXTAP_EXPERIMENT_RUN"] == "001-message":
    sys.argv += ["--inject", "401", "--inject-turn", "1"]
sys.argv = ["ctxtap.demo"] + sys.argv[1:]
runpy.run_module("ctxtap.demo", run_name="__main__")
"""


@pytest.fixture(scope="module")
def experiment(tmp_path_factory, ctxtap_config) -> Path:
    base = tmp_path_factory.mktemp("experiment")
    (base / "fixture").mkdir()
    (base / "fixture" / "check.py").write_text(CHECK)
    (base / "fixture" / "agent.py").write_text(SHIM)
    spec_path = base / "spec.toml"
    spec_path.write_text(E2E)
    out = base / "exp"
    result = run_ctxtap(["experiment", "run", str(spec_path), "--out", str(out)], ctxtap_config, timeout=900)
    assert "(complete)" in result.stdout, result.stdout + result.stderr
    return out


def test_every_run_has_its_capture_interleaved(experiment) -> None:
    manifest = read_manifest(experiment)
    runs = read_runs(experiment)
    assert manifest.status == "complete" and len(runs) == 10
    assert manifest.plan == [f"{r:03d}-{v}" for r in range(5) for v in ("system", "message")]
    # interleaved in time as well as in the plan: A B A B ..., each run starting after the previous ended
    ordered = sorted(runs, key=lambda r: r.started_at)
    assert [r.variant for r in ordered] == ["system", "message"] * 5
    assert all(a.ended_at <= b.started_at for a, b in zip(ordered, ordered[1:], strict=False))
    ids = set()
    for r in runs:
        capture = experiment / "runs" / r.run_id / "capture"
        assert (capture / "manifest.json").exists() and (capture / "analysis").is_dir(), r.run_id
        ids.add(json.loads((capture / "manifest.json").read_text())["capture_id"])
        # the shared proxy's capture moved with the runs: each holds its own session and nothing else
        assert connect([capture]).execute("SELECT count(DISTINCT session_id) FROM requests "
                                          "WHERE thread_kind = 'main'").fetchone()[0] == 1, r.run_id
        assert r.fixture_digest == runs[0].fixture_digest  # every run started from the same fixture
    assert len(ids) == 10
    by_id = {r.run_id: r for r in runs}
    assert by_id["003-system"].passed is False and by_id["003-system"].check_exit_code == 1
    assert by_id["001-message"].exit_code == 1  # the 401 ended the session
    assert by_id["000-system"].client == "claude-code" and by_id["000-system"].model


def report_json(directory: Path, config: Path, *extra: str) -> dict:
    return json.loads(run_ctxtap(["experiment", "report", str(directory), "--json", *extra], config).stdout)


def test_the_report_equals_sql_over_the_captures(experiment, ctxtap_config) -> None:
    rep = report_json(experiment, ctxtap_config)
    variants = {v["name"]: v for v in rep["variants"]}
    runs = read_runs(experiment)
    captures = {r.run_id: experiment / "runs" / r.run_id / "capture" for r in runs}
    con = connect(list(captures.values()))
    per_run = {}
    for r in runs:
        cid = json.loads((captures[r.run_id] / "manifest.json").read_text())["capture_id"]
        row = con.execute("""
            SELECT count(*), sum(input_tokens_reported), sum(cache_read_tokens), sum(output_tokens), sum(cost_usd),
                   count(*) FILTER (WHERE thread_kind = 'main' AND error_layer IS NULL),
                   bool_and(error_layer = 'auth') FILTER (WHERE error_layer IS NOT NULL)
            FROM requests WHERE capture_id = ?""", [cid]).fetchone()
        tools = con.execute("SELECT count(*) FROM tool_calls WHERE capture_id = ? AND request_id IS NOT NULL",
                            [cid]).fetchone()[0]
        per_run[r.run_id] = {"calls": row[0], "input": row[1], "cached": row[2], "output": row[3], "cost": row[4],
                             "ok_main": row[5], "auth_only": row[6], "tools": tools, "variant": r.variant,
                             "passed": r.passed, "seconds": r.command_s}
    # the 401 run is the one not executed, counted apart
    not_executed = sorted(k for k, v in per_run.items() if v["ok_main"] == 0)
    assert not_executed == ["001-message"] and per_run["001-message"]["auth_only"]
    assert variants["message"]["n_not_executed"] == 1 and variants["system"]["n_not_executed"] == 0
    for name, v in variants.items():
        mine = {k: x for k, x in per_run.items() if x["variant"] == name and k not in not_executed}
        assert v["n_executed"] == len(mine) and v["n_runs"] == 5
        passes = sum(1 for x in mine.values() if x["passed"])
        assert v["passes"] == passes
        n = len(mine)
        assert [p["k"] for p in v["pass_k"]] == [k for k in (1, 3) if k <= n]  # k = 9 > n is left out
        for p in v["pass_k"]:
            assert p["pass_at_k"] == pytest.approx(brute(n, passes, p["k"], every=False))
            assert p["pass_hat_k"] == pytest.approx(brute(n, passes, p["k"], every=True))
        dists = {d["name"]: d for d in v["distributions"]}
        for dist, key in (("model calls", "calls"), ("input tokens", "input"), ("cached tokens", "cached"),
                          ("output tokens", "output"), ("cost", "cost"), ("tool calls", "tools"),
                          ("end-to-end time", "seconds")):
            values = [float(x[key]) for x in mine.values()]
            got = dists[dist]
            assert sorted(got["values"]) == pytest.approx(sorted(values)), (name, dist)
            sql = con.execute("SELECT median(x), quantile_cont(x, 0.95), max(x) FROM (SELECT unnest(?) AS x)",
                              [values]).fetchone()
            assert (got["p50"], got["p95"], got["max"]) == pytest.approx(sql), (name, dist)
    # the policy shows: a timestamp before the cache breakpoint reads less from the cache
    cached = {d["name"]: d for d in variants["system"]["distributions"]}["cached tokens"]["p50"]
    cached_msg = {d["name"]: d for d in variants["message"]["distributions"]}["cached tokens"]["p50"]
    assert cached_msg > cached
    head = {h["name"]: h for h in rep["headline"]}
    assert head["cached tokens"]["median_diff"] == pytest.approx(cached_msg - cached)
    assert "too few runs" in head["cached tokens"]["hint"]
    assert any("k must be <= n" in note for note in rep["notes"])
    # the layout diff between the variants names the clock's place
    assert rep["layout_variants"] == ["system", "message"]
    assert "a timestamp" in rep["layout"]["first_divergence_words"]


def test_the_terminal_and_html_reports(experiment, ctxtap_config, tmp_path) -> None:
    page = tmp_path / "exp.html"
    out = run_ctxtap(["experiment", "report", str(experiment), "--html", str(page)], ctxtap_config).stdout
    assert "variant system: 5 of 5 runs recorded, 5 executed, 4 passed" in out
    assert "variant message: 5 of 5 runs recorded, 4 executed" in out and "1 not executed" in out
    assert "pass@3" in out and "pass@9" not in out
    html = page.read_text()
    assert html.startswith("<!doctype html>") and "<svg" in html and "http://" not in html.replace(
        "http://www.w3.org/2000/svg", "")


def test_resume_keeps_completed_runs_and_refuses_without_the_flag(experiment, ctxtap_config, tmp_path) -> None:
    import shutil

    copy = tmp_path / "exp"
    shutil.copytree(experiment, copy)
    spec = experiment.parent / "spec.toml"  # the original: its fixture path is relative to it
    result = run_ctxtap(["experiment", "run", str(spec), "--out", str(copy)], ctxtap_config, check=False)
    assert result.returncode == 1 and "--resume" in result.stderr
    # forget two runs (one of them half-done: a capture without run.json), then resume
    before = (copy / "runs" / "000-system" / "run.json").read_text()
    (copy / "runs" / "004-message" / "run.json").unlink()
    shutil.rmtree(copy / "runs" / "004-system")
    result = run_ctxtap(["experiment", "run", str(spec), "--out", str(copy), "--resume"], ctxtap_config, timeout=600)
    assert "8 of 10 runs already recorded, 2 to go" in result.stdout
    assert (copy / "runs" / "000-system" / "run.json").read_text() == before  # kept as it was
    assert (copy / "runs" / "004-message.partial-1" / "capture").is_dir()  # the half-done run kept aside
    assert {r.run_id for r in read_runs(copy)} == set(read_manifest(copy).plan)
    assert read_manifest(copy).status == "complete"


def test_timeouts_and_commands_that_do_not_start_are_recorded(tmp_path, ctxtap_config) -> None:
    spec = spec_file(tmp_path, """\
command = ["{prog}", "30"]
repeats = 1
timeout = 1

[variants.slow]
prog = "sleep"
[variants.missing]
prog = "no-such-program-ctxtap"
""")
    out = tmp_path / "exp"
    result = run_ctxtap(["experiment", "run", str(spec), "--out", str(out)], ctxtap_config, timeout=300)
    runs = {r.variant: r for r in read_runs(out)}
    assert runs["slow"].status == "timed_out" and runs["slow"].passed is False and "timed out" in runs["slow"].error
    assert runs["missing"].status == "failed_to_start" and "could not start" in runs["missing"].error
    assert "timed_out" in result.stdout and "failed_to_start" in result.stdout
    rep = report_json(out, ctxtap_config)
    v = {x["name"]: x for x in rep["variants"]}
    assert v["slow"]["n_timed_out"] == 1 and v["missing"]["n_failed_to_start"] == 1
    assert v["missing"]["n_not_executed"] == 1 and v["missing"]["n_executed"] == 0


def test_ctrl_c_finishes_the_current_run_and_leaves_a_valid_partial_experiment(tmp_path, ctxtap_config) -> None:
    spec = spec_file(tmp_path, """\
command = ["{python}", "-c", "import time; time.sleep(3); open('done', 'w').write('1')"]
check = ["test", "-f", "done"]
repeats = 4
timeout = 60

[variants.A]
[variants.B]
""")
    out = tmp_path / "exp"
    env = ctxtap_env(ctxtap_config)
    proc = subprocess.Popen([sys.executable, "-m", "ctxtap.cli.main", "experiment", "run", str(spec), "--out",
                             str(out)], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not list(out.glob("runs/*/work")):
        time.sleep(0.2)
    # the first run's work directory exists: it is running (or about to); interrupt once
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stdout + stderr
    assert "interrupted" in stdout and "--resume" in stderr
    runs = read_runs(out)
    assert runs and all(r.status == "completed" and r.passed for r in runs)  # the running run finished
    assert len(runs) < 8
    assert read_manifest(out).status == "interrupted"
    assert not [p for p in (out / "runs").iterdir() if not (p / "run.json").exists()]  # no half-made run left
    rep = report_json(out, ctxtap_config)
    assert rep["status"] == "interrupted"
    assert sum(v["n_missing"] for v in rep["variants"]) == 8 - len(runs)


BARRIER = """\
import os, pathlib, sys, time
gate = pathlib.Path(sys.argv[1])
(gate / sys.argv[2]).touch()
deadline = time.monotonic() + 60
while len(list(gate.iterdir())) < 2:  # wait until another run has started too
    if time.monotonic() > deadline:
        sys.exit("no other run started within 60 s: the runs did not run at once")
    time.sleep(0.05)
os.execv(sys.executable, [sys.executable, "-m", "ctxtap.demo", *sys.argv[3:]])
"""


def test_parallel_runs_each_get_their_own_proxy_and_capture(tmp_path, ctxtap_config) -> None:
    # each run waits at a barrier until a second run has started, so the check does not depend on timing:
    # run in turn, the first run would wait alone and fail
    gate = tmp_path / "gate"
    gate.mkdir()
    (tmp_path / "barrier.py").write_text(BARRIER)
    spec = spec_file(tmp_path, f"""\
command = "{{python}} {tmp_path / 'barrier.py'} {gate} {{run_id}} {{agent}} --turns 2"
repeats = 2
timeout = 120
[server]
[variants.claude]
agent = "claude"
[variants.kimi]
agent = "kimi"
""")
    out = tmp_path / "exp"
    run_ctxtap(["experiment", "run", str(spec), "--out", str(out), "--parallel", "2"], ctxtap_config, timeout=600)
    runs = read_runs(out)
    assert len(runs) == 4 and all(r.status == "completed" and r.passed for r in runs)
    for r in runs:
        con = connect([out / "runs" / r.run_id / "capture"])
        clients = {c for (c,) in con.execute("SELECT DISTINCT client FROM requests").fetchall()}
        assert clients == {"claude-code" if r.variant == "claude" else "kimi-code"}, r.run_id
        assert con.execute("SELECT count(DISTINCT session_id) FROM requests WHERE thread_kind = 'main'"
                           ).fetchone()[0] == 1
    # two ran at once: some run started before the one before it in the plan ended
    ordered = sorted(runs, key=lambda r: r.index)
    assert any(b.started_at < a.ended_at for a, b in zip(ordered, ordered[1:], strict=False))


@pytest.mark.browser
def test_the_experiment_page_in_a_browser(experiment, ctxtap_config, tmp_path) -> None:
    chromium = Path("/usr/bin/chromium")
    if not chromium.exists():
        pytest.skip("Chromium is not installed at /usr/bin/chromium")
    from playwright.sync_api import sync_playwright

    page_path = tmp_path / "exp.html"
    run_ctxtap(["experiment", "report", str(experiment), "--html", str(page_path)], ctxtap_config)
    loaded: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(chromium), args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page()
        page.on("request", lambda r: loaded.append(r.url))
        page.goto(page_path.as_uri())
        rows = page.locator("#variants tbody tr")
        assert rows.count() == 2 and "message" in rows.nth(1).inner_text()
        # one dot per executed run in each chart: 5 (system) + 4 (message)
        first_chart = page.locator("#distributions svg").first
        assert first_chart.is_visible() and first_chart.locator("circle").count() == 9
        assert "a timestamp" in page.inner_text("#first-divergence")
        browser.close()
    assert loaded == [page_path.as_uri()]


def test_keys_in_the_spec_commands_and_vars_stay_off_disk(tmp_path, ctxtap_config) -> None:
    """A spec's [variants.*.env] values, and keys in a command or a variant's vars, went into the
    experiment directory as typed (spec.toml, manifest.json's spec_text, run.json's command/vars).
    They are kept redacted; the runs still get the real values."""
    env_key = "sk-proj-" + "Hn4q" * 12
    var_key = "sk-ant-api03-" + "Ur2" * 30 + "AA"
    spec = spec_file(tmp_path, f"""\
command = ["{{python}}", "-c", "import os, sys; sys.exit(0 if os.environ['OPENAI_API_KEY'] == '{env_key}' and sys.argv[1] == '{var_key}' else 3)", "{{token}}"]
repeats = 1

[variants.a]
token = "{var_key}"
[variants.a.env]
OPENAI_API_KEY = "{env_key}"
""")
    out = tmp_path / "exp"
    result = run_ctxtap(["experiment", "run", str(spec), "--out", str(out)], ctxtap_config, timeout=300)
    assert result.returncode == 0, result.stderr
    (run,) = read_runs(out)
    assert run.status == "completed" and run.exit_code == 0 and run.passed  # the command saw the real values
    assert run.vars["token"].startswith("[REDACTED:") and any("[REDACTED:" in arg for arg in run.command)
    assert "[REDACTED:" in read_manifest(out).spec_text and "[REDACTED:" in (out / "spec.toml").read_text()
    for path in out.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert env_key.encode() not in data and var_key.encode() not in data, path
