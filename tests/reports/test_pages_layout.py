"""Page layout in headless Chromium (issue 34, "Pages"): measured by element geometry and content, not pixels.

The report's ribbons are drawn on load (without scrolling, in print media, in a full-page capture); its
pinned header covers what scrolls under it; its summary cards keep one row at 1400 px; the requests
table's cost column is not clipped; no shared page or attachment names a local path; the live
sessions list has no empty box under its rows and the live timeline stacks sources in one order;
the experiment page's axes fit the runs; the diff page's heading names the requests it compares.
One browser for the module, the session's demo capture for every page.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ctxtap.reports.html.render import render_report
from tests.conftest import ARTIFACTS
from tests.reports.browser_support import ARGS, CHROMIUM

pytestmark = pytest.mark.browser

WIDE = {"width": 1400, "height": 1000}

# JavaScript: resolves after two frames and a task, so whatever a page draws on load has been drawn.
SETTLED = "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(r, 0))))"

# JavaScript: for every ribbon whose box has a width (one in a closed <details> has none), its
# canvas's painted pixels and whether its box and canvas fit their wrapper.
RIBBONS = """() => Array.from(document.querySelectorAll('.ribbon[data-ribbon]')).filter(el =>
    el.querySelector('.ribbon-wrap').clientWidth > 0).map(el => {
  const wrap = el.querySelector('.ribbon-wrap'), c = wrap.querySelector('canvas');
  let painted = 0;
  if (c.width && c.height) {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    for (let i = 3; i < d.length; i += 4) if (d[i]) painted++;
  }
  const w = wrap.getBoundingClientRect(), r = c.getBoundingClientRect();
  return {id: el.dataset.ribbon, painted: painted, rows: JSON.parse(document.getElementById('ctx-data').textContent)
            .ribbons[el.dataset.ribbon].rows.length,
          inside: r.left >= w.left - 0.5 && r.right <= w.right + 0.5 && r.width > 0,
          unclipped: wrap.scrollHeight <= wrap.clientHeight + 1 && wrap.scrollWidth <= wrap.clientWidth + 1};
})"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.skip("Chromium is not installed at /usr/bin/chromium (Debian: apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def report(demo_capture: Path, tmp_path_factory) -> Path:
    """The four demo agents' report (several sessions, so most ribbons start far below the fold)."""
    out = tmp_path_factory.mktemp("pages") / "report.html"
    render_report([demo_capture], out)
    return out


def open_page(browser: Any, url: str, *, media: str | None = None, viewport: dict[str, int] = WIDE) -> Any:
    page = browser.new_context(viewport=viewport).new_page()
    if media:
        page.emulate_media(media=media)
    page.goto(url, wait_until="load")
    return page


def test_ribbons_are_drawn_on_load_without_scrolling_and_in_a_full_page_capture(browser, report: Path) -> None:
    page = open_page(browser, report.as_uri())
    try:
        page.evaluate(SETTLED)
        assert page.evaluate("window.scrollY") == 0
        ribbons = page.evaluate(RIBBONS)
        assert len(ribbons) >= 5  # the comparison and one per session, down to the page's end
        below = page.evaluate("() => Array.from(document.querySelectorAll('.ribbon[data-ribbon]')).filter(el => "
                              "el.getBoundingClientRect().top > 3 * innerHeight).length")
        assert below >= 3, "the test needs ribbons far below the fold"
        blank = [r["id"] for r in ribbons if r["painted"] < 100 * r["rows"]]
        assert blank == [], f"ribbons blank until scrolled into view: {blank}"
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "pages-report-full.png"), full_page=True)
        assert page.evaluate("window.scrollY") == 0
        assert [r["id"] for r in page.evaluate(RIBBONS) if r["painted"] < 100 * r["rows"]] == []
    finally:
        page.context.close()


def test_ribbons_are_drawn_and_fit_the_page_in_print_media(browser, report: Path) -> None:
    page = open_page(browser, report.as_uri(), media="print")
    try:
        assert page.evaluate("matchMedia('print').matches")
        page.evaluate(SETTLED)
        ribbons = page.evaluate(RIBBONS)
        assert len(ribbons) >= 5
        assert [r["id"] for r in ribbons if r["painted"] < 100 * r["rows"]] == [], ribbons
        assert all(r["inside"] and r["unclipped"] for r in ribbons), ribbons
        assert page.evaluate("getComputedStyle(document.querySelector('header.top')).position") == "static"
    finally:
        page.context.close()
    # switched to print after loading on screen: still drawn, each canvas within its box
    page = open_page(browser, report.as_uri(), viewport={"width": 1300, "height": 1000})
    try:
        page.emulate_media(media="print")
        page.evaluate(SETTLED)
        ribbons = page.evaluate(RIBBONS)
        assert all(r["painted"] >= 100 * r["rows"] and r["inside"] and r["unclipped"] for r in ribbons), ribbons
    finally:
        page.context.close()


