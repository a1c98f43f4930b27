"""The live analysis follows a real recording: requests show up while it runs, each flow is parsed
once, streams under way are in progress, and the result equals `ctxtap analyze` of the finished capture."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from ctxtap.analysis.build import ensure_analysis
from ctxtap.analysis.db import connect
from ctxtap.analysis.live import LiveAnalysis
from ctxtap.demo import run_agent
from ctxtap.modelserver import ModelServer
from tests.proxyharness import routes_to, start_proxy

COMPARED = {
    "requests": "request_id, session_id, thread_id, thread_kind, seq_in_thread, purpose, status, error_layer, "
                "input_tokens_estimated, input_tokens_reported, cache_read_tokens, n_blocks, response_text",
    "prefix": "*",
    "blocks": "*",
    "tool_calls": "*",
    "sessions": "*",
    "tokens_by_source": "*",
}


def _rows(con, table: str, columns: str) -> list[tuple]:
    return con.execute(f"SELECT {columns} EXCLUDE (capture_id) FROM {table} ORDER BY ALL" if columns == "*"
                       else f"SELECT {columns} FROM {table} ORDER BY ALL").fetchall()


def test_live_analysis_follows_a_recording_and_matches_the_full_build(tmp_path: Path, ctxtap_config) -> None:
    capture = tmp_path / "capture"
    live = LiveAnalysis(capture, tmp_path / "live")
    seen: list[tuple[int, int]] = []  # (requests in the live dataset, flows in progress) at each poll
    with ModelServer(script="long", chunk_delay_s=0.01) as server:
        proxy = start_proxy(capture, ctxtap_config, routes_to(server.url))
        stop = threading.Event()

        def follow() -> None:
            while not stop.is_set():
                live.poll()
                snap = live.snapshot()
                seen.append((live.stats.requests, len(snap.in_progress)))
                time.sleep(0.05)

        follower = threading.Thread(target=follow)
        follower.start()
        try:
            summary = run_agent("claude", proxy=proxy.url, ca_file=proxy.ca_bundle, turns=3)
            deadline = time.monotonic() + 30
            while live.stats.requests < len(summary.calls) and time.monotonic() < deadline:
                time.sleep(0.05)
            while_running = live.stats.requests
        finally:
            proxy.stop()
            deadline = time.monotonic() + 30
            while not live.snapshot().finalized and time.monotonic() < deadline:
                time.sleep(0.05)
            stop.set()
            follower.join()
    assert live.errors == []
    # every request arrived while the recorder was still running, in several steps
    assert while_running == len(summary.calls) > 10
    counts = sorted({n for n, _ in seen})
    assert len([n for n in counts if 0 < n < while_running]) >= 2, counts
    assert any(p > 0 for _, p in seen), "a streamed response was never seen in progress"
    assert live.stats.parsed_flows == len(summary.calls)  # each flow parsed once
    assert live.snapshot().finalized and live.snapshot().in_progress == []

    ensure_analysis(capture)
    full, followed = connect([capture]), connect([live.snapshot().dataset])
    for table, columns in COMPARED.items():
        assert _rows(followed, table, columns) == _rows(full, table, columns), table
    # its dataset versions live outside the capture
    assert not any(p.name.startswith("v") for p in capture.iterdir())
    assert live.snapshot().dataset.parent == tmp_path / "live"


def test_live_analysis_of_a_capture_finished_before_it_started(tmp_path: Path, ctxtap_config) -> None:
    """A recorder that ended (and removed its spool) before the view read anything: the Parquet is read."""
    capture = tmp_path / "capture"
    with ModelServer() as server:
        proxy = start_proxy(capture, ctxtap_config, routes_to(server.url))
        try:
            summary = run_agent("kimi", proxy=proxy.url, ca_file=proxy.ca_bundle, turns=1)
        finally:
            proxy.stop()
    live = LiveAnalysis(capture, tmp_path / "live")
    assert live.poll() is True
    assert live.stats.requests == len(summary.calls) > 0
    assert live.poll() is False  # nothing new: no new version
    ensure_analysis(capture)
    full, followed = connect([capture]), connect([live.snapshot().dataset])
    assert _rows(followed, "requests", COMPARED["requests"]) == _rows(full, "requests", COMPARED["requests"])
