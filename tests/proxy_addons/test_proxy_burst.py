"""A burst of concurrent streaming clients through a fresh `ctxtap proxy`: no request fails, none is lost.

50 keep-alive clients start at once against a proxy that has just come up (its first
seconds are when upstream connections, certificates and the writer all start), each sending
SSE requests back to back to a scripted server on loopback. Bounded: 800 requests in all,
or 120 s, whichever comes first. Every request must succeed, and the capture must hold
exactly those flows, complete and without an error.

The fresh-proxy test starts the burst the moment the port accepts a connection (not when the
announcement is read): the proxy's very first second, twice, with a small request budget
so that a busy CI machine still finishes well within its bounds. `benchmarks/bench_burst.py
--fresh 10` is the full measurement.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import duckdb

from tests.burst import run_burst
from tests.proxyharness import ROOT, start_fresh_proxy, start_proxy

CLIENTS = 50
REQUESTS = 800
FRESH_BURSTS = 2
FRESH_REQUESTS = 150  # per burst: three per client, the first of each in the proxy's first second


def _model_server() -> tuple[subprocess.Popen, str]:
    # The scripted server in its own process, as a provider would be: it does not share a GIL
    # with the clients, so its own speed cannot hide or cause a failure.
    script = json.dumps({"steps": [{"text": "hello from the burst"}]})
    server = subprocess.Popen([sys.executable, "-m", "ctxtap.modelserver", "--port", "0", "--script", script],
                              stdout=subprocess.PIPE, text=True, cwd=ROOT)
    return server, server.stdout.readline().strip()


def _flows(capture) -> list:
    return duckdb.sql(f"SELECT state, error, count(*) FROM '{capture / 'flows.parquet'}' GROUP BY ALL").fetchall()


def test_a_burst_of_streaming_clients_through_a_fresh_proxy(tmp_path, ctxtap_config):
    server, url = _model_server()
    try:
        proxy = start_proxy(tmp_path / "cap", ctxtap_config, [f"api.anthropic.com={url}"])
        try:
            result = run_burst(proxy.port, proxy.ca_bundle, clients=CLIENTS, seconds=120, max_requests=REQUESTS)
        finally:
            assert proxy.stop(timeout=300) == 0
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(30)
    assert result.error_count == 0, result.summary()
    assert result.ok == REQUESTS, result.summary()
    flows = _flows(tmp_path / "cap")
    assert flows == [("complete", None, REQUESTS)], flows


def test_bursts_in_a_fresh_proxys_first_second(tmp_path, ctxtap_config):
    server, url = _model_server()
    try:
        start_proxy(tmp_path / "warmup", ctxtap_config).stop()  # the CA exists, as it does after a first run
        for burst in range(FRESH_BURSTS):
            capture = tmp_path / f"cap-{burst}"
            proxy = start_fresh_proxy(capture, ctxtap_config, [f"api.anthropic.com={url}"])
            try:
                result = run_burst(proxy.port, proxy.ca_bundle, clients=CLIENTS, seconds=120,
                                   max_requests=FRESH_REQUESTS)
            finally:
                assert proxy.stop(timeout=300) == 0
            assert result.error_count == 0, result.summary()
            assert result.ok == FRESH_REQUESTS, result.summary()
            assert _flows(capture) == [("complete", None, FRESH_REQUESTS)]
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(30)
