"""A real `ctxtap record` of a small agent (tests/shell_agent.py) that runs the scripted model server's tool
calls in a real shell, in a throw-away workspace (a support module, no tests: the effect receipt tests of
this folder and the effect classes' tests of tests/analysis record with it)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ctxtap.modelserver import ModelServer
from tests.proxyharness import ROOT, ctxtap_env

AGENT = ROOT / "tests" / "shell_agent.py"


def _workspace(path: Path) -> Path:
    path.mkdir()
    (path / ".git").mkdir()
    (path / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (path / ".gitignore").write_text("node_modules\n")
    (path / "README.md").write_text("# demo\n")
    (path / ".env").write_text("TOKEN=x\n")
    return path


def _record(tmp: Path, name: str, steps: list, config: Path, check: str | None = None,
            extra: tuple[str, ...] = ()) -> tuple[Path, subprocess.CompletedProcess]:
    ws, out = _workspace(tmp / f"{name}-ws"), tmp / f"{name}-cap"
    with ModelServer(script=json.dumps({"steps": steps})) as srv:
        args = ["record", "--out", str(out), "--no-telemetry", "--route", f"api.anthropic.com={srv.url}", *extra]
        args += ["--check", check] if check else []
        env = ctxtap_env(config) | {"PYTHONPATH": str(ROOT)}
        done = subprocess.run([sys.executable, "-m", "ctxtap.cli.main", *args, "--", sys.executable, str(AGENT)],
                              cwd=ws, env=env, capture_output=True, text=True, timeout=240)
    return out, done
