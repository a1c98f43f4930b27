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


def connect_store(url: str, *, clients: Iterable[str] = (), since: date | None = None, captures: Iterable[str] = (),
                  endpoint_url: str | None = None, filesystem: fs.FileSystem | None = None,
                  threads: int | None = None, allow_external: bool = False,
                  ) -> tuple[duckdb.DuckDBPyConnection, StoreSelection]:
    """A sandboxed DuckDB connection with the named views over the store's selected captures
    (`allow_external`: `sql --allow-external`, local files readable and writable as with local captures)."""
    store = StoreURL.parse(url)
    filesystem = filesystem or s3_filesystem(endpoint_url)
    try:
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
    for path in view_files():
        con.execute(path.read_text())
    if not allow_external:  # with it, the caller locks the configuration once it has set what it needs
        con.execute("SET allowed_directories = []")
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")
    return con, selection