def _alpha(colour: str) -> float:
    """The alpha of a computed `rgb(...)`/`rgba(...)` colour."""
    parts = re.findall(r"[\d.]+", colour)
    return float(parts[3]) if colour.startswith("rgba") else 1.0


def test_the_pinned_header_is_opaque_and_covers_what_scrolls_under_it(browser, report: Path) -> None:
    page = open_page(browser, report.as_uri())
    try:
        header = page.locator("header.top")
        style = header.evaluate("h => { const s = getComputedStyle(h); return [s.position, s.backgroundColor, "
                                "s.backgroundImage, s.zIndex, s.opacity]; }")
        position, background, image, z_index, opacity = style
        assert position == "sticky" and image == "none" and float(opacity) == 1
        assert _alpha(background) == 1, f"the header's background lets text through: {background}"
        # a requests table row scrolled to the middle of the header: the header is what is at that point
        cell = page.locator("table.requests tr:nth-child(3) td").first
        top = cell.evaluate("c => c.getBoundingClientRect().top + scrollY")
        box = header.bounding_box()
        page.evaluate(f"window.scrollTo(0, {top} - {box['height'] / 2})")
        page.evaluate(SETTLED)
        box, under = header.bounding_box(), cell.bounding_box()
        assert box["y"] == 0
        assert under["y"] < box["y"] + box["height"] and under["y"] + under["height"] > box["y"], (box, under)
        x, y = under["x"] + under["width"] / 2, box["y"] + box["height"] / 2
        assert page.evaluate(f"document.querySelector('header.top').contains(document.elementFromPoint({x}, {y}))")
        sticky_heads = page.evaluate("() => Array.from(document.querySelectorAll('.table-scroll th')).map(t => "
                                     "getComputedStyle(t).zIndex).filter(z => z !== 'auto').map(Number)")
        assert int(z_index) > max(sticky_heads, default=0)
    finally:
        page.context.close()


def test_summary_cards_keep_one_row_at_1400px(browser, report: Path) -> None:
    page = open_page(browser, report.as_uri())
    try:
        rows = page.evaluate("() => Array.from(document.querySelectorAll('.cards')).map(c => "
                             "Array.from(c.children).map(k => Math.round(k.getBoundingClientRect().top)))")
        assert rows and max(len(r) for r in rows) == 8
        assert [r for r in rows if len(set(r)) != 1] == [], rows
        # and no card's figure spills out of it
        spill = page.evaluate("() => Array.from(document.querySelectorAll('.card')).filter(k => "
                              "k.scrollWidth > k.clientWidth + 1).length")
        assert spill == 0
    finally:
        page.context.close()


def test_the_requests_tables_cost_column_is_not_clipped(browser, report: Path) -> None:
    page = open_page(browser, report.as_uri())
    try:
        tables = page.evaluate("""() => Array.from(document.querySelectorAll('table.requests')).map(t => {
            const heads = Array.from(t.rows[0].cells).map(c => c.textContent.trim());
            const k = heads.indexOf('cost'), scroller = t.closest('.table-scroll');
            const s = scroller.getBoundingClientRect(), tb = t.getBoundingClientRect();
            const left = s.left + scroller.clientLeft, visible = {left: left, right: left + scroller.clientWidth};
            return {k: k, open: t.closest('details').open, scroller: [scroller.scrollWidth, scroller.clientWidth],
              cells: Array.from(t.rows).slice(1).filter(r => r.cells.length > k).map(r => {
                const c = r.cells[k], b = c.getBoundingClientRect();
                return {text: c.textContent, fits: c.scrollWidth <= c.clientWidth,
                        inTable: b.left >= tb.left - 0.5 && b.right <= tb.right + 0.5,
                        shown: b.left >= visible.left - 0.5 && b.right <= visible.right + 0.5};
              })};
        })""")
        assert len(tables) >= 4 and all(t["open"] and t["k"] > 0 and t["cells"] for t in tables)
        for t in tables:
            assert t["scroller"][0] <= t["scroller"][1], f"the table scrolls sideways: {t['scroller']}"
            bad = [c for c in t["cells"] if not (c["fits"] and c["inTable"] and c["shown"])]
            assert bad == [], bad
            assert any(c["text"].startswith("$") for c in t["cells"])  # the cost column ("–" when unpriced)
    finally:
        page.context.close()


