"""`ctxtap push`, `pull`, `rm` and `ls`: the shared store on S3-compatible object storage
(`ctxtap.store`); also the store options `sql`, `stats`, `report` and `serve` take with a store URL.
Registered by ctxtap.cli.main (loaded on use)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime
from pathlib import Path

import click

URL_HELP = ("s3://BUCKET/PREFIX. Credentials and region from the AWS environment and profiles "
            "(AWS_ACCESS_KEY_ID..., AWS_PROFILE, ~/.aws); endpoint from --endpoint-url, AWS_ENDPOINT_URL_S3, "
            "AWS_ENDPOINT_URL or the profile's endpoint_url.")


def _day(value: str | None, option: str) -> date | None:
    if value is None:
        return None
    try:
        return datetime.strptime(value, "%Y-%m-%d").date()
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a date YYYY-MM-DD", param_hint=option) from None


def endpoint_option(f: Callable) -> Callable:
    return click.option("--endpoint-url", metavar="URL",
                        help="S3-compatible endpoint (else AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the profile's).")(f)


def filter_options(f: Callable) -> Callable:
    """--client, --since, --capture, --endpoint-url: which captures of a store URL a command reads."""
    f = click.option("--capture", "store_captures", multiple=True, metavar="ID",
                     help="With a store URL: only this capture (id or its start; repeatable).")(f)
    f = click.option("--since", "store_since", metavar="YYYY-MM-DD",
                     help="With a store URL: only captures recorded on or after this day (UTC).")(f)
    f = click.option("--client", "store_clients", multiple=True, metavar="NAME",
                     help="With a store URL: only captures of this client (repeatable).")(f)
    return endpoint_option(f)


def store_connection(url: str, clients, since, captures, endpoint_url, allow_external: bool = False):
    """The sandboxed DuckDB connection over a store URL's selected captures (`ctxtap.store.query`)."""
    from ctxtap.store.location import StoreError
    from ctxtap.store.query import connect_store

    try:
        con, _ = connect_store(url, clients=clients, since=_day(since, "--since"), captures=captures,
                               endpoint_url=endpoint_url, allow_external=allow_external)
    except StoreError as exc:
        raise click.ClickException(str(exc)) from None
    return con


def store_reader(url: str, clients, since, captures, endpoint_url):
    """The store's selected captures, read in place (`ctxtap.store.query.StoreReader`) by `report` and `serve`."""
    from ctxtap.store.location import StoreError
    from ctxtap.store.query import StoreReader

    try:
        return StoreReader(url, clients=clients, since=_day(since, "--since"), captures=captures,
                           endpoint_url=endpoint_url)
    except (StoreError, OSError) as exc:
        raise click.ClickException(str(exc)) from None


@click.command()
@click.argument("args", nargs=-1, required=True)
@click.option("--pseudonymise", is_flag=True,
              help="Apply publish's personal-data pass first (for stores shared beyond you): the analysis "
                   "dataset and manifest are pseudonymised, the raw capture files stay on this machine.")
@endpoint_option
def push(args, pseudonymise, endpoint_url) -> None:
    """Upload finished captures to a store: ctxtap push CAPTURE... s3://BUCKET/PREFIX.

    Each capture's Parquet and analysis dataset go under
    captures/clients=.../day=.../capture_id=... (analysed first if needed). Only a capture whose
    manifest says it was finalized and redacted leaves. Idempotent and resumable: objects already
    there with the same size and digest are skipped, so an interrupted push completes when run
    again.
    """
    from ctxtap.store import StoreError, is_store_url, push_capture

    if len(args) < 2 or not is_store_url(args[-1]):
        raise click.UsageError("give captures and a store URL: ctxtap push CAPTURE... s3://BUCKET/PREFIX")
    *captures, url = args
    failed = 0
    for capture in captures:
        if not Path(capture).is_dir():
            raise click.UsageError(f"{capture} is not a capture directory")
        try:
            r = push_capture(Path(capture), url, pseudonymise=pseudonymise, endpoint_url=endpoint_url)
        except StoreError as exc:
            click.echo(f"ctxtap: {capture}: refused or failed: {exc}", err=True)
            failed += 1
            continue
        note = f", left on this machine: {', '.join(r.left_out)}" if r.left_out else ""
        click.echo(f"{r.capture_id} -> {r.url}: {r.uploaded} objects uploaded ({r.bytes_uploaded:,} bytes), "
                   f"{r.skipped} already there{note}")
    if failed:
        raise click.ClickException(f"{failed} of {len(captures)} captures not pushed")


