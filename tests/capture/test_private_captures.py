"""Captures and everything made of them are the user's only (0700 folders, 0600 files) under a
usual umask of 022; a capture of an earlier version is tightened when ctxtap opens it; the
commands ctxtap runs for the user (`record`'s and `experiment`'s) keep the user's umask."""

from __future__ import annotations

import os
import shutil
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxtap.capture.private import private_dir, private_umask, tighten, user_umask
from ctxtap.cli.main import main
from ctxtap.modelserver import ModelServer
from tests.proxyharness import ROOT, routes_to, run_ctxtap

USUAL_UMASK = 0o022

# The user's command: it leaves a file of its own, then sends one model request through the proxy.
CLIENT = """
import json, os, sys
sys.path.insert(0, {root!r})
open(sys.argv[1], "w").write("the agent's own file")
from ctxtap.modelserver.client import HttpClient
c = HttpClient("https://api.anthropic.com", proxy=os.environ["HTTPS_PROXY"], ca_file=os.environ["SSL_CERT_FILE"])
body = json.dumps({{"model": "claude-haiku-4-5", "max_tokens": 5, "stream": True,
                   "messages": [{{"role": "user", "content": "list the files here"}}]}}).encode()
r = c.request("POST", "/v1/messages", body, [("content-type", "application/json"),
              ("user-agent", "claude-cli/9.9.9 (external, cli)")])
r.body()
"""


@pytest.fixture(autouse=True)
def usual_umask() -> Iterator[None]:
    """The umask most users have: files 0644 and folders 0755 unless ctxtap says otherwise."""
    old = os.umask(USUAL_UMASK)
    try:
        yield
    finally:
        os.umask(old)


def not_private(root: Path, skip: tuple[str, ...] = ()) -> dict[str, str]:
    """Every entry under `root` (itself included) whose mode is not 0700 (folder) or 0600 (file)."""
    wide = {}
    for current, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in skip]
        for path in [Path(current)] + [Path(current) / f for f in files]:
            mode = stat.S_IMODE(path.lstat().st_mode)
            if mode != (0o700 if path.is_dir() else 0o600) and not path.is_symlink():
                wide[str(path.relative_to(root))] = oct(mode)
    return wide


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture(scope="module")
def recorded(ctxtap_config, tmp_path_factory) -> tuple[Path, Path]:
    """`ctxtap record` (its own process, started under umask 022) of a command that writes a file:
    (the capture, in a `captures/` folder record made, and the command's file)."""
    old = os.umask(USUAL_UMASK)
    try:
        root = tmp_path_factory.mktemp("private")
        script = root / "client.py"
        script.write_text(CLIENT.format(root=str(ROOT)))
        agent_file = root / "made-by-the-agent.txt"
        capture = root / "captures" / "cap"
        with ModelServer(script="basic") as server:
            args = ["record", "--out", str(capture)]
            for route in routes_to(server.url):
                args += ["--route", route]
            run_ctxtap(args + ["--", sys.executable, str(script), str(agent_file)], ctxtap_config)
    finally:
        os.umask(old)
    return capture, agent_file


def test_the_helpers(tmp_path) -> None:
    existing = tmp_path / "existing"
    existing.mkdir()
    made = private_dir(existing / "captures" / "cap")
    assert mode(made) == mode(made.parent) == 0o700 and mode(existing) == 0o755  # only what it made
    (made / "flows.parquet").write_bytes(b"x")
    (made / "analysis").mkdir()
    (made / "analysis" / "part.parquet").write_bytes(b"x")
    (made / "work").mkdir()
    (made / "work" / "script.sh").write_bytes(b"x")
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"x")
    (made / "link").symlink_to(outside)
    os.chmod(made, 0o755)
    assert tighten(made, skip=("work",)) == 4  # made, flows.parquet, analysis/, part.parquet
    assert not_private(made, skip=("work",)) == {}
    assert mode(made / "work") == 0o755 and mode(made / "work" / "script.sh") == 0o644  # skipped
    assert mode(outside) == 0o644  # a link is not followed
    assert tighten(made, skip=("work",)) == 0
    with private_umask():
        assert user_umask() == USUAL_UMASK
        (tmp_path / "inside").write_bytes(b"x")
    assert mode(tmp_path / "inside") == 0o600 and user_umask() == USUAL_UMASK
    (tmp_path / "after").write_bytes(b"x")
    assert mode(tmp_path / "after") == 0o644  # the umask is the caller's again


