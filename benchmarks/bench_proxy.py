"""Proxy benchmark: ctxtap proxy against bare mitmdump, side by side, on loopback.

Prints, for one run:
  1. first-chunk latency (p50, p99) of SSE responses and the ratio ctxtap / bare
     (target <= 1.05 at p50), and streaming throughput (target >= 0.9x), with what the
     writer child did meanwhile: how far its memory grew (its backlog), its share of a
     core, and how long after the client's end it was still redacting; and the CPU seconds of
     every process of each run (client, model server, proxy, writer up to the client's end),
     which tell where the machine's cores, not the proxy, set the pace; and the same stream
     paced by the server (cores to spare), where the writer's work costs forwarding nothing;
     the CPU-bound cap: ctxtap's processes spending S core-seconds on B bytes can move them no
     faster than B / (S / cores), so the benchmark says where two cores are the limit;
     throughput figures are medians of `--rounds` interleaved runs (default 3);
  2. capture bytes on disk against a HAR of the same flows for a 100-turn
     session (target <= 0.1);
  3. memory after 1,000 flows with 1 MB bodies: the proxy process and its writer
     child, alone and together, against bare mitmdump (target <= 1.5x together): the
     sum of their peaks (an upper bound), and what the two hold with the library pages
     both map counted once, after 500 and 1,000 flows and at its highest (sampled every
     50 ms: the figure for "together"); and RSS after 500 vs 1,000 flows (flat).

Run: .venv/bin/python benchmarks/bench_proxy.py [--quick] [--memory-only | --stream-only]
                                                [--event-bytes N] [--rounds N]
The big streams carry 8 KB of text per event (a byte-throughput test); `--event-bytes 100`
makes them token-sized, where mitmproxy's cost per chunk sets the pace of both proxies.
Everything talks to 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ctxtap.capture.writer_proc import MAX_BACKLOG_BYTES, MAX_HELD_BYTES  # noqa: E402
from ctxtap.modelserver.client import HttpClient  # noqa: E402
from tests.proxyharness import ctxtap_env, start_proxy  # noqa: E402

BIN = Path(sys.executable).parent
PACED_DELAY_S = 0.0003


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_model_server(script: dict | str = "basic", chunk_delay: float = 0.0) -> tuple[subprocess.Popen, str]:
    arg = json.dumps(script) if isinstance(script, dict) else script
    proc = subprocess.Popen([sys.executable, "-m", "ctxtap.modelserver", "--port", "0", "--script", arg,
                             "--chunk-delay", str(chunk_delay)], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    url = proc.stdout.readline().strip()
    return proc, url


class Bare:
    """Bare mitmdump with streaming enabled and only the routing addon."""

    def __init__(self, confdir: Path, upstream: str) -> None:
        self.port = free_port()
        cmd = [str(BIN / "mitmdump"), "-q", "--listen-host", "127.0.0.1", "-p", str(self.port),
               "--set", f"confdir={confdir}", "--set", "stream_large_bodies=1",
               "--set", "connection_strategy=lazy", "-s", str(ROOT / "proxy_addons" / "router.py"),
               "--set", f"ctxtap_route=api.anthropic.com={upstream}"]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("mitmdump did not start")

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(60)


class Ctx:
    def __init__(self, confdir_parent: Path, upstream: str, out: Path) -> None:
        self.pp = start_proxy(out, confdir_parent, [f"api.anthropic.com={upstream}"])
        self.port = self.pp.port

    @property
    def pid(self) -> int:
        return self.pp.proc.pid

    def stop(self) -> None:
        self.pp.stop(timeout=600)


def proc_mem(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) in KiB."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(("VmRSS", "VmHWM")):
            fields[line.split(":")[0]] = int(line.split()[1])
    return fields["VmRSS"], fields["VmHWM"]


def children(pid: int) -> list[int]:
    """Child process ids of `pid` (the writer child of a ctxtap proxy)."""
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        out += [int(c) for c in (task / "children").read_text().split()]
    return out


def _mappings(pid: int) -> list[tuple[str, dict[str, int]]]:
    """(backing file or "", {field: KiB}) of each mapping in /proc/PID/smaps."""
    out: list[tuple[str, dict[str, int]]] = []
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        head = line.split()
        if head and not head[0].endswith(":"):
            out.append((head[5] if len(head) > 5 and head[5].startswith("/") else "", {}))
        elif out and len(head) >= 2 and head[1].isdigit():
            out[-1][1][head[0].rstrip(":")] = int(head[1])
    return out


def pair_kib(proxy: int, writer: int) -> int:
    """RSS of the proxy and its writer with the file pages both map (libpython, libcrypto...) counted
    once: what the two hold together, where a sum of their RSS counts those pages twice."""
    files = {f for f, _ in _mappings(proxy) if f}
    extra = sum(m.get("Private_Clean", 0) + m.get("Private_Dirty", 0) if f in files else m.get("Rss", 0)
                for f, m in _mappings(writer))
    return proc_mem(proxy)[0] + extra


PAIR_INTERVAL_S = 0.05


def tree_mem(pid: int) -> dict[str, tuple[int, int]]:
    """{"proxy": (VmRSS, VmHWM), "writer": ...} in KiB: the process and (summed) its children."""
    rows = {"proxy": proc_mem(pid)}
    kids = [proc_mem(c) for c in children(pid)]
    if kids:
        rows["writer"] = (sum(k[0] for k in kids), sum(k[1] for k in kids))
    return rows


class PeakSampler:
    """The highest value of `measure()` while a block runs, sampled every `interval` seconds on a
    thread (the kernel keeps a peak RSS per process, but none of a process's growth over a given
    moment, nor of what two processes hold together)."""

    def __init__(self, measure, interval: float) -> None:
        self.measure, self.interval = measure, interval
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> PeakSampler:
        self.peak = self.measure()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.peak = max(self.peak, self.measure())
            except OSError:
                return


class WriterWatch:
    """Samples a ctxtap proxy's writer child while a stream runs: how far its memory grows (the
    backlog of bytes read but not yet redacted), its CPU, and how long after the client's end
    it is idle again (the redaction still owed when the response ended). Nothing for bare."""

    def __init__(self, proxy_pid: int) -> None:
        kids = children(proxy_pid)
        self.pid = kids[0] if kids else None
        self.rss = PeakSampler(lambda: proc_mem(self.pid)[0], 0.01) if self.pid is not None else None

    def __enter__(self) -> WriterWatch:
        if self.rss is not None:
            self.rss.__enter__()
            self.rest = self.rss.peak
            self.cpu0 = cpu_seconds(self.pid)
        return self

    def __exit__(self, *exc) -> None:
        self.end = time.perf_counter()
        if self.rss is None:
            return
        self.cpu1 = cpu_seconds(self.pid)  # CPU up to the client's end: its share of the stream
        last = self.cpu1
        self.idle = self.end
        while True:  # busy until its CPU stops moving for 50 ms
            time.sleep(0.05)
            now = cpu_seconds(self.pid)
            if now - last < 0.005:
                break
            last, self.idle = now, time.perf_counter()
        self.rss.__exit__(*exc)

    def summary(self, seconds: float) -> tuple[int, float, float]:
        """(KiB grown at most, share of a core while the stream ran, seconds busy after its end)."""
        return self.rss.peak - self.rest, (self.cpu1 - self.cpu0) / seconds, self.idle - self.end


class CpuSplit:
    """CPU seconds each process of a run spent between enter and exit (pid None: this process, the
    client). Where their sum approaches the cores the machine has, throughput is CPU-bound."""

    def __init__(self, pids: dict[str, int | None]) -> None:
        self.pids = pids
        self.seconds: dict[str, float] = {}

    def _now(self) -> dict[str, float]:
        own = resource.getrusage(resource.RUSAGE_SELF)
        return {k: own.ru_utime + own.ru_stime if p is None else cpu_seconds(p) for k, p in self.pids.items()}

    def __enter__(self) -> CpuSplit:
        self._start = self._now()
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc) -> None:
        self.wall = time.perf_counter() - self._t0  # the window the CPU was counted in (connect included)
        end = self._now()
        self.seconds = {k: end[k] - self._start[k] for k in self.pids}

    @classmethod
    def of(cls, proxy: int, server: int) -> CpuSplit:
        """The client (this process), the model server, the proxy and its writer child (bare has none)."""
        pids: dict[str, int | None] = {"client": None, "model server": server, "proxy": proxy}
        pids.update(("writer", kid) for kid in children(proxy)[:1])
        return cls(pids)


def cpu_seconds(pid: int) -> float:
    """utime + stime of one process (0 if it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def sse_request(port: int, ca: str, body: bytes, headers: Sequence[tuple[str, str]] = ()) -> tuple[float, float, int]:
    """(first-event latency, total time, bytes) of one streamed request through a proxy."""
    client = HttpClient("https://api.anthropic.com", proxy=f"http://127.0.0.1:{port}", ca_file=ca, timeout=120)
    client.request("GET", "/v1/models").body()  # connect + TLS outside the measurement
    t0 = time.perf_counter()
    resp = client.request("POST", "/v1/messages", body, [("content-type", "application/json"), *headers])
    first = None
    size = 0
    while True:
        chunk = resp.raw.read1(65536) if hasattr(resp.raw, "read1") else resp.raw.read(65536)
        if not chunk:
            break
        if first is None:
            first = time.perf_counter() - t0
        size += len(chunk)
    total = time.perf_counter() - t0
    client.close()
    return first or total, total, size


def bench_latency_throughput(tmp: Path, confdir: Path, n: int, stream_mb: int, event_bytes: int = 8192,
                             rounds: int = 3) -> None:
    small = {"steps": [{"text": "hello"}]}
    server, url = start_model_server(small)
    events = stream_mb * (1 << 20) // event_bytes
    big_server, big_url = start_model_server({"steps": [{"events": events, "event_bytes": event_bytes}]})
    # the same stream with the server pausing PACED_DELAY_S between events: the cores are not all busy
    paced_server, paced_url = start_model_server({"steps": [{"events": events, "event_bytes": event_bytes}]},
                                                 chunk_delay=PACED_DELAY_S)
    body = json.dumps({"model": "claude-haiku-4-5", "max_tokens": 5, "stream": True,
                       "messages": [{"role": "user", "content": "hi"}]}).encode()
    ca = str(confdir / "ca" / "ctxtap-ca-bundle.pem")
    results = {}
    try:
        for name in ("bare", "ctxtap") * rounds:  # interleaved to spread the machine's drift
            for label, upstream in (("latency", url), ("throughput", big_url), ("paced", paced_url)):
                proxy = (Bare(confdir / "ca", upstream) if name == "bare"
                         else Ctx(confdir, upstream, tmp / f"lat-{name}-{label}-{time.monotonic_ns()}"))
                try:
                    if label == "latency":
                        firsts = [sse_request(proxy.port, ca, body)[0] for _ in range(n)]
                        results.setdefault((name, "first"), []).extend(firsts)
                    else:
                        paced = label == "paced"
                        split = CpuSplit.of(proxy.pid, (paced_server if paced else big_server).pid)
                        with WriterWatch(proxy.pid) as watch, split:
                            _, total, size = sse_request(proxy.port, ca, body)
                        results.setdefault((name, label), []).append((size / total / 1e6, split.wall, split.seconds,
                                                                      size))
                        if name == "ctxtap" and not paced:
                            results.setdefault(("ctxtap", "writer"), []).append(watch.summary(total))
                finally:
                    proxy.stop()
    finally:
        for p in (server, big_server, paced_server):
            p.send_signal(signal.SIGTERM)
            p.wait(30)
    b50, c50 = statistics.median(results[("bare", "first")]), statistics.median(results[("ctxtap", "first")])
    b99, c99 = pct(results[("bare", "first")], 0.99), pct(results[("ctxtap", "first")], 0.99)
    bt, ct = (statistics.median(r[0] for r in results[(side, "throughput")]) for side in ("bare", "ctxtap"))
    bb, cb = (max(r[0] for r in results[(side, "throughput")]) for side in ("bare", "ctxtap"))
    print("\n1. streaming through the proxy (SSE, HTTPS, loopback)")
    print(f"   first-chunk latency p50   bare {b50 * 1000:7.2f} ms   ctxtap {c50 * 1000:7.2f} ms   "
          f"ratio {c50 / b50:.3f}  (target <= 1.05)")
    print(f"   first-chunk latency p99   bare {b99 * 1000:7.2f} ms   ctxtap {c99 * 1000:7.2f} ms   "
          f"ratio {c99 / b99:.3f}")
    print(f"   throughput ({stream_mb} MB stream, {events} events of {event_bytes} B, median of {rounds}) bare {bt:7.1f} MB/s"
          f"  ctxtap {ct:7.1f} MB/s  ratio {ct / bt:.3f}  (target >= 0.9; best of each: {cb / bb:.3f})")
    print(f"   CPU seconds of each process while the stream ran ({os.cpu_count()} cores: as many core-seconds "
          "per wall second):")
    _print_cpu(results, "throughput")
    print(cpu_cap(results["bare", "throughput"], results["ctxtap", "throughput"], ct / bt))
    pb = statistics.median(r[0] for r in results[("bare", "paced")])
    pc = statistics.median(r[0] for r in results[("ctxtap", "paced")])
    print(f"   paced stream (the server waits {PACED_DELAY_S * 1000:.1f} ms between events, median of {rounds}): "
          f"bare {pb:.1f} MB/s  ctxtap {pc:.1f} MB/s  ratio {pc / pb:.3f}")
    _print_cpu(results, "paced")
    for grown, cpu, lag in results[("ctxtap", "writer")]:
        print(f"   writer child during a ctxtap run: RSS {grown / 1024:+.1f} MiB over its rest at most (a stream's "
              f"chunks held up to {MAX_HELD_BYTES >> 20} MiB, its backlog up to {MAX_BACKLOG_BYTES >> 20} MiB), "
              f"{cpu:.0%} of a core, done {lag * 1000:.0f} ms after the "
              "client's last byte")


def cpu_cap(bare: list[tuple], ctxtap: list[tuple], ratio: float) -> str:
    """Where the cores, not the proxy, set the pace. A run can go no faster than its CPU seconds
    spread over every core allow: ctxtap's processes (client, model server, proxy, writer)
    spending S core-seconds on a stream of B bytes cap it at B / (S / cores), however the
    work is scheduled. Below 0.9 of bare's throughput (over the same window, connect and TLS
    included), that cap, not the proxy, is the limit (medians of the runs)."""
    def med(runs: list[tuple], f: Callable[[tuple], float]) -> float:
        return statistics.median(f(run) for run in runs)

    cores = os.cpu_count() or 1
    # both over the window the CPU was counted in (connect and TLS included), not the stream alone
    bare_mbps = med(bare, lambda r: r[3] / 1e6 / r[1])
    bare_s, ctx_s = (med(runs, lambda r: sum(r[2].values())) for runs in (bare, ctxtap))
    bare_busy, ctx_busy = (med(runs, lambda r: sum(r[2].values()) / r[1]) for runs in (bare, ctxtap))
    writer = med(ctxtap, lambda r: r[2].get("writer", 0.0))
    cap = med(ctxtap, lambda r: r[3] / 1e6 / (sum(r[2].values()) / cores)) / bare_mbps
    line = (f"   CPU: bare's processes spend {bare_s:.2f} core-s on the stream ({bare_busy:.2f} of {cores} cores busy),"
            f" ctxtap's {ctx_s:.2f} ({ctx_busy:.2f} busy; the writer {writer:.2f}: it hashes, joins, redacts and"
            f" stores every byte).\n"
            f"   On {cores} cores ctxtap's CPU seconds allow at most {cap:.3f} of bare's throughput; measured {ratio:.3f}: ")
    if cap < 0.9:
        return line + f"{cores} cores are the limit here, not the proxy."
    if ratio >= 0.9:
        return line + "the target is met."
    return line + (f"the {cores} cores' total would allow the target; what holds it under is how the processes"
                   " share them (the proxy forwards on one thread), or the machine's drift between runs.")


def _print_cpu(results: dict, kind: str) -> None:
    for side in ("bare", "ctxtap"):
        for mbps, wall, seconds, _ in results[(side, kind)]:
            busy = sum(seconds.values())
            print(f"     {side:6s} {mbps:6.1f} MB/s  " + "  ".join(f"{k} {v:.2f}" for k, v in seconds.items())
                  + f"  = {busy:.2f} s in {wall:.2f} s wall: {busy / wall:.2f} cores busy")


def bench_storage(tmp: Path, confdir: Path, turns: int) -> None:
    server, url = start_model_server({"steps": [{"text": "ok"}]})
    out = tmp / "storage"
    proxy = Ctx(confdir, url, out)
    rnd = random.Random(5)
    words = "the of and to in is that for it as with was on be by this are from at file src test".split()
    system = " ".join(rnd.choice(words) for _ in range(4000))
    tools = [{"name": f"tool{i}", "description": " ".join(rnd.choice(words) for _ in range(60)),
              "input_schema": {"type": "object", "properties": {"x": {"type": "string"}}}} for i in range(20)]
    messages: list[dict] = []
    ca = str(confdir / "ca" / "ctxtap-ca-bundle.pem")
    client = HttpClient("https://api.anthropic.com", proxy=f"http://127.0.0.1:{proxy.port}", ca_file=ca)
    try:
        for turn in range(turns):
            messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{turn}",
                             "content": " ".join(rnd.choice(words) for _ in range(300))}]})
            body = json.dumps({"model": "claude-sonnet-4-5", "max_tokens": 100, "stream": True,
                               "system": [{"type": "text", "text": system}], "tools": tools,
                               "messages": messages}).encode()
            client.request("POST", "/v1/messages?beta=true", body, [("content-type", "application/json"),
                           ("x-claude-code-session-id", "bench-session")]).body()
            messages.append({"role": "assistant", "content": [{"type": "text", "text": f"step {turn}"}]})
    finally:
        client.close()
        proxy.stop()
        server.send_signal(signal.SIGTERM)
        server.wait(30)
    har = tmp / "storage.har"
    subprocess.run([sys.executable, "-m", "ctxtap.cli.main", "export", str(out), "--har", str(har)], check=True,
                   env=ctxtap_env(confdir), cwd=ROOT, capture_output=True)
    capture_bytes = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    har_bytes = har.stat().st_size
    print(f"\n2. storage for a {turns}-turn session (history resent every turn)")
    print(f"   capture on disk {capture_bytes / 1e6:8.2f} MB   HAR of the same flows {har_bytes / 1e6:8.2f} MB   "
          f"ratio {capture_bytes / har_bytes:.3f}  (target <= 0.1)")


