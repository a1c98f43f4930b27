"""The real-CLI tier's committed recordings (tests/fixtures/realcli), imported offline.

Each fixture is a real CLI's basic tool loop as `ctxtap record` stored it (HAR,
redacted). Importing it must give back what the recording gave (flows, model
requests, client, APIs), and the analysis must read the whole loop: every request
parses as the expected client, every tool call comes back as a result, the final
text arrives, the title side request is there. So tests and benchmarks cover all
the tier's CLIs without npm, PyPI or a network namespace.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from analysis.parse import parse_exchanges
from ctxtap.capture.store import Capture
from tests.proxyharness import run_ctxtap
from tests.realcli import checks
from tests.realcli.clis import CLIS
from tests.realcli.record_fixtures import FIXTURES, HAR_NAME, META_NAME
from tests.realcli.runs import FINAL_TEXT, SCRIPTED_CALLS

# Credential shapes of the tier's dummy keys: a committed fixture must hold none of them unredacted.
KEY_SHAPES = re.compile(rb"sk-ant-api03-[\w-]{20,}|sk-proj-[\w-]{20,}|xai-[A-Za-z0-9]{20,}|AIza[\w-]{30,}"
                        rb"|\bsk-[A-Za-z0-9]{40,}")
FOREIGN_HOME = re.compile(rb"/home/(?!alice\b)[\w.-]+|pytest-of-")


def _load(cli: str) -> tuple[dict, bytes]:
    folder = FIXTURES / cli
    return json.loads((folder / META_NAME).read_text()), gzip.decompress((folder / HAR_NAME).read_bytes())


@pytest.mark.parametrize("cli", sorted(CLIS))
def test_fixture_imports_and_reads_as_recorded(cli: str, tmp_path: Path, ctxtap_config: Path) -> None:
    meta, har = _load(cli)
    spec = CLIS[cli]
    assert (meta["package"], meta["client"], meta["api"]) == (spec.package, spec.client, spec.api), \
        f"{cli}: the fixture was recorded with another pin or expectation; regenerate it " \
        f"(python -m tests.realcli.record_fixtures {cli})"
    (tmp_path / "capture.har").write_bytes(har)
    run_ctxtap(["import", str(tmp_path / "capture.har"), "--out", str(tmp_path / "cap")], ctxtap_config)
    info = json.loads(run_ctxtap(["info", str(tmp_path / "cap"), "--json"], ctxtap_config).stdout)
    assert {key: info[key] for key in meta["expect"]} == meta["expect"]
    assert info["by_client"] == {spec.client: info["model_requests"]}
    assert info["by_api"].get(spec.api, 0) >= 2

    calls = list(parse_exchanges(Capture.open(tmp_path / "cap").exchanges()))
    assert len(calls) == info["model_requests"]
    problems = checks.loop_problems(calls, spec.client, FINAL_TEXT, SCRIPTED_CALLS, spec.title_model)
    assert not problems, "\n".join(problems)
    assert {c.identity.client_version for c in calls} == {meta["client_version"]}


@pytest.mark.parametrize("cli", sorted(CLIS))
def test_fixture_holds_no_key_and_no_real_path(cli: str) -> None:
    meta, har = _load(cli)
    assert not KEY_SHAPES.findall(har)
    assert b"[REDACTED:" in har  # the dummy key was sent, and redacted before it was stored
    assert not FOREIGN_HOME.findall(har)
    assert b"/home/alice/work/demo-repo" in har and meta["home"] == "/home/alice"
    assert len(gzip.compress(har)) < 300_000
