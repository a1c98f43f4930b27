"""The real-CLI sandbox's clean-up, without a CLI: what a run leaves behind is killed.

Runs in the default suite (no namespace, no npm). The check itself runs in a child Python:
making a pytest worker a subreaper would hand it every orphan of the other tests in its file.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

CHECK = r"""
import subprocess, sys
from pathlib import Path
from tests.realcli import sandbox

assert sandbox._adopt_orphans(), "this process could not become a subreaper"
before = sandbox._children()
pidfile = Path(sys.argv[1])
# a "CLI" that leaves a daemon behind: it starts its own session and outlives its parent
run = subprocess.Popen(["sh", "-c", f"setsid sleep 300 & echo $! > {pidfile}; exit 0"], start_new_session=True)
run.wait()
daemon = int(pidfile.read_text())
assert daemon in sandbox._children() - before, "the daemon was not handed to this process"
sandbox._end_run(run.pid, before)
assert not Path(f"/proc/{daemon}").exists(), "the daemon outlived the run"
print("ok")
"""


def test_a_daemon_a_cli_leaves_behind_is_killed_when_its_run_ends(tmp_path):
    if not sys.platform.startswith("linux"):
        pytest.skip("subreapers are Linux's")
    result = subprocess.run([sys.executable, "-c", CHECK, str(tmp_path / "daemon.pid")], cwd=ROOT,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr
