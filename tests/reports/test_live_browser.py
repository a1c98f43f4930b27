"""The live view in headless Chromium while `ctxtap record --live` records a scripted agent.

Rows appear while the agent runs; a request opens with its blocks; its diff against the
predecessor shows the changed block; a request without the token is refused; no console
errors and no request leaves the page's origin. Debian's chromium, driven by Playwright.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from ctxtap.modelserver import ModelServer
from tests.conftest import ARTIFACTS
from tests.livescenario import record_live
from tests.reports.browser_support import ARGS, CHROMIUM, VIEWPORT

pytestmark = pytest.mark.browser


def test_live_view_while_an_agent_runs(tmp_path: Path, ctxtap_config) -> None:
    if not CHROMIUM.exists():
        pytest.skip("Chromium is not installed at /usr/bin/chromium (Debian: apt-get install chromium)")
    from playwright.sync_api import expect, sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    # each streamed answer lasts ~0.7 s: longer than the 0.3 s after which the view shows a request under way
    with ModelServer(script="long", chunk_delay_s=0.05) as server, sync_playwright() as p:
        rec = record_live(tmp_path, ctxtap_config, server.url, turns=3, tool_s=1.0)
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            context = browser.new_context(viewport=VIEWPORT)
            page = context.new_page()
            errors: list[str] = []
            urls: list[str] = []
            page.on("console", lambda m: errors.append(f"console.{m.type}: {m.text}")
                    if m.type in ("error", "warning") else None)
            page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
            page.on("request", lambda r: urls.append(r.url))

            page.goto(rec.url)
            assert page.url == rec.base + "/"  # the token left the address bar for a cookie
            page.click("main a[href='/c/0']")
            page.wait_for_selector("#sessions")
            rec.start_agent()
            page.wait_for_selector("#sessions .vrow", timeout=60_000)  # the session appears by itself
            page.click("#sessions .vrow >> nth=0")
            page.wait_for_selector("#requests")

            counts: list[int] = []
            in_progress_seen = False
            marked = False
            deadline = time.monotonic() + 180
            while time.monotonic() < deadline:
                counts.append(page.locator("#requests .vrow").count())
                if counts[-1] >= 3 and not marked:  # the first row, complete (its tool's result came back):
                    marked = page.evaluate(  # later refreshes must keep its node, not draw it again
                        "(() => { const r = document.querySelector(\"#requests .vrow[style*='top: 0px']\"); "
                        "if (!r) return false; r.dataset.kept = 'yes'; return true; })()")
                in_progress_seen = in_progress_seen or page.locator(".inprogress:not([hidden]) li").count() > 0
                done = rec.agent_done()
                if done is not None and counts[-1] >= done:
                    break
                page.wait_for_timeout(100)
            done = rec.agent_done()
            assert done is not None and done > 10, "the agent did not finish"
            assert rec.proc.poll() is None, "ctxtap record ended before the test looked"
            state = page.evaluate("fetch('/api/state').then(r => r.text())")
            assert counts[-1] == done, (counts[-20:], state, errors)
            growing = sorted({c for c in counts if 0 < c < done})
            assert len(growing) >= 2, f"rows did not appear one by one while the agent ran: {counts}"
            assert in_progress_seen, "a streaming request was never shown in progress"
            # the first row was not drawn again: later refreshes added rows beside it
            assert marked and page.locator("#requests .vrow[data-kept=yes]").count() == 1, \
                "a live refresh redrew rows that had not changed"
            page.wait_for_selector(".charts svg")
            expect(page.locator("#session-cards [data-field=n_requests]")).to_have_text(str(done), timeout=30_000)
            page.screenshot(path=str(ARTIFACTS / "live-session.png"), full_page=True)

            # open the last request: its ribbon and block list (the report's viewer)
            page.click(f"#requests .vrow >> nth={done - 1}")
            page.wait_for_selector(".viewer table")
            assert page.locator(".ribbon canvas").count() == 1
            assert page.locator(".viewer tr[data-pos]").count() > 5
            page.screenshot(path=str(ARTIFACTS / "live-request.png"), full_page=True)

            # its diff against the predecessor: the changed block, and the first divergence highlighted
            page.click("#diff-prev")
            page.wait_for_selector("table.diff")
            assert page.locator("tr[data-op=changed]").count() >= 1
            first = page.locator("#first-divergence")
            assert first.count() == 1 and first.get_attribute("data-op") != "same"
            assert "First divergence:" in page.locator("#first-divergence-words").inner_text()
            page.screenshot(path=str(ARTIFACTS / "live-diff.png"), full_page=True)

            # without the token: refused, on a page and on the API
            stranger = browser.new_context()
            for path in ("/", "/api/state", "/c/0"):
                resp = stranger.new_page().goto(rec.base + path)
                assert resp is not None and resp.status == 403, path
            stranger.close()

            assert errors == [], errors
            assert [u for u in urls if not u.startswith(rec.base + "/")] == []
            context.close()
        finally:
            browser.close()
            code = rec.finish()
    assert code == 0, "".join(rec.stderr)
    assert "Traceback" not in "".join(rec.stderr)
    port = int(rec.base.rsplit(":", 1)[1])
    with socket.socket() as s:  # the view ended with the recording
        assert s.connect_ex(("127.0.0.1", port)) != 0
    assert (rec.capture / "flows.parquet").exists()  # finalized as usual
    assert not any(p.name.startswith("v") for p in rec.capture.iterdir())
