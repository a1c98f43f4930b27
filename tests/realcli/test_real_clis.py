"""Real coding CLIs, recorded end to end by `ctxtap record` against the scripted model server.

Opt-in (`pytest -m realcli tests/realcli`): each CLI is installed from npm into a cache,
then run on the corpus's "basic" task in a throwaway HOME and fixture repository,
inside a network namespace with only loopback, with its provider host routed to the
model server. What must hold for each: the CLI finished (exit 0, final text printed),
ctxtap saw every model request with the right client and API, every request parses,
every proposed tool call comes back as a result with the same id, the repository is
unchanged, and no dummy key is stored anywhere in the capture.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxtap.analysis.parsing.models import ModelCall
from tests.layout_check import layout_problems
from tests.proxyharness import all_stored_bytes, run_ctxtap
from tests.realcli import checks
from tests.realcli.clis import AIDER_ANSWER, CLIS, NO_TOOL_CLIS, TASK
from tests.realcli.runs import FINAL_TEXT, SCRIPTED_CALLS, read_calls, run_cli
from tests.realcli.toolbox import Timings, Toolbox

pytestmark = pytest.mark.realcli


def _model_calls(capture: Path) -> list[ModelCall]:
    return read_calls(capture)


@pytest.mark.parametrize("cli", sorted(CLIS))
def test_real_cli_tool_loop_is_recorded(cli: str, realcli_tools: Toolbox, ctxtap_config: Path,
                                        tmp_path: Path, realcli_timings: Timings) -> None:
    spec = CLIS[cli]
    command, path_dirs = realcli_tools.command_for(spec)
    run = run_cli(spec, command, path_dirs, ctxtap_config, tmp_path)
    result, capture, setup, repo_changes = run.result, run.capture, run.setup, run.repo_changes
    realcli_timings.runs[cli] = result.seconds
    context = f"{cli} ({spec.install_spec}), work dir {tmp_path}\n{result.describe()}"

    assert result.returncode == 0, context
    # as printed: a terminal UI may wrap it (mini-swe-agent does)
    assert FINAL_TEXT in " ".join(result.stdout.split()), f"the CLI did not print the scripted final text\n{context}"
    assert not repo_changes, f"the fixture repository changed: {repo_changes}\n{context}"

    info = json.loads(run_ctxtap(["info", str(capture), "--json"], ctxtap_config).stdout)
    summary = {k: info[k] for k in ("status", "model_requests", "by_client", "by_api", "by_transport", "redactions")}
    assert info["status"] == "finalized" and not info["recovered"], summary
    assert info["model_requests"] >= 2, summary
    assert info["by_client"] == {spec.client: info["model_requests"]}, summary
    assert info["by_api"].get(spec.api, 0) >= 2, summary
    assert info["redactions"], f"no credential was redacted: was the dummy key ever sent?\n{summary}"

    calls = _model_calls(capture)
    problems = checks.loop_problems(calls, spec.client, FINAL_TEXT, SCRIPTED_CALLS, spec.title_model,
                                   spec.shell_output, spec.finish)
    assert not problems, "\n".join(problems)
    # where rules, environment, task, instructions and tool results sit (by segment), side requests, threads
    problems = layout_problems(cli, calls)
    assert not problems, "\n".join(problems)

    stored = all_stored_bytes(capture)
    leaks = checks.leaked_secrets(stored, setup.secrets)
    assert not leaks, leaks
    # With fixed paths the CLI saw /home/alice and /opt/agents: no path of this machine is recorded.
    leaks = checks.leaked_secrets(stored, run.hidden)
    assert not leaks, leaks


@pytest.mark.parametrize("cli", sorted(NO_TOOL_CLIS))
def test_a_cli_without_tools_is_recorded(cli: str, realcli_tools: Toolbox, ctxtap_config: Path,
                                         tmp_path: Path, realcli_timings: Timings) -> None:
    """aider offers no tools: the scripted answer names README.md, aider adds the file to the chat and asks
    again. ctxtap names it by the program its command ran (nothing on the wire does), finds the task the
    command line gave inside the first request, and reads the file as the file's data."""
    from tests.realcli.workspace import FILES

    spec = NO_TOOL_CLIS[cli]
    command, path_dirs = realcli_tools.command_for(spec)
    run = run_cli(spec, command, path_dirs, ctxtap_config, tmp_path,
                  script=json.dumps({"steps": [{"text": AIDER_ANSWER}]}))
    realcli_timings.runs[cli] = run.result.seconds
    context = f"{cli} ({spec.install_spec}), work dir {tmp_path}\n{run.result.describe()}"
    assert run.result.returncode == 0, context
    assert "README.md" in run.result.stdout, context
    assert not run.repo_changes, f"the fixture repository changed: {run.repo_changes}\n{context}"

    info = json.loads(run_ctxtap(["info", str(run.capture), "--json"], ctxtap_config).stdout)
    summary = {k: info[k] for k in ("model_requests", "by_client", "by_api", "redactions")}
    assert info["model_requests"] >= 2 and info["by_client"] == {"aider": info["model_requests"]}, summary
    assert info["by_api"] == {"chat-completions": info["model_requests"]} and info["redactions"], summary

    calls = [c for c in _model_calls(run.capture) if c.purpose.purpose == "main"]
    assert all(c.identity.client == "aider" and c.identity.client_rule == "argv:program" for c in calls)
    first, last = calls[0], calls[-1]
    task = [b for b in first.request.blocks if b.rule_id == "argv.task"]
    assert len(task) == 1, [(b.path, b.rule_id) for b in first.request.blocks]
    spans = [task[0].text.encode()[s.start:s.end].decode() for s in task[0].segments if s.source == "user_task"]
    assert spans == [TASK] or (not task[0].segments and task[0].text.strip() == TASK), spans
    readme_line = FILES["README.md"].splitlines()[2]
    holder = next(b for b in last.request.blocks if readme_line in b.text)
    at = holder.text.encode().index(readme_line.encode())
    seg = next((s for s in holder.segments if s.start <= at < s.end), holder)
    assert (seg.source, seg.rule_id) == ("runtime_environment", "detect.recorded-file"), (seg.source, seg.rule_id)

    leaks = checks.leaked_secrets(all_stored_bytes(run.capture), run.setup.secrets)
    assert not leaks, leaks
