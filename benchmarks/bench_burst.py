"""Burst benchmark: many concurrent streaming clients through ctxtap proxy and bare mitmdump.

N keep-alive clients (default 50) start at once and send SSE requests back to back for S
seconds (default 30) through a fresh proxy to a scripted model server on loopback. The
same run measures `ctxtap proxy` and bare `mitmdump` with only the routing addon, in
alternating rounds (bare, ctxtap, ctxtap, bare, ...) so drift on a shared machine hits
both alike. Prints per side: completed requests per second, errors (with their messages
and how many fell in the proxy's first second), and CPU milliseconds per request of the
proxy process and, for ctxtap, of its writer process; then the throughput ratio
ctxtap / bare (target >= 0.95, zero errors on both sides).

On a 2-core machine the clients, the model server, the proxy and ctxtap's writer share
the cores: when the run is CPU-bound (the CPU columns tell), the writer's redaction
competes with forwarding and the ratio reflects that, not a stall in the proxy.

With `--fresh N` it measures a fresh proxy's first seconds instead: N times per side, a new
proxy is started and the burst begins the moment its port accepts a connection (polled every
millisecond; `ctxtap proxy` on a port chosen beforehand, its announcement read from its stdout
file then), for `--seconds` (default 5). Each error is printed with its kind and when it came
after the port accepted (target: 0 errors in 10 fresh bursts).

Run: .venv/bin/python benchmarks/bench_burst.py [--clients 50] [--seconds 30] [--rounds 2] [--quick]
                                                [--fresh N]
Everything talks to 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import signal
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_proxy import Bare, Ctx, cpu_seconds, start_model_server  # noqa: E402

from tests.burst import run_burst  # noqa: E402
from tests.proxyharness import start_fresh_proxy  # noqa: E402


def machine_busy() -> tuple[float, float]:
    """(busy, total) jiffies of all cores since boot, from /proc/stat."""
    values = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    return sum(values) - idle, sum(values)


def own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def children(pid: int) -> list[int]:
    out = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        out += [int(x) for x in task.read_text().split()]
    return out


def one_round(name: str, tmp: Path, confdir: Path, clients: int, seconds: float) -> dict:
    server, url = start_model_server({"steps": [{"text": "hello from the burst"}]})
    proxy = (Bare(confdir / "ca", url) if name == "bare"
             else Ctx(confdir, url, tmp / f"burst-{time.monotonic_ns()}"))
    helpers = children(proxy.pid)
    try:
        def sample():
            return (cpu_seconds(proxy.pid), sum(cpu_seconds(p) for p in helpers), cpu_seconds(server.pid),
                    own_cpu(), *machine_busy())

        before = sample()
        result = run_burst(proxy.port, str(confdir / "ca" / "ctxtap-ca-bundle.pem"), clients=clients,
                           seconds=seconds)
        after = sample()
    finally:
        proxy.stop()
        server.send_signal(signal.SIGTERM)
        server.wait(30)
    done = max(result.ok, 1)
    ms = [(a - b) * 1000 / done for a, b in zip(after[:4], before[:4], strict=True)]
    return {"rate": result.rate, "ok": result.ok, "errors": result.errors,
            "early": sum(1 for t in result.first_error_at if t < 1.0),
            "proxy_ms": ms[0], "writer_ms": ms[1], "server_ms": ms[2], "client_ms": ms[3],
            "busy": (after[4] - before[4]) / max(after[5] - before[5], 1)}


def fresh_round(name: str, tmp: Path, confdir: Path, clients: int, seconds: float) -> tuple[object, float]:
    """One burst that starts the moment a new proxy's port accepts: (result, seconds to accept)."""
    server, url = start_model_server({"steps": [{"text": "hello from the burst"}]})
    t0 = time.monotonic()
    try:
        if name == "bare":
            proxy = Bare(confdir / "ca", url)  # polls the port, returns at its first accept
        else:
            proxy = start_fresh_proxy(tmp / f"fresh-{time.monotonic_ns()}", confdir, [f"api.anthropic.com={url}"])
        started = time.monotonic() - t0
        try:
            result = run_burst(proxy.port, str(confdir / "ca" / "ctxtap-ca-bundle.pem"), clients=clients,
                               seconds=seconds)
        finally:
            proxy.stop()
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(30)
    return result, started


