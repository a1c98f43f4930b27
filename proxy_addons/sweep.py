"""Free finished flows' bodies promptly: mitmproxy keeps each flow in reference cycles.

A finished flow is referenced from cycles of mitmproxy's own: its HTTP stream and
the layer context point at each other, and its type checks raise and catch
exceptions whose tracebacks hold the frames. Only Python's cyclic collector frees
those, and it runs by counts of objects, not bytes: a proxy that holds 1 MB request
bodies (the recorder needs them; a bare mitmdump streams them) accumulated about
20 MiB of dead bodies over a few hundred flows before a full collection ran.
`Sweeper` collects once the finished bodies since the last collection pass a
budget. The objects made at start-up are frozen first, so a collection walks only
what the proxy made since: about a millisecond, not tens.
"""

from __future__ import annotations

import gc

from mitmproxy import http

SWEEP_BYTES = 2 << 20  # finished bodies between two collections (a bound on the dead bodies held): ~1 ms each


class Sweeper:
    def __init__(self, budget: int = SWEEP_BYTES) -> None:
        self.budget = budget
        self.pending = 0  # body bytes of flows finished since the last collection
        self.collections = 0

    def start(self) -> None:
        """The proxy is running: what exists now lives as long as it does, and is never collected."""
        gc.collect()
        gc.freeze()

    def finished(self, flow: http.HTTPFlow) -> None:
        for message in (flow.request, flow.response):
            if message is not None and message.raw_content is not None:
                self.pending += len(message.raw_content)
        if self.pending >= self.budget:
            self.pending = 0
            self.collections += 1
            gc.collect()
