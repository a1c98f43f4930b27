"""Real CLIs under `ctxtap replay`, answered from a capture of their own earlier run.

Each CLI is first recorded on the basic task (as in test_real_clis.py), then run again in a fresh
copy of the fixture repository at the same path, in the same kind of namespace and HOME, with no
model server at all: `ctxtap replay CAPTURE --strict` answers every model request from the capture
(Codex over its WebSocket, Claude Code over SSE). The same tool loop must complete with no
divergence beyond volatile fields; the same run with a changed task must name the first divergent block.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxtap.capture.store import Capture
from tests.realcli import clis
from tests.realcli.clis import CLIS
from tests.realcli.runs import FINAL_TEXT, run_cli
from tests.realcli.toolbox import Toolbox

pytestmark = pytest.mark.realcli

REPLAYED = ("claude", "codex", "claude-bedrock")  # SSE, WebSocket and Bedrock's binary frames


@pytest.mark.parametrize("cli", REPLAYED)
def test_real_cli_replays_its_own_run(cli: str, realcli_tools: Toolbox, ctxtap_config: Path, tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    spec = CLIS[cli]
    command, path_dirs = realcli_tools.command_for(spec)
    recorded = run_cli(spec, command, path_dirs, ctxtap_config, tmp_path / "recorded")
    assert recorded.result.returncode == 0, recorded.result.describe()

    again = run_cli(spec, command, path_dirs, ctxtap_config, tmp_path / "replayed", replay=recorded.capture,
                    replay_args=("--strict", "--speed", "0"))
    context = f"{cli}: {again.result.describe()}"
    assert again.result.returncode == 0, context
    assert FINAL_TEXT in again.result.stdout, context  # the same tool loop, to the same final answer
    assert not again.repo_changes, again.repo_changes
    err = again.result.stderr
    assert "executes the tool calls the recorded model asked for" in err, context
    assert " 0 diverged, 0 recorded requests never asked for" in err, context
    replayed = Capture.open(again.capture)
    assert replayed.manifest.replay["source_capture_id"] == Capture.open(recorded.capture).manifest.capture_id
    if spec.api == "responses-websocket":
        flows = replayed.flows().to_pylist()
        assert any(f["transport"] == "websocket" and f["is_model"] for f in flows), context

    monkeypatch.setattr(clis, "TASK", clis.TASK + " Then say which entry is largest.")
    changed = run_cli(spec, command, path_dirs, ctxtap_config, tmp_path / "changed", replay=recorded.capture,
                      replay_args=("--strict", "--speed", "0"))
    err = changed.result.stderr
    assert changed.result.returncode == 3, changed.result.describe()
    first = next((line for line in err.splitlines() if line.startswith("  DIVERGED")), "")
    # the first divergent block is the user message that holds the task (Messages: messages[..], Responses: input[..])
    assert " changed" in first and ("messages[" in first or "input[" in first), err
    assert changed.result.returncode == 3 and FINAL_TEXT in changed.result.stdout  # still answered to the end