def main_fresh(tmp: Path, confdir: Path, n: int, clients: int, seconds: float) -> None:
    print(f"ctxtap fresh-proxy bursts: {n} per side, {clients} keep-alive SSE clients starting the moment the "
          f"port accepts, {seconds:.0f} s each, Python {sys.version.split()[0]}, {os.cpu_count()} cores")
    totals: dict[str, Counter] = {"bare": Counter(), "ctxtap": Counter()}
    oks: dict[str, int] = {"bare": 0, "ctxtap": 0}
    for i in range(n):
        for name in (("bare", "ctxtap"), ("ctxtap", "bare"))[i % 2]:
            result, started = fresh_round(name, tmp, confdir, clients, seconds)
            totals[name] += result.errors
            oks[name] += result.ok
            when = ", ".join(f"{t:.2f}" for t in sorted(result.first_error_at)[:10])
            print(f"  burst {i + 1:2d} {name:<7} port accepted after {started:4.1f} s; {result.summary()}"
                  + (f"; errors at {when} s" if when else ""), flush=True)
    print()
    for name in ("bare", "ctxtap"):
        errs = "; ".join(f"{k}x {m[:100]}" for m, k in totals[name].most_common()) or "none"
        print(f"  {name:<7} {sum(totals[name].values())} errors in {n} fresh bursts, {oks[name]} requests ok: {errs}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--rounds", type=int, default=2, help="rounds per side (alternating)")
    parser.add_argument("--quick", action="store_true", help="20 clients, 8 s, 1 round: a smoke run")
    parser.add_argument("--fresh", type=int, default=0, metavar="N",
                        help="N bursts per side, each starting the moment a new proxy's port accepts")
    args = parser.parse_args()
    if args.quick:
        args.clients, args.seconds, args.rounds = 20, 8.0, 1
    tmp = Path(tempfile.mkdtemp(prefix="ctxtap-bench-burst-"))
    confdir = tmp / "config"
    confdir.mkdir()
    os.environ["CTXTAP_CONFIG_DIR"] = str(confdir)
    try:
        Ctx(confdir, "http://127.0.0.1:9", tmp / "warmup").stop()  # create the CA outside the measurement
        if args.fresh:
            main_fresh(tmp, confdir, args.fresh, args.clients, args.seconds if args.seconds != 30.0 else 5.0)
            return
        print(f"ctxtap burst benchmark: {args.clients} keep-alive SSE clients, {args.seconds:.0f} s per round, "
              f"{args.rounds} round(s) per side, Python {sys.version.split()[0]}, {os.cpu_count()} cores")
        order = [("bare", "ctxtap"), ("ctxtap", "bare")]
        rows: dict[str, list[dict]] = {"bare": [], "ctxtap": []}
        for i in range(args.rounds):
            for name in order[i % 2]:
                row = one_round(name, tmp, confdir, args.clients, args.seconds)
                rows[name].append(row)
                errs = ", ".join(f"{n}x {m[:80]}" for m, n in row["errors"].most_common()) or "none"
                print(f"  round {i + 1} {name:<7} {row['rate']:7.1f} req/s  {row['ok']:6d} ok  errors: {errs}  "
                      f"cpu/request: proxy {row['proxy_ms']:.2f} ms"
                      + (f", writer {row['writer_ms']:.2f} ms" if name == "ctxtap" else "")
                      + f", server {row['server_ms']:.2f} ms, clients {row['client_ms']:.2f} ms;  "
                      f"machine {row['busy'] * 100:.0f}% busy", flush=True)
        print()
        for name in ("bare", "ctxtap"):
            errors: Counter = sum((r["errors"] for r in rows[name]), Counter())
            early = sum(r["early"] for r in rows[name])
            print(f"  {name:<7} median {statistics.median(r['rate'] for r in rows[name]):7.1f} req/s   "
                  f"errors {sum(errors.values())} ({early} in a fresh proxy's first second)   "
                  f"cpu/request proxy {statistics.median(r['proxy_ms'] for r in rows[name]):.2f} ms"
                  + (f" + writer {statistics.median(r['writer_ms'] for r in rows[name]):.2f} ms"
                     if name == "ctxtap" else ""))
        bare = statistics.median(r["rate"] for r in rows["bare"])
        ctx = statistics.median(r["rate"] for r in rows["ctxtap"])
        print(f"  throughput ratio ctxtap / bare {ctx / bare:.3f}  (target >= 0.95, zero errors on both sides)")

        def total_ms(r: dict) -> float:
            return r["proxy_ms"] + r["writer_ms"] + r["server_ms"] + r["client_ms"]

        eff = {n: statistics.median(1000 / total_ms(r) for r in rows[n]) for n in rows}
        busy = max(r["busy"] for n in rows for r in rows[n])
        print(f"  requests per CPU-second of all processes (clients, server, proxy, writer): bare {eff['bare']:.0f}, "
              f"ctxtap {eff['ctxtap']:.0f}, ratio {eff['ctxtap'] / eff['bare']:.3f}")
        if busy > 0.9:
            print(f"  note: the machine was up to {busy * 100:.0f}% busy: the run is CPU-bound on "
                  f"{os.cpu_count()} cores, so throughput follows CPU per request and the share other "
                  f"processes leave; the per-CPU-second ratio is the figure that holds under that load")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
