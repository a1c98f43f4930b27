"""The README's commands run as printed (issue 34): every shell block, SQL block and command in a
table, in a fresh working folder after the demo, the way a new user pastes them.

A command the tests cannot run (it needs a real coding CLI, a provider, a browser or a server that
runs until Ctrl-C) carries `<!-- not run in tests: REASON -->` right before it: before a fenced
block, or before the command's code span in a table. A marker without a reason fails.

Table rows are synopses: optional parts (`[...]`) are dropped and the placeholders below filled in;
a placeholder the test does not know fails, so a new row either runs or says why not.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.proxyharness import ROOT, ctxtap_env

README = ROOT / "README.md"
MARKER = re.compile(r"<!--\s*not run in tests(?P<rest>.*?)-->", re.S)
FENCE = re.compile(r"^```(\w*)\s*$")
SHELL = {"sh", "bash", "shell", "console"}
COMMAND_SPAN = re.compile(r"(?P<before>(?:<!--.*?-->\s*)?)`(?P<cmd>(?:\.venv/bin/)?ctxtap [^`]+)`")
PLACEHOLDER = re.compile(r"[A-Z][A-Z_]*(?:\.[a-z]+)?")
MODEL_SERVER_PORT = "8765"  # the Replay example's port: the test gives it a free one
KEEP = {"captures", "experiments", "test-artifacts"}  # made fresh in the working folder, not linked


@dataclass
class Snippet:
    line: int
    kind: str  # "shell" (a fenced block, run by bash), "sql" (a query) or "synopsis" (a table's command)
    text: str
    skip: str | None  # why it is not run; "" for a marker without a reason


def _reason(marker: str | None) -> str | None:
    if marker is None:
        return None
    match = MARKER.search(marker)
    rest = (match.group("rest") if match else "").strip()
    return rest[1:].strip() if rest.startswith(":") else ""


def snippets(markdown: str) -> list[Snippet]:
    """The commands a README shows: fenced shell and SQL blocks, and `ctxtap ...` spans in table rows."""
    found: list[Snippet] = []
    lines = markdown.splitlines()
    marker: str | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        fence = FENCE.match(line)
        if fence:
            end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
            body = "\n".join(lines[i + 1:end])
            lang = fence.group(1).lower()
            if lang in SHELL:
                found.append(Snippet(i + 1, "shell", body, _reason(marker)))
            elif lang == "sql":
                found.append(Snippet(i + 1, "sql", body, _reason(marker)))
            elif "ctxtap " in body:
                found.append(Snippet(i + 1, "unlabelled", body, _reason(marker)))
            marker, i = None, end + 1
            continue
        if MARKER.fullmatch(line.strip()):
            marker = line
        elif line.strip():
            marker = None
        if line.startswith("|"):
            first_cell = re.split(r"(?<!\\)\|", line)[1]
            for span in COMMAND_SPAN.finditer(first_cell):
                before = span.group("before").strip() or None
                found.append(Snippet(i + 1, "synopsis", span.group("cmd").replace("\\|", "|"), _reason(before)))
        i += 1
    return found


def runnable(synopsis: str, values: dict[str, str]) -> list[str]:
    """A table's synopsis as a command: optional parts dropped, placeholders filled in."""
    text, previous = synopsis, None
    while text != previous:
        previous, text = text, re.sub(r"\s*\[[^\[\]]*\](?:\.\.\.)?", "", text)
    words = []
    for word in shlex.split(text):
        word = word if word in values else word.removesuffix("...")
        if word in values:
            word = values[word]
        elif PLACEHOLDER.fullmatch(word) and len(word) > 1:
            raise KeyError(f"unknown placeholder {word}")
        words.append(word)
    return words


