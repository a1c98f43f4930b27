"""The markers derived from the code (tests/mitmproxy_touch.py): the mitmproxy-12 tier takes tests that
run the proxy or read flow files and leaves pure unit tests out; integration tests are those that
start processes or browsers."""

from __future__ import annotations

from pathlib import Path

from tests.mitmproxy_touch import touching_modules

ROOT = Path(__file__).resolve().parent.parent


def test_tests_that_run_the_proxy_or_read_flows_are_selected() -> None:
    touching = touching_modules(ROOT)
    for module in ("tests.proxy_addons.test_proxy_recording",  # start_proxy
                   "tests.ingest.test_import_export",  # plain mitmdump, flow files
                   "tests.replay.test_replay",  # `ctxtap replay` records through the proxy
                   "tests.cli.test_readme",  # `make demo`
                   "tests.analysis.test_parse_corpus"):  # real clients' flow files, through tests.corpus
        assert module in touching, module


def test_unit_tests_away_from_mitmproxy_are_left_out() -> None:
    touching = touching_modules(ROOT)
    for module in ("tests.redaction.test_redaction_openers", "tests.analysis.test_segments", "tests.analysis.test_sql_sandbox"):
        assert module not in touching, module


def test_integration_modules_are_those_that_start_processes_or_browsers() -> None:
    from tests.mitmproxy_touch import process_modules

    processes = process_modules(ROOT)
    for module in ("tests.proxy_addons.test_proxy_recording", "tests.reports.test_report_browser", "tests.cli.test_readme",
                   "tests.realcli.test_real_clis"):
        assert module in processes, module
    for module in ("tests.analysis.test_segments", "tests.redaction.test_redaction_openers", "tests.wire.test_wire_families"):
        assert module not in processes, module
