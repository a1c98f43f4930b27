"""Finished flows held in reference cycles (as mitmproxy's layers hold them) are freed once their
bodies pass the sweeper's budget, not whenever the cyclic collector happens to run."""

from __future__ import annotations

import contextlib
import gc
import weakref
from collections.abc import Iterator

from mitmproxy.test import tflow

from ctxtap.proxy_addons.sweep import Sweeper

MB = 1 << 20


def _finished_flow_in_a_cycle() -> tuple[object, weakref.ref]:
    flow = tflow.tflow(resp=True)
    flow.request.content = b"x" * MB
    flow.metadata["cycle"] = flow  # unreachable once dropped, freed only by the cyclic collector
    return flow, weakref.ref(flow)


@contextlib.contextmanager
def _only_the_sweeper_collects() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        gc.collect()
        yield
    finally:
        if was_enabled:
            gc.enable()


def _finish(sweeper: Sweeper, n: int) -> list[weakref.ref]:
    """Hand the sweeper `n` finished flows in cycles, dropping each; weak references to them."""
    refs = []
    for _ in range(n):
        flow, ref = _finished_flow_in_a_cycle()
        sweeper.finished(flow)
        refs.append(ref)
        del flow
    return refs


def test_flows_in_cycles_are_freed_once_their_bodies_pass_the_budget() -> None:
    sweeper = Sweeper(budget=4 * MB)
    with _only_the_sweeper_collects():
        alive = _finish(sweeper, 3)
        assert all(r() is not None for r in alive), "collected before the budget was reached"
        assert sweeper.collections == 0
        flow, ref = _finished_flow_in_a_cycle()
        sweeper.finished(flow)  # the fourth MB: the budget is reached, everything dead so far goes
        del flow
        assert sweeper.collections == 1 and sweeper.pending == 0
        assert all(r() is None for r in alive), "dead flows still held after the sweep"
        assert ref() is not None  # in use while its own sweep ran: it goes with the next one
        _finish(sweeper, 4)
        assert sweeper.collections == 2 and ref() is None


def test_the_default_budget_holds_a_few_dead_bodies_only() -> None:
    """With 1 MB bodies the proxy holds at most about two dead ones (its peak against bare mitmdump)."""
    sweeper = Sweeper()
    with _only_the_sweeper_collects():
        refs = _finish(sweeper, 3)
        assert sum(r() is not None for r in refs) <= 2
