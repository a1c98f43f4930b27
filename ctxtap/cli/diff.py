"""`ctxtap diff A B`: two runs side by side (registered by ctxtap.cli.main)."""

from __future__ import annotations

import json
from pathlib import Path

import click


@click.command(name="diff")
@click.argument("a")
@click.argument("b")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (the whole diff) instead of text.")
@click.option("-o", "--out", "--html", "html_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write a self-contained HTML page of the diff to this file.")
@click.option("--ignore-ids/--strict-ids", "ignore_ids", default=True, show_default=True,
              help="--ignore-ids (the default): a block that differs only in UUIDs and hex ids/hashes "
                   "(per-request billing hashes, session ids) counts as the same (volatile), so the first "
                   "divergence is a real change. --strict-ids counts it as changed.")
def diff(a: str, b: str, as_json: bool, html_path: Path | None, ignore_ids: bool) -> None:
    """Compare two runs: context layout, tokens, cache, growth, tool loop, turns, latency, cost.

    A and B are each a capture directory, CAPTURE#SESSION (a session id or a
    unique start of one, with or without its client prefix), CAPTURE#SESSION#N
    (request #N of the session, numbered from 1 over all its requests as the
    report, the live view and replay number them), CAPTURE#N (request #N where
    the capture holds one session) or CAPTURE@REQUEST (a request id or a unique
    start of one; a start several ids share is refused, listing them). The
    first main request of each run (or the request named) is diffed block by
    block (same, changed with its text diff, moved, only in A, only in B) and
    the first divergence is named; every other number is B - A with its sign.
    Captures are analysed first if needed.

    \b
    Examples:
      ctxtap diff captures/run-a captures/run-b
      ctxtap diff 'captures/run-a#5f1c' 'captures/run-a#5f1c#4' -o diff.html
      ctxtap diff 'captures/run-a#13' 'captures/run-a@7e0b9'
    """
    from ctxtap.analysis.compare.rundiff import (
        TargetError,
        mask_ids,
        parse_target,
        resolve,
        run_diff,
    )
    from ctxtap.analysis.db import connect
    from ctxtap.cli.diff_text import text_lines
    from ctxtap.cli.failures import writable_dir_problem
    from ctxtap.cli.main import _ensure

    try:
        targets = [parse_target(a), parse_target(b)]
    except TargetError as exc:
        raise click.ClickException(str(exc)) from None
    if html_path is not None:
        problem = writable_dir_problem(html_path.parent, "-o")
        if problem:
            raise click.ClickException(problem)
    captures = list(dict.fromkeys(str(Path(t.capture).resolve()) for t in targets))
    con = connect(_ensure(captures, quiet=True))
    try:
        runs = [resolve(con, t) for t in targets]
        result = run_diff(con, runs[0], runs[1], normalise=mask_ids if ignore_ids else None)
    except (TargetError, LookupError) as exc:
        raise click.ClickException(str(exc).strip("'\"")) from None
    if html_path is not None:
        from ctxtap.reports.html.diffpage import write_diff_page

        write_diff_page(result, html_path)
    if as_json:
        click.echo(json.dumps(result.model_dump(mode="json"), indent=2))
    else:
        for line in text_lines(result):
            click.echo(line)
        if html_path is not None:
            click.echo(f"\nwrote {html_path}")
