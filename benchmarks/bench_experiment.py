"""Experiment benchmark: what a run costs beyond its command (proxy start, finalize, analysis).

Runs two small experiments through `ctxtap.experiment.runner` (the real `ctxtap proxy` per run,
the scripted model server) and prints, per run and side by side:
  - wall time per run minus the command's own time (target < 1 s),
  - its parts: waiting for the run's proxy (started one run ahead, so normally hidden),
    stopping it (the capture finalized to Parquet), analysing the capture, the rest;
  - the proxy's start-up alone (what the look-ahead hides).
Cases: `sleep 2 s` with the shared proxy (sequential runs: one in-process proxy, its capture
rotated between runs) and with a `ctxtap proxy` process per run (what --parallel uses), and the
simulated Claude agent with the shared proxy. CPU seconds per run (the runner and its children)
are printed too: unlike wall time they do not depend on what else the machine is doing.

Run: .venv/bin/python benchmarks/bench_experiment.py [--repeats N]
The figures are CPU-bound: on a 2-core machine shared with other work the proxy's start-up
(Python, mitmproxy, the redacting writer child) takes seconds; the load average is printed.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ctxtap.analysis.compare.experiment import read_runs  # noqa: E402
from ctxtap.experiment.proxy import start_proxy  # noqa: E402
from ctxtap.experiment.runner import run_experiment  # noqa: E402
from ctxtap.experiment.spec import load_spec  # noqa: E402

SLEEP = """command = ["{python}", "-c", "import time; time.sleep(2)"]\nrepeats = REPEATS\n[variants.A]\n[variants.B]\n"""
AGENT = """command = "{python} -m ctxtap.demo claude --turns 2"\nrepeats = REPEATS\n[server]\n[variants.A]\n[variants.B]\n"""
# (spec, a proxy process per run instead of one shared proxy)
CASES = {
    "sleep shared": (SLEEP, False),
    "sleep per-run": (SLEEP, True),
    "agent shared": (AGENT, False),
}
SLEEP_COMMAND_CPU_S = 0.05  # what `python -c "import time; time.sleep(2)"` itself costs


def _cpu() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def measure(name: str, text: str, per_run: bool, repeats: int, base: Path) -> dict[str, float]:
    spec_path = base / f"{name.replace(' ', '-')}.toml"
    spec_path.write_text(text.replace("REPEATS", str(repeats)))
    out = base / spec_path.stem
    started, cpu0 = time.perf_counter(), _cpu()
    run_experiment(load_spec(spec_path), out, echo=lambda _: None, install_signals=False, proxy_per_run=per_run)
    wall, cpu = time.perf_counter() - started, _cpu() - cpu0
    runs = read_runs(out)
    command = sum(r.command_s or 0 for r in runs)
    per = {
        "cpu_per_run": cpu / len(runs),
        "runs": len(runs),
        "wall_per_run": wall / len(runs),
        "command_per_run": command / len(runs),
        "overhead_per_run": (wall - command) / len(runs),
        "overhead_after_first": (wall - command - (runs[0].proxy_wait_s or 0)) / max(1, len(runs) - 1),
        "proxy_wait_median": statistics.median(r.proxy_wait_s or 0 for r in runs),
        "proxy_wait_first": runs[0].proxy_wait_s or 0,
        "finalize_median": statistics.median(r.finalize_s or 0 for r in runs),
        "analysis_median": statistics.median(r.analysis_s or 0 for r in runs),
    }
    return per


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="repeats per variant (2 variants)")
    args = parser.parse_args()
    os.environ.setdefault("CTXTAP_CONFIG_DIR", tempfile.mkdtemp(prefix="ctxtap-bench-config-"))
    with tempfile.TemporaryDirectory(prefix="ctxtap-bench-exp-") as tmp:
        base = Path(tmp)
        starts = []
        for i in range(3):
            t0 = time.perf_counter()
            start_proxy(base / f"proxy-{i}", []).stop()
            starts.append(time.perf_counter() - t0)
        results = {name: measure(name, text, per_run, args.repeats, base)
                   for name, (text, per_run) in CASES.items()}
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; "
          f"proxy start + stop alone: median {statistics.median(starts):.2f} s")
    names = list(results)
    print(f"{'seconds per run':<34}" + "".join(f"{n:>14}" for n in names))
    for key in ("runs", "cpu_per_run", "wall_per_run", "command_per_run", "overhead_per_run", "overhead_after_first",
                "proxy_wait_first", "proxy_wait_median", "finalize_median", "analysis_median"):
        print(f"{key:<34}" + "".join(f"{results[n][key]:>14.2f}" for n in names))
    worst = max(r["overhead_after_first"] for r in results.values())
    print(f"wall overhead per run beyond the command (after the first), worst case: {worst:.2f} s "
          f"({'meets' if worst < 1.0 else 'misses'} the < 1 s target on this machine now)")
    for name in ("sleep shared", "sleep per-run"):
        cpu = results[name]["cpu_per_run"] - SLEEP_COMMAND_CPU_S
        print(f"CPU seconds per run beyond the command, {name}: {cpu:.2f} s (what an idle core would take)")


if __name__ == "__main__":
    main()