@click.command()
@click.argument("url")
@click.option("--capture", "capture_ids", multiple=True, required=True, metavar="ID",
              help="Capture to bring back (id or its unique start; repeatable).")
@click.option("-o", "--out", type=click.Path(file_okay=False, path_type=Path),
              help="Folder to pull into (default: the captures folder); each capture is a folder in it.")
@endpoint_option
def pull(url, capture_ids, out, endpoint_url) -> None:
    """Bring captures back from a store (private to you: 0700 folders, 0600 files)."""
    from ctxtap.capture.paths import default_captures_dir
    from ctxtap.store import StoreError
    from ctxtap.store.pull import pull_capture

    out = out or default_captures_dir()
    for capture_id in capture_ids:
        try:
            p = pull_capture(url, capture_id, out, endpoint_url=endpoint_url)
        except StoreError as exc:
            raise click.ClickException(str(exc)) from None
        note = " (pseudonymised: the analysis dataset only)" if p.pseudonymised else ""
        click.echo(f"{p.capture_id} -> {p.directory}: {p.files} files, {p.bytes:,} bytes{note}")


@click.command()
@click.argument("url")
@click.option("--capture", "capture_id", metavar="ID", help="The capture to remove (id or its unique start).")
@click.option("--before", metavar="YYYY-MM-DD", help="Remove every capture recorded before this day (UTC).")
@endpoint_option
def rm(url, capture_id, before, endpoint_url) -> None:
    """Remove captures from a store: --capture ID or --before DATE."""
    from ctxtap.store import StoreError
    from ctxtap.store.pull import remove_captures

    if (capture_id is None) == (before is None):
        raise click.UsageError("give either --capture ID or --before DATE")
    try:
        removed = remove_captures(url, capture_id=capture_id, before=_day(before, "--before"),
                                  endpoint_url=endpoint_url)
    except StoreError as exc:
        raise click.ClickException(str(exc)) from None
    for e in removed:
        click.echo(f"removed {e.capture_id} " + (f"({e.client}, {e.day})" if e.day else "(objects a push left unindexed)"))
    click.echo(f"{len(removed)} capture(s) removed")


@click.command(name="ls")
@click.argument("url")
@click.option("--client", "clients", multiple=True, metavar="NAME", help="Only captures of this client (repeatable).")
@click.option("--since", metavar="YYYY-MM-DD", help="Only captures recorded on or after this day (UTC).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per capture.")
@endpoint_option
def ls(url, clients, since, as_json, endpoint_url) -> None:
    """List a store's captures from its partition layout (no object is read)."""
    import json

    from ctxtap.store import StoreError
    from ctxtap.store.layout import list_captures
    from ctxtap.store.location import StoreURL, s3_filesystem

    try:
        entries = list_captures(s3_filesystem(endpoint_url), StoreURL.parse(url), clients=clients,
                                since=_day(since, "--since"))
    except (StoreError, OSError) as exc:
        raise click.ClickException(str(exc)) from None
    for e in entries:
        if as_json:
            click.echo(json.dumps({"capture_id": e.capture_id, "clients": e.clients(), "day": e.day}))
        else:
            click.echo(f"{e.day}  {e.capture_id}  {e.client}")
    if not as_json:
        click.echo(f"{len(entries)} capture(s)", err=True)
