"""`ctxtap check CAPTURE --no-writes ...`: judge a run against the conditions its task set (for CI).

Registered by ctxtap.cli.main; `record --check "..."` runs the same at the end of a recording.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path

import click

from ctxtap.analysis.rules.constraints import CheckReport, Gates

EXIT_VIOLATION = 3  # distinct from a command's usual 1 and click's usage error 2


def _gate_options(f: Callable) -> Callable:
    f = click.option("--workspace", type=click.Path(file_okay=False),
                     help="The run's working directory, for a capture without an effect receipt.")(f)
    f = click.option("--no-outside-workspace", is_flag=True,
                     help="Fail if a tool call named a path outside the working directory, or the run changed "
                          "a --watch'ed place.")(f)
    f = click.option("--no-secrets-sent", is_flag=True,
                     help="Fail if a request carried a credential to a provider (the exposures view).")(f)
    f = click.option("--allow-host", "allow_host", multiple=True, metavar="HOST",
                     help="A host (glob) --no-network allows (repeatable).")(f)
    f = click.option("--no-network", is_flag=True,
                     help="Fail if the agent's tools reached the network through the proxy (the client's own "
                          "model, telemetry, update and settings traffic is kept apart).")(f)
    f = click.option("--allow-write", "allow_write", multiple=True, metavar="GLOB",
                     help="A path (glob, relative to its root) --no-writes allows (repeatable).")(f)
    f = click.option("--no-writes", is_flag=True,
                     help="Fail if the run created, modified, deleted or renamed any file in the working "
                          "directory or a --watch'ed place (the effect receipt).")(f)
    return f


def gates_from(no_writes: bool, allow_write: tuple[str, ...], no_network: bool, allow_host: tuple[str, ...],
               no_secrets_sent: bool, no_outside_workspace: bool, workspace: str | None) -> Gates:
    return Gates(no_writes=no_writes, allow_write=list(allow_write), no_network=no_network,
                 allow_host=list(allow_host), no_secrets_sent=no_secrets_sent,
                 no_outside_workspace=no_outside_workspace, workspace=workspace)


def parse_gates(text: str) -> Gates:
    """`record --check "--no-writes --allow-write '*.log'"`: the same options as `ctxtap check`."""
    try:
        ctx = check.make_context("check", ["-", *shlex.split(text)], resilient_parsing=False)
    except click.UsageError as exc:
        raise click.BadParameter(str(exc), param_hint="--check") from None
    p = ctx.params
    return gates_from(p["no_writes"], p["allow_write"], p["no_network"], p["allow_host"], p["no_secrets_sent"],
                      p["no_outside_workspace"], p["workspace"])


def run_check(capture_dir: Path, gates: Gates) -> CheckReport:
    from ctxtap.analysis.build import ensure_analysis
    from ctxtap.analysis.db import connect
    from ctxtap.analysis.rules.constraints import check as judge

    ensure_analysis(capture_dir)
    con = connect([capture_dir])
    try:
        return judge(con, gates)
    finally:
        con.close()


def report_lines(report: CheckReport) -> list[str]:
    lines = []
    for r in report.results:
        if not r.judged:
            lines.append(f"{r.gate}: cannot judge: {r.how}")
            continue
        lines.append(f"{r.gate}: {'ok' if r.ok else f'{len(r.violations)} violation(s)'} ({r.how})")
        for v in r.violations:
            lines.append(f"  {v.what}")
            lines.append(f"    {v.evidence}")
    lines.append("check: passed" if report.ok else "check: FAILED")
    return lines


@click.command(name="check")
@click.argument("capture", type=click.Path(file_okay=False))
@_gate_options
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text.")
@click.option("--save", is_flag=True,
              help="Keep these gates in the capture (gates.json), so its report says which the run breaks.")
def check(capture: str, no_writes: bool, allow_write: tuple[str, ...], no_network: bool,
          allow_host: tuple[str, ...], no_secrets_sent: bool, no_outside_workspace: bool, workspace: str | None,
          as_json: bool, save: bool) -> None:
    """Judge a recorded run against the conditions its task set; exit 3 on any violation (for CI).

    Each violation is printed with its evidence: the effect receipt's row, the tool call and its
    request, the network flow. A gate the capture cannot judge (no effect receipt) fails too.

    \b
    Examples:
      ctxtap check captures/run-a --no-writes --allow-write 'build/*' --no-network
      ctxtap check captures/run-a --no-secrets-sent --no-outside-workspace --json
    """
    gates = gates_from(no_writes, allow_write, no_network, allow_host, no_secrets_sent, no_outside_workspace,
                       workspace)
    if not gates.flags():
        raise click.UsageError("give at least one gate (--no-writes, --no-network, --no-secrets-sent, "
                               "--no-outside-workspace)")
    if save:
        from ctxtap.capture.effects import write_gates

        write_gates(Path(capture), gates.model_dump())
    report = run_check(Path(capture), gates)
    if as_json:
        import json

        click.echo(json.dumps({"ok": report.ok, **report.model_dump()}, indent=2))
    else:
        for line in report_lines(report):
            click.echo(line)
    if not report.ok:
        raise SystemExit(EXIT_VIOLATION)
