"""The report's Evidence section: exposures in words, network touched with its caveat, cut results and
retries, rendered from real analysed captures and read in headless Chromium."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxtap.reports.html.evidence import headlines
from ctxtap.reports.html.render import render_report
from tests.analysis.evidence_support import AWS_KEY, evidence_har
from tests.proxyharness import run_ctxtap
from tests.reports.browser_support import open_report, screenshot


@pytest.fixture(scope="module")
def report(tmp_path_factory, ctxtap_config) -> Path:
    tmp = tmp_path_factory.mktemp("evidence-report")
    cap = tmp / "cap"
    run_ctxtap(["import", str(evidence_har(tmp / "s.har", retry_wait_s=0.5)), "--out", str(cap), "--redact", "pii"],
               ctxtap_config)
    run_ctxtap(["analyze", str(cap)], ctxtap_config)
    out = tmp / "report.html"
    render_report([cap], out)
    return out


def test_headlines_group_by_source_and_first_request():
    rows = [{"category": "credential", "first_source": "tool result of cat config/settings.env",
             "hosts": "api.anthropic.com", "first_seq_in_session": 3, "requests_carrying": 3} for _ in range(3)]
    rows.append({"category": "personal", "first_source": "user text", "hosts": "api.openai.com",
                 "first_seq_in_session": 0, "requests_carrying": 1})
    assert headlines(rows) == [
        "3 credentials from a tool result of cat config/settings.env were sent to api.anthropic.com from request 4 "
        "on (3 requests carried them).",
        "1 personal datum from user text was sent to api.openai.com from request 1 on (1 request carried it).",
    ]


def test_evidence_section_in_the_html(report):
    html = report.read_text()
    section = html[html.index('id="evidence"'):]
    section = section[:section.index("</section>")]
    assert "2 credentials from a tool result of cat .env were sent to api.anthropic.com from request 2 on" in section
    assert "1 credential from user text was sent to api.anthropic.com from request 1 on" in section
    assert "[REDACTED:github-token:" in section and AWS_KEY not in html
    assert "DNS look-ups, raw sockets, ssh" in section  # the not-seen caveat, said plainly
    assert "registry.npmjs.org" in section and "package_registry" in section
    assert "cat big.log" in section and "52,311 bytes" in section  # the cut result, with its stated size
    assert '<span class="tag error">no</span>' in section  # a Retry-After of 3 s not honoured (0.5 s)
    assert 'href="#evidence"' in html


@pytest.mark.browser
def test_evidence_section_reads_in_chromium(browser, report):
    with open_report(browser, report) as opened:
        page = opened.page
        page.click('nav a[href="#evidence"]')
        headline = page.locator(".exposure-headlines li").first
        assert headline.is_visible()
        assert "credentials from a tool result of cat .env" in headline.inner_text()
        assert page.locator('[data-key="exposed-credentials"]').inner_text() == "3"
        assert page.locator("table.network tr").count() == 3  # header and two destinations
        screenshot(page, "report-evidence.png")
        opened.assert_clean()
