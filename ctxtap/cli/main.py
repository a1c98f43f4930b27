"""The `ctxtap` command line."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ctxtap import __version__
from ctxtap.capture.ids import new_capture_id
from ctxtap.capture.paths import default_captures_dir, redaction_key
from ctxtap.capture.private import private_umask, user_umask
from ctxtap.cli.invocation import invoked_as
from ctxtap.cli.store import filter_options as _store_filters

if TYPE_CHECKING:
    from ctxtap.capture.effects import Receipt

# Heavy modules (pyarrow, pydantic models, mitmproxy) are imported inside the
# commands that need them: the proxy process should carry as little as possible.


def _fail_if(problem: str | None) -> None:
    """Stop before doing anything when a precondition check found a problem."""
    if problem:
        raise click.ClickException(problem)


def _check_routes(routes) -> None:
    from ctxtap.proxy_addons.router import parse_route

    for spec in routes:
        try:
            parse_route(spec)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--route") from None


def _open(path: str):
    from ctxtap.capture.store import Capture, CaptureError

    try:
        return Capture.open(path)
    except CaptureError as exc:
        raise click.ClickException(str(exc)) from exc


def _proxy_options(f):
    f = click.option("--route", "routes", multiple=True, metavar="HOST=URL",
                     help="Send HOST's traffic to URL instead (repeatable); the original URL is recorded.")(f)
    f = click.option("--model-host", "model_hosts", multiple=True, metavar="HOST[=PROVIDER]",
                     help="Treat HOST as a model API and record it in full (repeatable).")(f)
    f = click.option("--record-all", is_flag=True,
                     help="Record headers and bodies of every flow, not only model-API flows.")(f)
    f = click.option("--redact", "redact", multiple=True, type=click.Choice(["pii"]),
                     help="Also pseudonymise personal data before writing (e-mails, user/host names, "
                          "home/temp paths, session/device ids, IPs). Credentials are always redacted.")(f)
    f = click.option("--offline", is_flag=True,
                     help="Never reach the network: answer unrouted requests locally (GET 404, else 200 {}).")(f)
    f = click.option("--listen-host", default="127.0.0.1", show_default=True,
                     help="Address to listen on. Anything but loopback exposes the proxy to the network.")(f)
    f = click.option("-o", "--out", type=click.Path(file_okay=False, path_type=Path),
                     help="Capture directory (default: captures/<capture-id>).")(f)
    f = click.option("--live", is_flag=True,
                     help="Watch the recording in a local web UI (a separate process; it never slows the proxy).")(f)
    f = click.option("--ui-port", type=click.IntRange(0, 65535), default=0, show_default="a free port",
                     help="With --live: port of the web UI (127.0.0.1 only).")(f)
    f = click.option("--open", "open_browser", is_flag=True, help="With --live: open the view in the default browser.")(f)
    return f


def _start_live(out: Path, live: bool, ui_port: int, open_browser: bool):
    """The live view's child process (None without --live). A view that cannot start is said, and the
    recording goes on without it."""
    if not live:
        return None
    from ctxtap.reports.live.launch import LiveStartError, start_live

    try:
        child = start_live(out, ui_port)
    except LiveStartError as exc:
        reason = str(exc)
        if "in use" in reason:
            from ctxtap.cli.live import port_in_use

            reason = port_in_use(ui_port)
        click.echo(f"ctxtap: the live view did not start: {reason}. Recording goes on without it; "
                   f"browse it afterwards with: {invoked_as()} serve {shlex.quote(str(out))}", err=True)
        return None
    from ctxtap.cli.live import announce

    announce(child.url, open_browser)
    return child


def _summary_lines(capture, counts: dict | None = None) -> list[str]:
    c = capture.manifest.counts if counts is None else counts
    lines = [
        f"capture   {capture.directory}" + ("  (live: the recorder is still running)" if capture.live else ""),
        f"flows     {c.get('flows', 0)} ({c.get('error_flows', 0)} failed, e.g. upstream unreachable; "
        f"{c.get('incomplete_flows', 0)} without a response)",
        f"model requests {c.get('model_requests', 0)}",
    ]
    for key in ("by_client", "by_api", "by_transport"):
        items = ", ".join(f"{k}={v}" for k, v in sorted((c.get(key) or {}).items()))
        lines.append(f"  {key[3:]:<10} {items or '-'}")
    lines.append(f"bytes     request {c.get('request_bytes', 0):,}  response {c.get('response_bytes', 0):,}")
    red = ", ".join(f"{k}={v}" for k, v in sorted((c.get("redactions") or {}).items()))
    lines.append(f"redacted  {red or 'nothing'}")
    if c.get("telemetry_payloads"):
        lines.append(f"telemetry {c['telemetry_payloads']} payloads from the client, {c.get('telemetry_records', 0)} "
                     f"records ({invoked_as()} sql {shlex.quote(str(capture.directory))} 'SELECT * FROM events')")
    if c.get("integrity_mismatches"):
        lines.append(f"WARNING   {c['integrity_mismatches']} flows where forwarded bytes differ from received")
    return lines


def _no_model_request_lines(capture, client: str = "the client") -> list[str]:
    """Why a recording holds no model request and what to check: it used to end in a summary of
    zeros, as if nothing had gone wrong."""
    if capture.manifest.counts.get("model_requests"):
        return []
    from collections import Counter

    hosts = Counter(h for h in capture.flows().column("host").to_pylist() if h)
    if not hosts:
        return [f"ctxtap: no model request was seen, and no request went through the proxy at all: check that "
                f"{client} honours HTTPS_PROXY (some clients need their own proxy setting, Node needs "
                f"NODE_USE_ENV_PROXY=1, which ctxtap sets) and that it sent a request. A model API ctxtap "
                f"does not know is recorded in full with --model-host HOST. A client that ignores proxy "
                f"variables but reads a base URL (OPENAI_BASE_URL, ANTHROPIC_BASE_URL, GOOGLE_GEMINI_BASE_URL) "
                f"is recorded with ctxtap record --base-url; one configured through its own file is pointed at "
                f"the address --base-url prints."]
    seen = ", ".join(f"{h} ({n})" for h, n in hosts.most_common(3)) + (", ..." if len(hosts) > 3 else "")
    return [f"ctxtap: no model request was seen; requests went to {seen}. If one of them is the model API, "
            f"record it in full with --model-host {hosts.most_common(1)[0][0]}; otherwise check that {client} "
            f"sends its model traffic through HTTPS_PROXY."]


class _Commands(click.Group):
    """Commands that live with their feature (reports/, ctxtap/demo/) are imported only when used,
    so `ctxtap proxy` does not carry the report or publish machinery in its process."""

    PLUGINS = {"report": "ctxtap.cli.report", "publish": "ctxtap.cli.publish", "demo": "ctxtap.cli.demo",
               "replay": "ctxtap.cli.replay", "diff": "ctxtap.cli.diff", "experiment": "ctxtap.cli.experiment",
               "serve": "ctxtap.cli.live", "check": "ctxtap.cli.check", "layout": "ctxtap.cli.layout",
               "push": "ctxtap.cli.store", "pull": "ctxtap.cli.store", "rm": "ctxtap.cli.store",
               "ls": "ctxtap.cli.store", "clients": "ctxtap.cli.clients"}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.PLUGINS})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        command = super().get_command(ctx, name)
        if command is None and name in self.PLUGINS:
            import importlib

            command = getattr(importlib.import_module(self.PLUGINS[name]), name)
        return command

    def invoke(self, ctx: click.Context):
        """Any error a command did not anticipate still ends in one line that names its cause
        (a traceback only with CTXTAP_DEBUG=1). Commands run with umask 077: what they write (captures,
        datasets by pyarrow and DuckDB, reports, attachments) is the user's only (ctxtap.capture.private)."""
        try:
            with private_umask():
                return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except Exception as exc:
            from ctxtap.cli.failures import DEBUG_ENV, explain, unexpected

            if os.environ.get(DEBUG_ENV):
                raise
            raise click.ClickException(explain(exc) or unexpected(ctx.invoked_subcommand, exc)) from exc


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ctxtap")
def main() -> None:
    """See what coding agents actually send to their models.

    Record a CLI's model traffic through a local HTTPS proxy (credentials are
    redacted before anything is written), then analyse and report on it.
    """


