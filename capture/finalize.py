"""Turn a spool into Parquet tables: after a clean stop, or to recover an interrupted capture."""

from __future__ import annotations

import json
import os
import shutil
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from ctxtap.capture.classify import client_name, program_of
from ctxtap.capture.manifest import Manifest
from ctxtap.capture.private import tighten
from ctxtap.capture.schema import (
    BODIES_SCHEMA,
    FLOWS_SCHEMA,
    TELEMETRY_RECORDS_SCHEMA,
    TELEMETRY_SCHEMA,
    WS_SCHEMA,
)
from ctxtap.capture.spool import SPOOL_NAME, iter_frames

FLOWS_FILE, WS_FILE, BODIES_FILE = "flows.parquet", "ws_messages.parquet", "bodies.parquet"
TELEMETRY_FILE, TELEMETRY_RECORDS_FILE = "telemetry.parquet", "telemetry_records.parquet"


def _merge_redactions(row: dict, counts: dict | None) -> None:
    if counts:
        merged = Counter(row.get("_redactions", {}))
        merged.update(counts)
        row["_redactions"] = dict(merged)


def assemble(frames: Iterable[tuple[dict, bytes]], capture_id: str,
             on_body: Callable[[dict], None],
             on_telemetry: Callable[[dict, list[dict]], None] | None = None) -> tuple[list[dict], list[dict]]:
    """Merge spool records into flow rows and WebSocket message rows; bodies go to `on_body`,
    telemetry payloads with their decoded records to `on_telemetry`."""
    flows: dict[str, dict] = {}
    ws_rows: list[dict] = []
    for header, payload in frames:
        kind = header.get("t")
        if kind == "body":
            on_body({**{k: header.get(k) for k in ("body_id", "codec", "base_id", "size", "sha256")},
                     "data": payload})
            continue
        if kind == "tel":
            if on_telemetry is not None:
                on_telemetry(*telemetry_rows(header, capture_id))
            continue
        flow_id = header.get("flow_id")
        if kind == "ws":
            row = {k: v for k, v in header.items() if k not in ("t", "redactions")}
            row["capture_id"] = capture_id
            row["redactions"] = json.dumps(header.get("redactions") or {})
            ws_rows.append(row)
            flow = flows.setdefault(flow_id, {"flow_id": flow_id})
            _merge_redactions(flow, header.get("redactions"))
            if header.get("is_model_request"):
                flow["_ws_model_requests"] = flow.get("_ws_model_requests", 0) + 1
            flow["_ws_count"] = flow.get("_ws_count", 0) + 1
            continue
        if flow_id is None:
            continue
        flow = flows.setdefault(flow_id, {"flow_id": flow_id})
        _merge_redactions(flow, header.get("redactions"))
        for key, value in header.items():
            if key in ("t", "redactions"):
                continue
            if kind == "writer_error" and key == "error":
                flow["error"] = f"writer: {value}"
                continue
            if key == "event":
                continue
            flow[key] = value
        if kind == "resp":
            flow["_has_response"] = True
        elif kind == "err":
            flow["_has_error"] = True
    rows = []
    for flow in flows.values():
        rows.append(_finish_flow(flow, capture_id))
    rows.sort(key=lambda r: (r.get("seq") is None, r.get("seq") or 0))
    return rows, ws_rows


def telemetry_rows(header: dict, capture_id: str) -> tuple[dict, list[dict]]:
    """A `tel` spool record as its telemetry.parquet row and its telemetry_records.parquet rows."""
    row = {k: v for k, v in header.items() if k not in ("t", "records", "redactions")}
    row["capture_id"] = capture_id
    row["redactions"] = json.dumps(header.get("redactions") or {}, sort_keys=True)
    records = [{**rec, "capture_id": capture_id, "telemetry_id": header.get("telemetry_id"), "idx": i}
               for i, rec in enumerate(header.get("records") or [])]
    return row, records


class TelemetrySink:
    """Collects telemetry rows while the spool is read."""

    def __init__(self) -> None:
        self.payloads: list[dict] = []
        self.records: list[dict] = []

    def __call__(self, row: dict, records: list[dict]) -> None:
        self.payloads.append(row)
        self.records.extend(records)


def _finish_flow(flow: dict, capture_id: str) -> dict:
    flow["capture_id"] = capture_id
    if flow.get("_has_error"):
        flow["state"] = "error"
    elif flow.get("_has_response"):
        flow["state"] = "complete"
    else:
        flow["state"] = "incomplete"
    integrity = True
    for a, b in (("request_sha256_client", "request_sha256_upstream"),
                 ("response_sha256_upstream", "response_sha256_client")):
        if flow.get(a) and flow.get(b) and flow[a] != flow[b]:
            integrity = False
    flow["integrity_ok"] = integrity
    if flow.get("n_ws_messages") is None and flow.get("_ws_count"):
        flow["n_ws_messages"] = flow["_ws_count"]
    if flow.get("kind") == "websocket":
        flow["model_requests"] = flow.get("_ws_model_requests", 0)
        if flow.get("status") == 101:
            flow["transport"] = "websocket"
    else:
        flow["model_requests"] = 1 if flow.get("is_model") else 0
    flow["redactions"] = json.dumps(flow.get("_redactions", {}), sort_keys=True)
    return flow


def _table(rows: list[dict], schema: pa.Schema) -> pa.Table:
    columns = {f.name: [r.get(f.name) for r in rows] for f in schema}
    return pa.table(columns, schema=schema)


