"""`ctxtap report`: captures -> one self-contained HTML file (registered by ctxtap.cli.main)."""

from __future__ import annotations

from pathlib import Path

import click

from ctxtap.cli.store import filter_options
from ctxtap.reports.html.output import COMPARISON_DEFAULT, default_output


@click.command(name="report")
@click.argument("captures", nargs=-1, required=True)
@click.option("-o", "--out", "--output", "output", type=click.Path(dir_okay=False, path_type=Path),
              help="HTML file to write (default: CAPTURE/report.html for one capture, "
                   f"./{COMPARISON_DEFAULT} for several).")
@click.option("--title", help="Title of the report (default: the clients it covers).")
@click.option("--max-size", "max_mb", type=click.FloatRange(min=0.5), default=5.0, show_default=True,
              help="Size bound in MB: distinct block texts are embedded once and truncated (head and tail, "
                   "exact size noted) so the file stays within it; a session too long to show request by request "
                   "is aggregated (merged ribbon rows, binned charts, first and last table rows, texts left out), "
                   "and the report's notes say what and give the ctxtap sql queries for the rest.")
@filter_options
def report(captures: tuple[str, ...], output: Path | None, title: str | None, max_mb: float,
           store_clients=(), store_since=None, store_captures=(), endpoint_url=None) -> None:
    """Render captures into one self-contained HTML report.

    One file, no network requests (inline CSS, SVG charts and a little inline
    JavaScript), opens from file://. It shows an overview (clients, sessions,
    requests by purpose, errors by layer, tokens and cost), and per session the
    context layout of every request, token growth with the fitted model, the
    prompt cache with the cause of each miss, the tool-loop timeline, side
    requests and errors, and a block viewer with every block's text. Several
    captures, or one capture with several clients, add a comparison across
    clients (layout, tokens by source, cache behaviour).

    Captures are analysed first if their dataset is missing or stale. Example:

        ctxtap report captures/20260727-101500-ab12cd

    CAPTURES may be one store URL (s3://BUCKET/PREFIX) with --client, --since, --capture: the
    selected captures' datasets are read in place (each capture named by its id).
    """
    if any(c.startswith("s3://") for c in captures):
        if len(captures) != 1:
            raise click.UsageError("give one store URL, or capture directories, not both")
        from ctxtap.cli.store import store_reader
        from ctxtap.reports.html.context import Connections

        reader = store_reader(captures[0], store_clients, store_since, store_captures, endpoint_url)
        connections = Connections(lambda keys: reader.connect([k.name for k in keys]))
        try:  # the datasets as pushed: nothing to analyse
            _report([Path(cid) for cid in reader.capture_ids], output or Path(COMPARISON_DEFAULT), title, max_mb,
                    connections=connections)
        finally:
            connections.close()
        return
    for c in captures:
        if not Path(c).is_dir():
            raise click.BadParameter(f"{c} is not a capture directory", param_hint="CAPTURES")
    _report([Path(c) for c in captures], output, title, max_mb)


def _report(paths: list[Path], output: Path | None, title: str | None, max_mb: float, analyse: bool = True,
            connections=None) -> None:  # noqa: ANN001 - a reports.html.context.Connections, imported on use
    from ctxtap.capture.store import CaptureError
    from ctxtap.cli.failures import writable_dir_problem
    from ctxtap.reports.html.render import render_report
    from ctxtap.store.location import StoreError

    out = output or default_output(paths)
    problem = writable_dir_problem(out.parent, "-o")
    if problem:
        raise click.ClickException(problem)
    from ctxtap.cli.main import _ensure
    from ctxtap.cli.progress import steps

    if analyse and connections is None:
        _ensure(paths)  # analysis first, with its own progress
    try:
        with steps() as shown:
            shown.phase(f"rendering the report of {len(paths)} capture(s)")
            result = render_report(paths, out, title=title, max_bytes=int(max_mb * 1_000_000), analyse=analyse,
                                   connections=connections)
    except CaptureError as exc:
        raise click.ClickException(str(exc)) from exc
    except StoreError as exc:
        raise click.ClickException(str(exc)) from None
    note = f", {result.truncated_texts} long texts truncated" if result.truncated_texts else ""
    if result.aggregated:
        note += (f", aggregated to fit: {result.left_out_texts} texts left out, see the notes at the top"
                 if result.left_out_texts else ", aggregated to fit: see the notes at the top")
    click.echo(f"wrote {result.path} ({result.bytes / 1e6:.2f} MB: {result.sessions} sessions, "
               f"{result.requests} requests, {result.texts} distinct block texts{note}) in {result.seconds:.1f} s")

