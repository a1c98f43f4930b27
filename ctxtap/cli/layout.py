"""`ctxtap layout CAPTURE --explain`: what each segment of a session's first main request was read
as, and on what evidence (a client's rule, a pattern, the wire's structure, or nothing).

Registered by ctxtap.cli.main.
"""

from __future__ import annotations

import json

import click

from ctxtap.analysis.rules.explain import ExplainedRequest


def explained_lines(requests: list[ExplainedRequest]) -> list[str]:
    lines: list[str] = []
    for req in requests:
        lines.append(f"session {req.session_id}: client {req.client} ({req.client_evidence or 'unattributed'}), "
                     f"first main request #{req.request_number}")
        for s in req.segments:
            where = s.path + (f"#{s.segment_index}" if s.segment_index else "")
            label = f" [{s.label}]" if s.label else ""
            lines.append(f"  {where:<28} {s.source:<20} {s.evidence:<12} {s.rule_id:<36} {s.tokens:>6} tok  "
                         f"{s.excerpt}{label}")
    return lines


@click.command()
@click.argument("capture", type=click.Path(exists=True, file_okay=False))
@click.option("--explain", is_flag=True, required=True,
              help="Print every segment of the first main request with its label, evidence kind, rule id and an "
                   "excerpt of its (redacted) text.")
@click.option("--session", help="Only this session (its id or a unique start of one).")
@click.option("--json", "as_json", is_flag=True, help="Print the same as JSON.")
def layout(capture: str, explain: bool, session: str | None, as_json: bool) -> None:
    """Explain a capture's layout: each segment's label and the evidence it rests on."""
    from ctxtap.analysis.db import connect
    from ctxtap.analysis.rules.explain import explain as explained
    from ctxtap.analysis.threads.requestref import RefError
    from ctxtap.cli.main import _ensure, _open

    capture_id = _open(capture).manifest.capture_id
    con = connect(_ensure([capture], quiet=True))
    try:
        found = explained(con, capture_id, session)
    except RefError as exc:
        raise click.ClickException(str(exc)) from exc
    if as_json:
        click.echo(json.dumps([r.model_dump() for r in found], indent=2))
        return
    if not found:
        click.echo("ctxtap: no model request in this capture")
    for line in explained_lines(found):
        click.echo(line)