def _local_paths(*paths: Path) -> list[str]:
    """The absolute local paths a shared file must not name: each given one and the home directory."""
    out = [str(p.resolve()) for p in paths] + [str(p) for p in paths if p.is_absolute()]
    home = Path.home()
    if len(home.parts) > 1:
        out.append(str(home) + "/")
    return sorted(set(out))


def test_no_absolute_path_in_the_report_or_the_published_attachments(report: Path, demo_capture: Path,
                                                                     tmp_path: Path) -> None:
    from ctxtap.reports.publish.publisher import publish

    forbidden = _local_paths(demo_capture, demo_capture.parent, tmp_path)
    html = report.read_text(encoding="utf-8")
    assert [p for p in forbidden if p in html] == []
    assert demo_capture.name in html  # the capture is named by its folder instead
    # an aggregated report's ctxtap sql commands name the capture by folder too
    small = render_report([demo_capture], tmp_path / "small.html", max_bytes=60_000)
    text = small.path.read_text(encoding="utf-8")
    commands = re.findall(r'ctxtap sql ([^ "\\]+) \\?"', text.replace("&#34;", '"').replace("&quot;", '"'))
    assert small.aggregated and commands and set(commands) <= {demo_capture.name, "CAPTURE"}, set(commands)
    assert [p for p in forbidden if p in text] == []
    result = publish(demo_capture, tmp_path / "published")
    assert len(result.files) >= 8
    for f in result.files:
        data = f.read_text(encoding="utf-8")
        assert [p for p in forbidden if p in data] == [], f.name


