"""The real-CLI tier's committed recordings (tests/fixtures/realcli), imported offline.

Each fixture is a real CLI's basic tool loop as `ctxtap record` stored it (HAR,
redacted), without and with project instruction files in the repository. Importing
it must give back what the recording gave (flows, model requests, client, APIs,
which instruction files reached the model), and the analysis must read the whole
loop: every request parses as the expected client, every tool call comes back as a
result, the final text arrives, the title side request is there. So tests and
benchmarks cover all the tier's CLIs without npm, PyPI or a network namespace.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from ctxtap.analysis.parsing.parse import parse_exchanges
from ctxtap.capture.store import Capture
from tests.proxyharness import run_ctxtap
from tests.realcli import checks
from tests.realcli.clis import CLIS
from tests.realcli.record_fixtures import VARIANTS, har_path, instructions_seen, meta_path
from tests.realcli.runs import FINAL_TEXT, SCRIPTED_CALLS

# Credential shapes of the tier's dummy keys: a committed fixture must hold none of them unredacted.
KEY_SHAPES = re.compile(rb"sk-ant-api03-[\w-]{20,}|sk-proj-[\w-]{20,}|xai-[A-Za-z0-9]{20,}|AIza[\w-]{30,}"
                        rb"|\bsk-[A-Za-z0-9]{40,}|ABSK[A-Za-z0-9+/]{40,}")
FOREIGN_HOME = re.compile(rb"/home/(?!alice\b|user/project\b)[\w.-]+|pytest-of-")  # /home/user/project: docs' example


FIXTURES = [(cli, variant) for cli in sorted(CLIS) for variant in VARIANTS]


def _load(cli: str, variant: str) -> tuple[dict, bytes]:
    return json.loads(meta_path(cli, variant).read_text()), gzip.decompress(har_path(cli, variant).read_bytes())


@pytest.mark.parametrize(("cli", "variant"), FIXTURES)
def test_fixture_imports_and_reads_as_recorded(cli: str, variant: str, tmp_path: Path, ctxtap_config: Path) -> None:
    meta, har = _load(cli, variant)
    spec = CLIS[cli]
    assert (meta["package"], meta["client"], meta["api"]) == (spec.package, spec.imported_client, spec.api), \
        f"{cli}: the fixture was recorded with another pin or expectation; regenerate it " \
        f"(python -m tests.realcli.record_fixtures {cli})"
    (tmp_path / "capture.har").write_bytes(har)
    run_ctxtap(["import", str(tmp_path / "capture.har"), "--out", str(tmp_path / "cap")], ctxtap_config)
    capture = Capture.open(tmp_path / "cap")
    counts = {**capture.manifest.counts, "ws_messages": capture.manifest.counts.get("ws_messages", 0)}
    assert {key: counts.get(key) for key in meta["expect"]} == meta["expect"]
    assert counts["by_client"] == {spec.imported_client: counts["model_requests"]}  # no command line here
    assert counts["by_api"].get(spec.api, 0) >= 2

    calls = list(parse_exchanges(capture.exchanges()))
    assert len(calls) == counts["model_requests"]
    problems = checks.loop_problems(calls, spec.imported_client, FINAL_TEXT, SCRIPTED_CALLS, spec.title_model,
                                   spec.shell_output, spec.finish)
    assert not problems, "\n".join(problems)
    assert {c.identity.client_version for c in calls} == {meta["client_version"]}
    assert instructions_seen(tmp_path / "cap") == meta["instructions_seen"]
    if not VARIANTS[variant]:
        assert meta["instructions_seen"] == []


@pytest.mark.parametrize(("cli", "variant"), FIXTURES)
def test_fixture_holds_no_key_and_no_real_path(cli: str, variant: str) -> None:
    meta, har = _load(cli, variant)
    assert not KEY_SHAPES.findall(har)
    assert b"[REDACTED:" in har  # the dummy key was sent, and redacted before it was stored
    assert not FOREIGN_HOME.findall(har)
    assert b"/home/alice/work/demo-repo" in har and meta["home"] == "/home/alice"
    assert len(gzip.compress(har)) < 300_000
    assert meta["variant"] == variant and bool(meta["repo_instruction_files"]) == VARIANTS[variant]
