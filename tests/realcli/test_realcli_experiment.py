"""A real-CLI experiment: the real Claude Code with two settings (prompt caching on / off), 2 x 2 runs.

`ctxtap experiment run` runs inside a loopback-only network namespace (with the scripted model
server, script `basic`, as the provider), so the CLI can never reach a real one; the report
then shows the setting's effect: without prompt caching the CLI sends no cache breakpoints and
reads nothing from the cache.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from ctxtap.analysis.db import connect
from tests.proxyharness import ROOT
from tests.realcli import workspace
from tests.realcli.clis import CLIS, TASK
from tests.realcli.runs import FINAL_TEXT
from tests.realcli.sandbox import base_env, namespace
from tests.realcli.toolbox import Toolbox

pytestmark = pytest.mark.realcli

SPEC = """\
name = "claude-prompt-caching"
command = {command}
check = ["grep", "-q", {final}, "{{run_dir}}/command.stdout"]
repeats = 2
timeout = 240
fixture = "fixture"
pass_k = [1, 2]

[server]
script = "basic"
hosts = ["api.anthropic.com"]

[variants.cached]
[variants.cached.env]
CTXTAP_VARIANT = "cached"

[variants.uncached]
[variants.uncached.env]
DISABLE_PROMPT_CACHING = "1"
"""


@pytest.mark.parametrize("cli", ["claude"])
def test_a_real_cli_experiment_runs_and_reports(cli: str, realcli_tools: Toolbox, ctxtap_config: Path,
                                                tmp_path: Path) -> None:
    import subprocess

    spec_cli = CLIS[cli]
    command, path_dirs = realcli_tools.command_for(spec_cli)
    ns = namespace()
    home = workspace.make_home(tmp_path / "home")
    workspace.make_fixture_repo(tmp_path / "fixture", False)
    setup = spec_cli.setup(home)
    argv = [str(c) for c in command] + spec_cli.args(tmp_path / "fixture")
    (tmp_path / "spec.toml").write_text(SPEC.format(command=json.dumps(argv), final=json.dumps(FINAL_TEXT)))
    env = base_env(home, path_dirs, ctxtap_config)
    env.update(setup.env)
    env["PYTHONPATH"] = str(ROOT)
    out = tmp_path / "exp"
    inner = (f"ip link set lo up && exec {sys.executable} -m ctxtap.cli.main experiment run "
             f"{tmp_path / 'spec.toml'} --out {out}")
    result = subprocess.run([*ns.prefix, "sh", "-c", inner], env=env, cwd=tmp_path, capture_output=True,
                            text=True, timeout=1200)
    assert result.returncode == 0, result.stdout + result.stderr
    assert TASK  # the task the CLI was given is the tier's usual one
    report = subprocess.run([sys.executable, "-m", "ctxtap.cli.main", "experiment", "report", str(out), "--json"],
                            env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert report.returncode == 0, report.stderr
    rep = json.loads(report.stdout)
    variants = {v["name"]: v for v in rep["variants"]}
    for name in ("cached", "uncached"):
        assert variants[name]["n_executed"] == 2 and variants[name]["passes"] == 2, variants[name]
    captures = sorted(out.glob("runs/*/capture"))
    assert len(captures) == 4
    con = connect(captures)
    breakpoints = dict(con.execute("""
        SELECT r.capture_id, count(b.position) FILTER (WHERE b.is_cache_breakpoint)
        FROM requests r JOIN blocks b USING (capture_id, request_id) GROUP BY 1""").fetchall())
    runs = {json.loads((c / "manifest.json").read_text())["capture_id"]: c.parent.name for c in captures}
    for cid, run_id in runs.items():
        if run_id.endswith("uncached"):
            assert breakpoints.get(cid, 0) == 0, run_id
        else:
            assert breakpoints.get(cid, 0) > 0, run_id
    cached = {d["name"]: d for d in variants["cached"]["distributions"]}["cached tokens"]["p50"]
    uncached = {d["name"]: d for d in variants["uncached"]["distributions"]}["cached tokens"]["p50"]
    assert uncached == 0 and cached >= 0
