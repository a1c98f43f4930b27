"""What the live view reads: finished captures' datasets, or a capture followed while it is recorded.

Each capture has its own DuckDB connection (capture-local ids never mix), sandboxed
to its dataset by `analysis.db.connect`. A followed capture's dataset is rewritten as
a new version after each batch of completed requests; when the version changes the
connection's base views are pointed at it (the named views stay), and cursors are
taken per query (DuckDB connections are shared across threads through cursors).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from ctxtap.analysis.db import connect, fetch_rows, point_at
from ctxtap.analysis.live import LiveAnalysis, stored_flow
from ctxtap.store.query import StoreReader, store_cursor


class DatasetError(Exception):
    """A capture's analysis dataset is missing or cannot be read."""


@dataclass
class State:
    version: int
    live: bool
    finalized: bool
    in_progress: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)
    sessions: dict[str, int] = field(default_factory=dict)  # session id -> requests (live captures only)


class CaptureSource:
    """One finished capture (its dataset built beforehand by `ensure_analysis`)."""

    live = False

    def __init__(self, capture_dir: Path) -> None:
        self.path = Path(capture_dir)
        self.name = self.path.name
        self.sql_target = str(self.path)  # what `ctxtap sql` is given to read this capture
        self._con: duckdb.DuckDBPyConnection | None = None
        self._lock = threading.Lock()

    def _connect(self) -> duckdb.DuckDBPyConnection:
        return connect([self.path])

    def check(self) -> None:
        """Raise DatasetError with the cause when the dataset cannot be queried."""
        try:
            self.rows("SELECT count(*) AS n FROM requests")
        except duckdb.Error as exc:
            raise DatasetError(str(exc).splitlines()[0]) from None

    def cursor(self) -> duckdb.DuckDBPyConnection:
        with self._lock:
            if self._con is None:
                self._con = self._connect()
            return self._con.cursor()

    def rows(self, sql: str, params: list | tuple = ()) -> list[dict[str, Any]]:
        return fetch_rows(self.cursor(), sql, list(params))

    def state(self) -> State:
        return State(version=1, live=False, finalized=True)

    def flow(self, flow_id: str) -> dict[str, Any] | None:
        return stored_flow(self.path, flow_id)


class StoreSource(CaptureSource):
    """One capture of a store, read in place (`ctxtap serve s3://...`): its tables through a sandboxed
    connection over its objects, a flow's heads fetched from its Parquet object when a page asks."""

    def __init__(self, reader: StoreReader, capture_id: str) -> None:
        super().__init__(Path(capture_id))
        self.reader, self.capture_id = reader, capture_id
        self.sql_target = f"{reader.store} --capture {capture_id}"

    def _connect(self) -> duckdb.DuckDBPyConnection:
        return self.reader.connect([self.capture_id])

    def cursor(self) -> duckdb.DuckDBPyConnection:
        with self._lock:
            if self._con is None:
                self._con = self._connect()
            return store_cursor(self._con)

    def flow(self, flow_id: str) -> dict[str, Any] | None:
        return self.reader.flow(self.capture_id, flow_id)


class LiveSource(CaptureSource):
    """A capture being recorded, through a `LiveAnalysis` that a thread keeps polling."""

    live = True

    def __init__(self, analysis: LiveAnalysis) -> None:
        super().__init__(analysis.capture_dir)
        self.analysis = analysis
        self._version = -1

    def check(self) -> None:  # nothing to check before the first request
        return

    def cursor(self) -> duckdb.DuckDBPyConnection:
        snap = self.analysis.snapshot()
        with self._lock:
            if snap.dataset is None:
                raise DatasetError("nothing recorded yet")
            if self._con is None or not snap.dataset.exists():
                # every version lives under the analysis' work folder: the sandbox allows that folder
                # one thread: a live page's queries are small, and the proxy beside it needs the cores
                self._con = connect([snap.dataset], allowed_roots=[self.analysis.work_dir], threads=1)
                self._version = snap.version
            elif snap.version != self._version:
                point_at(self._con, [snap.dataset])  # the named views stay: only the base views move
                self._version = snap.version
            return self._con.cursor()

    def rows(self, sql: str, params: list | tuple = ()) -> list[dict[str, Any]]:
        for attempt in range(3):
            try:
                return super().rows(sql, params)
            except DatasetError:
                return []
            except duckdb.IOException:  # its version was removed under a slow query: take the newest
                with self._lock:
                    self._con = None
                if attempt == 2:
                    raise
        return []

    def state(self) -> State:
        snap = self.analysis.snapshot()
        return State(
            version=snap.version, live=True, finalized=snap.finalized,
            in_progress=[{"flow_id": p.flow_id, "client": p.client, "host": p.host, "path": p.path,
                          "ts_start": p.ts_start, "ts_first_chunk": p.ts_first_chunk} for p in snap.in_progress],
            errors=list(self.analysis.errors[-5:]), stats=dict(self.analysis.stats.__dict__),
            sessions=snap.sessions)

    def flow(self, flow_id: str) -> dict[str, Any] | None:
        return self.analysis.flow(flow_id) or stored_flow(self.path, flow_id)
