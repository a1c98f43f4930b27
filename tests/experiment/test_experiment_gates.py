"""Experiments with gates (issue 38, item 5) and run conditions in the experiment report (item 4): two variants
of a small agent that runs the scripted model server's tool calls in a real shell, one of which appends to a
file. Both pass their answer check; the one that wrote breaks `--no-writes` and is counted failed."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from ctxtap.analysis.compare.experiment import read_runs
from ctxtap.analysis.db import connect, fetch_rows
from ctxtap.experiment.spec import SpecError, load_spec
from tests.proxyharness import ROOT, run_ctxtap

AGENT = ROOT / "tests" / "shell_agent.py"
# the same script for every run: the write happens only where the variant sets SCRIBBLE
SCRIPT = {"steps": [{"calls": ["cat README.md", "[ -z $SCRIBBLE ] || echo note >> README.md"]}, {"text": "done"}]}

SPEC = f"""\
name = "gated"
command = "{{python}} {AGENT} go {{flag}} {{mode}}"
check = "grep -q demo README.md"
fixture = "fixture"
repeats = 1
timeout = 120
pass_k = [1]
gates = ["--no-writes"]

[server]
script = '{json.dumps(SCRIPT)}'

[variants.reader]
flag = "--permission-mode"
mode = "default"

[variants.scribbler]
flag = "--permission-mode"
mode = "acceptEdits"
[variants.scribbler.env]
SCRIBBLE = "1"
"""


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid",
                    "-c", "commit.gpgsign=false", *args], check=True, capture_output=True)


@pytest.fixture(scope="module")
def gated(tmp_path_factory, ctxtap_config) -> tuple[Path, subprocess.CompletedProcess]:
    base = tmp_path_factory.mktemp("gated")
    fixture = base / "fixture"
    fixture.mkdir()
    (fixture / "README.md").write_text("# demo\n")
    _git(fixture, "init", "-q")
    _git(fixture, "add", "README.md")
    _git(fixture, "commit", "-q", "-m", "fixture")
    (base / "spec.toml").write_text(SPEC)
    out = base / "exp"
    result = run_ctxtap(["experiment", "run", str(base / "spec.toml"), "--out", str(out)], ctxtap_config, timeout=600)
    assert "(complete)" in result.stdout, result.stdout + result.stderr
    return out, result


def test_a_run_that_passed_its_check_but_broke_its_gate_failed(gated) -> None:
    out, result = gated
    runs = {r.variant: r for r in read_runs(out)}
    reader, scribbler = runs["reader"], runs["scribbler"]
    assert reader.gates == scribbler.gates == ["--no-writes"]
    assert (reader.answer_passed, reader.gates_passed, reader.passed) == (True, True, True)
    assert (scribbler.answer_passed, scribbler.gates_passed, scribbler.passed) == (True, False, False)
    assert scribbler.check_exit_code == 0 and scribbler.exit_code == 0
    [failure] = scribbler.gate_failures
    assert failure["gate"] == "--no-writes" and failure["judged"] and failure["what"] == ["README.md (modified)"]
    assert "[1/2] 000-reader: completed, pass" in result.stdout
    assert "000-scribbler: completed, fail" in result.stdout
    # the capture holds the receipt and the gates, so its own report and `ctxtap check` see the same
    capture = out / "runs" / "000-scribbler" / "capture"
    con = connect([capture])
    assert fetch_rows(con, "SELECT rel_path, change FROM effects") == [{"rel_path": "README.md", "change": "modified"}]
    assert fetch_rows(con, "SELECT flags FROM run_gates") == [{"flags": "--no-writes"}]
    assert connect([out / "runs" / "000-reader" / "capture"]).execute("SELECT count(*) FROM effects").fetchone() == (0,)


def test_the_report_counts_gate_failures_as_failures_and_says_which_gate(gated, ctxtap_config) -> None:
    out, _ = gated
    rep = json.loads(run_ctxtap(["experiment", "report", str(out), "--json"], ctxtap_config).stdout)
    assert rep["gates"] == ["--no-writes"]
    v = {x["name"]: x for x in rep["variants"]}
    assert v["reader"]["passes"] == 1 and v["reader"]["n_gate_failures"] == 0
    assert v["scribbler"]["passes"] == 0 and v["scribbler"]["n_gate_failures"] == 1
    assert v["scribbler"]["n_answer_passed_gate_failed"] == 1
    assert v["reader"]["pass_k"][0]["pass_at_k"] == 1.0 and v["scribbler"]["pass_k"][0]["pass_at_k"] == 0.0
    assert v["scribbler"]["pass_k"][0]["pass_hat_k"] == 0.0
    text = run_ctxtap(["experiment", "report", str(out)], ctxtap_config).stdout
    assert "gates: --no-writes (zero tolerance" in text
    assert "variant scribbler: 1 of 1 runs recorded, 1 executed, 0 passed (1 broke a gate, 1 of them passed the " \
           "check)" in text
    assert "run 000-scribbler: failed, check passed, broke --no-writes: README.md (modified)" in text
    page = out.parent / "exp.html"
    run_ctxtap(["experiment", "report", str(out), "--html", str(page)], ctxtap_config)
    html = page.read_text()
    assert "Run 000-scribbler failed (its check passed): broke --no-writes: README.md (modified)." in html
    assert "conditions differ between variants reader and scribbler: approval mode default -&gt; acceptEdits" in html


def test_the_report_flags_conditions_that_differ_between_variants(gated, ctxtap_config) -> None:
    out, _ = gated
    rep = json.loads(run_ctxtap(["experiment", "report", str(out), "--json"], ctxtap_config).stdout)
    assert rep["condition_differences"] == [{"a_variant": "reader", "b_variant": "scribbler", "field": "approval",
                                             "label": "approval mode", "a": "default", "b": "acceptEdits"}]
    assert rep["condition_spread"] == []
    v = {x["name"]: x for x in rep["variants"]}
    head = subprocess.run(["git", "-C", str(out.parent / "fixture"), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()
    # the work directory's facts, kept by the runner: every run starts from the fixture's commit, clean
    assert v["reader"]["conditions"]["git_head"] == v["scribbler"]["conditions"]["git_head"] == head
    assert v["reader"]["conditions"]["git_dirty"] == "no"
    assert v["reader"]["conditions"]["client"] == "shell-agent"
    text = run_ctxtap(["experiment", "report", str(out)], ctxtap_config).stdout
    assert "conditions differ between variants reader and scribbler: approval mode default -> acceptEdits" in text
    # the capture says where: the command line the runner kept in its manifest
    con = connect([out / "runs" / "000-scribbler" / "capture"])
    assert con.execute("SELECT approval_source FROM run_conditions").fetchone() == (
        "command line: --permission-mode acceptEdits",)


@pytest.mark.parametrize("gates,words", [
    ('["--no-wirtes"]', "unknown gate '--no-wirtes'"),
    ('["--allow-write *.log"]', "add --no-writes"),
    ('["--no-writes", "--workspace /tmp"]', "set by the runner"),
])
def test_a_spec_with_a_bad_gate_is_refused_naming_its_line(tmp_path, gates, words) -> None:
    path = tmp_path / "spec.toml"
    path.write_text(f'command = "true"\ngates = {gates}\n[variants.A]\n')
    with pytest.raises(SpecError) as err:
        load_spec(path)
    assert f"{path}:2: gates: " in str(err.value) and words in str(err.value)
    path.write_text('command = "true"\ngates = ["--no-writes", "--allow-write=*.log", "--no-network --allow-host '
                    'example.com"]\n[variants.A]\n')
    gates_ = load_spec(path).gate_set()
    assert gates_.flags() == ["--no-writes", "--allow-write *.log", "--no-network", "--allow-host example.com"]
