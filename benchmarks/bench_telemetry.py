"""The client-telemetry receiver of `record --telemetry`, end to end: OTLP payloads posted to the
receiver (a thread of the writer child), decoded, redacted, spooled and finalized.

Columns side by side for protobuf and JSON payloads of Claude-Code-shaped tool events:
payloads/s and records/s the receiver accepts (wall time of the client's posts, one connection
after another like an SDK's batch exporter), and the time finalisation adds for them. The writer
child is CPU-bound: on a 2-core machine shared with other work the figures move with the load.

    python benchmarks/bench_telemetry.py [--payloads 200] [--records 50]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from google.protobuf import json_format  # noqa: E402
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest  # noqa: E402
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue  # noqa: E402
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, ResourceLogs, ScopeLogs  # noqa: E402


def payload(n_records: int, seq: int) -> ExportLogsServiceRequest:
    def kv(k: str, v: str) -> KeyValue:
        return KeyValue(key=k, value=AnyValue(string_value=v))

    records = [LogRecord(
        time_unix_nano=1_764_590_000_000_000_000 + (seq * n_records + i) * 1_000_000,
        body=AnyValue(string_value="claude_code.tool_result"),
        attributes=[kv("event.name", "tool_result"), kv("tool_name", "Bash"), kv("tool_use_id", f"toolu_{seq}_{i}"),
                    kv("duration_ms", str(10 + i)), kv("success", "true"),
                    kv("tool_parameters", json.dumps({"command": f"cat src/file_{i}.py | head -50"}))],
    ) for i in range(n_records)]
    return ExportLogsServiceRequest(resource_logs=[ResourceLogs(
        resource=None, scope_logs=[ScopeLogs(log_records=records)])])


def run(fmt: str, n_payloads: int, n_records: int) -> dict:
    from ctxtap.capture.store import Capture
    from ctxtap.proxy_addons.runner import BackgroundProxy, ProxyConfig

    with tempfile.TemporaryDirectory(prefix="ctxtap-bench-tel-") as tmp:
        os.environ.setdefault("CTXTAP_CONFIG_DIR", str(Path(tmp) / "config"))
        out = Path(tmp) / "cap"
        proxy = BackgroundProxy(ProxyConfig(out=out, telemetry=True)).start()
        bodies = []
        for seq in range(n_payloads):
            msg = payload(n_records, seq)
            bodies.append(msg.SerializeToString() if fmt == "protobuf" else json_format.MessageToJson(msg).encode())
        ctype = "application/x-protobuf" if fmt == "protobuf" else "application/json"
        start = time.perf_counter()
        for body in bodies:
            req = urllib.request.Request(proxy.telemetry_endpoint + "/v1/logs", data=body, method="POST",
                                         headers={"content-type": ctype})
            urllib.request.urlopen(req, timeout=30).read()
        posted = time.perf_counter() - start
        stop = time.perf_counter()
        proxy.stop()
        stopped = time.perf_counter() - stop
        cap = Capture.open(out)
        n = cap.telemetry_records().num_rows
        assert n == n_payloads * n_records, n
        return {"format": fmt, "payload_kb": sum(map(len, bodies)) / len(bodies) / 1024,
                "payloads_s": n_payloads / posted, "records_s": n / posted, "stop_s": stopped}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--payloads", type=int, default=200)
    parser.add_argument("--records", type=int, default=50)
    args = parser.parse_args()
    rows = [run(fmt, args.payloads, args.records) for fmt in ("protobuf", "json")]
    print(f"telemetry receiver: {args.payloads} payloads x {args.records} tool events, posted one after another")
    print(f"{'format':<10}{'payload KB':>12}{'payloads/s':>12}{'records/s':>12}{'stop+finalize s':>17}")
    for r in rows:
        print(f"{r['format']:<10}{r['payload_kb']:>12.1f}{r['payloads_s']:>12.0f}{r['records_s']:>12.0f}"
              f"{r['stop_s']:>17.2f}")
    print(f"(2-core machine, load average {os.getloadavg()[0]:.1f}: the writer child is CPU-bound)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
