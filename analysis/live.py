"""Follow a capture while it is recorded: parse each model call once, as soon as the writer commits it.

The writer's spool is the source of truth: a frame is there once the writer has
redacted it (see `ctxtap.capture.spool`). `LiveAnalysis.poll` reads the frames
appended since its last call, merges them into flow rows like finalisation does,
and parses only the flows that completed since (the parse state, the `ParseMemo`,
the block store and the session assigner live across polls, so a request that
resends its history costs what `ctxtap analyze` pays for it once). The tables are
then derived again from the parsed calls (cheap next to parsing) and written as a
new dataset version in a private work directory, never inside the capture: a
live view that crashes leaves the capture as the recorder wrote it.

Flows that started but have not completed are `in_progress` (with the time the
first streamed piece reached the writer, when one did).
"""

from __future__ import annotations

import json
import shutil
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from ctxtap.analysis.blocks.blockstore import BlockStore
from ctxtap.analysis.blocks.sequences import shared_prefix
from ctxtap.analysis.build import ANALYSIS_VERSION, add_call, write_dataset
from ctxtap.analysis.cache.cachecheck import CacheRules
from ctxtap.analysis.cache.prices import PriceTable
from ctxtap.analysis.parsing import tokens
from ctxtap.analysis.parsing.memo import ParseMemo
from ctxtap.analysis.parsing.parse import ParseState, parse_exchange
from ctxtap.analysis.tables import TABLES, BuildContext, CallRec
from ctxtap.analysis.threads import runfacts
from ctxtap.analysis.threads.sessions import SessionAssigner
from ctxtap.capture.finalize import FLOWS_FILE, WS_FILE, TelemetrySink, assemble
from ctxtap.capture.manifest import MANIFEST_NAME, Manifest
from ctxtap.capture.schema import FLOWS_SCHEMA, WS_SCHEMA
from ctxtap.capture.spool import SPOOL_NAME, iter_frames
from ctxtap.capture.store import Capture

KEEP_VERSIONS = 3  # dataset versions kept on disk at least: a reader may still be on an older one
GRACE_S = 10.0  # and each superseded version for this long
MIN_BUILD_INTERVAL_S = 0.1  # new requests arriving faster than this are taken in together
# and a build waits 8x the last build's time: the view takes at most ~1/9 of a core (at 1/5 the proxy
# beside it on a busy 2-core machine answered 5-6 % slower; at 1/9 within 1 %, bench_live.py)
BUILD_DUTY = 8
MAX_BUILD_WAIT_S = 0.5  # but never longer than this (rows must appear within a second)
IN_PROGRESS_INTERVAL_S = 0.2  # between builds, requests under way are looked for this often
RECENT_REQUESTS = 8  # a new request's resent blocks are looked for in this many latest requests
HEADER_COLUMNS = ["flow_id", "method", "url", "status", "request_headers", "response_headers", "error"]


@dataclass
class InProgress:
    """A flow the recorder has seen start but not end."""

    flow_id: str
    seq: int | None
    client: str | None
    host: str | None
    path: str | None
    ts_start: float | None
    ts_first_chunk: float | None  # the first streamed piece reached the writer


@dataclass
class LiveStats:
    polls: int = 0
    builds: int = 0
    requests: int = 0
    parsed_flows: int = 0
    last_build_s: float = 0.0
    frames: int = 0
    spool_offset: int = 0


@dataclass
class _Snapshot:
    version: int = 0
    dataset: Path | None = None  # a directory whose `analysis/` holds the dataset (for analysis.db.connect)
    in_progress: list[InProgress] = field(default_factory=list)
    finalized: bool = False
    ts_built: float = 0.0
    # session id -> its requests in this version: a page showing one session refreshes only when it grew
    sessions: dict[str, int] = field(default_factory=dict)