@dataclass
class Workspace:
    """A fresh folder as a new user has it after `make demo`: the repository's files, `.venv`, and
    the demo's capture in captures/."""
    root: Path
    env: dict[str, str]
    capture: str  # relative, as `ls -d captures/demo-*` gives it
    demo_stdout: str

    def run(self, argv: list[str], timeout: float = 300) -> subprocess.CompletedProcess:
        """Run a command in its own process group, which is killed after it (a server it started)."""
        proc = subprocess.Popen(argv, cwd=self.root, env=self.env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            return subprocess.CompletedProcess(argv, -9, out, err + f"\n(timed out after {timeout} s)")
        finally:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def _path_without_ctxtap(path: str) -> str:
    """PATH without any folder holding a `ctxtap`: the README must not rely on one being there."""
    return os.pathsep.join(d for d in path.split(os.pathsep) if d and not (Path(d) / "ctxtap").exists())


@pytest.fixture(scope="module")
def workspace(tmp_path_factory, ctxtap_config) -> Workspace:
    venv = Path(sys.prefix)
    if not (venv / "bin" / "ctxtap").exists():
        # the README's commands run the installed entry point: without it they cannot run as printed
        pytest.fail(f"ctxtap is not installed in {venv} (run `make test`, which installs it)")
    root = tmp_path_factory.mktemp("readme")
    for entry in ROOT.iterdir():
        if not entry.name.startswith(".") and entry.name not in KEEP:
            (root / entry.name).symlink_to(entry)
    (root / ".venv").symlink_to(venv)
    env = ctxtap_env(ctxtap_config)
    env.pop("CTXTAP_CAPTURES", None)
    env["PATH"] = _path_without_ctxtap(env.get("PATH", ""))
    demo = subprocess.run([".venv/bin/ctxtap", "demo"], cwd=root, env=env, capture_output=True, text=True,
                          timeout=300)
    assert demo.returncode == 0, demo.stderr
    capture = str(max((root / "captures").glob("demo-*")).relative_to(root))
    env["CAPTURE"] = capture
    return Workspace(root, env, capture, demo.stdout)


def _free_port() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return str(sock.getsockname()[1])


def _values(ws: Workspace) -> dict[str, str]:
    """What each table placeholder stands for in the test."""
    har = ws.root / "given.har"
    if not har.exists():
        assert ws.run([".venv/bin/ctxtap", "export", ws.capture, "--har", str(har)]).returncode == 0
    # a table's SPEC: the policy example at one repeat (as tests/experiment runs the examples); the
    # README's own experiment block runs it as printed, all ten runs
    spec = ws.root / "out" / "policy-1.toml"
    if not spec.exists():
        example = (ws.root / "examples" / "experiments" / "policy.toml").read_text()
        spec.write_text(re.sub(r"^repeats = \d+", "repeats = 1", example, flags=re.M))
    return {"CAPTURE": ws.capture, "A": ws.capture, "B": ws.capture, "FILE": str(har),
            "FILE.har": "out/capture.har", "FILE.jsonl": "out/spans.jsonl", "FILE.html": "out/page.html",
            "SELECT ...": "SELECT * FROM totals", "SPEC": str(spec.relative_to(ws.root)),
            "DIR": "out/experiment"}


def _argv(snippet: Snippet, ws: Workspace, values: dict[str, str]) -> list[str]:
    if snippet.kind == "shell":
        return ["bash", "-e", "-o", "pipefail", "-c", snippet.text.replace(MODEL_SERVER_PORT, _free_port())]
    if snippet.kind == "sql":
        return [".venv/bin/ctxtap", "sql", ws.capture, snippet.text]
    return runnable(snippet.text, values)


def test_every_readme_command_runs_as_printed(workspace: Workspace) -> None:
    started = time.monotonic()
    (workspace.root / "out").mkdir(exist_ok=True)
    values = _values(workspace)
    failures, ran, skipped = [], 0, 0
    for snippet in snippets(README.read_text()):
        where = f"README.md:{snippet.line}"
        if snippet.skip:
            skipped += 1
            continue
        if snippet.skip == "":
            failures.append(f"{where}: a 'not run in tests' marker must say why: <!-- not run in tests: REASON -->")
            continue
        if snippet.kind == "unlabelled":
            failures.append(f"{where}: a code block with a command needs a language (sh, sql)")
            continue
        try:
            argv = _argv(snippet, workspace, values)
        except KeyError as exc:
            failures.append(f"{where}: {snippet.text}: {exc.args[0]}; add it to the test's values or mark the row")
            continue
        result = workspace.run(argv)
        ran += 1
        if result.returncode != 0:
            failures.append(f"{where}: exit {result.returncode}: {snippet.text}\n{result.stdout[-1500:]}\n"
                            f"{result.stderr[-1500:]}")
    took = time.monotonic() - started
    print(f"README: {ran} commands run, {skipped} marked not run, in {took:.0f} s")
    assert not failures, "\n\n".join(failures)
    assert ran >= 15


def test_readme_commands_name_the_virtualenv() -> None:
    """After `make demo`, a bare `ctxtap` is not on the PATH: the README says `.venv/bin/ctxtap`."""
    bare = [f"README.md:{s.line}: {line.strip()}" for s in snippets(README.read_text())
            for line in s.text.splitlines() if re.match(r"\s*ctxtap\s", line)]
    assert not bare, bare


def test_a_marker_without_a_reason_fails_and_table_rows_are_found() -> None:
    text = ("<!-- not run in tests -->\n```sh\nexit 1\n```\n"
            "<!-- not run in tests: needs the claude CLI -->\n```sh\nclaude\n```\n"
            "| command | what |\n|---|---|\n"
            "| <!-- not run in tests: a server --> `.venv/bin/ctxtap serve CAPTURE...` | x |\n"
            "| `.venv/bin/ctxtap info CAPTURE [--json]` | y |\n")
    found = snippets(text)
    assert [(s.kind, s.skip) for s in found] == [("shell", ""), ("shell", "needs the claude CLI"),
                                                  ("synopsis", "a server"), ("synopsis", None)]
    assert runnable(found[3].text, {"CAPTURE": "cap"}) == [".venv/bin/ctxtap", "info", "cap"]
    with pytest.raises(KeyError, match="unknown placeholder URL"):
        runnable(".venv/bin/ctxtap export CAPTURE --otlp URL", {"CAPTURE": "cap"})


def test_the_demo_hint_runs_as_printed(workspace: Workspace) -> None:
    """The demo's `try:` line is pasted as it is, in the folder where `make demo` ran."""
    hint = next(line for line in workspace.demo_stdout.splitlines() if "(try: " in line)
    command = hint.split("(try: ", 1)[1].rstrip(")")
    assert command.startswith(".venv/bin/ctxtap sql "), command
    result = workspace.run(["bash", "-c", command])
    assert result.returncode == 0, result.stderr
    assert shutil.which("ctxtap", path=workspace.env["PATH"]) is None
