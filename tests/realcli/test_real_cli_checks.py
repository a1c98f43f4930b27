"""Real CLIs under `ctxtap record --check --no-writes` (issue 38): the effect receipt and the gate, end to end.

Each CLI runs twice in the tier's namespace against the scripted model server:

* the usual read-only task (`pwd` and `ls`): the gate passes, the exit code is the CLI's (0), the
  `effects` view is empty and the workspace snapshot was complete;
* a script whose tool calls append to `.gitignore` and create `NOTES.md`: the CLI runs them, so the
  gate fails (exit 3 although the CLI itself succeeded) naming both paths, and `effects` holds exactly
  what the test's own before/after snapshot of the repository saw change (an oracle independent of
  ctxtap), each joined to the call that proposed it.

Codex (`--sandbox danger-full-access`) and Gemini CLI (`--yolo`) run shell commands without asking.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxtap.analysis.build import ensure_analysis
from ctxtap.analysis.db import connect, fetch_rows
from tests.realcli.clis import CLIS
from tests.realcli.runs import FINAL_TEXT, run_cli
from tests.realcli.toolbox import Timings, Toolbox

pytestmark = pytest.mark.realcli

GATE = ("--check", "--no-writes")
WRITE_FINAL = "I added NOTES.md and a line to .gitignore."
WRITE_SCRIPT = json.dumps({"steps": [
    {"text": "I'll write the notes.", "calls": ["echo 'notes/' >> .gitignore", "echo 'first notes' > NOTES.md"]},
    {"text": WRITE_FINAL},
]})


def _sql(capture: Path, query: str) -> list[dict]:
    ensure_analysis(capture)
    con = connect([capture])
    try:
        return fetch_rows(con, query)
    finally:
        con.close()


@pytest.mark.parametrize("cli", ["codex", "gemini"])
def test_a_real_cli_is_judged_by_its_effects(cli: str, realcli_tools: Toolbox, ctxtap_config: Path,
                                             tmp_path: Path, realcli_timings: Timings) -> None:
    spec = CLIS[cli]
    command, path_dirs = realcli_tools.command_for(spec)

    quiet = run_cli(spec, command, path_dirs, ctxtap_config, tmp_path / "read-only", record_args=GATE)
    realcli_timings.runs[f"{cli} (--check --no-writes)"] = quiet.result.seconds
    context = quiet.result.describe()
    assert quiet.result.returncode == 0, context
    assert FINAL_TEXT in quiet.result.stdout, context
    assert not quiet.repo_changes, quiet.repo_changes
    assert "--no-writes: ok" in quiet.result.stderr and "check: passed" in quiet.result.stderr, context
    assert _sql(quiet.capture, "SELECT rel_path FROM effects") == []
    roots = _sql(quiet.capture, "SELECT root_kind, complete, files_before FROM effect_roots")
    assert [(r["root_kind"], r["complete"]) for r in roots] == [("workspace", True)], roots
    assert roots[0]["files_before"] >= 5  # the fixture repository's files (.git/ internals left out)

    loud = run_cli(spec, command, path_dirs, ctxtap_config, tmp_path / "writes", script=WRITE_SCRIPT,
                   record_args=GATE)
    realcli_timings.runs[f"{cli} (--check --no-writes, writes)"] = loud.result.seconds
    context = loud.result.describe()
    # The test's own snapshot of the repository: what really changed, independent of ctxtap.
    assert sorted(loud.repo_changes) == ["added: NOTES.md", "modified: .gitignore"], f"{loud.repo_changes}\n{context}"
    assert WRITE_FINAL in loud.result.stdout, context
    assert loud.result.returncode == 3, f"the gate must fail a run whose command succeeded\n{context}"
    assert "check: FAILED" in loud.result.stderr or "breaks --no-writes" in loud.result.stderr, context
    assert ".gitignore (modified)" in loud.result.stderr and "NOTES.md (created)" in loud.result.stderr, context

    effects = _sql(loud.capture, "SELECT rel_path, change, inside_workspace, size_before, size_after "
                                 "FROM effects ORDER BY rel_path")
    assert [(e["rel_path"], e["change"], e["inside_workspace"]) for e in effects] == [
        (".gitignore", "modified", True), ("NOTES.md", "created", True)], effects
    gitignore = effects[0]
    assert gitignore["size_after"] == gitignore["size_before"] + len("notes/\n")
    joined = {r["rel_path"]: r["verdict"] for r in _sql(
        loud.capture, "SELECT rel_path, verdict FROM effect_calls WHERE rel_path IS NOT NULL")}
    assert joined == {".gitignore": "proposed_and_happened", "NOTES.md": "proposed_and_happened"}, joined
