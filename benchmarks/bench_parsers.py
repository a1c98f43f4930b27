"""Benchmark (not a test): context blocks parsed per second over the real-client corpus.

Run: .venv/bin/python benchmarks/bench_parsers.py [--repeat N]

Flows are converted to `Exchange` objects once (mitmproxy decoding is not
measured); the timed part is `parse_exchanges` over every flow of every run,
i.e. request parsing, attribution, hashing, response reassembly, usage, errors,
purpose and identity.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ctxtap.analysis.parsing.parse import parse_exchanges  # noqa: E402
from tests import corpus  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20, help="passes over the corpus (default 20)")
    args = parser.parse_args()
    if not corpus.available():
        print(f"skipped: {corpus.SKIP_REASON}")
        return 0
    exchanges = [ex for run in corpus.RUNS for ex in corpus.load_run(run)]
    request_bytes = sum(
        len(ex.request_body or b"") + sum(len(m.content) for m in ex.ws_messages if m.from_client)
        for ex in exchanges
    )
    list(parse_exchanges(exchanges))  # warm-up: imports, regex compilation
    calls = blocks = 0
    best = float("inf")
    for _ in range(args.repeat):
        start = time.perf_counter()
        parsed = list(parse_exchanges(exchanges))
        elapsed = time.perf_counter() - start
        best = min(best, elapsed)
        calls = len(parsed)
        blocks = sum(len(c.request.blocks) for c in parsed)
    print(
        f"corpus: {len(exchanges)} flows, {calls} model calls, {blocks} blocks, {request_bytes / 1e6:.2f} MB of requests"
    )
    print(f"best of {args.repeat}: {best * 1000:.1f} ms per pass")
    print(
        f"{blocks / best:,.0f} blocks/s, {calls / best:,.0f} model calls/s, {request_bytes / best / 1e6:.1f} MB/s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