@main.command(context_settings={"ignore_unknown_options": True})
@_proxy_options
@click.option("--telemetry/--no-telemetry", default=True, show_default=True,
              help="Have the client export its own OpenTelemetry (tool timings, decisions, API events) to a "
                   "loopback receiver and store it in the capture, redacted. Claude Code, Gemini CLI and Codex; "
                   "your own OTEL_*/telemetry settings win.")
@click.option("--watch", "watch", multiple=True, type=click.Path(file_okay=False, exists=True),
              help="Also snapshot this place before and after the run (repeatable; e.g. the client's home "
                   "folder): the effect receipt covers the working directory and these, nothing else.")
@click.option("--effects/--no-effects", default=True, show_default=True,
              help="Snapshot the working directory (ignored files included, .git/ internals left out) before "
                   "and after the run and store what changed: paths, sizes, content hashes, never contents.")
@click.option("--snapshot-max-files", default=200_000, show_default=True,
              help="Entries a snapshot walks per place before it stops (and says so).")
@click.option("--snapshot-max-seconds", default=20.0, show_default=True,
              help="Seconds a snapshot walks per place before it stops (and says so).")
@click.option("--snapshot-hash-mib", default=64, show_default=True,
              help="MiB of small files a snapshot hashes before the run, so a later change has a before hash.")
