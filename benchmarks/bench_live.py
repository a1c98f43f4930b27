"""Live-view benchmark: what the live view costs the proxy, how fast rows appear, how it scales.

Prints, for one run:
  1. proxy first-chunk latency p50 of SSE responses with and without `--live` plus a headless
     Chromium on a session page (asking for updates as a user's browser does), and their ratio
     (target <= 1.05): for requests elsewhere in the capture, and for the watched session's own
     requests (each one redraws the page), back to back and paced like an agent's;
  2. response end -> its row visible in the browser's timeline, p50 and p95 (target p95 < 1 s);
  3. `ctxtap serve` of a capture with N requests (10,000 by default, analysis already built):
     session list and session timeline load times (target < 1 s), and scrolling to its last row;
  4. the serve process's RSS after browsing a 1,000-request and an N-request capture (flat in N).

Run: .venv/bin/python benchmarks/bench_live.py [--quick]
Everything talks to 127.0.0.1 only. The machine's 2 cores are shared by the proxy, its writer
child, the live-view child, the model server, the client and Chromium: the latency ratio is
CPU-bound by that (the numbers say how busy the machine was: see the load average printed).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_proxy import pct, proc_mem, sse_request, start_model_server  # noqa: E402
from ctxtap.modelserver.client import HttpClient  # noqa: E402
from tests.proxyharness import ctxtap_env, start_proxy  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
UA = "claude-cli/2.1.0 (external, cli)"
AGENT_PAUSE_S = 0.4  # between an agent's requests (its tools run): brisk for a real agent


def live_url(lines: list[str], timeout: float = 120) -> str:
    """The URL `ctxtap proxy --live` printed (the view starts beside the proxy, so it may come later)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in list(lines):
            if "live view at " in line:
                return line.split("live view at ", 1)[1].strip()
        time.sleep(0.1)
    raise RuntimeError("no live view URL in the proxy's output:\n" + "".join(lines))


def session_body(turn: int) -> bytes:
    """Turn `turn` of a Claude-Code-shaped session: the history so far and the next step."""
    messages = []
    for k in range(turn):
        messages += [{"role": "user", "content": f"step {k}: list the files"},
                     {"role": "assistant", "content": f"done {k}"}]
    messages.append({"role": "user", "content": f"step {turn}: list the files"})
    return json.dumps({"model": "claude-sonnet-4-5", "max_tokens": 64, "stream": True,
                       "system": "You are a coding agent.", "messages": messages}).encode()


def session_headers(session: str) -> list[tuple[str, str]]:
    return [("user-agent", UA), ("x-claude-code-session-id", session)]


def session_request(port: int, ca: str, session: str, turn: int) -> float:
    """One streamed request of a Claude-Code-shaped session; returns when its response ended."""
    client = HttpClient("https://api.anthropic.com", proxy=f"http://127.0.0.1:{port}", ca_file=ca, timeout=60)
    resp = client.request("POST", "/v1/messages", session_body(turn),
                          [("content-type", "application/json"), *session_headers(session)])
    resp.body()
    end = time.perf_counter()
    client.close()
    return end


def open_session_page(page, url: str, base: str) -> None:
    page.goto(url)
    page.goto(f"{base}/c/0")
    page.wait_for_selector("#sessions .vrow", timeout=60_000)
    page.click("#sessions .vrow >> nth=0")
    page.wait_for_selector("#requests .vrow", timeout=60_000)


