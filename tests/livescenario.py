"""`ctxtap record --live` around the scripted agent, for the browser test, the screenshot and the benchmark."""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.proxyharness import ROOT, ctxtap_env

AGENT = ROOT / "tests" / "live_agent.py"


@dataclass
class LiveRecording:
    proc: subprocess.Popen
    gate: Path
    capture: Path
    url: str = ""
    stderr: list[str] = field(default_factory=list)

    @property
    def base(self) -> str:
        return self.url.split("/?", 1)[0]

    def start_agent(self) -> None:
        (self.gate / "start").write_text("")

    def agent_done(self) -> int | None:
        done = self.gate / "agent-done"
        return int(done.read_text()) if done.exists() and done.read_text() else None

    def finish(self, timeout: float = 120) -> int:
        (self.gate / "end").write_text("")
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stderr is not None:
            self.stderr.extend(self.proc.stderr.readlines())
        return self.proc.returncode


def record_live(tmp: Path, config: Path, model_url: str, turns: int = 3, extra: list[str] | None = None,
                live: bool = True, tool_s: float = 0.3) -> LiveRecording:
    """Start `ctxtap record [--live] -- python tests/live_agent.py` and wait for the view's URL."""
    gate = tmp / "gate"
    gate.mkdir(parents=True, exist_ok=True)
    capture = tmp / "capture"
    args = [sys.executable, "-m", "ctxtap.cli.main", "record", *(["--live"] if live else []), "--offline",
            "--out", str(capture), "--route", f"api.anthropic.com={model_url}", *(extra or []),
            "--", sys.executable, str(AGENT), str(gate), str(turns), str(tool_s)]
    proc = subprocess.Popen(args, env=ctxtap_env(config), cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    rec = LiveRecording(proc, gate, capture)
    if not live:
        return rec
    deadline = time.monotonic() + 120
    assert proc.stderr is not None
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        rec.stderr.append(line)
        if "live view at " in line:
            rec.url = line.split("live view at ", 1)[1].strip()
            return rec
        if not line and proc.poll() is not None:
            break
    proc.kill()
    raise AssertionError("ctxtap record --live printed no URL:\n" + "".join(rec.stderr))
