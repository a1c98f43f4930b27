"""Every client's hand-checked reference layout is read right — with its own rules and without them —
and the project instructions each CLI sends are found, by segment."""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import bench_generalisation as bench  # noqa: E402

from ctxtap.analysis.parsing.parse import parse_exchanges  # noqa: E402
from tests.realcli_fixtures import FIXTURES, load_fixture  # noqa: E402

REFERENCES = sorted(bench.REFERENCES.glob("*.toml"))
# below target today, said here rather than hidden: scored by bench_generalisation.py (the unseen pair
# apart); strict, so the day it passes the mark must go
SHORT: dict[str, str] = {}


def _param(path: Path):  # noqa: ANN202 - a pytest param
    reason = SHORT.get(path.stem)
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    return pytest.param(path, id=path.stem, marks=marks)


@pytest.mark.parametrize("path", [_param(p) for p in REFERENCES])
def test_reference_layout_with_and_without_the_clients_rules(path: Path) -> None:
    ref = tomllib.loads(path.read_text())
    name = ref.get("name", path.stem)
    full = bench.run(name, ref, ())
    if full.error:
        pytest.skip(full.error)
    off = bench.run(name, ref, (ref["client"],))
    assert full.share >= 0.95, f"{name}: {full.share:.1%} of tokens keep their source with every rule"
    assert off.share >= 0.90, f"{name}: {off.share:.1%} of tokens keep their source without {ref['client']}'s rules"
    assert off.line_share >= 0.90 and off.wrong_share <= 0.05, (
        f"{name}: {off.line_share:.1%} of lines agree and {off.wrong_share:.1%} are wrong without its rules")
    assert off.side_found == off.side_expected and off.side_extra == 0
    assert off.threads_right == off.threads_expected


SECOND_CORPUS = [p for p in REFERENCES if tomllib.loads(p.read_text())["recording"].startswith("corpus2:")]


@pytest.mark.parametrize("path", SECOND_CORPUS, ids=[p.stem for p in SECOND_CORPUS])
def test_reference_layout_across_runs_without_the_command_line(path: Path, monkeypatch) -> None:
    """Read as a bare `ctxtap import` would (no command line, so no known task) but with the client's
    other runs named (`analyze --across-runs`): the template, the canned turns and the task come from
    what every run sends and what varies between them."""
    monkeypatch.setattr(bench, "ARGV", False)
    monkeypatch.setattr(bench, "ACROSS", True)
    ref = tomllib.loads(path.read_text())
    name = ref.get("name", path.stem)
    off = bench.run(name, ref, (ref["client"],))
    if off.error:
        pytest.skip(off.error)
    assert off.line_share >= 0.90 and off.wrong_share <= 0.05, (
        f"{name}: {off.line_share:.1%} of lines agree and {off.wrong_share:.1%} are wrong across runs, no command line")


@pytest.mark.parametrize("path", SECOND_CORPUS, ids=[p.stem for p in SECOND_CORPUS])
def test_every_second_corpus_client_is_named(path: Path) -> None:
    """Each of the six CLIs nobody had recorded is named — by its user agent, the name it gives itself, or
    (behind an SDK that names nobody) the program its recorded command ran — never `unknown`."""
    from ctxtap.analysis.threads import runfacts
    from ctxtap.capture.classify import client_evidence

    ref = tomllib.loads(path.read_text())
    exchanges = bench.load_recording(ref["recording"])
    if exchanges is None:
        pytest.skip("../shared/real-clients-2 is not here")
    with runfacts.using({}, bench._command(ref["recording"])):
        calls = list(parse_exchanges(exchanges, disabled_clients=(ref["client"],)))
    ident = calls[ref["request"]].identity
    assert not ident.client.startswith("unknown") and client_evidence(ident.client_rule) != "unattributed", (
        ident.client, ident.client_rule)


INSTRUCTED = [p.parent.name for p in sorted(FIXTURES.glob("*/instructions.json"))
              if json.loads(p.read_text())["instructions_seen"]]


@pytest.mark.parametrize("cli", INSTRUCTED)
def test_project_instructions_are_found_by_segment(cli: str) -> None:
    """The instruction file each CLI sent (tests/realcli/workspace.py) lies inside a project-instructions
    segment, with the CLI's own rules and without them."""
    from tests.realcli.workspace import INSTRUCTION_FILES

    meta = json.loads((FIXTURES / cli / "instructions.json").read_text())
    for disabled in ((), (meta["client"],)):
        calls = list(parse_exchanges(load_fixture(FIXTURES / cli, "instructions"), disabled_clients=disabled))
        main = next(c for c in calls if c.purpose.purpose == "main")
        found = b""
        for block in main.request.blocks:
            data = block.text.encode()
            for part in block.segments or [block]:
                if part.source == "project_instructions":
                    found += data[getattr(part, "start", 0):getattr(part, "end", len(data))]
        for name in meta["instructions_seen"]:
            heading = INSTRUCTION_FILES[name].splitlines()[0].encode()
            assert heading in found, f"{cli}: {name} is not inside a project-instructions segment (rules off: {disabled})"


@pytest.mark.parametrize("cli", sorted(p.name for p in FIXTURES.iterdir() if (p / "basic.har.gz").exists()))
def test_the_tiers_own_recordings_match_the_references(cli: str) -> None:
    from ctxtap.analysis.threads import runfacts
    from tests.layout_check import layout_problems

    meta = json.loads((FIXTURES / cli / "basic.json").read_text())
    with runfacts.using({}, meta["argv"]):  # the command line the tier recorded it with, as record keeps it
        problems = layout_problems(cli, list(parse_exchanges(load_fixture(FIXTURES / cli))))
    assert not problems, "\n".join(problems)
