"""Replay benchmark: how closely `ctxtap replay` reproduces the recorded timing, side by side.

Records one simulated Claude Code session (SSE, 20 ms between events) through the real proxy to
the scripted model server, then replays it with `ctxtap replay CAPTURE -- python -m ctxtap.demo
claude` at --speed 1, 2 and 0, and prints for each run against the recording:
  - streaming time (first to last body byte, summed over the streamed responses) and its ratio
    to the recording scaled by the speed (target: 0.9-1.2 at speed 1 and 2);
  - the median per-stream error against the recorded duration / speed;
  - time to first byte (request end to first byte), median;
  - wall time of the whole replayed run (the CLI's own work included).
The replayed run goes through two extra local hops (cassette server, proxy) on a 2-core machine
shared with other work: the overhead figures are CPU-bound and noisy there.

Run: .venv/bin/python benchmarks/bench_replay.py
Everything talks to 127.0.0.1 only.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ctxtap.capture.store import Capture  # noqa: E402
from tests.replaycaptures import record, replay  # noqa: E402


def _streams(capture: Path) -> list[dict]:
    return [f for f in Capture.open(capture).flows().to_pylist() if f["is_model"] and f["streamed"]]


def _duration(f: dict) -> float:
    return f["ts_response_end"] - f["ts_first_byte"]


def _ttfb(f: dict) -> float:
    return f["ts_first_byte"] - (f["ts_request_end"] or f["ts_request_start"])


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="ctxtap-bench-replay-"))
    config = work / "config"
    config.mkdir()
    os.environ["CTXTAP_CONFIG_DIR"] = str(config)
    started = time.perf_counter()
    source = record(work / "recorded", config, "claude", chunk_delay_s=0.02)
    recorded_wall = time.perf_counter() - started
    base = _streams(source)
    total = sum(_duration(f) for f in base)
    print(f"recorded: {len(base)} streamed responses, streaming {total:.2f} s, "
          f"ttfb median {statistics.median(_ttfb(f) for f in base) * 1000:.0f} ms, wall {recorded_wall:.1f} s "
          f"(recording included)")
    print(f"{'speed':>6} {'streaming s':>12} {'ratio':>6} {'median err ms':>14} {'ttfb ms':>8} {'wall s':>7}  result")
    for speed in (1.0, 2.0, 0.0):
        out = work / f"replay-{speed:g}"
        t0 = time.perf_counter()
        result = replay(source, out, config, "--strict", "--speed", f"{speed:g}")
        wall = time.perf_counter() - t0
        runs = _streams(out)
        got = sum(_duration(f) for f in runs)
        wanted = total / speed if speed else 0.0
        ratio = f"{got / wanted:.2f}" if wanted else "-"
        errors = [abs(_duration(b) - (_duration(a) / speed if speed else 0.0)) for a, b in zip(base, runs, strict=False)]
        ttfb = statistics.median(_ttfb(f) for f in runs) * 1000
        status = "ok" if result.returncode == 0 else f"exit {result.returncode}"
        print(f"{speed:>6g} {got:>12.2f} {ratio:>6} {statistics.median(errors) * 1000:>14.1f} {ttfb:>8.0f} "
              f"{wall:>7.1f}  {status}")


if __name__ == "__main__":
    main()
