"""A burst of concurrent streaming clients through a fresh `ctxtap proxy`: no request fails, none is lost.

50 keep-alive clients start at once against a proxy that has just come up (its first
seconds are when upstream connections, certificates and the writer all start), each sending
SSE requests back to back to a scripted server on loopback. Bounded: 800 requests in all,
or 120 s, whichever comes first. Every request must succeed, and the capture must hold
exactly those flows, complete and without an error.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import duckdb

from tests.burst import run_burst
from tests.proxyharness import ROOT, start_proxy

CLIENTS = 50
REQUESTS = 800


def test_a_burst_of_streaming_clients_through_a_fresh_proxy(tmp_path, ctxtap_config):
    # The scripted server in its own process, as a provider would be: it does not share a GIL
    # with the clients, so its own speed cannot hide or cause a failure.
    script = json.dumps({"steps": [{"text": "hello from the burst"}]})
    server = subprocess.Popen([sys.executable, "-m", "ctxtap.modelserver", "--port", "0", "--script", script],
                              stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        url = server.stdout.readline().strip()
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
    flows = duckdb.sql(f"SELECT state, error, count(*) FROM '{tmp_path / 'cap' / 'flows.parquet'}' "
                       "GROUP BY ALL").fetchall()
    assert flows == [("complete", None, REQUESTS)], flows
