"""Reports in headless Chromium: no console errors, no network, the numbers in the DOM, the block viewer.

Debian's chromium at /usr/bin/chromium, driven by Playwright (no browser is ever
downloaded). Screenshots go to test-artifacts/ for a human look.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ctxtap.reports.html.render import render_report
from tests.reports.browser_support import open_report, screenshot
from tests.reports.html_checks import FIVE_MB
from tests.synthetic import HOSTILE

pytestmark = pytest.mark.browser


def painted_pixels(page: Any, selector: str) -> int:
    """Non-transparent pixels of a ribbon canvas, once it is scrolled into view and drawn."""
    page.locator(selector).first.scroll_into_view_if_needed()
    page.wait_for_function("s => document.querySelector(s).closest('.ribbon')._drawn === true", arg=selector)
    return page.evaluate("""s => { const c = document.querySelector(s); const d = c.getContext('2d')
        .getImageData(0, 0, c.width, c.height).data; let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i]) n++;
        return n; }""", selector)


def ribbon_position(html_path: Path, capture: Path, text: str) -> tuple[str, int, int]:
    """(ribbon id, row, position) of the first request that carries a block with this exact text."""
    from ctxtap.analysis.db import connect

    con = connect([capture])
    request_id, position = con.execute("""
        SELECT b.request_id, b.position FROM blocks b JOIN requests r USING (request_id)
        WHERE b.content_hash IN (SELECT content_hash FROM t_block_content WHERE text = ?)
        ORDER BY r.ts_start, b.position LIMIT 1""", [text]).fetchone()
    html = html_path.read_text()
    start = html.index('id="ctx-data">') + len('id="ctx-data">')
    data = json.loads(html[start:html.index("</script>", start)])
    for rid, ribbon in data["ribbons"].items():
        for i, row in enumerate(ribbon["rows"]):
            if row["id"] == request_id:
                return rid, i, position
    raise AssertionError(f"{request_id} is in no ribbon")


def test_scripted_sessions_report(browser, demo_capture: Path, tmp_path: Path) -> None:
    from ctxtap.analysis.db import connect

    out = tmp_path / "demo.html"
    render_report([demo_capture], out)
    con = connect([demo_capture])
    with open_report(browser, out) as opened:
        page = opened.page
        screenshot(page, "report-demo-overview.png")
        n = con.execute("SELECT count(*) FROM requests").fetchone()[0]
        assert page.inner_text('[data-key="requests"]') == f"{n:,}"
        for client, count in con.execute("SELECT client, n_requests FROM sessions").fetchall():
            section = page.locator(f'section[data-client="{client}"]')
            assert section.locator('[data-key="session-requests"]').inner_text() == f"{count:,}"
        (miss,) = con.execute("SELECT any_value(miss_explanation) FROM prefix WHERE miss_cause = 'prefix_change'"
                              ).fetchone()
        assert page.locator("table.cache-events span.event-text", has_text=miss).first.is_visible()
        assert "Bash" in page.locator("b.tool-name").all_inner_texts()
        n_limited = con.execute("SELECT count(*) FROM errors WHERE error_layer = 'rate_limit'").fetchone()[0]
        assert page.locator("table.error-layers tr", has_text="rate_limit").locator("td.n").inner_text() == str(n_limited)
        assert painted_pixels(page, '[data-ribbon="s1-main"] canvas') > 1000
        screenshot(page, "report-demo-session.png")

        # The lazy viewer: a request's blocks, a long one previewed, then its full text.
        claude = page.locator('section[data-client="claude-code"]')
        # a main-thread request, and that thread's viewer: a section holds one viewer per thread, and whether
        # the side call (the title) or the first main call comes first depends on how the demo's agents were timed
        button = claude.locator('table.requests button[data-open$="-main"]').first
        button.click()
        viewer = claude.locator(f'[data-viewer="{button.get_attribute("data-open")}"]')
        viewer.wait_for(state="visible", timeout=15_000)  # drawn after the click, later on a loaded machine
        rows = viewer.locator("tr[data-pos]")
        rows.first.wait_for(timeout=15_000)
        assert rows.count() > 5
        sizes = [int(t.replace(",", "")) for t in rows.locator("td:nth-child(8)").all_inner_texts()]
        pos = max(range(len(sizes)), key=sizes.__getitem__)
        assert sizes[pos] > 1200
        row = rows.nth(pos)
        row.locator("button.show-text").click()
        text_row = viewer.locator("tr.text-row")
        text_row.wait_for(timeout=15_000)
        assert "Preview: the first 1,200 characters" in text_row.inner_text()
        text_row.locator("button.full-text").click()
        text_row.get_by_text("Full text,").wait_for(timeout=15_000)
        path = row.locator("td:nth-child(2)").inner_text()
        request_id = viewer.locator(".vh code").inner_text()
        (expected,) = con.execute("""SELECT c.text FROM blocks b JOIN t_block_content c USING (content_hash)
                                     WHERE b.request_id = ? AND b.path = ?""", [request_id, path]).fetchone()
        assert text_row.locator("pre.text").evaluate("p => p.textContent") == expected
        assert f"Full text, {sizes[pos]:,} bytes." in text_row.inner_text()
        text_row.scroll_into_view_if_needed()
        screenshot(page, "report-demo-viewer.png")
        opened.assert_clean()


def test_hostile_text_stays_text_in_the_browser(browser, synth30: Path, tmp_path: Path) -> None:
    out = tmp_path / "hostile.html"
    render_report([synth30], out)
    rid, row, position = ribbon_position(out, synth30, HOSTILE)
    with open_report(browser, out) as opened:
        page = opened.page
        page.evaluate("([r, i, p]) => window.ctxtapReport.openViewer(r, i, p)", [rid, row, position])
        pre = page.locator(f'[data-viewer="{rid}"] tr.text-row pre.text')
        assert pre.evaluate("p => p.textContent") == HOSTILE
        assert page.locator("img").count() == 0 and page.locator("script").count() == 3
        calls = page.locator("table.tool-calls").first
        calls.evaluate("t => t.closest('details').open = true")
        assert "echo '<script>alert(3)</script>'" in calls.inner_text()
        # A long text: previewed, then head and tail with the exact original size.
        rid, row, position = ribbon_position(out, synth30, "build step ok: compiled module, ran checks, wrote "
                                                        "artifacts\n" * 3000)
        page.evaluate("([r, i, p]) => window.ctxtapReport.openViewer(r, i, p)", [rid, row, position])
        cell = page.locator(f'[data-viewer="{rid}"] tr.text-row')
        cell.locator("button.full-text").click()
        assert "of 180,000 bytes" in cell.locator(".size-note").inner_text()
        assert "bytes not embedded in this report" in cell.locator("pre.text").evaluate("p => p.textContent")
        page.wait_for_timeout(100)
        opened.assert_clean()


def test_1000_request_session_opens_fast(browser, synth1000: Path, tmp_path: Path) -> None:
    out = tmp_path / "big.html"
    result = render_report([synth1000], out)
    assert result.bytes <= FIVE_MB
    with open_report(browser, out) as opened:
        page = opened.page
        timing = page.evaluate("performance.getEntriesByType('navigation')[0].toJSON()")
        assert timing["domContentLoadedEventEnd"] < 5000, timing
        assert painted_pixels(page, '[data-ribbon="s1-main"] canvas') > 10_000
        page.locator('[data-ribbon="s1-main"] canvas').click(position={"x": 400, "y": 300})
        assert page.locator('[data-viewer="s1-main"] tr[data-pos]').count() > 10
        screenshot(page, "report-1000-requests.png")
        opened.assert_clean()


def test_10000_request_session_report_opens_and_its_merged_rows_open(browser, huge_report, synth10k: Path) -> None:
    """The aggregated report of a 10,000-request session: clean, its numbers, a merged ribbon row in the
    viewer (clicked on the canvas), a left-out gap row's query, a merged request's own blocks."""
    from ctxtap.analysis.db import connect

    assert huge_report.aggregated
    con = connect([synth10k])
    html = huge_report.path.read_text()
    start = html.index('id="ctx-data">') + len('id="ctx-data">')
    rows = json.loads(html[start:html.index("</script>", start)])["ribbons"]["s1-main"]["rows"]
    with open_report(browser, huge_report.path) as opened:
        page = opened.page
        (n,) = con.execute("SELECT count(*) FROM requests").fetchone()
        assert page.inner_text('[data-key="requests"]') == f"{n:,}"
        assert painted_pixels(page, '[data-ribbon="s1-main"] canvas') > 10_000
        # Click the first merged row on the canvas: the viewer lists the blocks of the last request it draws.
        i = next(k for k, r in enumerate(rows) if r.get("n"))
        geom = page.evaluate("() => document.querySelector('[data-ribbon=\"s1-main\"]')._geom")
        canvas = page.locator('[data-ribbon="s1-main"] canvas')
        canvas.click(position={"x": 8, "y": geom["ys"][i] + 1})
        viewer = page.locator('[data-viewer="s1-main"]')
        assert viewer.locator(".vh strong").inner_text() == f"Request {rows[i]['l']}"
        assert f"{rows[i]['n']} requests drawn as one row" in viewer.locator(".merged-note").inner_text()
        (n_blocks,) = con.execute("SELECT n_blocks FROM requests WHERE request_id = ?", [rows[i]["id"]]).fetchone()
        assert viewer.locator("tr[data-pos]").count() == n_blocks
        last = viewer.locator("tr[data-pos]").last
        last.locator("button.show-text").click()
        text = viewer.locator("tr.text-row").inner_text()
        assert "Full text" in text or "Preview" in text or ("Left out" in text and "ctxtap sql" in text)
        screenshot(page, "report-10000-merged-row.png")
        # A left-out gap row says how many requests it stands for and gives the query.
        gap = next(k for k, r in enumerate(rows) if r.get("gap"))
        page.evaluate("([r, i]) => window.ctxtapReport.openViewer(r, i, -1)", ["s1-main", gap])
        assert viewer.locator("code.query").inner_text() == rows[gap]["q"]
        # From the requests table, a merged request opens its own blocks: a prefix of its row's.
        button = page.locator("table.requests button[data-upto]").nth(3)
        button.evaluate("b => b.closest('details').open = true")
        button.dispatch_event("click")  # no pointer: ribbons drawn as the table scrolls in move it
        upto = int(button.get_attribute("data-upto"))
        num = int(button.get_attribute("data-label").split()[0].lstrip("#"))
        paths = [p for (p,) in con.execute(
            "SELECT b.path FROM blocks b JOIN requests r USING (request_id) WHERE r.seq_in_session + 1 = ? "
            "ORDER BY b.position", [num]).fetchall()]
        assert len(paths) == upto and viewer.locator("tr[data-pos] td:nth-child(2)").all_inner_texts() == paths
        assert "This request's blocks are the first" in viewer.locator(".merged-note").inner_text()
        opened.assert_clean()


def test_real_corpus_comparison_report(browser, corpus_captures: list[Path], tmp_path: Path) -> None:
    out = tmp_path / "corpus.html"
    render_report(corpus_captures, out)
    with open_report(browser, out) as opened:
        page = opened.page
        layout = page.locator("table.layout")
        assert layout.locator("tr").count() == len(corpus_captures) + 1
        for client in ("claude-code", "codex", "grok-cli", "kimi-code"):
            assert client in layout.inner_text()
        assert page.locator("table.cache-events", has_text="system[0] changed: a per-request hash").first.is_visible()
        assert painted_pixels(page, '[data-ribbon="cmp"] canvas') > 1000
        page.evaluate("document.getElementById('comparison').scrollIntoView()")
        screenshot(page, "report-corpus-comparison.png")
        opened.assert_clean()