def drive_flows(port: int, ca: str, n: int, size: int, on_half=None) -> None:
    rnd = random.Random(9)
    alphabet = "abcdefghijklmnopqrstuvwxyz     \n"
    client = HttpClient("https://api.anthropic.com", proxy=f"http://127.0.0.1:{port}", ca_file=ca, timeout=120)
    for i in range(n):
        filler = "".join(rnd.choices(alphabet, k=size))
        body = json.dumps({"model": "claude-haiku-4-5", "max_tokens": 5,
                           "messages": [{"role": "user", "content": filler}]}).encode()
        client.request("POST", "/v1/messages", body, [("content-type", "application/json")]).body()
        if on_half and i == n // 2 - 1:
            on_half()
    client.close()


def bench_memory(tmp: Path, confdir: Path, n: int) -> None:
    server, url = start_model_server({"steps": [{"text": "ok"}]})
    ca = str(confdir / "ca" / "ctxtap-ca-bundle.pem")
    rows: dict[str, tuple[int, int, int]] = {}  # (RSS after n/2 flows, RSS after n, peak) in KiB
    pair: list[int] = []  # proxy + writer, shared library pages once, after n/2 and n flows, in KiB
    pair_peak = 0  # the same, highest while the flows ran (sampled)
    try:
        for name in ("bare", "ctxtap"):
            proxy = Bare(confdir / "ca", url) if name == "bare" else Ctx(confdir, url, tmp / "memory")
            half: dict = {}

            def measure(p=proxy, into=half) -> None:
                into.update(tree_mem(p.pid))
                kids = children(p.pid) if isinstance(p, Ctx) else []
                if kids:
                    pair.append(pair_kib(p.pid, kids[0]))

            sampler = None
            if isinstance(proxy, Ctx):
                pids = (proxy.pid, children(proxy.pid)[0])
                sampler = PeakSampler(lambda pids=pids: pair_kib(*pids), PAIR_INTERVAL_S)
            try:
                with sampler or contextlib.nullcontext():
                    drive_flows(proxy.port, ca, n, 1 << 20, on_half=measure)
                measure(into={})  # after n flows
                if sampler is not None:
                    pair_peak = sampler.peak
                for part, (rss, hwm) in tree_mem(proxy.pid).items():
                    label = "bare" if name == "bare" else f"ctxtap {part}"
                    rows[label] = (half[part][0], rss, hwm)
            finally:
                proxy.stop()
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(60)
    if "ctxtap writer" in rows:
        proxy_row, writer_row = rows["ctxtap proxy"], rows["ctxtap writer"]
        rows["ctxtap together"] = tuple(a + b for a, b in zip(proxy_row, writer_row, strict=True))  # type: ignore[assignment]
    print(f"\n3. memory, {n} flows with 1 MB request bodies (the writer child redacts and spools)")
    for name, (half_rss, rss, hwm) in rows.items():
        print(f"   {name:<16} RSS after {n // 2} flows {half_rss / 1024:7.1f} MiB   after {n} {rss / 1024:7.1f} MiB   "
              f"peak {hwm / 1024:7.1f} MiB")
    bare = rows["bare"][2]
    together = rows.get("ctxtap together", rows["ctxtap proxy"])
    print(f"   peak ratio: proxy alone / bare {rows['ctxtap proxy'][2] / bare:.2f}   "
          f"proxy + writer / bare {together[2] / bare:.2f}  (target <= 1.5; peaks summed, an upper bound)")
    if len(pair) == 2:
        print(f"   proxy + writer with the library pages both map counted once: after {n // 2} flows "
              f"{pair[0] / 1024:.1f} MiB, after {n} {pair[1] / 1024:.1f} MiB = {pair[1] / rows['bare'][1]:.2f} x bare's "
              f"RSS then; highest of it sampled every {PAIR_INTERVAL_S * 1000:.0f} ms during the run "
              f"{pair_peak / 1024:.1f} MiB = {pair_peak / bare:.2f} x bare's peak  (target <= 1.5)")
    print(f"   growth from {n // 2} to {n} flows: proxy + writer {(together[1] - together[0]) / 1024:+.1f} MiB, "
          f"bare {(rows['bare'][1] - rows['bare'][0]) / 1024:+.1f} MiB  (target: flat)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smaller sizes for a smoke run")
    parser.add_argument("--memory-only", action="store_true", help="only part 3 (memory)")
    parser.add_argument("--stream-only", action="store_true", help="only part 1 (latency and throughput)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="bare and ctxtap runs of each stream, interleaved (figures are medians)")
    parser.add_argument("--event-bytes", type=int, default=8192,
                        help="text per event of the big streams (a model's deltas are 5 to 50 bytes)")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="ctxtap-bench-"))
    confdir = tmp / "config"
    confdir.mkdir()
    os.environ["CTXTAP_CONFIG_DIR"] = str(confdir)
    try:
        # Create the CA once (first start) so neither side pays for it in the measurements.
        Ctx(confdir, "http://127.0.0.1:9", tmp / "warmup").stop()
        print(f"ctxtap proxy benchmark ({'quick' if args.quick else 'full'}), Python {sys.version.split()[0]}")
        if not args.memory_only:
            bench_latency_throughput(tmp, confdir, n=30 if args.quick else 200, stream_mb=5 if args.quick else 50,
                                     event_bytes=args.event_bytes, rounds=args.rounds)
        if not (args.memory_only or args.stream_only):
            bench_storage(tmp, confdir, turns=20 if args.quick else 100)
        if not args.stream_only:
            bench_memory(tmp, confdir, n=100 if args.quick else 1000)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
