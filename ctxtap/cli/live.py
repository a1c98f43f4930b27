"""`ctxtap serve`: the live view over finished captures (and any still being recorded)."""

from __future__ import annotations

import shutil
import tempfile
import threading
from pathlib import Path

import click

from ctxtap.cli.store import filter_options

FOLLOWER_JOIN_S = 10  # how long a stopping server waits for a live capture's poll to end


def ui_options(f):
    f = click.option("--open", "open_browser", is_flag=True, help="Open the view in the default browser.")(f)
    f = click.option("--ui-port", type=click.IntRange(0, 65535), default=0, show_default="a free port",
                     help="Port of the local web UI (127.0.0.1 only).")(f)
    return f


def port_in_use(port: int) -> str:
    return (f"the UI port {port} is in use (another ctxtap serve or --live view?). Pick another with "
            "--ui-port, or leave it out for a free one.")


def announce(url: str, open_browser: bool, echo=click.echo) -> None:
    echo(f"ctxtap: live view at {url}", err=True)
    echo("ctxtap: the link carries the view's access token: do not share it", err=True)
    if open_browser:
        import webbrowser

        webbrowser.open(url)


@click.command()
@click.argument("captures", nargs=-1, required=True)
@ui_options
@filter_options
def serve(captures, ui_port, open_browser, store_clients=(), store_since=None, store_captures=(),
          endpoint_url=None) -> None:
    """Browse captures in a local web UI: sessions, timelines, requests, diffs.

    Captures are analysed first if needed. A capture still being recorded is
    followed live (read-only). Ctrl-C stops the server. CAPTURES may be one store URL
    (s3://BUCKET/PREFIX) with --client, --since, --capture: the selected captures are read in place.
    """
    from ctxtap.analysis.live import LiveAnalysis
    from ctxtap.capture.store import Capture, CaptureError
    from ctxtap.cli.main import _ensure
    from ctxtap.reports.live.server import LiveUI, PortInUse
    from ctxtap.reports.live.sources import CaptureSource, DatasetError, LiveSource

    sources = []
    work: list[Path] = []
    followers: list[threading.Thread] = []
    stop = threading.Event()
    if any(c.startswith("s3://") for c in captures):
        if len(captures) != 1:
            raise click.UsageError("give one store URL, or capture directories, not both")
        from ctxtap.cli.store import store_reader
        from ctxtap.reports.live.sources import StoreSource

        reader = store_reader(captures[0], store_clients, store_since, store_captures, endpoint_url)
        for capture_id in reader.capture_ids:
            src = StoreSource(reader, capture_id)
            try:
                src.check()
            except DatasetError as exc:
                raise click.ClickException(f"capture {capture_id} in {reader.store} cannot be read ({exc})") from None
            sources.append(src)
        captures = ()
    else:
        for c in captures:
            if not Path(c).is_dir():
                raise click.BadParameter(f"{c} is not a capture directory", param_hint="CAPTURES")
        captures = tuple(Path(c) for c in captures)
    try:
        for path in dict.fromkeys(p.resolve() for p in captures):
            try:
                live = Capture.open(path).live
            except CaptureError as exc:
                raise click.ClickException(str(exc)) from None
            if live:
                click.echo(f"ctxtap: {path} is still being recorded (its writer holds the lock): "
                           "following it live, read-only", err=True)
                work.append(Path(tempfile.mkdtemp(prefix="ctxtap-live-")))
                analysis = LiveAnalysis(path, work[-1])
                followers.append(threading.Thread(target=analysis.follow, args=(stop,), daemon=True))
                followers[-1].start()
                sources.append(LiveSource(analysis))
                continue
            _ensure([path], quiet=False)
            src = CaptureSource(path)
            try:
                src.check()
            except DatasetError as exc:
                raise click.ClickException(
                    f"the analysis dataset of {path} cannot be read ({exc}). Rebuild it: "
                    f"ctxtap analyze --force {path}") from None
            sources.append(src)
        ui = LiveUI(sources)
        try:
            ui.bind(ui_port)
        except PortInUse:
            raise click.ClickException(port_in_use(ui_port)) from None
        announce(ui.url, open_browser)
        click.echo("ctxtap: Ctrl-C stops it", err=True)
        try:
            ui.serve_forever()  # until Ctrl-C or SIGTERM
        except KeyboardInterrupt:  # Ctrl-C before the loop took the signal
            pass
    finally:
        stop.set()
        for thread in followers:  # a poll under way ends before its work folder goes
            thread.join(FOLLOWER_JOIN_S)
        for w in work:
            shutil.rmtree(w, ignore_errors=True)
