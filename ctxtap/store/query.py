"""DuckDB over the store, read in place: the named views of `analysis/db.py` over pyarrow datasets.

Each `t_<table>` base view is a pyarrow dataset on the S3 filesystem whose files are exactly the
selected captures' parts of that table (the filters pick the partitions from the index's keys;
one LIST per client and day partition finds the files). DuckDB pushes a query's projection and
filters into the dataset scan, so only the columns it uses are fetched (ranged reads of the
Parquet column chunks). A dataset's schema is the current table's columns unioned by name with
one footer read per distinct schema digest in the file names, so captures pushed by different
ctxtap versions read together (a column one lacks is null). No DuckDB extension is loaded.

The connection is sandboxed like a local one: no local directory is allowed, external access is
off and the configuration locked; the caller runs `sqlguard.check_statements` on a user's SQL first.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import date

import duckdb
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
from pyarrow import fs

from ctxtap.analysis.schema import SCHEMAS, TABLES
from ctxtap.analysis.views import view_files
from ctxtap.store.layout import CAPTURES, Entry, capture_files, list_captures
from ctxtap.store.location import StoreError, StoreURL, s3_filesystem

_PART = re.compile(r"part-[^/]*?-(?P<digest>[0-9a-f]{8})\.parquet$")
PARTITIONING = ds.partitioning(pa.schema([("clients", pa.string()), ("day", pa.string()),
                                          ("capture_id", pa.string())]), flavor="hive")


@dataclass
class StoreSelection:
    """What a store query reads: the captures the filters kept and each table's files."""

    store: StoreURL
    entries: list[Entry]
    files: dict[str, list[str]] = field(default_factory=dict)  # table -> paths
    digests: dict[str, dict[str, str]] = field(default_factory=dict)  # table -> digest -> one path


def select(filesystem: fs.FileSystem, store: StoreURL, *, clients: Iterable[str] = (), since: date | None = None,
           captures: Iterable[str] = ()) -> StoreSelection:
    entries = list_captures(filesystem, store, clients=clients, since=since, captures=captures)
    selection = StoreSelection(store, entries)
    for infos in capture_files(filesystem, store, entries).values():
        for info in infos:
            head, _, name = info.path.rpartition("/")
            table = head.rpartition("/")[2]
            m = _PART.search(name)
            if m is None or "/analysis/" not in info.path or table not in TABLES:
                continue
            selection.files.setdefault(table, []).append(info.path)
            selection.digests.setdefault(table, {}).setdefault(m["digest"], info.path)
    return selection


def _schema(filesystem: fs.FileSystem, table: str, samples: Iterable[str]) -> pa.Schema:
    schemas = [SCHEMAS[table]]
    for path in samples:
        with filesystem.open_input_file(path) as f:
            schemas.append(pq.read_schema(f))
    merged = pa.unify_schemas([s.remove_metadata() for s in schemas], promote_options="permissive")
    return pa.schema([f for f in merged if f.name not in ("clients", "day", "capture_id")])


def datasets(filesystem: fs.FileSystem, selection: StoreSelection) -> dict[str, ds.Dataset | pa.Table]:
    """One pyarrow dataset per table (an empty table of the current schema where no capture has it)."""
    base = selection.store.path(CAPTURES)
    tables = list(TABLES)
    with ThreadPoolExecutor(8) as pool:
        schemas = dict(zip(tables, pool.map(
            lambda t: _schema(filesystem, t, selection.digests.get(t, {}).values()), tables), strict=True))
    out: dict[str, ds.Dataset | pa.Table] = {}
    for table in tables:
        files = selection.files.get(table)
        schema = schemas[table]
        full = pa.schema([*schema, pa.field("clients", pa.string()), pa.field("day", pa.string()),
                          pa.field("capture_id", pa.string())])
        if not files:
            out[table] = full.empty_table()
            continue
        out[table] = ds.dataset(files, schema=full, format="parquet", filesystem=filesystem,
                                partitioning=PARTITIONING, partition_base_dir=base)
    return out


# what each store connection registered: a cursor (another thread's handle on the same database) does
# not see a connection's registered datasets, so `store_cursor` registers them again on it
_REGISTERED: dict[int, dict[str, ds.Dataset | pa.Table]] = {}


