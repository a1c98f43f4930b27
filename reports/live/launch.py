"""Start and stop the live-view child process from the recorder (lean: the standard library only)."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import threading
from pathlib import Path

import ctxtap
from ctxtap.reports.live.follow import TOKEN_ENV

START_TIMEOUT = 60.0  # the child imports DuckDB, pyarrow and the analyzer before it answers


class LiveStartError(Exception):
    """The live view could not start (the recording itself is unaffected)."""


class LiveChild:
    def __init__(self, proc: subprocess.Popen, port: int, token: str) -> None:
        self.proc, self.port, self.token = proc, port, token

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/?token={self.token}"

    def stop(self, timeout: float = 5.0) -> None:
        """Close its stdin (its signal to end), then wait; kill it if it does not end."""
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def start_live(capture_dir: Path, port: int = 0) -> LiveChild:
    """Start `python -m ctxtap.reports.live.follow CAPTURE` and wait for its `ready <port>` line."""
    token = secrets.token_urlsafe(24)
    env = dict(os.environ)
    env[TOKEN_ENV] = token
    root = str(Path(ctxtap.__file__).resolve().parents[1])  # the folder that holds the package
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    proc = subprocess.Popen([sys.executable, "-m", "ctxtap.reports.live.follow", str(capture_dir), "--port", str(port)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True)
    line: list[str] = []
    reader = threading.Thread(target=lambda: line.append(proc.stdout.readline() if proc.stdout else ""), daemon=True)
    reader.start()
    reader.join(START_TIMEOUT)
    first = (line[0] if line else "").strip()
    if first.startswith("ready "):
        return LiveChild(proc, int(first.split()[1]), token)
    LiveChild(proc, 0, token).stop(1.0)
    reason = first[len("error "):] if first.startswith("error ") else (
        "it did not answer in time" if not line else "it stopped before it was ready")
    raise LiveStartError(reason)
