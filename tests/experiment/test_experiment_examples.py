"""The example experiments in examples/experiments/ load, run offline (one repeat each) and show the
difference each is about."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ctxtap.experiment.spec import load_spec
from tests.proxyharness import ROOT, run_ctxtap

EXAMPLES = ROOT / "examples" / "experiments"


@pytest.mark.parametrize("name", ["policy", "failure", "client"])
def test_the_example_specs_load(name) -> None:
    spec = load_spec(EXAMPLES / f"{name}.toml")
    assert len(spec.variants) == 2 and spec.repeats == 5 and spec.server is not None


def run_example(name: str, tmp_path: Path, config: Path, repeats: int = 1) -> dict:
    text = re.sub(r"^repeats = \d+", f"repeats = {repeats}", (EXAMPLES / f"{name}.toml").read_text(), flags=re.M)
    spec = tmp_path / f"{name}.toml"
    spec.write_text(text)
    out = tmp_path / name
    run_ctxtap(["experiment", "run", str(spec), "--out", str(out)], config, timeout=600)
    rep = json.loads(run_ctxtap(["experiment", "report", str(out), "--json"], config).stdout)
    return {v["name"]: {**v, "d": {d["name"]: d for d in v["distributions"]}} for v in rep["variants"]} | {"_": rep}


def test_policy_a_timestamp_before_the_breakpoint_costs_cache(tmp_path, ctxtap_config) -> None:
    v = run_example("policy", tmp_path, ctxtap_config)
    assert v["before"]["passes"] == v["after"]["passes"] == 1
    assert v["before"]["d"]["cached tokens"]["p50"] < v["after"]["d"]["cached tokens"]["p50"]
    assert v["before"]["d"]["cost"]["p50"] > v["after"]["d"]["cost"]["p50"]
    assert "a timestamp" in v["_"]["layout"]["first_divergence_words"]


def test_failure_a_429_adds_a_call_and_a_wait(tmp_path, ctxtap_config) -> None:
    from ctxtap.analysis.db import connect

    v = run_example("failure", tmp_path, ctxtap_config)
    assert v["rate_limited"]["passes"] == v["clean"]["passes"] == 1
    assert v["rate_limited"]["d"]["model calls"]["p50"] == v["clean"]["d"]["model calls"]["p50"] + 1
    # the 429 said Retry-After: 2 and the client waited 2 x 0.25 s before its retry (a lower bound: the
    # end-to-end times of single runs on a busy machine vary by more than the wait)
    con = connect([tmp_path / "failure" / "runs" / "000-rate_limited" / "capture"])
    (retry_after, ended), = con.execute(
        "SELECT retry_after_s, ts_end FROM requests WHERE error_layer = 'rate_limit'").fetchall()
    following = con.execute("SELECT min(ts_start) FROM requests WHERE ts_start > ?", [ended]).fetchone()[0]
    assert retry_after == 2 and following - ended >= 0.45
    clean = connect([tmp_path / "failure" / "runs" / "000-clean" / "capture"])
    assert clean.execute("SELECT count(*) FROM requests WHERE error_layer IS NOT NULL").fetchone()[0] == 0


def test_client_two_clients_on_one_task(tmp_path, ctxtap_config) -> None:
    v = run_example("client", tmp_path, ctxtap_config)
    assert v["claude"]["passes"] == v["kimi"]["passes"] == 1
    layout = v["_"]["layout"]
    assert layout["first_divergence"] is not None
    assert any(c["op"] == "only_a" for c in layout["changes"]) or any(c["op"] == "changed" for c in layout["changes"])
