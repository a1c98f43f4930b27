"""`ctxtap clients`: the client profiles in force, and a draft profile from a capture.

Registered by ctxtap.cli.main.
"""

from __future__ import annotations

from pathlib import Path

import click


@click.group()
def clients() -> None:
    """Client profiles: what ctxtap knows of each client, as data a user can add to.

    Built-in profiles ship with ctxtap; your own go in the folder `ctxtap clients list` names
    (one TOML file per client) and replace a built-in one of the same name."""


@clients.command(name="list")
def list_() -> None:
    """Every client ctxtap has rules for, where they come from, and your profiles folder."""
    from ctxtap.analysis.clients import profiles, registry

    registry.reload_user_profiles()
    mine = registry.user_profile_names()
    builtin_profiles = {p.stem for p in profiles.builtin_files()}
    for client in registry.clients():
        if client.name == "generic":
            continue
        origin = (f"your profile {mine[client.name]}" if client.name in mine
                  else "built-in profile" if client.name in builtin_profiles else "built-in module")
        click.echo(f"{client.name:<14} ids {', '.join(sorted(client.ids)):<28} {len(client.rules):>3} rules  {origin}")
    click.echo(f"your profiles: {profiles.user_dir()}")


@clients.command()
@click.argument("capture", type=click.Path(exists=True, file_okay=False))
@click.option("--name", help="The client's name in the profile (default: what the wire calls it).")
@click.option("-o", "--out", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the profile here (e.g. into your profiles folder) instead of printing it.")
def suggest(capture: str, name: str | None, out: Path | None) -> None:
    """Draft a profile for the client in CAPTURE: its system prompt's start, the blocks already
    recognised, its session id's field and its side requests' instructions. Check it, then save it
    in your profiles folder (`ctxtap clients list` names it) and analyse again with --force."""
    from ctxtap.analysis.clients.suggest import draft, to_toml
    from ctxtap.analysis.parsing.parse import parse_exchanges
    from ctxtap.analysis.threads import runfacts
    from ctxtap.cli.main import _open

    cap = _open(capture)
    with runfacts.using(cap.manifest.environment, cap.manifest.command):
        try:
            profile = draft(parse_exchanges(cap.exchanges(views=True)), name)
        except ValueError as exc:
            raise click.ClickException(str(exc)) from exc
    text = to_toml(profile, f"capture {cap.manifest.capture_id}")
    if out is None:
        click.echo(text, nl=False)
        return
    if out.exists():
        raise click.ClickException(f"{out} exists; choose another file or remove it first")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    click.echo(f"ctxtap: wrote {out} ({len(profile.rule)} rules); `ctxtap analyze --force {capture}` reads the "
               f"capture with it once it is in your profiles folder", err=True)
