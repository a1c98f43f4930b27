"""Markers derived from the code: `mitmproxy` (the mitmproxy-12 tier's selection) and `integration`
(`make test-fast` leaves these out).

Which test modules touch mitmproxy:

A test module touches it when it, or a test helper it imports, imports mitmproxy or a module of ours
that imports it directly (the addons, the runner, the flow-file importer), or when the module itself
runs the proxy in a process of its own: `start_proxy`, plain `mitmdump`, `make demo`, or a ctxtap
command that records or reads flow files (`record`, `proxy`, `demo`, `experiment`, `replay`,
`import`) named as an argument. Imports through the command line do not count: `ctxtap.cli.main`
names the router for its options, and a test of `ctxtap sql` does not exercise mitmproxy. Derived
from the code on every run, so a new test is never left out of the tier by a list nobody updated.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

RUNS_THE_PROXY = re.compile(r"""start_(?:fresh_)?proxy\(|mitmdump|make demo|"""
                            r"""["'](?:record|proxy|demo|experiment|replay|import)["']\s*[,\]]""")


@cache
def touching_modules(root: Path) -> frozenset[str]:
    import grimp

    graph = grimp.build_graph("ctxtap", "tests", include_external_packages=True)
    ours = {m for m in graph.find_modules_that_directly_import("mitmproxy") if m.startswith("ctxtap.")}
    tests = {m for m in graph.modules if m.startswith("tests.")}

    def imports_it(module: str) -> bool:
        imported = graph.find_modules_directly_imported_by(module)
        return "mitmproxy" in imported or bool(imported & ours)

    importing = {m for m in tests if imports_it(m)}
    grown = True
    while grown:  # through the test helpers a module imports (tests.corpus reads flow files)
        more = {m for m in tests - importing if graph.find_modules_directly_imported_by(m) & importing}
        importing |= more
        grown = bool(more)
    # running the proxy counts in the test module itself: a helper module that can start one
    # (tests.proxyharness) is imported by many tests for its other helpers
    running = {m for m in tests if (path := root / (m.replace(".", "/") + ".py")).is_file()
               and RUNS_THE_PROXY.search(path.read_text(encoding="utf-8"))}
    return frozenset(importing | running)


# Processes, browsers and the session's big captures: what makes a test slow and an integration test.
STARTS_PROCESSES = re.compile(r"subprocess|Popen|run_ctxtap\(|start_(?:fresh_)?proxy\(|mitmdump|make demo|"
                              r"multiprocessing|ProcessPool|playwright|chromium")
HEAVY_FIXTURES = frozenset({"demo_capture", "synth30", "synth1000", "synth10k", "huge_report", "corpus_captures",
                            "browser", "real_clients"})


@cache
def process_modules(root: Path) -> frozenset[str]:
    """Test modules whose own text starts processes or a browser."""
    tests = root / "tests"
    return frozenset(".".join(path.relative_to(root).with_suffix("").parts) for path in tests.rglob("test_*.py")
                     if STARTS_PROCESSES.search(path.read_text(encoding="utf-8")))
