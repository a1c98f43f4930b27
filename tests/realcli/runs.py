"""One real CLI run under `ctxtap record`: throwaway HOME, fixture repository, namespace, capture.

Shared by the tests and by `python -m tests.realcli.record_fixtures`, so a committed
recording is exactly what the test run records.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from ctxtap.modelserver.script import Script
from tests.realcli import checks, install, workspace
from tests.realcli.clis import CliSpec, Setup
from tests.realcli.sandbox import FIXED_AGENTS, FIXED_HOME, RunResult, base_env, namespace, run_in_netns

SCRIPT = "basic"
_basic = Script.load(SCRIPT)
FINAL_TEXT = next(step.text for step in _basic.steps if step.is_final)
SCRIPTED_CALLS = sum(len(step.calls) for step in _basic.steps)  # pwd and ls, in parallel


def read_calls(capture: Path) -> list:
    """The capture's model calls read as `ctxtap analyze` reads them: with the machine facts and the
    command line `ctxtap record` kept (the task the run was given)."""
    from ctxtap.analysis.parsing.parse import parse_exchanges
    from ctxtap.analysis.threads import runfacts
    from ctxtap.capture.store import Capture

    cap = Capture.open(capture)
    with runfacts.using(cap.manifest.environment, cap.manifest.command):
        return list(parse_exchanges(cap.exchanges()))


def script_for(spec: CliSpec, script: str = SCRIPT) -> str:
    """The script's name, or (for a CLI that stops only on a tool call of its own) the script as JSON
    with that call in its final step, beside the final text."""
    if spec.finish is None:
        return script
    import json
    import shlex

    steps = Script.load(script).model_dump(exclude_none=True)["steps"]
    final = steps[-1]
    final["calls"] = [{"command": f"{spec.finish} && echo {shlex.quote(final['text'])}"}]
    return json.dumps({"steps": steps})


@dataclass
class CliRun:
    result: RunResult
    capture: Path
    setup: Setup
    repo_changes: list[str]  # the fixture repository must be unchanged
    home: Path  # HOME as the CLI saw it (FIXED_HOME where the namespace allows)
    argv: list[str]  # the command line as the CLI saw it
    env: dict[str, str]  # its environment, before `ctxtap record` adds the proxy and CA variables
    hidden: tuple[str, ...]  # real paths the CLI could not see: none may appear in the capture


def _prepare(spec: CliSpec, root: Path, home: Path, instructions: bool) -> tuple[Path, Path, Setup]:
    """The real HOME with the CLI's config files, and the fixture repository inside it (like the corpus).

    HOME is where the CLI will see it: the Setup's variables name paths there.
    """
    real_home = workspace.make_home(root / "home")
    repo = workspace.make_fixture_repo(real_home / "work" / "demo-repo", instructions)
    setup = spec.setup(home)
    for rel, text in setup.files.items():
        path = real_home / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        path.chmod(0o600)
    return real_home, repo, setup


def run_cli(spec: CliSpec, command: list[Path], path_dirs: list[Path], config: Path, root: Path,
            script: str = SCRIPT, instructions: bool = False, replay: Path | None = None,
            replay_args: tuple[str, ...] = (), record_args: tuple[str, ...] = ()) -> CliRun:
    """Run the CLI once under `ctxtap record` in the namespace; also report repository changes.

    INSTRUCTIONS puts AGENTS.md, CLAUDE.md and GEMINI.md in the fixture repository.

    Where the namespace allows, the CLI sees HOME at FIXED_HOME and the install cache
    at FIXED_AGENTS, so its requests name no path of this machine.
    """
    script = script_for(spec, script)
    fixed = namespace().fixed_paths
    cache = install.cache_root().resolve()
    real_home = root / "home"
    home = FIXED_HOME if fixed else real_home
    real_home, real_repo, setup = _prepare(spec, root, home, instructions)
    repo = home / real_repo.relative_to(real_home)

    def seen(path: Path) -> str:
        path = path.absolute()
        if fixed and path.is_relative_to(cache):
            return str(FIXED_AGENTS / path.relative_to(cache))
        return str(path)

    before = workspace.snapshot(real_repo)
    env = base_env(home, [Path(seen(d)) for d in path_dirs], config)
    env.update(setup.env)
    out = root / "capture"
    argv = [*(seen(c) for c in command), *spec.args(repo)]
    show = {real_home.resolve(): FIXED_HOME, cache: FIXED_AGENTS} if fixed else None
    result = run_in_netns(argv, cwd=repo, env=env, out=out, hosts=spec.hosts, websocket=spec.websocket, work=root,
                          script=script, show=show, replay=replay, replay_args=replay_args,
                          record_args=record_args)
    repo_changes = checks.repo_problems(before, workspace.snapshot(real_repo), spec.state_dirs)
    hidden = tuple(str(p) for p in show) if show else ()
    if show and sys.prefix != sys.base_prefix:  # ctxtap's virtualenv: its bin is on the CLI's PATH
        hidden += (sys.prefix,)
    return CliRun(result, out, setup, repo_changes, home, argv, env, hidden)