@click.option("--base-url", "base_url", is_flag=True,
              help="For a client that ignores HTTPS_PROXY: also listen on a loopback port per provider (OpenAI, "
                   "Anthropic, Gemini) and set the base-URL variables their SDKs read (OPENAI_BASE_URL, "
                   "ANTHROPIC_BASE_URL, GOOGLE_GEMINI_BASE_URL); requests are recorded under the provider's URL.")
@click.option("--check", "check_gates", metavar="GATES",
              help="Judge the run when it ends, as `ctxtap check` does (e.g. \"--no-writes --no-network\"); "
                   "a violation makes the exit code 3 when the command itself succeeded.")
@click.option("--push", "push_url", metavar="s3://BUCKET/PREFIX",
              help="When the run ends, push the capture to this store (as `ctxtap push` does); a push that "
                   "fails is said and the capture stays here.")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def record(command, out, routes, model_hosts, record_all, offline, redact, listen_host, telemetry, live, ui_port,
           open_browser, watch, effects, snapshot_max_files, snapshot_max_seconds, snapshot_hash_mib,
           base_url, check_gates, push_url) -> None:
    """Run COMMAND through the recording proxy and capture its model traffic.

    Starts a proxy on a free port with ctxtap's own CA (created on first use,
    private key readable only by you), runs COMMAND with HTTPS_PROXY and the CA
    variables set, passes its exit code through, then finalizes the capture and
    prints a summary. Example:

        ctxtap record -- claude -p "list the files here"
    """
    from ctxtap.cli import telemetry_env
    from ctxtap.cli.failures import capture_dir_problem, command_problem, listen_problem, loopback_problem
    from ctxtap.proxy_addons.runner import BackgroundProxy, ProxyConfig, ProxyStartError, client_env

    if push_url and not push_url.startswith("s3://"):
        raise click.BadParameter(f"{push_url!r} is not a store URL: give s3://BUCKET/PREFIX", param_hint="--push")
    not_runnable = command_problem(command[0])
    if not_runnable:
        click.echo(f"ctxtap: {not_runnable[0]}", err=True)
        sys.exit(not_runnable[1])
    _check_routes(routes)
    out = out or default_captures_dir() / new_capture_id()
    _fail_if(loopback_problem() or listen_problem(listen_host, 0) or capture_dir_problem(out))
    gates = None
    if check_gates:
        from ctxtap.cli.check import parse_gates

        gates = parse_gates(check_gates)
    tel = telemetry_env.plan(command, os.environ, telemetry)
    config = ProxyConfig(listen_host=listen_host, out=out, routes=list(routes), model_hosts=list(model_hosts),
                         record_all=record_all, offline=offline, redact=list(redact), command=list(command),
                         telemetry=tel.enabled, reverse=_reverse_ports() if base_url else {})
    try:
        proxy = BackgroundProxy(config).start()
    except ProxyStartError as exc:
        raise click.ClickException(str(exc)) from exc
    env = dict(os.environ)
    env.update(client_env(proxy.port, "127.0.0.1" if listen_host in ("0.0.0.0", "::") else listen_host))
    if config.reverse:
        from ctxtap.proxy_addons.base_urls import base_url_env

        env.update(base_url_env(config.reverse))
        click.echo("ctxtap: base URLs -> " + ", ".join(f"{u} at 127.0.0.1:{p}" for u, p in config.reverse.items()),
                   err=True)
    if tel.enabled and proxy.telemetry_endpoint:
        telemetry_env.fill(tel, proxy.telemetry_endpoint)
        env.update(tel.env)
    token = proxy.telemetry_endpoint.rsplit("/", 1)[1] if proxy.telemetry_endpoint else None
    proxy.note("client", tel.manifest(token))
    click.echo(f"ctxtap: recording {shlex.join(command)} via 127.0.0.1:{proxy.port} -> {out}", err=True)
    if tel.enabled:
        click.echo(f"ctxtap: {tel.client} telemetry -> loopback OTLP receiver (--no-telemetry to leave it off)",
                   err=True)
    elif tel.user_settings or tel.client:
        click.echo(f"ctxtap: client telemetry not injected: {tel.reason}", err=True)
    code = 127
    child = None
    receipt = (_start_receipt(out, watch, (snapshot_max_files, snapshot_max_seconds, snapshot_hash_mib))
               if effects else None)
    from ctxtap.capture import environment

    facts = environment.collect()  # the machine's facts, for the private manifest
    try:
        child = _start_live(out, live, ui_port, open_browser)
        # the user's command creates its own files with the user's umask, not ctxtap's private one
        code = subprocess.call(tel.argv or list(command), env=env, umask=user_umask())
    except FileNotFoundError:
        click.echo(f"ctxtap: command not found: {command[0]}. Check the spelling or give its full path.", err=True)
    except PermissionError:
        code = 126
        click.echo(f"ctxtap: cannot run {command[0]}: permission denied. Check that it is executable.", err=True)
    except KeyboardInterrupt:
        code = 130
    finally:
        proxy.stop()
        if child is not None:
            child.stop()
    capture = _open(str(out))
    environment.save(out, facts)
    if receipt is not None:
        receipt.finish(out, capture.manifest.capture_id)
    for line in _summary_lines(capture) + _no_model_request_lines(capture, command[0]):
        click.echo(line, err=True)
    if gates is not None:
        from ctxtap.capture.effects import write_gates
        from ctxtap.cli.check import EXIT_VIOLATION, report_lines, run_check

        write_gates(out, gates.model_dump())
        report = run_check(out, gates)
        for line in report_lines(report):
            click.echo(f"ctxtap: {line}", err=True)
        if not report.ok and code == 0:
            code = EXIT_VIOLATION
    if push_url:
        from ctxtap.store import StoreError, push_capture

        try:
            pushed = push_capture(out, push_url)
            click.echo(f"ctxtap: pushed {pushed.capture_id} -> {pushed.url} ({pushed.uploaded} objects uploaded, "
                       f"{pushed.skipped} already there)", err=True)
        except StoreError as exc:
            click.echo(f"ctxtap: the capture was not pushed: {exc}. It stays in {out}; push it later with: "
                       f"{invoked_as()} push {shlex.quote(str(out))} {push_url}", err=True)
            code = code or 1
    sys.exit(code)