def _write_atomic(table: pa.Table, path: Path) -> None:
    tmp = path.with_suffix(".parquet.tmp")
    pq.write_table(table, tmp, compression="zstd")
    _commit(tmp, path)


def _commit(tmp: Path, path: Path) -> None:
    with open(tmp, "rb") as fh:
        os.fsync(fh.fileno())
    os.replace(tmp, path)


class _BodySink:
    """Streams body rows into bodies.parquet in bounded batches (recovery of big spools)."""

    BATCH_BYTES = 16 << 20

    def __init__(self, path: Path) -> None:
        self.tmp = path.with_suffix(".parquet.tmp")
        self.path = path
        self._writer = pq.ParquetWriter(self.tmp, BODIES_SCHEMA, compression="none")
        self._rows: list[dict] = []
        self._bytes = 0

    def __call__(self, row: dict) -> None:
        self._rows.append(row)
        self._bytes += len(row["data"])
        if self._bytes >= self.BATCH_BYTES:
            self._flush()

    def _flush(self) -> None:
        if self._rows:
            self._writer.write_table(_table(self._rows, BODIES_SCHEMA))
            self._rows, self._bytes = [], 0

    def close(self) -> None:
        self._flush()
        self._writer.close()
        _commit(self.tmp, self.path)


def _frames_with_end(path: Path, end: list[int]) -> Iterator[tuple[dict, bytes]]:
    for header, payload, offset in iter_frames(path):
        end[0] = offset
        yield header, payload


def finalize(directory: Path, recovered: bool = False) -> Manifest:
    """Write flows/ws_messages/bodies Parquet from the spool and mark the capture finalized.

    Idempotent and crash-safe: Parquet files are written to temporary names and
    renamed; the spool is removed only after the manifest says "finalized".
    """
    manifest = Manifest.load(directory)
    spool_dir = directory / "spool"
    spool_path = spool_dir / SPOOL_NAME
    if manifest.status == "finalized":
        if spool_dir.exists():
            shutil.rmtree(spool_dir, ignore_errors=True)
        return manifest
    end = [0]
    sink = _BodySink(directory / BODIES_FILE)
    telemetry = TelemetrySink()
    flows, ws_rows = assemble(_frames_with_end(spool_path, end), manifest.capture_id, sink, telemetry)
    sink.close()
    dropped = max(0, (spool_path.stat().st_size if spool_path.exists() else 0) - end[0])
    _write_atomic(_table(flows, FLOWS_SCHEMA), directory / FLOWS_FILE)
    _write_atomic(_table(ws_rows, WS_SCHEMA), directory / WS_FILE)
    _write_atomic(_table(telemetry.payloads, TELEMETRY_SCHEMA), directory / TELEMETRY_FILE)
    _write_atomic(_table(telemetry.records, TELEMETRY_RECORDS_SCHEMA), directory / TELEMETRY_RECORDS_FILE)
    manifest.status = "finalized"
    manifest.recovered = manifest.recovered or recovered
    manifest.spool_bytes_dropped = dropped
    if manifest.ended_at is None:
        last = [f.get("ts_response_end") or f.get("ts_ws_end") or f.get("ts_request_start") for f in flows]
        last = [t for t in last if t]
        manifest.ended_at = max(last) if last else time.time()
    manifest.counts = summary_counts(flows, ws_rows, program_of(manifest.command))
    manifest.counts["telemetry_payloads"] = len(telemetry.payloads)
    manifest.counts["telemetry_records"] = len(telemetry.records)
    manifest.save(directory)
    shutil.rmtree(spool_dir, ignore_errors=True)
    tighten(directory)  # pyarrow wrote with the process's umask, which a caller of the API chose
    return manifest


def summary_counts(flows: list[dict], ws_rows: list[dict], program: str | None = None) -> dict:
    """The figures `ctxtap info` and `record` print, computed once at finalisation. A client nothing on
    the wire names is counted under the program the recorded command ran, as the analyzer names it."""
    by_client: Counter[str] = Counter()
    by_api: Counter[str] = Counter()
    by_transport: Counter[str] = Counter()
    redactions: Counter[str] = Counter()
    model_requests = 0
    for f in flows:
        n = f.get("model_requests") or 0
        model_requests += n
        if n:
            client = f.get("client") or "unknown"
            by_client[client_name(program) if program and client.startswith("unknown") else client] += n
            by_api[f.get("api") or "other"] += n
            by_transport[f.get("transport") or "none"] += n
        redactions.update(json.loads(f.get("redactions") or "{}"))
    return {
        "flows": len(flows),
        "model_requests": model_requests,
        "by_client": dict(by_client),
        "by_api": dict(by_api),
        "by_transport": dict(by_transport),
        "redactions": dict(redactions),
        "integrity_mismatches": sum(1 for f in flows if f.get("integrity_ok") is False),
        "ws_messages": len(ws_rows),
        # WebSocket frames count as request (client) and response (server) bytes
        "request_bytes": sum(f.get("request_bytes_wire") or 0 for f in flows)
        + sum(m.get("size") or 0 for m in ws_rows if m.get("from_client")),
        "response_bytes": sum(f.get("response_bytes_wire") or 0 for f in flows)
        + sum(m.get("size") or 0 for m in ws_rows if not m.get("from_client")),
        "incomplete_flows": sum(1 for f in flows if f.get("state") == "incomplete"),
        "error_flows": sum(1 for f in flows if f.get("state") == "error"),
    }
