"""`ctxtap replay`: re-run an agent on a capture's recorded responses, or re-send its requests.

    ctxtap replay CAPTURE -- CMD ...                 read-only: CMD gets the recorded answers (no key, no cost)
    ctxtap replay CAPTURE --send --upstream URL      execution: re-send a thread's requests, optionally transformed

Either way the run is recorded as a new capture linked to its source (manifest `replay`).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from ctxtap.capture.paths import default_captures_dir
from ctxtap.wire.httpbody import MAX_BODY_BYTES

DIVERGED_EXIT = 3  # --strict: the replayed run diverged beyond volatile fields


@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("capture", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@click.option("-o", "--out", type=click.Path(file_okay=False, path_type=Path),
              help="Capture directory of the replayed run (default: captures/replay-<time>).")
@click.option("--speed", type=float, default=1.0, show_default=True,
              help="Read-only: pace streams this many times faster than recorded (0: no pacing).")
@click.option("--strict", is_flag=True, help=f"Read-only: exit {DIVERGED_EXIT} on any divergence beyond volatile "
                                             "fields (for CI).")
@click.option("--send", is_flag=True, help="Execution replay: re-send the recorded requests to --upstream.")
@click.option("--upstream", metavar="URL", help="Execution replay: the provider endpoint (base URL).")
@click.option("--thread", "thread_id", metavar="ID", help="Execution replay: the thread to re-send "
                                                          "(default: the longest main thread).")
@click.option("--session", "session_id", metavar="ID", help="Execution replay: every thread of this session (its id "
                                                            "or a unique start of one).")
@click.option("--request", "request", metavar="REQUEST",
              help="Execution replay: this one request: its number as the report, the live view and diff give it "
                   "(13 or #13; SESSION#13 where the capture holds several sessions, or with --session), or its id "
                   "or a unique start of one.")
@click.option("--strip-timestamps", is_flag=True, help="Transform: mask dates and times in every block.")
@click.option("--move-dynamic-after-breakpoint", is_flag=True,
              help="Transform: move blocks that change between requests after the last cache breakpoint.")
@click.option("--sort-tools", is_flag=True, help="Transform: sort tool definitions by name.")
@click.option("--drop-block", "drop_blocks", multiple=True, metavar="PATH", help="Transform: drop the block at PATH.")
@click.option("--breakpoint", "breakpoints", multiple=True, type=int, metavar="POS",
              help="Transform: put a cache breakpoint on the block at position POS.")
@click.option("--allow-placeholders", is_flag=True,
              help="Execution replay: send requests that hold redaction placeholders (as placeholders).")
@click.option("--yes", is_flag=True, help="Execution replay: send without asking.")
@click.option("--diagnostics", is_flag=True, envvar="CTXTAP_CACHE_DIAGNOSTICS",
              help="Execution replay: ask the provider why its cache missed (Anthropic `diagnostics`, OpenAI "
                   "`prompt_cache_options.comparison_response_id`) against the thread's previous answer; the "
                   "report sets its verdict beside the bytes' and the client's.")
@click.option("--max-body-bytes", type=click.IntRange(min=1), default=MAX_BODY_BYTES, show_default="64 MiB",
              help="Read-only: the replay server answers a larger request body with 413, unread.")
def replay(capture: Path, command: tuple[str, ...], out: Path | None, speed: float, strict: bool, send: bool,
           upstream: str | None, thread_id: str | None, session_id: str | None, request: str | None,
           strip_timestamps: bool,
           move_dynamic_after_breakpoint: bool, sort_tools: bool, drop_blocks: tuple[str, ...],
           breakpoints: tuple[int, ...], allow_placeholders: bool, yes: bool, diagnostics: bool,
           max_body_bytes: int) -> None:
    """Replay CAPTURE: answer COMMAND's model requests with the recorded responses, or re-send them.

    Read-only (`-- CMD`): ctxtap acts as the model API for CMD through the recording proxy and its
    CA, answering each request with the recorded response of the matching request (same protocol,
    transport and pacing). CMD executes the recorded tool calls itself: run it in a fresh copy of
    the workspace, in a sandbox. Prints where the new requests diverge from the recorded ones,
    volatile fields (dates, ids, temp paths, hashes) listed apart.

    Execution (`--send --upstream URL`): re-sends a recorded thread, rebuilt with the protocol's
    serialiser after the transforms; credentials come from the environment (ANTHROPIC_API_KEY,
    OPENAI_API_KEY, ...), never from the capture. Nothing is executed: tool results are the recorded ones.
    """
    from ctxtap.capture.store import CaptureError
    from ctxtap.cli.failures import capture_dir_problem, loopback_problem

    out = out or default_captures_dir() / time.strftime("replay-%Y%m%d-%H%M%S")
    problem = capture_dir_problem(out) or loopback_problem()
    if problem:
        raise click.ClickException(f"cannot replay: {problem}")
    if speed < 0:
        raise click.BadParameter("must be 0 (no pacing) or more", param_hint="--speed")
    try:
        from ctxtap.replay.cassette import load, number_calls

        cassette = load(capture)
        number_calls(cassette)  # requests named by their #N, as the report and diff name them
    except CaptureError as exc:
        raise click.ClickException(f"cannot replay {capture}: {exc}") from None
    if not cassette.calls:
        raise click.ClickException(f"cannot replay {capture}: it holds no model requests. Record a run first "
                                   f"(`ctxtap record -- CMD`).")
    if send:
        if command:
            raise click.UsageError("--send re-sends the recorded requests itself; give no command after --")
        from ctxtap.cli.replay_send import send_replay

        code = send_replay(cassette, out, upstream=upstream, thread_id=thread_id, session_id=session_id,
                           request=request,
                           strip_timestamps=strip_timestamps,
                           move_dynamic_after_breakpoint=move_dynamic_after_breakpoint, sort_tools=sort_tools,
                           drop_blocks=list(drop_blocks), breakpoints=list(breakpoints),
                           allow_placeholders=allow_placeholders, yes=yes, diagnostics=diagnostics)
        sys.exit(code)
    if not command:
        raise click.UsageError("give the command to replay after --, e.g. `ctxtap replay CAPTURE -- claude -p "
                               "\"...\"`, or --send --upstream URL to re-send the recorded requests")
    _readonly(cassette, list(command), out, speed, strict, max_body_bytes)


def _readonly(cassette, command: list[str], out: Path, speed: float, strict: bool, max_body_bytes: int) -> None:
    from ctxtap.proxy_addons.runner import ProxyStartError
    from ctxtap.replay.readonly import preamble, run_readonly

    def echo(line: str) -> None:
        click.echo(f"ctxtap replay: {line}", err=True)

    for line in preamble(cassette):
        echo(line)
    model_hosts = list((_source_options(cassette).get("model_hosts")) or [])
    try:
        run = run_readonly(cassette, command, out, speed=speed, model_hosts=model_hosts, echo=echo,
                           max_body_bytes=max_body_bytes)
    except ProxyStartError as exc:
        raise click.ClickException(f"cannot start the replay proxy: {exc}") from None
    for line in run.report.lines():
        click.echo(line, err=True)
    click.echo(f"replayed run: {run.capture_dir} (trace {run.trace_id}); compare with "
               f"`ctxtap diff` or `ctxtap report`", err=True)
    if run.exit_code:
        sys.exit(run.exit_code)
    if strict and not run.report.ok:
        click.echo(f"ctxtap replay: --strict: the run diverged from the recording (exit {DIVERGED_EXIT})", err=True)
        sys.exit(DIVERGED_EXIT)


def _source_options(cassette) -> dict:
    from ctxtap.capture.manifest import Manifest

    try:
        return Manifest.load(cassette.directory).options or {}
    except (OSError, ValueError):
        return {}
