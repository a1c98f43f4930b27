"""Personal-data redaction throughput and publish time.

`--redact pii` runs `redaction.layered.LayeredRedactor` on the writer thread
next to credential redaction, so its MB/s says how much it slows recording;
publish time says how long a user waits for attachments (most of it is
detect-secrets, the independent final scan).

    python benchmarks/bench_publish.py                # MB/s per body, overall; publish seconds per real run
    python benchmarks/bench_publish.py --min-mbps 3   # exit 1 below 3 MB/s (PII pass alone)
    python benchmarks/bench_publish.py --turns 20 --no-publish   # publish vs analyze, 489 requests
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_redaction import agent_body, real_bodies, sse_body  # noqa: E402
from ctxtap.redaction.layered import LayeredRedactor  # noqa: E402
from ctxtap.redaction.personal.pii import PiiRedactor  # noqa: E402

ENV_BLOCK = (
    "Primary working directory: /home/alice/work/demo-repo\nGit user: Alice Liddell\n"
    "origin\tgit@github.com:alice-liddell/demo-repo.git (fetch)\n"
)


def measure(make, data: bytes, repeat: int) -> float:
    """Best-of-`repeat` MB/s, a fresh redactor each time (as for a new capture)."""
    best = float("inf")
    for _ in range(repeat):
        redactor = make()
        redactor.redact_text(ENV_BLOCK)  # the identity a real capture teaches in its first request
        start = time.perf_counter()
        redactor.redact_bytes(data)
        best = min(best, time.perf_counter() - start)
    return len(data) / best / 1e6


def publish_times() -> list[tuple[str, float]]:
    base = ROOT.parent / "shared" / "real-clients"
    if not (base / "README.md").exists():
        return []
    os.environ.setdefault("CTXTAP_CONFIG_DIR", tempfile.mkdtemp(prefix="ctxtap-bench-"))
    from ctxtap.capture.paths import redaction_key
    from ctxtap.ingest.importer import import_files
    from ctxtap.reports.publish.publisher import publish

    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for flows in sorted(base.glob("*/*/flows.mitm")):
            name = f"{flows.parent.parent.name}/{flows.parent.name}"
            capture = Path(tmp) / name.replace("/", "-")
            import_files([flows], capture, redaction_key())
            start = time.perf_counter()
            publish(capture, Path(tmp) / f"{capture.name}-published")
            out.append((name, time.perf_counter() - start))
    return out


def publish_against_analyze(turns: int, repeat: int) -> None:
    """`ctxtap analyze --force` and `ctxtap publish` as whole processes on one demo capture of
    `turns` turns per client (20: 489 requests), medians side by side, and the output's size
    against the capture's Parquet plus the Markdown attachments' text."""
    import statistics
    import subprocess

    cli = [sys.executable, "-m", "ctxtap.cli"]
    env = {**os.environ, "CTXTAP_CONFIG_DIR": os.environ.get("CTXTAP_CONFIG_DIR")
           or tempfile.mkdtemp(prefix="ctxtap-bench-")}
    with tempfile.TemporaryDirectory() as tmp:
        capture = Path(tmp) / "demo"
        subprocess.run([*cli, "demo", "--turns", str(turns), "-o", str(capture)], env=env, check=True,
                       capture_output=True)
        times: dict[str, list[float]] = {"analyze": [], "publish": []}
        for i in range(repeat):  # interleaved, so drift on a shared machine hits both alike
            for name, args in (("analyze", ["analyze", "--force", str(capture)]),
                               ("publish", ["publish", str(capture), "-o", str(Path(tmp) / f"pub{i}")])):
                start = time.perf_counter()
                subprocess.run([*cli, *args], env=env, check=True, capture_output=True)
                times[name].append(time.perf_counter() - start)
        requests = subprocess.run([*cli, "sql", str(capture), "SELECT count(*) AS n FROM requests", "--format",
                                   "csv"], env=env, check=True, capture_output=True, text=True).stdout.split()[-1]
        parquet = sum(p.stat().st_size for p in capture.glob("*.parquet"))
        out = Path(tmp) / "pub0"
        md = sum(p.stat().st_size for p in out.glob("*.md"))
        total = sum(p.stat().st_size for p in out.iterdir())
    a, p = statistics.median(times["analyze"]), statistics.median(times["publish"])
    print(f"demo capture, {turns} turns per client: {requests} requests; medians of {repeat} (2 cores, CPU-bound)")
    print(f"  analyze --force {a:6.2f} s   publish {p:6.2f} s   ratio {p / a:4.2f} (target <= 2)")
    print(f"  published {total / 1e6:5.2f} MB   capture Parquet {parquet / 1e6:5.2f} MB + Markdown text "
          f"{md / 1e6:5.2f} MB = {(parquet + md) / 1e6:5.2f} MB")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--min-mbps", type=float, default=0.0, help="exit 1 if the PII figure is lower")
    parser.add_argument("--no-publish", action="store_true", help="skip timing publish on the real corpus")
    parser.add_argument("--turns", type=int, default=20,
                        help="publish against analyze on a demo capture of this many turns (0: skip)")
    args = parser.parse_args()
    if args.turns:
        publish_against_analyze(args.turns, args.repeat)

    cases = [
        ("agent 100 KB", agent_body(100_000, 1)),
        ("agent 1 MB", agent_body(1_000_000, 3)),
        ("agent 300 KB + .env secrets", agent_body(300_000, 4, with_secrets=True)),
        ("agent 1 MB + screenshot", agent_body(1_000_000, 5, with_image=True)),
        ("sse response 300 KB", sse_body(300_000, 6)),
        *real_bodies(),
    ]
    totals = {"pii": [0, 0.0], "layered": [0, 0.0]}
    print(f"{'body':40s} {'size':>8s} {'pii MB/s':>9s} {'pii+creds':>10s}")
    for name, data in cases:
        pii = measure(lambda: PiiRedactor(b"\x00" * 32, "bench"), data, args.repeat)
        both = measure(lambda: LayeredRedactor(b"\x00" * 32, "bench"), data, args.repeat)
        for key, mbps in (("pii", pii), ("layered", both)):
            totals[key][0] += len(data)
            totals[key][1] += len(data) / (mbps * 1e6)
        print(f"{name:40s} {len(data) / 1e3:6.0f} KB {pii:9.1f} {both:10.1f}")
    overall = {k: n / s / 1e6 for k, (n, s) in totals.items()}
    print(f"{'overall':40s} {'':8s} {overall['pii']:9.1f} {overall['layered']:10.1f}")
    if not args.no_publish:
        for name, seconds in publish_times():
            print(f"publish {name:32s} {seconds:6.2f} s")
    return 1 if overall["pii"] < args.min_mbps else 0


if __name__ == "__main__":
    raise SystemExit(main())
