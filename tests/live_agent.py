"""A scripted agent for the live-view tests, run as the command of `ctxtap record --live -- ...`.

It waits for a `start` file, runs one simulated Claude Code session through the proxy the
recorder set in its environment (each tool call taking TOOL_S, like a real tool would), writes `agent-done` (with its number of model calls), then
waits for an `end` file: so a test watches the view while the agent is still running.
Usage: python tests/live_agent.py GATE_DIR [TURNS] [TOOL_S]
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

WAIT_S = 300.0


def _wait_for(path: Path) -> None:
    deadline = time.monotonic() + WAIT_S
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)


def main() -> int:
    from ctxtap.demo import FakeShell, run_agent

    gate = Path(sys.argv[1])
    turns = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    tool_s = float(sys.argv[3]) if len(sys.argv) > 3 else 0.3
    answer = FakeShell.run

    def slow_run(self, command: str) -> tuple[str, bool]:
        time.sleep(tool_s)
        return answer(self, command)

    FakeShell.run = slow_run
    _wait_for(gate / "start")
    summary = run_agent("claude", proxy=os.environ["HTTPS_PROXY"], ca_file=os.environ["SSL_CERT_FILE"], turns=turns,
                        inject_error=False)
    (gate / "agent-done").write_text(str(len(summary.calls)))
    _wait_for(gate / "end")
    return 0 if summary.ok else 1


if __name__ == "__main__":
    sys.exit(main())
