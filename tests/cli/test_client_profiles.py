"""Clients as data (issue 36, item 7): a user's profile wins over a built-in one, a broken one is a
clear error, and `ctxtap clients suggest` drafts a profile that then reads its capture right."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ctxtap.analysis.clients import registry
from ctxtap.analysis.clients.profiles import ProfileError
from tests.proxyharness import ROOT, ctxtap_env
from tests.scenarios import _entry

OWN_OPENCODE = """
name = "opencode"
ids = ["opencode"]
order = 60

[[rule]]
id = "opencode.mine"
doc = "my reading of opencode's prompt"
starts = ["You are opencode"]
roles = ["system"]
source = "platform_session"
"""


@pytest.fixture
def user_profiles(tmp_path, monkeypatch):
    """A profiles folder of this test's own; the registry forgets it afterwards."""
    monkeypatch.setenv("CTXTAP_CONFIG_DIR", str(tmp_path / "config"))
    folder = tmp_path / "config" / "clients"
    folder.mkdir(parents=True)
    yield folder
    monkeypatch.undo()
    registry.reload_user_profiles()


def _opencode():
    return next(c for c in registry.clients() if c.name == "opencode")


def test_a_user_profile_replaces_the_built_in_one_and_leaving_puts_it_back(user_profiles) -> None:
    assert [r.id for r in _opencode().rules] == ["opencode.system-prompt", "opencode.env"]
    (user_profiles / "opencode.toml").write_text(OWN_OPENCODE)
    registry.reload_user_profiles()
    assert [r.id for r in _opencode().rules] == ["opencode.mine"]
    assert registry.user_profile_names() == {"opencode": user_profiles / "opencode.toml"}
    (user_profiles / "opencode.toml").unlink()
    registry.reload_user_profiles()
    assert [r.id for r in _opencode().rules] == ["opencode.system-prompt", "opencode.env"]


def test_a_broken_profile_is_a_clear_error_naming_its_file(user_profiles) -> None:
    (user_profiles / "bad.toml").write_text('name = "bad"\nids = ["bad"]\n[[rule]]\nid = "bad.x"\nsource = "rules"\n'
                                            'starts = ["x"]\n')
    with pytest.raises(ProfileError, match=r"bad\.toml.*unknown source 'rules'"):
        registry.reload_user_profiles()
    (user_profiles / "bad.toml").write_text('name = "bad"\nids = ["bad"]\n[[rule]]\nid = "bad.x"\n'
                                            'source = "platform_rules"\n')
    with pytest.raises(ProfileError, match="matches nothing"):
        registry.reload_user_profiles()


SYSTEM = "Act as the Zed Helper agent. Work in small steps and explain each change before you make it."
CONTEXT = ("<system-reminder>\nThis is Zed Helper setting up the workspace context.\nToday's date is 2026-12-01.\n"
           "My operating system is: linux\nCurrent working directory: /home/qz/shop-7713\n</system-reminder>")
TASK = "Rename the price helper and update its callers."


def _har(path: Path, session: str) -> Path:
    tools = [{"type": "function", "function": {"name": "shell", "parameters": {"type": "object"}}}]
    body = {"model": "coder-1", "tools": tools, "messages": [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": [{"type": "text", "text": CONTEXT}, {"type": "text", "text": TASK}]}]}
    reply = {"id": "c", "object": "chat.completion", "model": "coder-1", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "Done."}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 90, "completion_tokens": 2, "total_tokens": 92}}
    headers = [("user-agent", "OpenAI/JS 4.67.0"), ("x-stainless-lang", "js"), ("x-zed-session-id", session)]
    entry = _entry("https://api.openai.com/v1/chat/completions", headers, json.dumps(body).encode(), 200,
                   [("content-type", "application/json")], json.dumps(reply).encode(), 1_700_000_000.0, 0.5)
    path.write_text(json.dumps({"log": {"version": "1.2", "creator": {"name": "t", "version": "1"},
                                        "entries": [entry]}}))
    return path


def _ctxtap(args: list[str], config: Path) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "ctxtap.cli.main", *args], cwd=ROOT, timeout=240,
                          env=ctxtap_env(config) | {"PYTHONPATH": str(ROOT)}, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done


def _explained(cap: Path, config: Path) -> dict:
    return json.loads(_ctxtap(["layout", str(cap), "--explain", "--json"], config).stdout)[0]


def test_suggest_drafts_a_profile_that_then_reads_its_capture(tmp_path) -> None:
    config = tmp_path / "config"
    cap = tmp_path / "cap"
    _ctxtap(["import", str(_har(tmp_path / "run.har", "zs-1")), "--out", str(cap)], config)
    before = _explained(cap, config)
    assert before["client"].startswith("unknown") and before["client_evidence"] == "unattributed"
    profile = config / "clients" / "zed-helper.toml"
    _ctxtap(["clients", "suggest", str(cap), "--name", "zed-helper", "-o", str(profile)], config)
    text = profile.read_text()
    assert "Act as the Zed Helper agent" in text and "/home/qz" not in text and "2026-12" not in text
    listed = _ctxtap(["clients", "list"], config).stdout
    assert "zed-helper" in listed and str(profile) in listed
    _ctxtap(["analyze", "--force", str(cap)], config)
    after = _explained(cap, config)
    assert (after["client"], after["client_evidence"]) == ("zed-helper", "rule")
    by_rule = {s["rule_id"]: s for s in after["segments"]}
    assert by_rule["zed-helper.system-prompt"]["evidence"] == "client-rule"
    env = [s for s in after["segments"] if s["rule_id"].startswith("zed-helper.runtime-environment")]
    assert env and all(s["source"] == "runtime_environment" for s in env)
    assert any(s["source"] == "user_task" for s in after["segments"])
    # a second capture of the same client, another day and folder: named and read by the profile
    other = tmp_path / "other"
    har = _har(tmp_path / "other.har", "zs-2")
    har.write_text(har.read_text().replace("2026-12-01", "2026-12-09").replace("shop-7713", "depot-22"))
    _ctxtap(["import", str(har), "--out", str(other)], config)
    again = _explained(other, config)
    assert again["client"] == "zed-helper"
    assert any(s["rule_id"].startswith("zed-helper.runtime-environment") for s in again["segments"])
