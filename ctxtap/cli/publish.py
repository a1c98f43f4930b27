"""The `ctxtap publish` command (registered by `ctxtap.cli.main._register_plugins`)."""

from __future__ import annotations

from pathlib import Path

import click


@click.command(name="publish")
@click.argument("capture", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--client", "clients", multiple=True, metavar="NAME",
              help="Only this client (repeatable; default: every client in the capture).")
@click.option("-o", "--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Output directory (default: CAPTURE-published next to the capture). Must not exist "
                   "or be empty unless --force.")
@click.option("--elide-tool-results", is_flag=True,
              help="Replace tool-result bodies with their size (bytes, lines).")
@click.option("--structure-only", is_flag=True,
              help="Keep only the structure of the tool loop: call names and argument keys with value "
                   "types and sizes, result sizes. Implies --elide-tool-results.")
@click.option("--schemas", is_flag=True, help="Include the tools' JSON schemas (default: names and descriptions).")
@click.option("--force", is_flag=True, help="Replace an existing output directory (only after a clean scan).")
def publish(capture: Path, clients: tuple[str, ...], out_dir: Path | None, elide_tool_results: bool,
            structure_only: bool, schemas: bool, force: bool) -> None:
    """Write shareable attachments of CAPTURE: one per client, Markdown and JSON.

    \b
    Each attachment keeps the observed block order and wording of the client's
    requests. Every thread (main loop, subagents) is shown in order: its first
    request in full (system/developer blocks, the tool catalogue with names and
    descriptions, environment blocks, the task, the tool loop), each later
    request with only the blocks new at their position (the JSON lists a later
    request's changed blocks and the positions it carried over). Side requests
    (titles, warmups, probes, compaction) are listed separately, in full.
    Request headers and other body fields: in full for a thread's first request,
    as changes after. Opaque blobs are reduced to their size.

    \b
    Before anything is written:
      - credentials are redacted again with the current rules;
      - personal data is pseudonymised with numbered placeholders that agree
        across all files of the run: e-mail addresses, local user names (also
        bare, once the capture shows they are the user's), full names, host
        names, home and temp paths, session/device/request/installation ids
        and UUIDs, IP and MAC addresses, phone numbers, git remote owners;
      - each attachment gets a redaction manifest (counts by class and rule,
        never values);
      - every output file is scanned by our credential and personal-data rules
        and by detect-secrets. Any finding aborts: nothing is written, and the
        error names file and line.

    \b
    Example:
      ctxtap publish captures/20261129-101500-ab12cd --client codex -o codex-attachment
    """
    from ctxtap.cli.failures import writable_dir_problem
    from ctxtap.reports.publish.publisher import PublishError, PublishOptions, default_out_dir
    from ctxtap.reports.publish.publisher import publish as run

    problem = writable_dir_problem((out_dir or default_out_dir(capture)).parent, "-o")
    if problem:
        raise click.ClickException(problem)

    options = PublishOptions(
        clients=tuple(clients), force=force, elide_tool_results=elide_tool_results or structure_only,
        structure_only=structure_only, schemas=schemas,
    )
    from ctxtap.cli.progress import steps

    try:
        with steps() as shown:
            result = run(capture, out_dir, options, phase=shown.phase)
    except PublishError as exc:
        raise click.ClickException(str(exc)) from exc
    for path in result.files:
        click.echo(str(path))
    total = sum(result.by_class.values())
    click.echo(f"published {len(result.clients)} client(s) to {result.out_dir} "
               f"({total} personal values pseudonymised; final scan clean)", err=True)