def test_record_analyze_report_publish_import_are_private(recorded, tmp_path) -> None:
    capture, agent_file = recorded
    assert mode(agent_file) == 0o644, "the recorded command runs with the user's umask, not ctxtap's"
    assert mode(capture.parent) == 0o700  # `captures/`, made by record
    assert not_private(capture) == {}, "record"
    runner = CliRunner()
    for args in (["analyze", str(capture)], ["report", str(capture)],
                 ["publish", str(capture), "-o", str(tmp_path / "attachments" / "out")],
                 ["export", str(capture), "--har", str(tmp_path / "cap.har")]):
        result = runner.invoke(main, args)
        assert result.exit_code == 0, (args, result.output)
    assert os.umask(USUAL_UMASK) == USUAL_UMASK  # each command gave the umask back
    assert (capture / "report.html").exists() and (capture / "analysis" / "_meta.json").exists()
    assert not_private(capture) == {}, "analyze and report"
    published = tmp_path / "attachments"
    assert list((published / "out").iterdir()) and not_private(published) == {}, "publish"
    assert mode(tmp_path / "cap.har") == 0o600
    result = runner.invoke(main, ["import", str(tmp_path / "cap.har"), "--out", str(tmp_path / "imported")])
    assert result.exit_code == 0, result.output
    assert not_private(tmp_path / "imported") == {}, "import"


def test_the_api_writes_private_files_whatever_the_umask(recorded, tmp_path) -> None:
    """Called in-process (no command set the umask): the walk after each write makes them private."""
    from ctxtap.analysis.build import AnalyzeOptions, ensure_analysis
    from ctxtap.reports.html.render import render_report
    from ctxtap.reports.publish.publisher import publish

    capture = tmp_path / "cap"
    shutil.copytree(recorded[0], capture)
    ensure_analysis(capture, AnalyzeOptions(force=True))
    render_report([capture], capture / "again.html")
    publish(capture, tmp_path / "published")
    assert not_private(capture) == {} and not_private(tmp_path / "published") == {}


def test_info_tightens_a_capture_of_an_earlier_version(recorded, tmp_path) -> None:
    capture = tmp_path / "old"
    shutil.copytree(recorded[0], capture)
    entries = 0
    for current, _dirs, files in os.walk(capture):
        os.chmod(current, 0o755)
        for name in files:
            os.chmod(Path(current) / name, 0o644)
        entries += 1 + len(files)
    result = CliRunner().invoke(main, ["info", str(capture)])
    assert result.exit_code == 0, result.output
    assert (f"tightened permissions of {entries} files and folders to private (0600/0700)"
            in result.output), result.output
    assert not_private(capture) == {}
    again = CliRunner().invoke(main, ["info", str(capture)])
    assert "tightened" not in again.output


def test_experiment_runs_are_private_and_the_command_keeps_the_users_umask(tmp_path, ctxtap_config) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text("""\
command = ["{python}", "-c", "open('made-by-the-agent.txt', 'w').write('x')"]
repeats = 1

[variants.A]
""")
    out = tmp_path / "experiments" / "exp"
    run_ctxtap(["experiment", "run", str(spec), "--out", str(out)], ctxtap_config)
    work = out / "runs" / "000-A" / "work"
    assert mode(work / "made-by-the-agent.txt") == 0o644 and mode(work) == 0o755  # the command's own
    assert (out / "runs" / "000-A" / "capture" / "analysis").is_dir()
    assert not_private(out, skip=("work",)) == {}
    assert mode(out.parent) == 0o700