class LiveAnalysis:
    """Incremental analysis of one capture, into `work_dir/v<N>/analysis` (see the module docstring)."""

    def __init__(self, capture_dir: Path, work_dir: Path, prices: Path | None = None,
                 cache_rules: Path | None = None) -> None:
        self.capture_dir = Path(capture_dir)
        self.work_dir = Path(work_dir)
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.prices = PriceTable.load(prices)
        self.rules = CacheRules.load(cache_rules)
        self.stats = LiveStats()
        self.errors: list[str] = []  # what could not be read, for the live view to show
        self._offset = 0
        self._meta_frames: list[dict] = []  # every non-body frame (metadata only, no bodies)
        self._bodies: dict[int, tuple[str, int | None, bytes]] = {}
        self._flows: dict[str, dict] = {}
        self._parsed: set[str] = set()
        self._state = ParseState()
        self._memo = ParseMemo()
        # The block store finishes (renumbers its occurrences) when a dataset is written, and takes
        # no request after that: this one only places calls in sessions as they arrive; each
        # dataset is written from a fresh store fed the requests' blocks kept in `_history`.
        self._store = BlockStore()
        self._assigner = SessionAssigner()
        self._recs: list[CallRec] = []
        self._history: list[tuple[str, list]] = []  # (request id, blocks) of every parsed call, in order
        self._tokens: dict[str, int] = {}  # token estimates by content hash, carried from build to build
        self._capture: Capture | None = None
        self._redact = None
        self._read_parquet = False
        self._lock = threading.Lock()
        self._snap = _Snapshot()
        self._superseded: list[tuple[float, Path]] = []
        self._last_build = 0.0
        self._last_read = 0.0
        self._unparsed: tuple[list[dict], list[dict]] | None = None  # flows read but not parsed yet

    # --- what readers see --------------------------------------------------------------------

    def snapshot(self) -> _Snapshot:
        with self._lock:
            return self._snap

    def flow(self, flow_id: str) -> dict | None:
        """The stored (redacted) facts of one flow, headers included."""
        with self._lock:
            row = self._flows.get(flow_id)
            return dict(row) if row is not None else None

    # --- following the spool ---------------------------------------------------------------------

    def _manifest(self) -> Manifest | None:
        if not (self.capture_dir / MANIFEST_NAME).exists():
            return None
        try:
            return Manifest.load(self.capture_dir)
        except (OSError, ValueError):
            return None  # being replaced: read it on the next poll

    def poll(self) -> bool:
        """Take in what the writer committed since the last poll. True when a new dataset was written."""
        self.stats.polls += 1
        manifest = self._manifest()
        if manifest is None:
            return False
        if self._capture is None:
            self._capture = Capture(self.capture_dir, manifest, live=True)
            self._capture._bodies = self._bodies
            from ctxtap.capture.paths import redaction_key
            from ctxtap.redaction import Redactor

            self._redact = Redactor(redaction_key(), manifest.capture_id).redact_text
        wait = min(MAX_BUILD_WAIT_S, max(MIN_BUILD_INTERVAL_S, BUILD_DUTY * self.stats.last_build_s))
        now = time.monotonic()
        build_due = now - self._last_build >= wait
        # between builds the spool is still read, less often: requests under way show meanwhile
        if not build_due and now - self._last_read < IN_PROGRESS_INTERVAL_S:
            return False
        self._last_read = now
        new = self._read_spool()
        finalized = manifest.status == "finalized"
        if finalized and not self._read_parquet and not (self.capture_dir / "spool" / SPOOL_NAME).exists():
            new = self._read_finalized() or new
        if new:
            telemetry = TelemetrySink()
            flows, ws_rows = assemble(((h, b"") for h in self._meta_frames), manifest.capture_id, lambda _: None,
                                      telemetry)
            # the tables that read the capture's flows and telemetry (network, exposures, events) see
            # what the spool holds so far, as they see the Parquet files of a finalized capture
            self._capture.set_tables(flows, ws_rows, telemetry.payloads, telemetry.records)
            # every column present, as in the finalized tables (plus the live-only first-chunk time)
            flows = [{**{n: f.get(n) for n in FLOWS_SCHEMA.names}, "ts_first_chunk": f.get("ts_first_chunk")}
                     for f in flows]
            ws_rows = [{n: m.get(n) for n in WS_SCHEMA.names} for m in ws_rows]
            with self._lock:
                self._flows = {f["flow_id"]: f for f in flows}
            self._capture.manifest = manifest
            self._unparsed = (flows, ws_rows)
        built = False
        if build_due and self._unparsed is not None:
            built = self._parse_ready(*self._unparsed)
            self._unparsed = None
        in_progress = self._in_progress()
        if built or in_progress != self._snap.in_progress or finalized != self._snap.finalized:
            self._publish(built, in_progress, finalized)
            return built
        return False

    def _read_spool(self) -> bool:
        path = self.capture_dir / "spool" / SPOOL_NAME
        new = False
        try:
            for header, payload, end in iter_frames(path, self._offset):
                self._offset = self.stats.spool_offset = end
                self.stats.frames += 1
                new = True
                if header.get("t") == "body":
                    self._bodies[header["body_id"]] = (header.get("codec"), header.get("base_id"), payload)
                else:
                    self._meta_frames.append(header)
        except FileNotFoundError:  # finalisation removed the spool between the check and the open
            pass
        return new

    def _read_finalized(self) -> bool:
        """The recorder finished (and removed the spool) before every frame was read: take the Parquet."""
        self._read_parquet = True
        flows_path = self.capture_dir / FLOWS_FILE
        if not flows_path.exists():
            return False
        capture = Capture.open(self.capture_dir)
        self._capture = capture
        self._meta_frames = []
        for f in capture.flows().to_pylist():
            self._meta_frames.append({"t": "req", **{k: v for k, v in f.items() if v is not None}})
            if f.get("state") == "complete":
                self._meta_frames.append({"t": "resp", "flow_id": f["flow_id"]})
            elif f.get("state") == "error":
                self._meta_frames.append({"t": "err", "flow_id": f["flow_id"], "error": f.get("error")})
        if (self.capture_dir / WS_FILE).exists():
            for m in capture.ws_messages().to_pylist():
                self._meta_frames.append({"t": "ws", **m, "redactions": json.loads(m.get("redactions") or "{}")})
        return True

    @staticmethod
    def _done(flow: dict) -> bool:
        if flow.get("state") == "error":
            return True
        if flow.get("kind") == "websocket":
            return flow.get("ts_ws_end") is not None  # its turns are parsed once the socket closed
        return flow.get("state") == "complete"

    def _in_progress(self) -> list[InProgress]:
        with self._lock:
            flows = list(self._flows.values())
        return [InProgress(f["flow_id"], f.get("seq"), f.get("client"), f.get("host"), f.get("path"),
                           f.get("ts_request_start"), f.get("ts_first_chunk"))
                for f in flows if f.get("is_model") and not self._done(f)]

    def _parse_ready(self, flows: list[dict], ws_rows: list[dict]) -> bool:
        ready = [f for f in flows if f["flow_id"] not in self._parsed and f.get("is_model")
                 and f.get("record_mode") == "full" and self._done(f)]
        if not ready:
            return False
        ws_by_flow: dict[str, list[dict]] = {}
        ready_ids = {f["flow_id"] for f in ready}
        for m in ws_rows:
            if m["flow_id"] in ready_ids:
                ws_by_flow.setdefault(m["flow_id"], []).append(m)
        assert self._capture is not None
        for flow in ready:
            self._parsed.add(flow["flow_id"])
            self.stats.parsed_flows += 1
            try:
                exchange = self._capture.exchange(flow, ws_by_flow.get(flow["flow_id"], []), views=True)
            except Exception as exc:  # a damaged body: the flow is skipped, and said so
                self.errors.append(f"flow {flow['flow_id']}: {type(exc).__name__}: {exc}")
                continue
            with runfacts.using(self._capture.manifest.environment, self._capture.manifest.command):
                for call in parse_exchange(exchange, self._state, self._memo):
                    self._recs.append(add_call(self._store, self._assigner, call))
                    self._history.append((call.call_key, self._shared(call.request.blocks)))
                    call.request.blocks = []
        return True

    def _shared(self, blocks: list) -> list:
        """The blocks, with the leading ones a recent request already sent replaced by that request's
        (equal) objects. Every dataset feeds all requests again to a fresh block store, whose prefix
        comparisons are then pointer comparisons instead of model equality: the cost of a live
        update stops growing with the equality checks of all history (paid here once per request)."""
        best, source = 0, None
        for _, earlier in self._history[-RECENT_REQUESTS:]:
            k = shared_prefix(earlier, blocks)
            if k > best:
                best, source = k, earlier
        return blocks if source is None else [*source[:best], *blocks[best:]]

    def _publish(self, built: bool, in_progress: list[InProgress], finalized: bool) -> None:
        dataset = self._snap.dataset
        version = self._snap.version
        sessions = self._snap.sessions
        if built or dataset is None:
            start = time.perf_counter()
            version += 1
            dataset = self.work_dir / f"v{version}"
            sessions = self._write(dataset / "analysis")
            self._last_build = time.monotonic()
            self.stats.builds += 1
            self.stats.requests = len(self._recs)
            self.stats.last_build_s = time.perf_counter() - start
        with self._lock:
            if self._snap.dataset is not None and self._snap.dataset != dataset:
                self._superseded.append((time.monotonic(), self._snap.dataset))
            self._snap = _Snapshot(version, dataset, in_progress, finalized, time.time(), sessions)
        # a reader may still be querying an older version: remove it only after a grace period
        while len(self._superseded) > KEEP_VERSIONS - 1 and self._superseded[0][0] < time.monotonic() - GRACE_S:
            shutil.rmtree(self._superseded.pop(0)[1], ignore_errors=True)

    def _write(self, out: Path) -> dict[str, int]:
        assert self._capture is not None
        store = BlockStore()
        recs = []
        for (request_id, blocks), rec in zip(self._history, self._recs, strict=True):
            rb = store.add_request(request_id, blocks)  # resent history: the store's fast path
            recs.append(CallRec(rec.call, rec.placement, rb, rb.content_ids, rec.request_id, rec.transparent))
        for h, row in store.content.items():  # count only contents new since the last build
            if h in self._tokens:
                store.tokens_by_hash[h] = row["tokens_estimated"] = self._tokens[h]
        store.tokenise()
        self._tokens.update(store.tokens_by_hash)
        ctx = BuildContext(capture=self._capture, recs=recs, store=store,
                           content_tokens=store.content_tokens(), prices=self.prices, rules=self.rules,
                           redact_text=self._redact)
        for table in TABLES:
            ctx.tables[table.name] = table.build(ctx)
        write_dataset(out, self._capture.manifest.capture_id, ctx.tables, {
            "live": True, "built_at": time.time(), "analysis_version": ANALYSIS_VERSION,
            "prices_as_of": self.prices.as_of, "cache_rules_as_of": self.rules.as_of,
            "estimate_encoding": tokens.encoding_label(), "stats": {"requests": len(self._recs)},
        }, compression="none")
        return dict(Counter(str(r["session_id"]) for r in ctx.tables["requests"]))

    # --- running ---------------------------------------------------------------------------------

    def follow(self, stop: threading.Event, interval: float = 0.05, on_error=None) -> None:
        """Poll until `stop` is set (run in a thread of the live-view process)."""
        while not stop.is_set():
            try:
                self.poll()
            except Exception as exc:  # keep following: the next frames may parse
                self.errors.append(f"{type(exc).__name__}: {exc}")
                del self.errors[:-20]
                if on_error is not None:
                    on_error(exc)
            stop.wait(interval)


def stored_flow(capture_dir: Path, flow_id: str) -> dict[str, Any] | None:
    """One flow's stored (redacted) facts of a finalized capture, read without loading the others."""
    path = Path(capture_dir) / FLOWS_FILE
    if not path.exists():
        return None
    table = pq.read_table(path, columns=HEADER_COLUMNS, filters=[("flow_id", "=", flow_id)])
    rows = table.to_pylist()
    return rows[0] if rows else None
