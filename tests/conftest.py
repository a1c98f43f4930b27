"""Shared fixtures: an isolated ctxtap config dir (CA, redaction key), corpus paths, report captures."""

from __future__ import annotations

import fcntl
import os
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import settings

# Property tests are reproducible by default (the same examples every run, so CI never
# flakes on a newly drawn input); HYPOTHESIS_PROFILE=explore draws fresh ones each run.
settings.register_profile("ctxtap", derandomize=True, deadline=None)
settings.register_profile("explore", derandomize=False, deadline=None, max_examples=1000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ctxtap"))

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
REAL_CLIENTS = SHARED / "real-clients"
ARTIFACTS = ROOT / "test-artifacts"


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects
def pytest_collection_modifyitems(config, items) -> None:
    """Mark the tests that touch mitmproxy (`-m mitmproxy`: the mitmproxy-12 tier's selection) and the
    integration tests: processes, browsers, real CLIs, the session's big captures (`make test-fast`
    leaves them out)."""
    from tests.mitmproxy_touch import HEAVY_FIXTURES, process_modules, touching_modules

    touching, processes = touching_modules(ROOT), process_modules(ROOT)
    for item in items:
        module = getattr(item, "module", None)
        name = module.__name__ if module is not None else ""
        if name in touching:
            item.add_marker(pytest.mark.mitmproxy)
        if (name in processes or item.get_closest_marker("browser") or item.get_closest_marker("realcli")
                or HEAVY_FIXTURES & set(getattr(item, "fixturenames", ()))):
            item.add_marker(pytest.mark.integration)
    _long_files_first(items)


# Seconds each of the longest files took on one worker (a `make test` run with per-test start and end
# times, summed per file; measure again when the suite changes). xdist hands files to its workers in
# collection order (the Makefile passes --no-loadscope-reorder): the longest start first, so no long
# file starts last and becomes the run's tail (longest-processing-time-first). The rest follow, the
# files with most tests first, as xdist would order them.
FILE_SECONDS = {
    "tests/team/test_ray_experiment.py": 177,
    "tests/reports/test_report_huge.py": 130,
    "tests/cli/test_readme.py": 80,
    "tests/replay/test_replay.py": 64,
    "tests/experiment/test_experiment.py": 61,
    "tests/reports/test_report_browser.py": 54,
    "tests/ingest/test_realcli_fixtures.py": 51,
    "tests/reports/test_publish_real_clients.py": 41,
    "tests/reports/test_publish.py": 41,
    "tests/replay/test_replay_send.py": 39,
    "tests/cli/test_cli_failures.py": 38,
    "tests/reports/test_live_browser.py": 38,
    "tests/reports/test_turns.py": 36,
    "tests/store/test_store.py": 35,
    "tests/reports/test_live_server.py": 32,
    "tests/cli/test_first_hour.py": 31,
    "tests/proxy_addons/test_proxy_recording.py": 29,
    "tests/capture/test_effects.py": 29,
    "tests/proxy_addons/test_proxy_redaction.py": 28,
    "tests/cli/test_diff_cli.py": 28,
    "tests/analysis/test_evidence_tables.py": 28,
    "tests/redaction/test_redaction.py": 28,
    "tests/ingest/test_import_export.py": 26,
    "tests/redaction/test_redaction_ordinary.py": 26,
    "tests/analysis/test_parse_memo.py": 26,
}


def _long_files_first(items: list) -> None:
    files = Counter(item.nodeid.split("::", 1)[0] for item in items)
    items.sort(key=lambda item: (-FILE_SECONDS.get(f := item.nodeid.split("::", 1)[0], 0), -files[f]))


@pytest.fixture(scope="session")
def ctxtap_config(tmp_path_factory) -> Path:
    """A private config dir for the whole run, so tests never touch the user's CA or key."""
    path = tmp_path_factory.mktemp("ctxtap-config")
    os.environ["CTXTAP_CONFIG_DIR"] = str(path)
    return path


@pytest.fixture
def real_clients() -> Path:
    if not (REAL_CLIENTS / "README.md").exists():
        pytest.skip("real-client corpus ../shared/real-clients is not present in this checkout")
    return REAL_CLIENTS


# Analysed captures the report tests (with and without a browser) render; built once per run.


@pytest.fixture(scope="session")
def demo_capture(tmp_path_factory, ctxtap_config) -> Path:
    from tests.synthetic import scripted_capture

    return scripted_capture(tmp_path_factory.getbasetemp() / "report-demo", ctxtap_config)


@pytest.fixture(scope="session")
def synth30(tmp_path_factory, ctxtap_config) -> Path:
    from tests.synthetic import synthetic_capture

    return synthetic_capture(tmp_path_factory.getbasetemp() / "report-s30", 30)


@pytest.fixture(scope="session")
def synth1000(tmp_path_factory, ctxtap_config) -> Path:
    from tests.synthetic import synthetic_capture

    return synthetic_capture(tmp_path_factory.getbasetemp() / "report-s1000", 1000)


HUGE_REQUESTS = 10_000
HUGE_COMPACT_EVERY = 20  # resends less history than the benchmark's session: ~1 min to build, not ~2


@pytest.fixture(scope="session")
def synth10k(tmp_path_factory, ctxtap_config) -> Path:
    """A 10,000-request session (about a minute to generate, import and analyse on two cores), built once
    per run: xdist workers share it (two files on two workers built it twice)."""
    from tests.synthetic import synthetic_capture

    with run_wide(tmp_path_factory, "report-s10000") as directory:
        return synthetic_capture(directory, HUGE_REQUESTS, compact_every=HUGE_COMPACT_EVERY)


@contextmanager
def run_wide(tmp_path_factory, name: str) -> Iterator[Path]:
    """A folder every xdist worker of this run shares, held under an exclusive lock while the caller builds
    in it (or finds it built): the first worker builds, the others wait and reuse. What is built there is
    only read afterwards, by tests for which it does not matter which worker built it (its redaction key
    names the placeholders; none of them checks one)."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # the run's folder, shared
    with (root / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield root / name


@pytest.fixture(scope="session")
def huge_report(synth10k, tmp_path_factory):
    """The 10,000-request session's report at the default bound, rendered once for both test tiers."""
    from ctxtap.reports.html.render import render_report

    return render_report([synth10k], tmp_path_factory.mktemp("huge-report") / "report.html")


@pytest.fixture(scope="session")
def corpus_captures(tmp_path_factory, ctxtap_config) -> list[Path]:
    from tests import corpus
    from tests.synthetic import corpus_captures_in

    if not corpus.available():
        pytest.skip(corpus.SKIP_REASON)
    return corpus_captures_in(tmp_path_factory.getbasetemp() / "report-corpus")
