"""Benchmark (not a test): HTML report size, render and load time for 100- to 10,000-request sessions.

Run: .venv/bin/python benchmarks/bench_report.py [--sizes 100 1000 10000] [--loads 5] [--max-size 5]
     [--keep DIR] [--breakdown]

Each session is the synthetic Claude-Code-shaped session of
tests/synthetic.py, generated as HAR, imported and analysed (not
timed; reused from --keep DIR when there), then rendered (timed, within
--max-size MB) and opened from file:// in headless Chromium (/usr/bin/chromium
via Playwright): DOMContentLoaded and load come from the Navigation Timing
entry, the ribbon time is until the first context-layout canvas has been
drawn (scrolled into view right after load). Medians over --loads page loads. Target: a 10,000-request session within
5 MB that loads in under 2 s. --breakdown adds where the bytes go, by section.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
TARGET_LOAD_MS = 2000


def measure_loads(html: Path, loads: int) -> dict[str, float]:
    from playwright.sync_api import sync_playwright

    dcl, load, ribbon = [], [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        for _ in range(loads):
            page = browser.new_page(viewport={"width": 1300, "height": 1000})
            page.goto(html.resolve().as_uri(), wait_until="load")
            nav = page.evaluate("performance.getEntriesByType('navigation')[0].toJSON()")
            page.evaluate("() => document.querySelector('.ribbon').scrollIntoView()")  # below the notes
            page.wait_for_function("() => document.querySelector('.ribbon')._drawn === true")
            drawn = page.evaluate("performance.now()")
            dcl.append(nav["domContentLoadedEventEnd"])
            load.append(nav["loadEventEnd"])
            ribbon.append(drawn)
            page.close()
        browser.close()
    return {"dcl": statistics.median(dcl), "load": statistics.median(load), "ribbon": statistics.median(ribbon)}


# Where the bytes go: each pattern's matches are counted, then cut out before the next one is tried.
SECTIONS = [
    ("block texts (JSON)", r'<script type="application/json" id="ctx-texts">.*?</script>'),
    ("style and script", r"<style>.*?</style>|<script>.*?</script>"),
    ("chart hover titles", r'<g class="hover">.*?</g>'),
    ("growth charts", r'<div class="chart-block growth">.*?</div>'),
    ("cache charts", r'<div class="chart-block cache">.*?</div>'),
    ("tool-loop timeline", r'<div class="chart-block timeline">.*?</div>'),
    ("requests table", r'<table class="requests">.*?</table>'),
    ("tool-call table", r'<table class="tool-calls">.*?</table>'),
    ("side and error tables", r'<table class="(?:side-requests|errors)">.*?</table>'),
    ("overview and sessions tables", r'<table class="(?:clients|purposes|error-layers|sessions)">.*?</table>'),
]


def size_by_section(html: str) -> dict[str, int]:
    """Bytes of a report by section (the block data split into ribbon rows and block occurrences)."""
    out: dict[str, int] = {}
    match = re.search(r'<script type="application/json" id="ctx-data">(.*?)</script>', html, re.S)
    if match:
        data = json.loads(match.group(1))
        ribbons = len(json.dumps(data.get("ribbons", {}), separators=(",", ":")).encode())
        out["ribbon rows (JSON)"] = ribbons
        out["block occurrences (JSON)"] = len(match.group(0).encode()) - ribbons
        html = html.replace(match.group(0), "")
    for name, pattern in SECTIONS:
        out[name] = sum(len(m.group(0).encode()) for m in re.finditer(pattern, html, re.S))
        html = re.sub(pattern, "", html, flags=re.S)
    out["rest (headers, cards, notes)"] = len(html.encode())
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10_000], help="main-loop requests per session")
    parser.add_argument("--loads", type=int, default=5, help="page loads per report (median)")
    parser.add_argument("--max-size", type=float, default=5.0, help="the report's size bound in MB (ctxtap report --max-size)")
    parser.add_argument("--keep", type=Path, help="keep (and reuse) captures and reports in this directory")
    parser.add_argument("--breakdown", action="store_true", help="also print the bytes of each section")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="ctxtap-bench-report-"))
    os.environ.setdefault("CTXTAP_CONFIG_DIR", str(work / "config"))

    from ctxtap.reports.html.render import render_report
    from tests.synthetic import synthetic_capture

    rows = []
    for n in args.sizes:
        start = time.perf_counter()
        capture = synthetic_capture(work / f"s{n}", n)
        prepared = time.perf_counter() - start
        out = work / f"report-{n}.html"
        result = render_report([capture], out, max_bytes=int(args.max_size * 1_000_000), analyse=False)
        timing = measure_loads(out, args.loads) if CHROMIUM.exists() else None
        rows.append((n, result, prepared, timing, size_by_section(out.read_text(encoding="utf-8"))))

    print(f"{'session':<30}" + "".join(f"{f'{n:,} requests':>18}" for n, *_ in rows))
    lines = [
        ("requests in report", lambda r: f"{r[1].requests:,}"),
        ("aggregated", lambda r: "yes" if r[1].aggregated else "no"),
        ("distinct block texts", lambda r: f"{r[1].texts:,}"),
        ("texts truncated", lambda r: f"{r[1].truncated_texts:,}"),
        ("texts left out", lambda r: f"{r[1].left_out_texts:,}"),
        ("report size", lambda r: f"{r[1].bytes / 1e6:.2f} MB"),
        ("render time", lambda r: f"{r[1].seconds * 1000:.0f} ms"),
        ("renderings (plans)", lambda r: f"{r[1].plans}"),
        ("DOMContentLoaded", lambda r: f"{r[3]['dcl']:.0f} ms" if r[3] else "n/a"),
        ("load event", lambda r: f"{r[3]['load']:.0f} ms" if r[3] else "n/a"),
        ("first ribbon drawn", lambda r: f"{r[3]['ribbon']:.0f} ms" if r[3] else "n/a"),
        ("(HAR+import+analyse)", lambda r: f"{r[2]:.1f} s"),
    ]
    for label, value in lines:
        print(f"{label:<30}" + "".join(f"{value(r):>18}" for r in rows))
    if args.breakdown:
        print(f"\n{'bytes by section':<30}" + "".join(f"{f'{n:,} requests':>18}" for n, *_ in rows))
        for name in rows[0][4]:
            print(f"{name:<30}" + "".join(f"{r[4][name]:>18,}" for r in rows))
    if not CHROMIUM.exists():
        print("Chromium not found at /usr/bin/chromium: load times not measured (apt-get install chromium)")
    biggest = max(rows, key=lambda r: r[0])
    if biggest[3]:
        verdict = "within" if biggest[3]["load"] < TARGET_LOAD_MS else "over"
        print(f"{biggest[0]:,} requests: load {biggest[3]['load']:.0f} ms, {verdict} the {TARGET_LOAD_MS} ms target; "
              f"{biggest[1].bytes / 1e6:.2f} MB of {args.max_size:.2f} MB")
    print(f"medians of {args.loads} loads from file://, on {os.cpu_count()} cores (render and load are CPU-bound; "
          f"a shared machine's figures vary); files in {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
