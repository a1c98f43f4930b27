"""Finished flows held in reference cycles (as mitmproxy's layers hold them) are freed once their
bodies pass the sweeper's budget, not whenever the cyclic collector happens to run."""

from __future__ import annotations

import gc
import weakref

from mitmproxy.test import tflow

from proxy_addons.sweep import Sweeper

MB = 1 << 20


def _finished_flow_in_a_cycle() -> tuple[object, weakref.ref]:
    flow = tflow.tflow(resp=True)
    flow.request.content = b"x" * MB
    flow.metadata["cycle"] = flow  # unreachable once dropped, freed only by the cyclic collector
    return flow, weakref.ref(flow)


def test_flows_in_cycles_are_freed_once_their_bodies_pass_the_budget() -> None:
    sweeper = Sweeper(budget=4 * MB)
    was_enabled = gc.isenabled()
    gc.disable()  # only the sweeper collects during the test
    try:
        gc.collect()
        alive = []
        for _ in range(3):
            flow, ref = _finished_flow_in_a_cycle()
            sweeper.finished(flow)
            alive.append(ref)
            del flow
        assert all(r() is not None for r in alive), "collected before the budget was reached"
        assert sweeper.collections == 0
        flow, ref = _finished_flow_in_a_cycle()
        sweeper.finished(flow)  # the fourth MB: the budget is reached, everything dead so far goes
        del flow
        assert sweeper.collections == 1 and sweeper.pending == 0
        assert all(r() is None for r in alive), "dead flows still held after the sweep"
        assert ref() is not None  # in use while its own sweep ran: it goes with the next one
        for _ in range(4):
            other, _ref = _finished_flow_in_a_cycle()
            sweeper.finished(other)
            del other
        assert sweeper.collections == 2 and ref() is None
    finally:
        if was_enabled:
            gc.enable()


def test_the_default_budget_holds_a_few_dead_bodies_only() -> None:
    """With 1 MB bodies the proxy holds at most about two dead ones (its peak against bare mitmdump)."""
    sweeper = Sweeper()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        gc.collect()
        refs = []
        for _ in range(3):
            flow, ref = _finished_flow_in_a_cycle()
            sweeper.finished(flow)
            refs.append(ref)
            del flow
        assert sum(r() is not None for r in refs) <= 2
    finally:
        if was_enabled:
            gc.enable()
