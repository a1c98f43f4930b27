"""The report's events timeline (Evidence section, `_events.j2`): drawn from the `events` view."""

from __future__ import annotations

import gzip
import json
import re

import pytest

from ctxtap.capture.paths import redaction_key
from ctxtap.ingest.importer import import_files
from tests.proxyharness import run_ctxtap
from tests.realcli_fixtures import FIXTURES


def _section(html: str) -> str:
    start = html.index("Evidence: events timeline")
    return html[start:html.index("</details>", start)]


def test_timeline_of_a_run_without_telemetry_says_its_tool_times_are_inferred(tmp_path, ctxtap_config) -> None:
    har = tmp_path / "grok.har"
    har.write_bytes(gzip.decompress((FIXTURES / "grok" / "basic.har.gz").read_bytes()))
    out = tmp_path / "cap"
    import_files([har], out, redaction_key())
    run_ctxtap(["report", str(out), "-o", str(tmp_path / "r.html")], ctxtap_config)
    section = _section((tmp_path / "r.html").read_text())
    n_tools = len(re.findall(r"<title>[^<]*\(inferred: call-&gt;result gap\)", section))
    assert n_tools >= 1 and "client-telemetry" not in section.split("<table")[0].split("</p>")[0]
    assert "model calls</text>" in section and "tools</text>" in section
    assert "approximate: the response-header time" in section


def test_timeline_of_a_claude_run_shows_telemetry_timed_tools_and_decisions(real_clients, tmp_path,
                                                                            ctxtap_config) -> None:
    out = tmp_path / "cap"
    run_ctxtap(["import", str(real_clients / "basic" / "claude" / "flows.mitm"), "--out", str(out)], ctxtap_config)
    run_ctxtap(["report", str(out), "-o", str(tmp_path / "r.html")], ctxtap_config)
    section = _section((tmp_path / "r.html").read_text())
    bars = re.findall(r"<title>(Bash toolu_\w+: [^<]+)</title>", section)
    assert len(bars) == 2 and all("client-telemetry: tengu_tool_use_success" in b and "accept" in b for b in bars)
    assert "Tools (2 timed, 2 by client telemetry)" in section
    assert section.count("permission: accept") == 2
    events = json.loads(run_ctxtap(["sql", str(out), "SELECT count(*) AS n FROM events", "--format", "json"],
                                   ctxtap_config).stdout)
    assert f"{events[0]['n']} events of the run's minimum trace" in section


@pytest.mark.browser
def test_events_timeline_in_the_browser(browser, real_clients, tmp_path, ctxtap_config) -> None:
    from tests.reports.browser_support import open_report, screenshot

    out = tmp_path / "cap"
    run_ctxtap(["import", str(real_clients / "basic" / "claude" / "flows.mitm"), "--out", str(out)], ctxtap_config)
    html = tmp_path / "r.html"
    run_ctxtap(["report", str(out), "-o", str(html)], ctxtap_config)
    with open_report(browser, html) as opened:
        page = opened.page
        chart = page.locator(".events-timeline svg").first
        chart.scroll_into_view_if_needed()
        assert chart.is_visible() and chart.bounding_box()["width"] > 500
        tools = page.locator(".events-timeline svg g.hover rect title").all_text_contents()
        assert sum("client-telemetry" in t for t in tools) == 2
        page.locator("table.tool-runs").first.evaluate("t => t.closest('details').open = true")
        assert page.locator("table.tool-runs").first.is_visible()
        screenshot(page, "report-events-timeline.png")
        opened.assert_clean()
