"""Long commands show progress on a terminal and nothing when their output is piped."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
from pathlib import Path

from tests.democaptures import agent_capture
from tests.proxyharness import ctxtap_env


def _run(args: list[str], config: Path, terminal: bool) -> str:
    """The command's standard error, read from a pseudo-terminal or a pipe."""
    cmd = [sys.executable, "-m", "ctxtap.cli", *args]
    env = {**ctxtap_env(config), "COLUMNS": "120", "TERM": "xterm"}
    if not terminal:
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, check=True)
        return done.stderr
    leader, follower = pty.openpty()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=follower, stdin=subprocess.DEVNULL)
    os.close(follower)
    chunks = []
    while True:
        ready, _, _ = select.select([leader], [], [], 300)
        if not ready:
            break
        try:
            data = os.read(leader, 65536)
        except OSError:  # the follower closed: the command ended
            break
        if not data:
            break
        chunks.append(data)
    assert proc.wait(60) == 0
    os.close(leader)
    return b"".join(chunks).decode("utf-8", "replace")


def test_progress_on_a_terminal_only(ctxtap_config, tmp_path: Path) -> None:
    capture = agent_capture(tmp_path / "agent", ctxtap_config, "claude", turns=6)
    shown = _run(["analyze", "--force", str(capture)], ctxtap_config, terminal=True)
    assert "parsing requests" in shown and "building" in shown
    piped = _run(["analyze", "--force", str(capture)], ctxtap_config, terminal=False)
    assert "parsing requests" not in piped and "\x1b[" not in piped and "\r" not in piped

    shown = _run(["publish", str(capture), "-o", str(tmp_path / "pub1")], ctxtap_config, terminal=True)
    assert "final scan" in shown
    piped = _run(["publish", str(capture), "-o", str(tmp_path / "pub2")], ctxtap_config, terminal=False)
    assert "final scan of every file" not in piped and "\x1b[" not in piped

    har = tmp_path / "run.har"
    subprocess.run([sys.executable, "-m", "ctxtap.cli", "export", str(capture), "--har", str(har)],
                   env=ctxtap_env(ctxtap_config), check=True, capture_output=True, timeout=120)
    shown = _run(["import", str(har), "--out", str(tmp_path / "imported")], ctxtap_config, terminal=True)
    assert f"importing {har.name}" in shown
