"""`ctxtap layout CAPTURE --explain`: each segment of a session's first main request with its label,
the kind of evidence it rests on, its rule and a redacted excerpt."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from ctxtap.analysis.rules.evidence import evidence_kind
from ctxtap.cli.main import main
from tests.scenarios import _entry

SYSTEM = ("You are Helper, a coding agent.\n\n# Environment\n\nWorking directory: /srv/app\nPlatform: linux\n"
          "Today's date: 2026-11-30\n\n# Rules\n\nRun the tests after every change. My key is "
          "sk-proj-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA.\n")


def _har(path: Path) -> Path:
    tools = [{"type": "function", "function": {"name": "shell", "parameters": {"type": "object"}}}]
    body = {"model": "coder-1", "tools": tools, "messages": [
        {"role": "system", "content": SYSTEM}, {"role": "user", "content": "Fix the failing test in tests/."}]}
    reply = {"id": "c", "object": "chat.completion", "model": "coder-1", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "On it."}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 80, "completion_tokens": 3, "total_tokens": 83}}
    entry = _entry("https://api.openai.com/v1/chat/completions",
                   [("user-agent", "HelperAgent/1.4.0 node/22"), ("content-type", "application/json")],
                   json.dumps(body).encode(), 200, [("content-type", "application/json")],
                   json.dumps(reply).encode(), 1_700_000_000.0, 0.5)
    path.write_text(json.dumps({"log": {"version": "1.2", "creator": {"name": "t", "version": "1"},
                                        "entries": [entry]}}))
    return path


def test_evidence_kinds_from_rule_ids() -> None:
    assert evidence_kind("claude.system-prompt") == "client-rule"
    assert evidence_kind("detect.environment-section") == "pattern"
    assert evidence_kind("generic.tool-definition") == "structure"
    assert evidence_kind("generic.first-user-text-task") == "position"
    assert evidence_kind("generic.unknown") == evidence_kind(None) == "unattributed"


def test_layout_explain_prints_labels_evidence_and_redacted_excerpts(tmp_path, ctxtap_config) -> None:
    runner = CliRunner()
    capture = tmp_path / "cap"
    done = runner.invoke(main, ["import", str(_har(tmp_path / "run.har")), "--out", str(capture)])
    assert done.exit_code == 0, done.output
    shown = runner.invoke(main, ["layout", str(capture), "--explain"])
    assert shown.exit_code == 0, shown.output
    text = shown.output
    assert "client helper-agent (user-agent)" in text and "first main request #1" in text
    env = next(line for line in text.splitlines() if "runtime_environment" in line)
    assert "pattern" in env and "detect.environment" in env and "Working directory" in env
    task = next(line for line in text.splitlines() if "user_task" in line)
    assert "position" in task and "Fix the failing test" in task
    assert "sk-proj-AAAA" not in text  # excerpts are of the stored, redacted text
    as_json = json.loads(runner.invoke(main, ["layout", str(capture), "--explain", "--json"]).output)
    kinds = {s["evidence"] for s in as_json[0]["segments"]}
    assert {"structure", "pattern", "position"} <= kinds
    assert runner.invoke(main, ["layout", str(capture), "--explain", "--session", "nope"]).exit_code != 0
