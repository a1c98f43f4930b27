"""Queries stay inside the captures: no file outside them is read or written unless the user asks."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from analysis.build import ensure_analysis
from analysis.db import connect
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
