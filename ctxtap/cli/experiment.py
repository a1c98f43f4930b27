"""`ctxtap experiment run SPEC` and `ctxtap experiment report DIR` (registered by ctxtap.cli.main)."""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path

import click

from ctxtap.cli.invocation import invoked_as


@click.group(name="experiment")
def experiment() -> None:
    """Repeat a run under variants of one variable and compare the distributions.

    A TOML spec names the command, its variants and repeats (see
    examples/experiments/); `run` records every run through the proxy into its
    own capture, `report` gives per variant passes, pass@k, p50/p95/max and the
    layout diff between variants.
    """


@experiment.command(name="run")
@click.argument("spec_path", metavar="SPEC", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("-o", "--out", type=click.Path(file_okay=False, path_type=Path),
              help="Experiment directory (default: experiments/<spec name>-<time>).")
@click.option("--parallel", type=click.IntRange(1, 64), help="Runs at once (default: the spec's `parallel`, 1).")
@click.option("--resume", is_flag=True, help="Continue the experiment in --out: keep its recorded runs, run the rest.")
@click.option("--diagnostics", is_flag=True,
              help="Ask providers why their cache missed where ctxtap is the sender (the spec's `diagnostics`).")
@click.option("--ray", "ray_address", metavar="auto|ADDRESS",
              help="Run every run as a task on a Ray cluster (`auto`: the one this machine is part of; or the "
                   "head's HOST:PORT). Needs the team extra; Ray's ports have no token: keep them on loopback or "
                   "a private network.")
@click.option("--push", "push_url", metavar="URL",
              help="With --ray: each node also pushes its run's capture to this store (s3://bucket/prefix); "
                   "default: the spec's `push`.")
def run(spec_path: Path, out: Path | None, parallel: int | None, resume: bool, diagnostics: bool,
        ray_address: str | None, push_url: str | None) -> None:
    """Run every variant x repeat of SPEC through the recording proxy (interleaved A B A B ...).

    Each run: a fresh copy of the fixture as working directory, the command with
    its placeholders filled, the check, its own capture (analysed). A malformed
    spec is refused before anything runs, naming the line. Ctrl-C finishes the
    running runs and stops; `--resume` completes the directory later.
    """
    from ctxtap.cli.failures import loopback_problem, writable_dir_problem
    from ctxtap.experiment.runner import ExperimentError, run_experiment
    from ctxtap.experiment.spec import SpecError, load_spec

    try:
        spec = load_spec(spec_path)
    except SpecError as exc:
        raise click.ClickException(f"the spec is refused, nothing ran: {exc}") from None
    spec.diagnostics = spec.diagnostics or diagnostics
    out = out or Path("experiments") / f"{spec.name or spec_path.stem}-{time.strftime('%Y%m%d-%H%M%S')}"
    problem = loopback_problem() or writable_dir_problem(out.parent, "--out")
    if problem:
        raise click.ClickException(problem)
    push_url = push_url or spec.push
    if push_url and not ray_address:
        raise click.ClickException("--push (or the spec's push) needs --ray; locally, push the runs' captures "
                                   "with `ctxtap push`")
    try:
        if ray_address:
            from ctxtap.experiment.cluster import run_on_ray

            if parallel:
                click.echo("--parallel is ignored with --ray: the cluster's CPUs decide how many runs go at once",
                           err=True)
            manifest = run_on_ray(spec, out, address=ray_address, resume=resume, push=push_url, echo=click.echo)
        else:
            manifest = run_experiment(spec, out, parallel=parallel, resume=resume, echo=click.echo)
    except ExperimentError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"\nexperiment: {out} ({manifest.status})")
    again = invoked_as()
    click.echo(f"report:     {again} experiment report {shlex.quote(str(out))}")
    if manifest.status != "complete":
        click.echo(f"resume:     {again} experiment run {shlex.join([str(spec_path), '--out', str(out)])} --resume",
                   err=True)
        sys.exit(130)


@experiment.command(name="report")
@click.argument("directory", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text.")
@click.option("-o", "--out", "--html", "html_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write a self-contained HTML page (distributions per variant, layout diff).")
@click.option("-k", "ks", type=click.IntRange(1), multiple=True,
              help="k for pass@k and pass^k (repeatable; default: the spec's pass_k). k > n is left out, said so.")
@click.option("--ignore-ids/--strict-ids", "ignore_ids", default=True, show_default=True,
              help="In the layout diff, --ignore-ids (the default) counts blocks that differ only in UUIDs and hex "
                   "ids as the same (volatile: every run has its own), as `ctxtap diff` does; --strict-ids counts "
                   "them as changed.")
@click.option("--local", "local_only", is_flag=True,
              help="Read the runs' captures that came back into DIRECTORY even when they were pushed to a store "
                   "(`run --ray --push`); by default pushed runs are read in place from their store.")
@click.option("--endpoint-url", metavar="URL", help="S3-compatible endpoint of that store (else the AWS environment).")
def report(directory: Path, as_json: bool, html_path: Path | None, ks: tuple[int, ...], ignore_ids: bool,
           local_only: bool, endpoint_url: str | None) -> None:
    """Per variant: runs, passes, pass@k / pass^k, not-executed runs apart, p50/p95/max of turns,
    model and tool calls, tokens, cost, TTFT and end-to-end time; the layout diff between the first
    two variants; bootstrap intervals of the median differences. Reads partial experiments too.
    When every run's capture was pushed to one store (`run --ray --push`), reads them there."""
    from ctxtap.analysis.compare.experiment import experiment_report, report_json
    from ctxtap.analysis.compare.rundiff import mask_ids
    from ctxtap.cli.experiment_text import report_lines
    from ctxtap.cli.failures import writable_dir_problem
    from ctxtap.store.location import StoreError

    if html_path is not None:
        problem = writable_dir_problem(html_path.parent, "-o")
        if problem:
            raise click.ClickException(problem)
    try:
        rep = experiment_report(directory, k=ks or None, normalise=mask_ids if ignore_ids else None,
                                open_store=None if local_only else _store_opener(endpoint_url))
    except FileNotFoundError as exc:
        raise click.ClickException(str(exc)) from None
    except StoreError as exc:
        raise click.ClickException(f"{exc} (--local reads the copies in {directory})") from None
    if html_path is not None:
        from ctxtap.reports.html.experimentpage import write_experiment_page

        write_experiment_page(rep, html_path)
    if as_json:
        click.echo(report_json(rep))
        return
    for line in report_lines(rep):
        click.echo(line)
    if html_path is not None:
        click.echo(f"wrote {html_path}")


def _store_opener(endpoint_url: str | None):
    """How `experiment report` opens pushed runs' captures: a store connection over just those captures."""

    def open_store(url: str, capture_ids: list[str]):
        from ctxtap.store.query import StoreReader

        return StoreReader(url, captures=capture_ids, endpoint_url=endpoint_url).connect()

    return open_store