def _reverse_ports() -> dict[str, int]:
    """A free loopback port per provider for `record --base-url` (proxy_addons.base_urls)."""
    from ctxtap.proxy_addons.base_urls import UPSTREAMS, free_port

    return {upstream.url: free_port() for upstream in UPSTREAMS}


def _start_receipt(out: Path, watch: tuple[str, ...], bounds: tuple[int, float, int]) -> Receipt:
    """The effect receipt's before-snapshots (ctxtap.capture.effects), taken before the command starts."""
    from ctxtap.capture.effects import Receipt
    from ctxtap.capture.paths import config_dir
    from ctxtap.capture.workspace import SnapshotLimits

    places = [(Path.cwd().resolve(), "workspace")] + [(Path(w).resolve(), "watched") for w in watch]
    max_files, max_seconds, hash_mib = bounds
    limits = SnapshotLimits(max_files=max_files, max_seconds=max_seconds, hash_budget_bytes=hash_mib << 20)
    receipt = Receipt(places, limits, exclude=(out.resolve(), config_dir().resolve())).start()
    for snap in receipt.before:
        if snap.stopped:
            click.echo(f"ctxtap: the snapshot of {snap.root} stopped early ({snap.stopped}): changes are "
                       f"reported only where it walked in full", err=True)
    return receipt


@main.command()
@_proxy_options
@click.option("--port", default=8080, show_default=True, help="Port to listen on (0: any free port).")
def proxy(port, out, routes, model_hosts, record_all, offline, redact, listen_host, live, ui_port,
          open_browser) -> None:
    """Run the recording proxy until Ctrl-C / SIGTERM, then finalize the capture.

    Prints the environment variables a client needs; export them in another
    shell (or prefix a command with them) to record that command.
    """
    from ctxtap.cli.failures import capture_dir_problem, listen_problem
    from ctxtap.proxy_addons.runner import ProxyConfig, ProxyStartError, client_env, run_foreground

    _check_routes(routes)
    out = out or default_captures_dir() / new_capture_id()
    _fail_if(listen_problem(listen_host, port) or capture_dir_problem(out))
    config = ProxyConfig(listen_host=listen_host, port=port, out=out, routes=list(routes),
                         model_hosts=list(model_hosts), record_all=record_all, offline=offline,
                         redact=list(redact))

    children: list = []
    starting: list = []

    def start_view(capture_dir: Path) -> None:
        child = _start_live(capture_dir, live, ui_port, open_browser)
        if child is not None:
            children.append(child)

    def ready(host: str, actual_port: int, capture_dir: Path | None) -> None:
        click.echo(f"# ctxtap proxy listening on {host}:{actual_port}, recording to {capture_dir}")
        if live:  # started beside the proxy's loop, which goes on serving meanwhile
            import threading

            starting.append(threading.Thread(target=start_view, args=(capture_dir or out,), daemon=True))
            starting[-1].start()
        click.echo("# export these in the shell whose traffic you want to record:")
        for key, value in client_env(actual_port, "127.0.0.1" if host in ("0.0.0.0", "::") else host).items():
            click.echo(f"export {key}={shlex.quote(value)}")
        sys.stdout.flush()

    try:
        capture_dir = run_foreground(config, ready)
    except ProxyStartError as exc:
        raise click.ClickException(str(exc)) from exc
    finally:
        for thread in starting:
            thread.join()
        for child in children:
            child.stop()
    if capture_dir is not None:
        capture = _open(str(capture_dir))
        for line in _summary_lines(capture) + _no_model_request_lines(capture):
            click.echo(line, err=True)


