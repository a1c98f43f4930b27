"""Evidence benchmark: what the evidence tables and the OpenTelemetry export cost, beside the build.

For synthetic Claude-Code-shaped sessions of growing length (tests/synthetic.py,
imported and analysed), prints side by side:
  1. the time of the exposures, network and retries table builders against the whole table
     phase (target: the three together <= 10% of it);
  2. `build_spans` + protobuf encoding time and spans per second for the whole capture;
  3. how both grow when the session grows 10x (target: <= 12x, i.e. linear).

Single-threaded Python: on a 2-core machine shared with other work the absolute figures are
CPU-bound and noisy; the ratios are what to read.

Run: .venv/bin/python benchmarks/bench_evidence.py [--sizes 100,1000]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

EVIDENCE_TABLES = ("exposures", "network", "retries")


def measure(capture: Path) -> dict:
    from ctxtap.analysis import build as build_mod
    from ctxtap.analysis.cache.cachecheck import CacheRules
    from ctxtap.analysis.cache.prices import PriceTable
    from ctxtap.analysis.db import connect
    from ctxtap.analysis.tables import TABLES
    from ctxtap.capture.store import Capture
    from ctxtap.reports.otel.otlp import to_request
    from ctxtap.reports.otel.spans import build_spans

    timings: dict[str, float] = {}
    originals = {t.name: t.build for t in TABLES}

    def timed(name, fn):
        def run(ctx):
            start = time.perf_counter()
            try:
                return fn(ctx)
            finally:
                timings[name] = timings.get(name, 0.0) + time.perf_counter() - start
        return run

    for i, t in enumerate(TABLES):
        TABLES[i] = type(t)(t.name, t.doc, t.columns, timed(t.name, originals[t.name]))
    try:
        build_mod.build(Capture.open(capture), PriceTable.load(None), CacheRules.load(None))
    finally:
        for i, t in enumerate(TABLES):
            TABLES[i] = type(t)(t.name, t.doc, t.columns, originals[t.name])
    con = connect([capture])
    start = time.perf_counter()
    spans = build_spans(con)
    wire = to_request(spans).SerializeToString()
    export_s = time.perf_counter() - start
    con.close()
    tables_s = sum(timings.values())
    evidence_s = sum(timings.get(n, 0.0) for n in EVIDENCE_TABLES)
    return {"tables_s": tables_s, "evidence_s": evidence_s, "share": evidence_s / tables_s if tables_s else 0.0,
            "by_table": {n: timings.get(n, 0.0) for n in EVIDENCE_TABLES},
            "spans": len(spans), "export_s": export_s, "wire_bytes": len(wire)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000", help="session lengths in requests (comma-separated)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory(prefix="ctxtap-bench-evidence-") as tmp:
        os.environ.setdefault("CTXTAP_CONFIG_DIR", str(Path(tmp) / "config"))
        from tests.synthetic import synthetic_capture

        results = []
        for n in sizes:
            capture = synthetic_capture(Path(tmp) / f"s{n}", n)
            results.append((n, measure(capture)))
    print(f"{'requests':>9} {'tables s':>9} {'evidence s':>11} {'share':>7} {'exposures':>10} {'network':>8} "
          f"{'retries':>8} {'spans':>7} {'export s':>9} {'spans/s':>9} {'OTLP KB':>8}")
    for n, r in results:
        t = r["by_table"]
        print(f"{n:>9} {r['tables_s']:>9.2f} {r['evidence_s']:>11.3f} {r['share']:>7.1%} {t['exposures']:>10.3f} "
              f"{t['network']:>8.3f} {t['retries']:>8.3f} {r['spans']:>7} {r['export_s']:>9.2f} "
              f"{r['spans'] / r['export_s']:>9.0f} {r['wire_bytes'] / 1024:>8.0f}")
    if len(results) >= 2:
        (n0, a), (n1, b) = results[0], results[-1]
        print(f"growth for {n1 / n0:.0f}x requests: evidence tables {b['evidence_s'] / max(a['evidence_s'], 1e-9):.1f}x, "
              f"export {b['export_s'] / max(a['export_s'], 1e-9):.1f}x (target <= {1.2 * n1 / n0:.0f}x)")
    worst = max(r["share"] for _, r in results)
    print(f"evidence tables' share of the table phase: at most {worst:.1%} (target <= 10%)")


if __name__ == "__main__":
    main()
