"""Benchmark (not a test): HTML report size and load time for 100- and 1000-request sessions.

Run: .venv/bin/python benchmarks/bench_report.py [--sizes 100 1000] [--loads 5]

Each session is the synthetic Claude-Code-shaped session of
tests/test_report_synthetic.py, generated as HAR, imported and analysed (not
timed), then rendered (timed) and opened from file:// in headless Chromium
(/usr/bin/chromium via Playwright): DOMContentLoaded and load come from the
Navigation Timing entry, the ribbon time is until the first context-layout
canvas has been drawn. Medians over --loads page loads.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]


def measure_loads(html: Path, loads: int) -> dict[str, float]:
    from playwright.sync_api import sync_playwright

    dcl, load, ribbon = [], [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        for _ in range(loads):
            page = browser.new_page(viewport={"width": 1300, "height": 1000})
            page.goto(html.resolve().as_uri(), wait_until="load")
            nav = page.evaluate("performance.getEntriesByType('navigation')[0].toJSON()")
            page.wait_for_function("document.querySelector('.ribbon')._drawn === true")
            drawn = page.evaluate("performance.now()")
            dcl.append(nav["domContentLoadedEventEnd"])
            load.append(nav["loadEventEnd"])
            ribbon.append(drawn)
            page.close()
        browser.close()
    return {"dcl": statistics.median(dcl), "load": statistics.median(load), "ribbon": statistics.median(ribbon)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000], help="main-loop requests per session")
    parser.add_argument("--loads", type=int, default=5, help="page loads per report (median)")
    parser.add_argument("--keep", type=Path, help="keep captures and reports in this directory")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="ctxtap-bench-report-"))
    os.environ.setdefault("CTXTAP_CONFIG_DIR", str(work / "config"))

    from reports.html.render import render_report
    from tests.test_report_synthetic import synthetic_capture

    rows = []
    for n in args.sizes:
        start = time.perf_counter()
        capture = synthetic_capture(work / f"s{n}", n)
        prepared = time.perf_counter() - start
        out = work / f"report-{n}.html"
        result = render_report([capture], out)
        timing = measure_loads(out, args.loads) if CHROMIUM.exists() else None
        rows.append((n, result, prepared, timing))

    print(f"{'session':<24}" + "".join(f"{f'{n} requests':>18}" for n, *_ in rows))
    lines = [
        ("requests in report", lambda r: f"{r[1].requests:,}"),
        ("distinct block texts", lambda r: f"{r[1].texts:,}"),
        ("texts truncated", lambda r: f"{r[1].truncated_texts:,}"),
        ("report size", lambda r: f"{r[1].bytes / 1e6:.2f} MB"),
        ("render time", lambda r: f"{r[1].seconds * 1000:.0f} ms"),
        ("DOMContentLoaded", lambda r: f"{r[3]['dcl']:.0f} ms" if r[3] else "n/a"),
        ("load event", lambda r: f"{r[3]['load']:.0f} ms" if r[3] else "n/a"),
        ("first ribbon drawn", lambda r: f"{r[3]['ribbon']:.0f} ms" if r[3] else "n/a"),
        ("(HAR+import+analyse)", lambda r: f"{r[2]:.1f} s"),
    ]
    for label, value in lines:
        print(f"{label:<24}" + "".join(f"{value(r):>18}" for r in rows))
    if not CHROMIUM.exists():
        print("Chromium not found at /usr/bin/chromium: load times not measured (apt-get install chromium)")
    print(f"medians of {args.loads} loads from file://; files in {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