@main.command(name="import")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("-o", "--out", type=click.Path(file_okay=False, path_type=Path),
              help="Capture directory (default: captures/<capture-id>).")
@click.option("--model-host", "model_hosts", multiple=True, metavar="HOST[=PROVIDER]",
              help="Treat HOST as a model API (repeatable).")
@click.option("--record-all", is_flag=True, help="Keep headers and bodies of every flow.")
@click.option("--redact", "redact", multiple=True, type=click.Choice(["pii"]),
              help="Also pseudonymise personal data before writing. Credentials are always redacted.")
@click.option("--cwd", help="The recorded run's working directory (kept in the private manifest, as record does).")
@click.option("--user", help="The recorded machine's user name.")
@click.option("--host", help="The recorded machine's host name.")
@click.option("--os", "os_name", help="The recorded machine's OS, as the client would print it.")
@click.option("--date", help="The date the run was recorded (YYYY-MM-DD).")
@click.option("--prompt", help="The task the run was given, as typed (the reader finds it in the requests: that "
                              "span is the task, and the text a client wrapped around it is read apart).")
@click.option("--shell-prompt", help="The shell prompt as the client showed it (e.g. 'alice@box:~/shop$').")
def import_(files, out, model_hosts, record_all, redact, cwd, user, host, os_name, date, prompt,
            shell_prompt) -> None:
    """Import mitmproxy flow files and HAR into a capture (redacted like live traffic).

    --cwd, --user, --host, --os, --date and --shell-prompt give the facts of the machine the traffic
    came from, and --prompt the task it was given (record reads that from the command line); like
    record's own, they are kept in the capture's private manifest and never published."""
    import shutil

    from ctxtap.capture.environment import RunEnvironment
    from ctxtap.cli.failures import capture_dir_problem
    from ctxtap.ingest.importer import ImportError_, import_files
    from ctxtap.proxy_addons.recorder import parse_model_hosts

    out = out or default_captures_dir() / new_capture_id()
    _fail_if(capture_dir_problem(out))
    existed = out.exists()
    try:
        from ctxtap.cli.progress import steps

        with steps() as shown:
            facts = RunEnvironment(cwd=cwd, user=user, host=host, os=os_name, date=date, prompt=prompt,
                                   shell_prompt=shell_prompt)
            manifest = import_files(files, out, redaction_key(), parse_model_hosts(model_hosts), record_all, redact,
                                    track=shown.track, require_entries=True, environment=facts)
    except BaseException as exc:
        if not existed:  # a half-made capture would only block the next attempt
            shutil.rmtree(out, ignore_errors=True)
        if isinstance(exc, ImportError_):
            raise click.ClickException(f"{exc}. Nothing was imported.") from exc
        raise
    for skip in manifest.options.get("skipped_entries", []):
        where = ", ".join(map(str, skip["entries"])) + (", ..." if skip["count"] > len(skip["entries"]) else "")
        click.echo(f"ctxtap: skipped {skip['count']} of {skip['of']} entries of {skip['file']}: {skip['reason']} "
                   f"(entries {where})", err=True)
    for line in _summary_lines(_open(str(out))):
        click.echo(line)


