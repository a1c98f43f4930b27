"""Queries stay inside the captures: no file outside them is read or written unless the user asks."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from ctxtap.analysis.build import ensure_analysis
from ctxtap.analysis.db import connect
from ctxtap.cli.main import main


@pytest.fixture(scope="module")
def analysed(demo_capture: Path) -> Path:
    ensure_analysis(demo_capture)
    return demo_capture


@pytest.mark.parametrize("query", [
    "SELECT * FROM read_csv('/etc/passwd')",
    "SELECT * FROM read_text('/etc/hostname')",
    "ATTACH '{tmp}/other.db' AS other",
    "SET enable_external_access = true",
    "SET allowed_directories = ['/']",
])
def test_the_connection_refuses_reads_outside_the_captures(analysed: Path, tmp_path: Path, query: str) -> None:
    con = connect([analysed])
    with pytest.raises(duckdb.Error):
        con.execute(query.format(tmp=tmp_path))


def test_copy_to_a_file_is_refused_and_nothing_is_written(analysed: Path, tmp_path: Path) -> None:
    con = connect([analysed])
    target = tmp_path / "out.csv"
    with pytest.raises(duckdb.Error):
        con.execute(f"COPY (SELECT * FROM requests) TO '{target}'")
    assert not target.exists()
    assert con.execute("SELECT count(*) FROM requests").fetchone()[0] > 0  # the views still work


def test_ctxtap_sql_refuses_by_default_and_allows_when_asked(analysed: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    target = tmp_path / "sessions.csv"
    query = f"COPY (SELECT session_id FROM sessions) TO '{target}' (HEADER)"
    refused = runner.invoke(main, ["sql", str(analysed), query])
    assert refused.exit_code != 0 and "Permission" in refused.output and not target.exists()
    allowed = runner.invoke(main, ["sql", str(analysed), query, "--allow-external"])
    assert allowed.exit_code == 0, allowed.output
    assert target.read_text().startswith("session_id")


# `ctxtap sql` runs reading statements only: DuckDB's directory allow-list lets a query write wherever it
# may read, so a COPY into a capture's analysis dataset would change what later queries and reports read.


def _files(directory: Path) -> dict[str, int]:
    return {str(p.relative_to(directory)): p.stat().st_size for p in directory.rglob("*") if p.is_file()}


@pytest.fixture
def own_capture(analysed: Path, tmp_path: Path) -> Path:
    """A copy of the demo capture this test may find written to (the shared one stays clean)."""
    import shutil

    copy = tmp_path / "cap"
    shutil.copytree(analysed, copy)
    return copy


@pytest.mark.parametrize("query", [
    "COPY (SELECT 1 AS x) TO '{cap}/analysis/x.parquet' (FORMAT parquet)",
    "COPY (SELECT * FROM requests LIMIT 0) TO '{cap}/analysis/requests/capture_id=x/0.parquet' (FORMAT parquet)",
    "COPY requests FROM '{cap}/analysis/requests/x.csv'",
    "EXPORT DATABASE '{cap}/analysis/export'",
    "EXPLAIN ANALYZE COPY (SELECT 1) TO '{cap}/analysis/x.csv'",
    "SELECT 1; COPY (SELECT 1) TO '{cap}/analysis/x.csv'",
    "CREATE TABLE t AS SELECT 1",
    "CREATE OR REPLACE VIEW requests AS SELECT 1 AS x",
    "INSERT INTO t_requests SELECT * FROM t_requests",
    "DROP VIEW requests",
    "ATTACH '{cap}/analysis/x.db' AS x",
    "SET threads = 1",
    "RESET threads",
    "PRAGMA enable_profiling",
    "CALL checkpoint()",
    "INSTALL httpfs",
    "LOAD httpfs",
    "PREPARE p AS SELECT 1",
    "UPDATE EXTENSIONS",
])
def test_ctxtap_sql_refuses_writing_statements_in_one_line(own_capture: Path, query: str) -> None:
    before = _files(own_capture)
    result = CliRunner().invoke(main, ["sql", str(own_capture), query.format(cap=own_capture)])
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit)  # a said refusal, not an exception out of DuckDB
    assert result.output.startswith("Error: Permission denied: ") and result.output.count("\n") == 1, result.output
    assert _files(own_capture) == before


@pytest.mark.parametrize("query", [
    "SELECT count(*) AS n FROM requests",
    "WITH r AS (SELECT * FROM requests) SELECT count(*) AS n FROM r",
    "FROM sessions SELECT count(*) AS n",
    "DESCRIBE requests",
    "SHOW TABLES",
    "SUMMARIZE SELECT 1 AS n",
    "VALUES (1)",
    "EXPLAIN SELECT * FROM requests",
    "EXPLAIN ANALYZE SELECT count(*) FROM requests",
    "SELECT 1 AS a; SELECT 2 AS b",
])
def test_ctxtap_sql_runs_reading_statements(own_capture: Path, query: str) -> None:
    before = _files(own_capture)
    result = CliRunner().invoke(main, ["sql", str(own_capture), query, "--format", "csv"])
    assert result.exit_code == 0, result.output
    assert _files(own_capture) == before


def test_allow_external_writes_outside_the_captures_only(own_capture: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    store = tmp_path / "store"
    (store / "other").mkdir(parents=True)
    monkeypatch.setenv("CTXTAP_CAPTURES", str(store))
    (tmp_path / "link").symlink_to(own_capture)
    monkeypatch.chdir(own_capture / "analysis")
    before = _files(own_capture)
    inside = [
        f"COPY (SELECT 1 AS x) TO '{own_capture}/analysis/x.parquet' (FORMAT parquet)",
        f"COPY (SELECT 1 AS x) TO '{own_capture}'",
        f"COPY (SELECT 1 AS x) TO 'file://{own_capture}/x.csv'",
        f"COPY (SELECT 1 AS x) TO '{tmp_path}/link/analysis/x.csv'",
        f"COPY (SELECT 1 AS x) TO '{tmp_path}/elsewhere/../cap/x.csv'",
        "COPY (SELECT 1 AS x) TO 'relative.csv'",  # the working directory is inside the capture
        f"COPY (SELECT 1 AS x) TO '{store}/other/x.csv'",  # the captures store
        f"EXPORT DATABASE '{own_capture}/analysis/export'",
        f"ATTACH '{own_capture}/analysis/x.db' AS x",
        f"EXPLAIN ANALYZE COPY (SELECT 1) TO '{own_capture}/x.csv'",
        f"SELECT 1; COPY (SELECT 1) TO '{own_capture}/x.csv'",
        f"COPY (SELECT 1) TO ('{own_capture}' || '/x.csv')",  # a path the guard cannot read is refused too
        "SET temp_directory = '.'",
    ]
    for query in inside:
        result = CliRunner().invoke(main, ["sql", str(own_capture), query, "--allow-external"])
        assert result.exit_code == 1, (query, result.output)
        assert result.output.startswith("Error: Permission denied: ") and result.output.count("\n") == 1, \
            result.output
    # a table function that would move DuckDB's own output files: the configuration stays locked
    result = CliRunner().invoke(main, ["sql", str(own_capture), "SELECT * FROM enable_profiling()", "--allow-external"])
    assert result.exit_code == 1 and "configuration has been locked" in result.output, result.output
    assert _files(own_capture) == before and not any(store.rglob("*.csv"))
    out = tmp_path / "out"
    out.mkdir()
    allowed = [
        f"COPY (SELECT session_id FROM sessions) TO '{out}/s.csv' (HEADER)",
        f"COPY (SELECT 1 AS x) TO '{out}/x.parquet' (FORMAT parquet)",
        f"ATTACH '{out}/x.db' AS x; CREATE TABLE x.t AS SELECT 1 AS n",
        f"SELECT * FROM read_csv('{out}/s.csv')",
    ]
    for query in allowed:
        result = CliRunner().invoke(main, ["sql", str(own_capture), query, "--allow-external"])
        assert result.exit_code == 0, (query, result.output)
    assert (out / "s.csv").read_text().startswith("session_id") and (out / "x.db").exists()
