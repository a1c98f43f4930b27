"""DuckDB over one or more captures' analysis datasets, with the named views."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb

from ctxtap.analysis.schema import TABLES
from ctxtap.analysis.views import view_files

ANALYSIS_DIR = "analysis"


def dataset_dir(capture_dir: Path) -> Path:
    return Path(capture_dir) / ANALYSIS_DIR


def table_glob(capture_dir: Path, table: str) -> str:
    return str(dataset_dir(capture_dir) / table / "*" / "*.parquet")


def connect(capture_dirs: Sequence[Path], database: str = ":memory:",
            allow_external: bool = False, allowed_roots: Sequence[Path] | None = None,
            threads: int | None = None) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with `t_<table>` base views and the named views over the datasets.

    The datasets must exist (see `analysis.build.ensure_analysis`). Unless `allow_external`,
    the connection can read the captures' datasets and nothing else:
    `allowed_directories` is set to them (or to `allowed_roots`, folders that hold the
    datasets a live view points the connection at later), external access is switched off
    and the configuration locked, so a query cannot `read_csv('/etc/passwd')`, `COPY ... TO`
    a file elsewhere, attach a database or install an extension. DuckDB lets it write inside
    the allowed directories though: a caller running a user's SQL checks it first with
    `analysis.sqlguard.check_statements`. `threads` caps DuckDB's worker threads
    (default: one per core).
    """
    con = duckdb.connect(database, config={"threads": threads} if threads else {})
    point_at(con, capture_dirs)
    for path in view_files():
        con.execute(path.read_text())
    if not allow_external:
        roots = [Path(r) for r in allowed_roots] if allowed_roots is not None else \
            [dataset_dir(Path(c)) for c in capture_dirs]
        allowed = ", ".join(_sql_str(str(r.resolve()) + "/") for r in roots)
        con.execute(f"SET allowed_directories = [{allowed}]")
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")
    return con


def point_at(con: duckdb.DuckDBPyConnection, capture_dirs: Sequence[Path]) -> None:
    """(Re)create the `t_<table>` base views over these datasets; the named views, bound when queried,
    then read them. A tenth of a new connection's cost: what a live view does for each new version."""
    for table in TABLES:
        globs = ", ".join(_sql_str(table_glob(Path(c), table)) for c in capture_dirs)
        con.execute(
            f"CREATE OR REPLACE VIEW t_{table} AS SELECT * FROM read_parquet([{globs}], hive_partitioning = true, "
            "union_by_name = true, hive_types = {'capture_id': VARCHAR})"
        )


def fetch_rows(con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
    """A query's rows as dicts keyed by column name."""
    cur = con.execute(sql, list(params))
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def _sql_str(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"