def store_cursor(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """A cursor of a store connection that reads the same tables (for a server's worker threads)."""
    cur = con.cursor()
    for table, data in _REGISTERED.get(id(con), {}).items():
        cur.register(f"_store_{table}", data)
    return cur


def subset(selection: StoreSelection, capture_ids: Iterable[str]) -> StoreSelection:
    """The part of a selection that holds these captures (no request to the store)."""
    ids = set(capture_ids)
    out = StoreSelection(selection.store, [e for e in selection.entries if e.capture_id in ids])
    for table, paths in selection.files.items():
        for path in paths:
            if any(part.startswith("capture_id=") and part[len("capture_id="):] in ids for part in path.split("/")):
                out.files.setdefault(table, []).append(path)
                m = _PART.search(path)
                if m is not None:
                    out.digests.setdefault(table, {}).setdefault(m["digest"], path)
    return out


def connect_store(url: str, *, clients: Iterable[str] = (), since: date | None = None, captures: Iterable[str] = (),
                  endpoint_url: str | None = None, filesystem: fs.FileSystem | None = None,
                  threads: int | None = None, allow_external: bool = False, selection: StoreSelection | None = None,
                  ) -> tuple[duckdb.DuckDBPyConnection, StoreSelection]:
    """A sandboxed DuckDB connection with the named views over the store's selected captures
    (`allow_external`: `sql --allow-external`, local files readable and writable as with local captures;
    `selection`: one made before, so no listing is repeated)."""
    store = StoreURL.parse(url)
    filesystem = filesystem or s3_filesystem(endpoint_url)
    try:
        if selection is None:
            selection = select(filesystem, store, clients=clients, since=since, captures=captures)
        if not selection.entries:
            raise StoreError(f"no capture in {store} matches the filters (ctxtap ls {store} lists them)")
        tables = datasets(filesystem, selection)
    except OSError as exc:
        raise StoreError(f"cannot read {store}: {exc}") from exc
    con = duckdb.connect(":memory:", config={"threads": threads} if threads else {})
    for table, data in tables.items():
        con.register(f"_store_{table}", data)
        con.execute(f"CREATE OR REPLACE VIEW t_{table} AS SELECT * EXCLUDE (clients, day) FROM _store_{table}")
    _REGISTERED[id(con)] = tables
    for path in view_files():
        con.execute(path.read_text())
    if not allow_external:  # with it, the caller locks the configuration once it has set what it needs
        con.execute("SET allowed_directories = []")
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")
    return con, selection


class StoreReader:
    """The selected captures of a store, read in place by `report`, `serve` and `experiment report`:
    the store is listed once, then each set of captures gets its own sandboxed connection over just
    its files, and a recorded flow's headers are read from its capture's Parquet object on demand."""

    def __init__(self, url: str, *, clients: Iterable[str] = (), since: date | None = None,
                 captures: Iterable[str] = (), endpoint_url: str | None = None,
                 filesystem: fs.FileSystem | None = None) -> None:
        self.store = StoreURL.parse(url)
        self.filesystem = filesystem or s3_filesystem(endpoint_url)
        try:
            self.selection = select(self.filesystem, self.store, clients=clients, since=since, captures=captures)
        except OSError as exc:
            raise StoreError(f"cannot read {self.store}: {exc}") from exc
        if not self.selection.entries:
            raise StoreError(f"no capture in {self.store} matches the filters (ctxtap ls {self.store} lists them)")
        self._flows: dict[str, str | None] = {}  # capture id -> its flows object (None: not pushed)

    @property
    def capture_ids(self) -> list[str]:
        return [e.capture_id for e in self.selection.entries]

    def connect(self, capture_ids: Iterable[str] | None = None, *, threads: int | None = None,
                ) -> duckdb.DuckDBPyConnection:
        """A sandboxed connection over these captures (default: every selected one)."""
        part = self.selection if capture_ids is None else subset(self.selection, capture_ids)
        con, _ = connect_store(str(self.store), filesystem=self.filesystem, selection=part, threads=threads)
        return con

    def flow(self, capture_id: str, flow_id: str) -> dict | None:
        """One flow's stored (redacted) request and response heads, as `analysis.live.stored_flow` reads
        them from a local capture; None when the capture's flows were not pushed (`--pseudonymise`)."""
        from ctxtap.analysis.live import HEADER_COLUMNS
        from ctxtap.capture.finalize import FLOWS_FILE
        from ctxtap.store.pull import read_index

        if capture_id not in self._flows:
            entry = next(e for e in self.selection.entries if e.capture_id == capture_id)
            objects = read_index(self.filesystem, self.store, entry).get("objects", [])
            key = next((o["key"] for o in objects if o.get("path") == FLOWS_FILE), None)
            self._flows[capture_id] = entry.capture_path(self.store, key) if key else None
        path = self._flows[capture_id]
        if path is None:
            return None
        try:
            table = pq.read_table(path, filesystem=self.filesystem, columns=HEADER_COLUMNS,
                                  filters=[("flow_id", "=", flow_id)])
        except OSError as exc:
            raise StoreError(f"cannot read {path}: {exc}") from exc
        rows = table.to_pylist()
        return rows[0] if rows else None
