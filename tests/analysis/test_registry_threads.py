"""The protocol and client registries load their built-in modules once, and a thread that asks while
another is loading them waits instead of seeing an empty registry (`ctxtap experiment run --parallel`
analyses two captures at once in threads of one fresh process: one of them found no protocols and
recorded a run with no model requests)."""

from __future__ import annotations

import subprocess
import sys

from tests.proxyharness import ROOT

PROBE = """
import threading
from ctxtap.analysis.protocols import registry as protocols
from ctxtap.analysis.clients import registry as clients

barrier = threading.Barrier(8)
seen = []

def ask():
    barrier.wait()
    seen.append((len(protocols.protocols()), len(clients.clients())))

threads = [threading.Thread(target=ask) for _ in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(sorted(set(seen)))
"""


def test_first_use_from_many_threads_sees_every_builtin() -> None:
    for _ in range(3):  # a fresh interpreter each time: the race is in the first use
        out = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        seen = eval(out.stdout)  # noqa: S307 - our own probe's printed list of int pairs
        assert len(seen) == 1, f"threads saw different registries: {seen}"
        n_protocols, n_clients = seen[0]
        assert n_protocols >= 4 and n_clients >= 4, seen
