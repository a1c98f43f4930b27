"""A live view that dies mid-recording (kill -9) leaves the recording and the capture untouched."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from ctxtap.analysis.build import ensure_analysis
from ctxtap.analysis.db import connect
from ctxtap.modelserver import ModelServer
from tests.livescenario import record_live


def _live_child(parent: int) -> int:
    """The pid of the recorder's live-view child (python -m ctxtap.reports.live.follow)."""
    for task in Path(f"/proc/{parent}/task").iterdir():
        for pid in (task / "children").read_text().split():
            if b"ctxtap.reports.live.follow" in Path(f"/proc/{pid}/cmdline").read_bytes():
                return int(pid)
    raise AssertionError("no live-view child process")


def test_killing_the_live_view_does_not_touch_the_recording(tmp_path: Path, ctxtap_config) -> None:
    with ModelServer(script="long") as server:
        rec = record_live(tmp_path, ctxtap_config, server.url, turns=3, tool_s=0.2)
        child = _live_child(rec.proc.pid)
        rec.start_agent()
        time.sleep(1.0)
        os.kill(child, signal.SIGKILL)  # the view crashes while the agent runs
        deadline = time.monotonic() + 120
        while rec.agent_done() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        calls = rec.agent_done()
        code = rec.finish()
    assert code == 0 and calls is not None and calls > 10, "".join(rec.stderr)
    assert "Traceback" not in "".join(rec.stderr)
    ensure_analysis(rec.capture)
    n, = connect([rec.capture]).execute("SELECT count(*) FROM requests").fetchone()
    assert n == calls  # every request recorded, before and after the view died