@main.command()
@click.argument("capture", type=click.Path(exists=True, file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text.")
def info(capture, as_json) -> None:
    """Describe a capture (recovering it first if its recorder was interrupted)."""
    cap = _open(capture)
    counts = cap.manifest.counts
    if cap.live:
        from ctxtap.capture.classify import program_of
        from ctxtap.capture.finalize import summary_counts

        counts = summary_counts(cap.flows().to_pylist(), cap.ws_messages().to_pylist(),
                                program_of(cap.manifest.command))
    data = {
        "capture_id": cap.manifest.capture_id,
        "path": str(cap.directory),
        "status": "live" if cap.live else cap.manifest.status,
        "recovered": cap.manifest.recovered,
        "ctxtap_version": cap.manifest.ctxtap_version,
        "redaction_ruleset": cap.manifest.redaction_ruleset,
        "started_at": cap.manifest.started_at,
        "ended_at": cap.manifest.ended_at,
        "command": cap.manifest.command,
        **{k: counts.get(k, 0 if k in ("flows", "model_requests", "integrity_mismatches") else {})
           for k in ("flows", "model_requests", "by_client", "by_api", "by_transport", "redactions",
                     "integrity_mismatches")},
        "ws_messages": counts.get("ws_messages", 0),
        "request_bytes": counts.get("request_bytes", 0),
        "response_bytes": counts.get("response_bytes", 0),
        "incomplete_flows": counts.get("incomplete_flows", 0),
        "error_flows": counts.get("error_flows", 0),
        "spool_bytes_dropped": cap.manifest.spool_bytes_dropped,
        "tightened_permissions": cap.tightened,
        "missing_files": cap.missing_files(),
    }
    missing = "" if not data["missing_files"] else (
        f"{', '.join(data['missing_files'])} {'is' if len(data['missing_files']) == 1 else 'are'} missing from "
        f"{cap.directory}: the capture is incomplete and other commands cannot read it. Restore the files from "
        f"a copy, or record or import the traffic again.")
    if as_json:
        click.echo(json.dumps(data, indent=2, sort_keys=True))
        if missing:
            raise click.ClickException(missing)
        return
    if cap.manifest.recovered:
        click.echo("recovered: this capture was interrupted and has been finalized from its spool")
    if cap.tightened:
        click.echo(f"tightened permissions of {cap.tightened} files and folders to private (0600/0700): "
                   "the capture was readable by other users")
    for line in _summary_lines(cap, counts):
        click.echo(line)
    if missing:
        raise click.ClickException(missing)


@main.command()
@click.argument("capture", type=click.Path(exists=True, file_okay=False))
@click.option("--har", "har_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the capture as HAR 1.2 to this file.")
@click.option("--otlp", "otlp_url", metavar="URL",
              help="Send the capture as OpenTelemetry GenAI spans over OTLP/HTTP (e.g. http://127.0.0.1:4318).")
@click.option("--otlp-json", "otlp_json", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the spans as OTLP/JSON to this file (one export request per line).")
@click.option("--otlp-header", "otlp_headers", multiple=True, metavar="NAME=VALUE",
              help="HTTP header for --otlp (e.g. an authorization token); repeatable.")
@click.option("--content", is_flag=True,
              help="Include message content in the spans (redacted again before it leaves).")
def export(capture, har_path, otlp_url, otlp_json, otlp_headers, content) -> None:
    """Export a capture: HAR 1.2 (bodies as stored, decoded and redacted) and/or OpenTelemetry GenAI spans."""
    from ctxtap.cli.failures import writable_dir_problem

    if not (har_path or otlp_url or otlp_json):
        raise click.UsageError("say what to export: --har FILE, --otlp URL and/or --otlp-json FILE")
    if content and not (otlp_url or otlp_json):
        raise click.UsageError("--content applies to --otlp and --otlp-json")
    if har_path:
        from ctxtap.capture.har import export_har

        _fail_if(writable_dir_problem(har_path.parent, "--har"))
        n = export_har(_open(capture), har_path)
        click.echo(f"wrote {n} entries to {har_path}")
    if otlp_url or otlp_json:
        from ctxtap.cli.otel import export_otel

        if otlp_json:
            _fail_if(writable_dir_problem(otlp_json.parent, "--otlp-json"))
        _open(capture)
        paths = _ensure([capture], quiet=True)
        for line in export_otel(paths[0], otlp_url, otlp_json, otlp_headers, content):
            click.echo(line)


# --- analysis ------------------------------------------------------------------------------


def _analysis_options(f):
    f = click.option("--prices", type=click.Path(exists=True, dir_okay=False, path_type=Path),
                     help="Price table (TOML) whose entries override the dated defaults.")(f)
    f = click.option("--cache-rules", type=click.Path(exists=True, dir_okay=False, path_type=Path),
                     help="Prompt-cache rules (TOML) overriding the defaults per provider.")(f)
    return f


def _check_tables(prices, cache_rules) -> None:
    """A --prices or --cache-rules file that cannot be used fails before any analysis starts."""
    from ctxtap.analysis.cache.cachecheck import CacheRules
    from ctxtap.analysis.cache.prices import PriceTable

    for option, path, loader, example in (("--prices", prices, PriceTable, "analysis/cache/prices.toml"),
                                          ("--cache-rules", cache_rules, CacheRules, "analysis/cache/cache_rules.toml")):
        if path is None:
            continue
        try:
            loader.load(path)
        except (ValueError, KeyError, TypeError) as exc:  # tomllib.TOMLDecodeError is a ValueError
            what = "not valid TOML" if type(exc).__name__ == "TOMLDecodeError" else "has an entry that cannot be used"
            raise click.ClickException(f"{path} ({option}) is {what}: {exc!s}. See {example} for the format, "
                                       f"or leave {option} out to use the built-in table.") from None


def _ensure(captures, prices=None, cache_rules=None, force=False, quiet=False, across=False) -> list[Path]:
    """Analyse captures whose dataset is missing or stale, with a progress bar on long ones. `across`:
    each capture is read with the others as runs of the same client (constancy across runs)."""
    from ctxtap.analysis.build import AnalyzeOptions, ensure_analysis
    from ctxtap.capture.store import CaptureError
    from ctxtap.cli.progress import steps

    _check_tables(prices, cache_rules)
    dirs = []
    with steps(quiet) as shown:
        for capture in captures:
            path = Path(capture)
            peers = tuple(Path(c) for c in captures if Path(c) != path) if across else None
            options = AnalyzeOptions(prices=prices, cache_rules=cache_rules, force=force, peers=peers)

            def progress(items, total, label=f"analysing {path.name}: parsing requests"):
                return shown.track(items, total, label)

            def phase(what, name=path.name):
                shown.phase(f"analysing {name}: {what}")

            try:
                ensure_analysis(path, options, progress=progress, phase=phase)
            except CaptureError as exc:
                raise click.ClickException(str(exc)) from exc
            dirs.append(path)
    return dirs


@main.command()
@click.argument("captures", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False))
@_analysis_options
@click.option("--force", is_flag=True, help="Rebuild even if the dataset is up to date.")
@click.option("--across-runs", is_flag=True,
              help="The captures are runs of one client: read each with the others, so text every run sends is "
                   "the client's and text that varies is the run's. Remembered for later commands; give one "
                   "capture with this flag to read it alone again.")
def analyze(captures, prices, cache_rules, force, across_runs) -> None:
    """Derive the analysis dataset (Parquet, next to each capture) and its DuckDB views.

    Idempotent: a capture is re-analysed only when it, the ctxtap version, the
    price table or the cache rules changed. Other commands call this on demand.
    """
    import json as _json

    from ctxtap.analysis.db import dataset_dir

    for path in _ensure(captures, prices, cache_rules, force, across=across_runs):
        meta = _json.loads((dataset_dir(path) / "_meta.json").read_text())
        st = meta.get("stats", {})
        across = (f", read across {st['across_runs']} sessions of {len(meta.get('peers', [])) + 1} captures"
                  if st.get("across_runs") else "")
        click.echo(f"{path}: {st.get('requests', 0)} model requests, {st.get('blocks_total', 0)} blocks "
                   f"({st.get('distinct_contents', 0)} distinct){across}, analysis in {dataset_dir(path)}")


class _SqlCommand(click.Command):
    """`sql --help` lists the views the SQL files create, read when the help is shown: a list written
    by hand fell behind (16 of 27)."""

    def format_help_text(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        from ctxtap.analysis.views import view_names

        template = self.help or ""
        self.help = template.replace("{views}", ", ".join(view_names()))
        try:
            super().format_help_text(ctx, formatter)
        finally:
            self.help = template


@main.command(cls=_SqlCommand, context_settings={"ignore_unknown_options": False})
@click.argument("args", nargs=-1, required=True)
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True)
@click.option("--max-rows", default=200, show_default=True, help="Rows to print in table format (0: all).")
@click.option("--allow-external", is_flag=True,
              help="Let the query read files and write files outside the captures (COPY, EXPORT, ATTACH, "
                   "read_csv, CREATE/INSERT); a path inside a capture or the captures store is still refused.")
@_store_filters
def sql(args, fmt, max_rows, allow_external, store_clients, store_since, store_captures, endpoint_url) -> None:
    """Run SQL over captures: ctxtap sql CAPTURE... "SELECT ...".

    Views and table macros: {views} (columns: docs/analysis-schema.md).
    Captures are analysed first if needed. The table format shows Unix times
    (ts_start, started_at, ...) as UTC ISO times and rounds floats; csv and json
    keep the values as stored. Queries read the captures' datasets
    only and run reading statements only (SELECT, WITH, VALUES, DESCRIBE, SHOW,
    SUMMARIZE, EXPLAIN), unless --allow-external.

    CAPTURE may be a store URL (s3://BUCKET/PREFIX, see ctxtap push): the query reads the store in
    place, only the partitions --client, --since and --capture select and the columns it uses.
    """
    if len(args) < 2:
        raise click.UsageError('give at least one capture and a query: ctxtap sql CAPTURE "SELECT ..."')
    *captures, query = args
    con = _store_sql(captures, query, allow_external, store_clients, store_since, store_captures, endpoint_url)
    for c in captures if con is None else ():
        if not Path(c).is_dir():
            raise click.UsageError(f"{c} is not a capture directory")
    from ctxtap.analysis.db import connect
    from ctxtap.analysis.sqlguard import SqlRefused, check_statements

    if con is None:
        try:  # before anything runs: DuckDB's allowed directories let a query write where it may read
            check_statements(query, allow_external, protected=[*map(Path, captures), default_captures_dir()])
        except SqlRefused as exc:
            raise click.ClickException(str(exc)) from None
        con = connect(_ensure(captures, quiet=True), allow_external=allow_external)
    if allow_external:  # no SET or table function may move temp, log or profile files into a capture
        con.execute("SET lock_configuration = true")
    try:
        rel = con.sql(query)
    except Exception as exc:  # duckdb errors carry the useful message; add where to look next
        views = ", ".join(r[0] for r in con.sql(
            "SELECT view_name FROM duckdb_views() WHERE NOT internal AND view_name NOT LIKE 't\\_%' ESCAPE '\\' "
            "ORDER BY view_name").fetchall())
        raise click.ClickException(
            f"the query failed: {exc}\nViews: {views}. Columns: docs/analysis-schema.md, or "
            f'ctxtap sql CAPTURE "DESCRIBE requests".') from exc
    if rel is None:
        return
    _print_relation(rel, fmt, max_rows)


def _store_url(captures) -> str | None:
    """The one store URL among a command's captures, or None; a store mixed with local captures is refused."""
    urls = [c for c in captures if str(c).startswith("s3://")]
    if not urls:
        return None
    if len(captures) != 1:
        raise click.UsageError("give one store URL, or capture directories, not both")
    return urls[0]


def _store_sql(captures, query, allow_external, clients, since, capture_ids, endpoint_url):
    """The connection of `sql` over a store URL (None for local captures): the guard first, as for captures."""
    url = _store_url(captures)
    if url is None:
        return None
    from ctxtap.analysis.sqlguard import SqlRefused, check_statements
    from ctxtap.cli.store import store_connection

    try:
        check_statements(query, allow_external, protected=[default_captures_dir()])
    except SqlRefused as exc:
        raise click.ClickException(str(exc)) from None
    return store_connection(url, clients, since, capture_ids, endpoint_url, allow_external=allow_external)


_TIME_COLUMN = re.compile(r"ts|ts_\w+|\w+_ts|\w+_at")
_EPOCH_RANGE = (1e8, 1e10)  # 1973 to 2286: a number in a time column outside it is no Unix time


def _cell(column: str, value: object) -> str:
    """A value as the table format shows it: a Unix time as a UTC ISO time, a float without its
    binary noise (0.30000000000000004 is 0.3, a cost keeps four significant digits)."""
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if _TIME_COLUMN.fullmatch(column) and _EPOCH_RANGE[0] < value < _EPOCH_RANGE[1]:
        from datetime import UTC, datetime

        return datetime.fromtimestamp(value, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    if isinstance(value, int) or value != value or value in (float("inf"), float("-inf")):
        return str(value)
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.1f}" if 1e3 <= abs(value) < 1e15 else f"{value:.4g}"


def _print_relation(rel, fmt: str, max_rows: int) -> None:
    import csv
    import json as _json

    columns = rel.columns
    rows = rel.fetchall()
    if fmt == "json":
        click.echo(_json.dumps([dict(zip(columns, r, strict=True)) for r in rows], indent=2, default=str))
    elif fmt == "csv":
        writer = csv.writer(sys.stdout)
        writer.writerow(columns)
        writer.writerows(rows)
    else:
        shown = rows if not max_rows else rows[:max_rows]
        cells = [[_cell(c, v).replace("\n", " ") for c, v in zip(columns, r, strict=True)] for r in shown]
        widths = [min(60, max([len(c)] + [len(r[i]) for r in cells])) for i, c in enumerate(columns)]
        click.echo("  ".join(c.ljust(w)[:w] for c, w in zip(columns, widths, strict=True)))
        click.echo("  ".join("-" * w for w in widths))
        for r in cells:
            click.echo("  ".join(v.ljust(w)[:w] for v, w in zip(r, widths, strict=True)))
        if len(rows) > len(shown):
            click.echo(f"... {len(rows) - len(shown)} more rows (use --max-rows 0 or --format csv)")


@main.command()
@click.argument("captures", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="Print the same figures as one JSON object instead of text.")
@_store_filters
def stats(captures, as_json, store_clients, store_since, store_captures, endpoint_url) -> None:
    """A terminal summary: sessions, tokens, cache, cost, errors and the tool loop.

    CAPTURES may be one store URL (s3://BUCKET/PREFIX), read in place with --client, --since, --capture."""
    from ctxtap.analysis.db import connect
    from ctxtap.cli.summary import data_lines, summary_data

    url = _store_url(captures)
    if url is not None:
        from ctxtap.cli.store import store_connection

        con = store_connection(url, store_clients, store_since, store_captures, endpoint_url)
    else:
        for c in captures:
            if not Path(c).is_dir():
                raise click.BadParameter(f"{c} is not a capture directory", param_hint="CAPTURES")
        con = connect(_ensure(captures, quiet=True))
    data = summary_data(con)
    if as_json:
        click.echo(json.dumps(data, indent=2, default=str))
        return
    for line in data_lines(data):
        click.echo(line)



if __name__ == "__main__":
    main()