def _experiment_report(directory: Path) -> Any:
    """Two variants' runs that differ by a few percent: the case where an axis from 0 hides everything."""
    from ctxtap.analysis.compare.experiment import Distribution, ExperimentReport, PassK, VariantReport

    def variant(name: str, tokens: list[float], seconds: list[float]) -> VariantReport:
        def dist(what: str, unit: str, values: list[float]) -> Distribution:
            ordered = sorted(values)
            return Distribution(name=what, unit=unit, n=len(values), values=values, p50=ordered[len(values) // 2],
                                p95=ordered[-1], max=ordered[-1])
        n = len(tokens)
        return VariantReport(name=name, n_planned=n, n_runs=n, n_executed=n, n_not_executed=0, n_timed_out=0,
                             n_failed_to_start=0, n_interrupted=0, n_missing=0, passes=n,
                             pass_k=[PassK(k=1, pass_at_k=1.0, pass_hat_k=1.0)],
                             distributions=[dist("input tokens", "", tokens), dist("duration", "s", seconds)])

    variants = [variant("system", [10_400, 10_520, 10_610, 10_700], [41.0, 43.5, 44.0, 44.2]),
                variant("message", [10_880, 10_950, 11_020], [45.5, 46.0, 47.5])]
    return ExperimentReport(directory=str(directory), name="layout", status="complete", runs=[], headline=[],
                            notes=[], variants=variants)


def test_the_experiment_pages_axes_fit_the_runs(browser, tmp_path: Path) -> None:
    from ctxtap.reports.html.experimentpage import write_experiment_page

    directory = tmp_path / "exp"
    out = write_experiment_page(_experiment_report(directory), tmp_path / "exp.html")
    page = open_page(browser, out.as_uri())
    try:
        charts = page.evaluate("""() => Array.from(document.querySelectorAll('#distributions svg')).map(svg => {
            const line = svg.querySelector('line').getBoundingClientRect();
            return {left: line.left, right: line.right, xs: Array.from(svg.querySelectorAll('circle')).map(c => {
              const b = c.getBoundingClientRect(); return b.left + b.width / 2; })};
        })""")
        assert len(charts) == 2
        for c in charts:
            width = c["right"] - c["left"]
            assert len(c["xs"]) == 7 and all(c["left"] <= x <= c["right"] for x in c["xs"])
            assert max(c["xs"]) - min(c["xs"]) >= 0.6 * width, f"dots bunched in {c}"
            assert min(c["xs"]) - c["left"] <= 0.25 * width and c["right"] - max(c["xs"]) <= 0.25 * width
            assert min(c["xs"]) > c["left"] and max(c["xs"]) < c["right"]  # a little room at both ends
    finally:
        page.context.close()
    assert [p for p in _local_paths(directory, tmp_path) if p in out.read_text(encoding="utf-8")] == []


def test_the_diff_pages_heading_names_the_compared_requests(browser, demo_capture: Path, tmp_path: Path) -> None:
    from ctxtap.analysis.compare.rundiff import parse_target, resolve, run_diff
    from ctxtap.analysis.db import connect
    from ctxtap.reports.html.diffpage import write_diff_page

    capture = str(demo_capture.resolve())
    con = connect([capture])
    (a_id, b_id) = [r for (r,) in con.execute(
        "SELECT request_id FROM requests WHERE client = 'claude-code' AND thread_kind = 'main' AND n_blocks > 0 "
        "ORDER BY seq_in_thread LIMIT 2").fetchall()]
    runs = [resolve(con, parse_target(f"{capture}@{rid}")) for rid in (a_id, b_id)]
    out = write_diff_page(run_diff(con, *runs), tmp_path / "diff.html")
    page = open_page(browser, out.as_uri())
    try:
        heading = page.locator("#layout h2").inner_text()
        assert a_id in heading and b_id in heading and "first main request" not in heading, heading
        assert heading.index(a_id) < heading.index(b_id)
    finally:
        page.context.close()
    assert [p for p in _local_paths(demo_capture, tmp_path) if p in out.read_text(encoding="utf-8")] == []


@pytest.fixture(scope="module")
def live(demo_capture: Path) -> Iterator[Any]:
    from ctxtap.reports.live.server import LiveUI
    from ctxtap.reports.live.sources import CaptureSource

    server = LiveUI([CaptureSource(demo_capture)])
    server.bind(0)
    server.start_thread()
    yield server
    server.stop()


def _live_page(browser: Any, live: Any, path: str) -> Any:
    page = open_page(browser, f"http://127.0.0.1:{live.port}/?token={live.token}")  # the token becomes a cookie
    page.goto(f"http://127.0.0.1:{live.port}{path}", wait_until="load")
    return page


def test_the_live_sessions_list_has_no_empty_box_under_its_rows(browser, live: Any, demo_capture: Path) -> None:
    from ctxtap.analysis.db import connect

    (n,) = connect([demo_capture]).execute("SELECT count(*) FROM sessions").fetchone()
    page = _live_page(browser, live, "/c/0")
    try:
        page.wait_for_function("n => document.querySelectorAll('#sessions .vrow').length === n", arg=n,
                               timeout=15_000)
        page.evaluate(SETTLED)
        body, last = page.evaluate("""() => {
            const b = document.querySelector('#sessions .vbody').getBoundingClientRect();
            const rows = Array.from(document.querySelectorAll('#sessions .vrow')).map(r => r.getBoundingClientRect());
            return [[b.top, b.bottom], Math.max(...rows.map(r => r.bottom))];
        }""")
        assert body[1] - last <= 2, f"{body[1] - last:.0f} px of empty box under the last row"
        assert body[0] < last <= body[1] + 0.5  # and every row still shows inside it
    finally:
        page.context.close()


def test_the_live_timeline_stacks_sources_in_one_order_on_every_row(browser, live: Any, demo_capture: Path) -> None:
    from ctxtap.analysis.db import connect

    con = connect([demo_capture])
    (session, n) = con.execute("SELECT session_id, n_requests FROM sessions ORDER BY n_requests DESC LIMIT 1"
                               ).fetchone()
    page = _live_page(browser, live, f"/c/0/session?id={session}")
    try:
        page.wait_for_function("n => document.querySelectorAll('#requests .vrow').length === n", arg=n,
                               timeout=15_000)
        order = {p["label"]: i for i, p in enumerate(json.loads(page.locator("#live-palette").text_content()))}
        rows = page.evaluate("() => Array.from(document.querySelectorAll('#requests .vrow')).map(r => "
                             "Array.from(r.querySelectorAll('.bar i')).map(i => i.title.split(':')[0]))")
        assert sum(len(r) >= 3 for r in rows) >= 3, rows
        places = [[order[label] for label in r] for r in rows]
        assert [p for p in places if p != sorted(p)] == [], rows
        # so any two sources come in the same order wherever both appear
        seen: dict[tuple[str, str], bool] = {}
        for r in rows:
            for i, x in enumerate(r):
                for y in r[i + 1:]:
                    assert seen.setdefault((x, y), True) and (y, x) not in seen, (x, y)
    finally:
        page.context.close()
