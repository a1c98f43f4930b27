"""Record-time facts of the machine (issue 36, item 1): record keeps them in the capture's private
manifest, import takes them as options, and publish and export never let them out."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ctxtap.capture.environment import collect
from ctxtap.modelserver import ModelServer
from tests.proxyharness import ROOT, ctxtap_env
from tests.scenarios import _entry

CLIENT = ROOT / "tests" / "base_url_client.py"
USER, HOST = "qzuser", "qzbox-7731"


def _ctxtap(args: list[str], config: Path, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ctxtap.cli.main", *args], cwd=cwd, timeout=240,
                          env=ctxtap_env(config) | {"PYTHONPATH": str(ROOT)}, capture_output=True, text=True)


def test_collect_reads_the_working_directory(tmp_path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "README.md").write_text("x")
    facts = collect(tmp_path)
    assert facts.cwd == str(tmp_path.resolve()) and facts.entries == ["README.md", "src"]
    assert facts.date and facts.os and facts.home and facts.git_branch is None


def test_record_keeps_the_facts_in_the_private_manifest(tmp_path, ctxtap_config) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("hello")
    (ws / "AGENTS.md").write_text("Run the whole test suite before every commit.\n")
    out = tmp_path / "cap"
    with ModelServer(script=json.dumps({"steps": [{"text": "hi"}]})) as srv:
        done = _ctxtap(["record", "--out", str(out), "--no-telemetry", "--no-effects", "--base-url",
                        "--route", f"api.openai.com={srv.url}", "--", sys.executable, str(CLIENT)], ctxtap_config, ws)
    assert done.returncode == 0, done.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    env = manifest["environment"]
    assert env["cwd"] == str(ws.resolve()) and env["entries"] == ["AGENTS.md", "notes.txt"]
    assert list(env["files"]) == ["AGENTS.md"] and "suite" not in json.dumps(env["files"])  # fingerprints only
    assert {"home", "user", "host", "os", "date"} <= set(env)
    assert (out / "manifest.json").stat().st_mode & 0o077 == 0  # private, like the capture


def _har(path: Path) -> Path:
    body = {"model": "coder-1", "messages": [
        {"role": "system", "content": f"You are Helper. The person you work for is {USER}; their machine is {HOST}."},
        {"role": "user", "content": "Fix the failing test."}]}
    reply = {"id": "c", "object": "chat.completion", "model": "coder-1", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": f"Sure, {USER}."}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 30, "completion_tokens": 3, "total_tokens": 33}}
    entry = _entry("https://api.openai.com/v1/chat/completions", [("user-agent", "HelperAgent/1.0")],
                   json.dumps(body).encode(), 200, [("content-type", "application/json")],
                   json.dumps(reply).encode(), 1_700_000_000.0, 0.5)
    path.write_text(json.dumps({"log": {"version": "1.2", "creator": {"name": "t", "version": "1"},
                                        "entries": [entry]}}))
    return path


def test_import_takes_the_facts_and_publish_and_export_strip_them(tmp_path, ctxtap_config) -> None:
    cap = tmp_path / "cap"
    cwd = "/srv/qz-project-4411"
    done = _ctxtap(["import", str(_har(tmp_path / "run.har")), "--out", str(cap), "--cwd", cwd, "--user", USER,
                    "--host", HOST, "--os", "Linux 6.8", "--date", "2026-11-30", "--shell-prompt", f"{USER}@{HOST}:~$",
                    "--prompt", "Fix the failing test."],
                   ctxtap_config)
    assert done.returncode == 0, done.stderr
    env = json.loads((cap / "manifest.json").read_text())["environment"]
    assert env == {"cwd": cwd, "user": USER, "host": HOST, "os": "Linux 6.8", "date": "2026-11-30",
                   "shell_prompt": f"{USER}@{HOST}:~$", "prompt": "Fix the failing test."}
    assert _ctxtap(["publish", str(cap), "-o", str(tmp_path / "pub")], ctxtap_config).returncode == 0
    (tmp_path / "x").mkdir()
    exported = _ctxtap(["export", str(cap), "--otlp-json", str(tmp_path / "x" / "spans.jsonl"),
                        "--har", str(tmp_path / "x" / "run.har")], ctxtap_config)
    assert exported.returncode == 0, exported.stderr
    published = [p for p in (tmp_path / "pub").rglob("*") if p.is_file()]
    assert published
    for path in published:  # the user and host named in a sentence are pseudonymised, as the manifest knew them
        text = path.read_text(errors="replace")
        assert USER not in text and HOST not in text and cwd not in text, path
    for path in (tmp_path / "x").rglob("*"):  # export carries the traffic as stored, never the manifest's facts
        text = path.read_text(errors="replace")
        assert cwd not in text and "2026-11-30" not in text, path


RULES_AND_FACTS = ("You are Helper, a careful coding agent.\n\nAlways run the tests in /srv/qz-project-4411 before you "
                   "commit. Never touch files outside it.\n\nOpened folder: /srv/qz-project-4411\nChecked out: "
                   "feature/qz-77\n\nKeep answers short and cite the files you change.")


def _explained(tmp_path: Path, config: Path, name: str, facts: list[str], user: str = "Fix it.") -> list[dict]:
    body = {"model": "coder-1", "tools": [{"type": "function", "function": {"name": "shell", "parameters": {}}}],
            "messages": [{"role": "system", "content": RULES_AND_FACTS}, {"role": "user", "content": user}]}
    reply = {"id": "c", "object": "chat.completion", "model": "coder-1", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 30, "completion_tokens": 1, "total_tokens": 31}}
    har = tmp_path / f"{name}.har"
    har.write_text(json.dumps({"log": {"version": "1.2", "creator": {"name": "t", "version": "1"}, "entries": [
        _entry("https://api.openai.com/v1/chat/completions", [("user-agent", "HelperAgent/1.0")],
               json.dumps(body).encode(), 200, [("content-type", "application/json")], json.dumps(reply).encode(),
               1_700_000_000.0, 0.5)]}}))
    cap = tmp_path / name
    assert _ctxtap(["import", str(har), "--out", str(cap), *facts], config).returncode == 0
    shown = _ctxtap(["layout", str(cap), "--explain", "--json"], config)
    assert shown.returncode == 0, shown.stderr
    return json.loads(shown.stdout)[0]["segments"]


def test_a_line_stating_a_recorded_fact_is_environment_a_sentence_naming_it_is_not(tmp_path, ctxtap_config) -> None:
    with_facts = _explained(tmp_path, ctxtap_config, "with", ["--cwd", "/srv/qz-project-4411", "--user", USER])
    facts = [s for s in with_facts if s["evidence"] == "recorded-fact"]
    assert len(facts) == 1 and facts[0]["source"] == "runtime_environment"
    assert facts[0]["excerpt"].startswith("Opened folder: /srv/qz-project-4411")
    rules = next(s for s in with_facts if "Always run the tests" in s["excerpt"])
    assert rules["source"] == "platform_rules"  # the path inside a sentence of rules stays rules
    without = _explained(tmp_path, ctxtap_config, "without", [])
    assert not any(s["evidence"] == "recorded-fact" for s in without)


TASK = "Rename the helper in utils.py and update its three callers"
WRAPPED = (f"Please solve this issue: {TASK}\n\nWork in small steps and run one command per reply.\n\n"
           "<system_information>\nLinux 6.8.0-45-generic #45 SMP PREEMPT_DYNAMIC x86_64\n</system_information>\n\n"
           "Submit with `echo DONE` when finished.")


def test_import_prompt_grounds_the_task_inside_a_template(tmp_path, ctxtap_config) -> None:
    grounded = _explained(tmp_path, ctxtap_config, "argv", ["--prompt", TASK], user=WRAPPED)
    task = [s for s in grounded if s["source"] == "user_task"]
    assert [(s["evidence"], s["excerpt"]) for s in task] == [("argv", TASK)]
    around = [s for s in grounded if s["path"] == task[0]["path"] and s is not task[0]]
    assert {s["source"] for s in around} == {"platform_rules", "runtime_environment"}
    assert any(s["evidence"] == "argv" and s["source"] == "platform_rules" for s in around)
    # without the prompt the reader can only go by position: the whole message is the task
    bare = _explained(tmp_path, ctxtap_config, "bare", [], user=WRAPPED)
    assert {s["evidence"] for s in bare if s["source"] == "user_task"} == {"position"}