def bench_latency(tmp: Path, confdir: Path, n: int, browser, pairs: int = 3) -> None:
    server, upstream = start_model_server({"steps": [{"text": "hello"}]})
    body = json.dumps({"model": "claude-haiku-4-5", "max_tokens": 5, "stream": True,
                       "messages": [{"role": "user", "content": "hi"}]}).encode()
    ca = str(confdir / "ca" / "ctxtap-ca-bundle.pem")
    firsts: dict[str, list[float]] = {"plain": [], "live": []}
    watched: dict[str, list[float]] = {"plain": [], "live": []}  # requests of the session the page shows
    paced: dict[str, list[float]] = {"plain": [], "live": []}  # the same, paced like an agent
    visible: list[float] = []
    runs: dict[str, list[str]] = {"plain": [], "live": []}  # each run's p50s, to show the spread
    try:
        for mode in ("plain", "live") * pairs:  # interleaved to spread drift
            out = tmp / f"lat-{mode}-{time.monotonic_ns()}"
            pp = start_proxy(out, confdir, [f"api.anthropic.com={upstream}"], ["--live"] if mode == "live" else [])
            context = page = None
            session = str(uuid.uuid4())
            turns = range(1 + n // 4, 1 + n // 4 + n // 2)
            paced_turns = range(turns.stop, turns.stop + n // 4)
            try:
                if mode == "live":
                    url = live_url(pp.stdout_lines)
                    base = url.split("/?", 1)[0]
                    session_request(pp.port, ca, session, 0)
                    context = browser.new_context()
                    page = context.new_page()
                    open_session_page(page, url, base)
                    for turn in range(1, 1 + n // 4):  # 2. response end -> row visible
                        end = session_request(pp.port, ca, session, turn)
                        # row `turn` (0-based) drawn: the timeline follows its end as rows arrive
                        page.wait_for_selector(f"#requests .vrow[style*='top: {turn * 30}px']", timeout=30_000)
                        visible.append(time.perf_counter() - end)
                here = [sse_request(pp.port, ca, body)[0] for _ in range(n)]
                # the agent the page watches keeps going: every request grows the session on screen
                own = [sse_request(pp.port, ca, session_body(t), session_headers(session))[0] for t in turns]
                spaced = []
                for t in paced_turns:  # an agent runs its tools between requests: the page redraws meanwhile
                    time.sleep(AGENT_PAUSE_S)
                    spaced.append(sse_request(pp.port, ca, session_body(t), session_headers(session))[0])
                firsts[mode] += here
                watched[mode] += own
                paced[mode] += spaced
                runs[mode].append("/".join(f"{statistics.median(v) * 1000:.2f}" for v in (here, own, spaced)))
            finally:
                if context is not None:
                    context.close()
                pp.stop()
    finally:
        server.terminate()
        server.wait(30)
    p50 = {k: statistics.median(v) for k, v in firsts.items()}
    print(f"\n1. proxy first-chunk latency (SSE, HTTPS, loopback), without and with --live + a browser attached "
          f"({pairs} runs of each, interleaved)")
    print(f"   p50   plain {p50['plain'] * 1000:7.2f} ms   live+browser {p50['live'] * 1000:7.2f} ms   "
          f"ratio {p50['live'] / p50['plain']:.3f}  (target <= 1.05)")
    print(f"   p95   plain {pct(firsts['plain'], 0.95) * 1000:7.2f} ms   live+browser "
          f"{pct(firsts['live'], 0.95) * 1000:7.2f} ms")
    w50 = {k: statistics.median(v) for k, v in watched.items()}
    print(f"   the watched session's own requests, back to back (each one redraws the page): p50 plain "
          f"{w50['plain'] * 1000:7.2f} ms   live+browser {w50['live'] * 1000:7.2f} ms   ratio {w50['live'] / w50['plain']:.3f}")
    a50 = {k: statistics.median(v) for k, v in paced.items()}
    print(f"   the same, {AGENT_PAUSE_S:.1f} s apart as an agent's tool calls make them: p50 plain "
          f"{a50['plain'] * 1000:7.2f} ms   live+browser {a50['live'] * 1000:7.2f} ms   ratio {a50['live'] / a50['plain']:.3f}")
    for mode, label in (("plain", "plain"), ("live", "live+browser")):
        print(f"   p50 of each {label} run, ms (elsewhere/watched/paced): {'  '.join(runs[mode])}")
    print("\n2. response end -> its row visible in the browser's timeline "
          f"({len(visible)} requests)")
    print(f"   p50 {statistics.median(visible) * 1000:7.1f} ms   p95 {pct(visible, 0.95) * 1000:7.1f} ms   "
          "(target p95 < 1000 ms)")


def serve(capture: Path, confdir: Path) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "ctxtap.cli.main", "serve", str(capture)], env=ctxtap_env(confdir),
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    while True:
        line = proc.stderr.readline()
        if "live view at " in line:
            return proc, line.split("live view at ", 1)[1].strip()
        if not line:
            raise RuntimeError("ctxtap serve printed no URL")


def browse(browser, url: str) -> dict[str, float]:
    """Times to the first session row, to the first timeline rows, and to the last row after scrolling."""
    base = url.split("/?", 1)[0]
    context = browser.new_context(viewport={"width": 1300, "height": 1000})
    page = context.new_page()
    page.goto(url)
    t0 = time.perf_counter()
    page.goto(f"{base}/c/0")
    page.wait_for_selector("#sessions .vrow")
    sessions = time.perf_counter() - t0
    t0 = time.perf_counter()
    page.click("#sessions .vrow >> nth=0")
    page.wait_for_selector("#requests .vrow")
    timeline = time.perf_counter() - t0
    total = page.evaluate("fetch(location.pathname.replace('/c/0/session', '/api/c/0/requests') + location.search"
                          ".replace('?id=', '?session=') + '&limit=1').then(r => r.json()).then(d => d.total)")
    t0 = time.perf_counter()
    page.evaluate("var b = document.querySelector('#requests .vbody'); b.scrollTop = b.scrollHeight;")
    page.wait_for_selector(f"#requests .vrow[style*='top: {(total - 1) * 30}px']")
    scrolled = time.perf_counter() - t0
    context.close()
    return {"sessions": sessions, "timeline": timeline, "scroll_to_end": scrolled, "rows": total}


VISITS = 5


def bench_scale(tmp: Path, confdir: Path, n: int, browser) -> None:
    from tests.synthetic import synthetic_capture

    results = {}
    for size in (1000, n):
        t0 = time.perf_counter()
        capture = synthetic_capture(tmp / f"synth-{size}", size)
        built = time.perf_counter() - t0
        proc, url = serve(capture, confdir)
        try:
            browse(browser, url)  # the first visit warms caches; then as a user moving around, median of VISITS
            visits = [browse(browser, url) for _ in range(VISITS)]  # one visit's times vary by a quarter
            times = {key: statistics.median(v[key] for v in visits) for key in visits[0]}
            rss, hwm = proc_mem(proc.pid)
        finally:
            proc.terminate()
            proc.wait(30)
        results[size] = (times, rss, hwm, built)
    print(f"\n3. ctxtap serve over one session of N requests (analysis built beforehand; median of {VISITS} visits)")
    for size, (times, _rss, _hwm, built) in results.items():
        print(f"   N={size:>6,}  session list {times['sessions'] * 1000:6.0f} ms   timeline {times['timeline'] * 1000:6.0f} ms"
              f"   scroll to row {times['rows']:,} {times['scroll_to_end'] * 1000:6.0f} ms   (target < 1000 ms; "
              f"capture generated+analysed in {built:.0f} s)")
    small, big = results[1000], results[n]
    print("\n4. serve process memory after browsing")
    print(f"   RSS N=1,000 {small[1] / 1024:6.0f} MB   N={n:,} {big[1] / 1024:6.0f} MB   ratio {big[1] / small[1]:.2f}  "
          f"(peak {small[2] / 1024:.0f} / {big[2] / 1024:.0f} MB)")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer requests, a 3,000-request capture")
    parser.add_argument("--requests", type=int, default=None, help="N of the scale test (default 10,000)")
    parser.add_argument("--pairs", type=int, default=3, help="plain and live runs of the latency part (default 3)")
    parser.add_argument("--part", choices=["all", "latency", "scale"], default="all", help="run only one part")
    parser.add_argument("--keep", type=Path, default=None,
                        help="generate the scale part's captures here and reuse them on the next run")
    args = parser.parse_args()
    n_latency = 40 if args.quick else 160
    n_scale = args.requests or (3000 if args.quick else 10_000)
    print(f"bench_live: load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores at the start")
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp_s, sync_playwright() as p:
        tmp = Path(tmp_s)
        confdir = (args.keep or tmp) / "config"
        os.environ["CTXTAP_CONFIG_DIR"] = str(confdir)
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            if args.part in ("all", "latency"):
                bench_latency(tmp, confdir, n_latency, browser, args.pairs)
            if args.part in ("all", "scale"):
                bench_scale(args.keep or tmp, confdir, n_scale, browser)
        finally:
            browser.close()
    print(f"\nload average {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
