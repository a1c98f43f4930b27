"""Real Claude Code, Gemini CLI and Codex deliver their own OpenTelemetry through `ctxtap record`
(telemetry is on by default), and the `events` view times their tools from it.

Same run as the tool-loop test (the corpus's task, scripted model server, loopback-only
namespace). Skips, saying so, where a client version sends no telemetry to the receiver.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxtap.analysis.db import connect
from ctxtap.capture.store import Capture
from tests.proxyharness import all_stored_bytes, run_ctxtap
from tests.realcli.clis import CLIS
from tests.realcli.runs import SCRIPTED_CALLS, run_cli
from tests.realcli.toolbox import Timings, Toolbox

pytestmark = pytest.mark.realcli

# The client's documented tool event: it carries the tool's duration (and the decision).
TOOL_EVENT = {"claude": "claude_code.tool_result", "gemini": "gemini_cli.tool_call", "codex": "codex.tool_result"}


@pytest.mark.parametrize("cli", sorted(TOOL_EVENT))
def test_real_cli_telemetry_times_its_tools(cli: str, realcli_tools: Toolbox, ctxtap_config: Path,
                                            tmp_path: Path, realcli_timings: Timings) -> None:
    spec = CLIS[cli]
    command, path_dirs = realcli_tools.command_for(spec)
    run = run_cli(spec, command, path_dirs, ctxtap_config, tmp_path)
    realcli_timings.runs[f"{cli} (telemetry)"] = run.result.seconds
    context = f"{cli} ({spec.install_spec}), work dir {tmp_path}\n{run.result.describe()}"
    assert run.result.returncode == 0, context
    manifest = json.loads((run.capture / "manifest.json").read_text())
    told = manifest["telemetry"]["client"]
    assert told["enabled"] and told["client"] == spec.client, told
    cap = Capture.open(run.capture)
    payloads = [p for p in cap.telemetry().to_pylist() if p["source"] == "otlp-receiver"]
    # the pinned versions export when told to: none arriving is a broken injection, not a missing exporter
    assert payloads, f"{cli} {spec.install_spec} sent no OTLP although told to ({sorted(told['injected_env'])})"
    assert all(p["parse_status"] == "ok" for p in payloads), [(p["path"], p["parse_status"]) for p in payloads]
    names = {(r["body"], r["name"]) for r in cap.telemetry_records().to_pylist()}
    assert any(TOOL_EVENT[cli] in pair for pair in names), sorted(n for pair in names for n in pair if n)[:40]

    run_ctxtap(["analyze", str(run.capture)], ctxtap_config)
    con = connect([run.capture])
    finished = con.execute("SELECT tool_call_id, tool_name, duration_ms, evidence, evidence_detail FROM events "
                           "WHERE event = 'tool_finished' ORDER BY seq").fetchall()
    from_telemetry = [r for r in finished if r[3] == "client-telemetry"]
    assert len(from_telemetry) >= SCRIPTED_CALLS, finished
    assert all(r[2] is not None and r[2] >= 0 for r in from_telemetry), from_telemetry
    started = con.execute("SELECT count(*) FROM events WHERE event = 'tool_started' AND evidence = "
                          "'client-telemetry'").fetchone()[0]
    assert started == len(from_telemetry)
    # the telemetry is redacted like the wire: the dummy key is nowhere in the capture
    for where, data in all_stored_bytes(run.capture):
        for secret in run.setup.secrets:
            assert secret.encode() not in data, f"{where} holds the dummy key"
