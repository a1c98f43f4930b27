"""Issue 34, the first hour of a new user: what used to fail silently, or take options one command
had and the next did not. Every check goes through the real command line."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest

from tests.cli.one_call_har import HAR
from tests.proxyharness import ROOT, run_ctxtap


@pytest.fixture(scope="module")
def capture(tmp_path_factory, ctxtap_config) -> Path:
    """A small real capture, made by `ctxtap import` (one Anthropic request), analysed."""
    base = tmp_path_factory.mktemp("first-hour")
    har = base / "one.har"
    har.write_text(json.dumps(HAR))
    run_ctxtap(["import", str(har), "--out", str(base / "cap")], ctxtap_config)
    run_ctxtap(["analyze", str(base / "cap")], ctxtap_config)
    return base / "cap"


def failed(args: list[str], config: Path, code: int = 1) -> str:
    """Run `ctxtap ARGS`, expect exit `code` and no traceback, return stderr."""
    result = run_ctxtap(args, config, check=False)
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stdout + result.stderr
    return result.stderr


# --- set-up ---------------------------------------------------------------------------------------


def test_make_says_what_the_first_run_installs(tmp_path) -> None:
    """pip is quiet for a minute or two on the first `make demo`: one line says what is going on."""
    out = subprocess.run(["make", "-n", "--no-print-directory", f"VENV={tmp_path / 'venv'}", "demo"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    line = next((x for x in out.splitlines() if "installing ctxtap into" in x), "")
    assert "first run only" in line and "minutes" in line, out


# --- silent "nothing happened" --------------------------------------------------------------------


def test_record_without_any_model_request_says_what_to_check(tmp_path, ctxtap_config) -> None:
    result = run_ctxtap(["record", "--offline", "--out", str(tmp_path / "cap"), "--", sys.executable, "-c", "pass"],
                        ctxtap_config)
    assert "no model request was seen" in result.stderr
    assert "HTTPS_PROXY" in result.stderr and "--model-host" in result.stderr


def test_record_of_an_unknown_api_host_names_it_for_model_host(tmp_path, ctxtap_config) -> None:
    """A request that went through the proxy to a host ctxtap does not know as a model API: the hint
    names that host, ready for --model-host."""
    client = ("import urllib.request; urllib.request.urlopen(urllib.request.Request("
              "'http://llm.internal.test/v1/generate', data=b'{}'), timeout=30).read()")
    result = run_ctxtap(["record", "--offline", "--out", str(tmp_path / "cap"), "--", sys.executable, "-c", client],
                        ctxtap_config)
    assert "no model request was seen" in result.stderr
    assert "--model-host llm.internal.test" in result.stderr


def test_info_and_stats_name_a_missing_flows_file(capture, tmp_path, ctxtap_config) -> None:
    copy = tmp_path / "cap"
    shutil.copytree(capture, copy)
    (copy / "flows.parquet").unlink()
    err = failed(["info", str(copy)], ctxtap_config)
    assert "flows.parquet is missing" in err
    info = run_ctxtap(["info", str(copy), "--json"], ctxtap_config, check=False)
    assert info.returncode == 1 and json.loads(info.stdout)["missing_files"] == ["flows.parquet"]
    err = failed(["stats", str(copy)], ctxtap_config)
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1 and "flows.parquet is missing" in lines[0], err
    assert lines[0].count(str(copy / "flows.parquet")) == 1, err


def test_import_a_har_without_entries_is_refused(tmp_path, ctxtap_config) -> None:
    har = tmp_path / "empty.har"
    har.write_text('{"log": {"version": "1.2", "entries": []}}')
    err = failed(["import", str(har), "--out", str(tmp_path / "out")], ctxtap_config)
    assert "no entries" in err and "Nothing was imported" in err
    assert not (tmp_path / "out").exists()


def test_import_a_flow_file_without_flows_is_refused(tmp_path, ctxtap_config) -> None:
    empty = tmp_path / "empty.mitm"
    empty.write_bytes(b"")
    err = failed(["import", str(empty), "--out", str(tmp_path / "out")], ctxtap_config)
    assert "holds no flows" in err and "Nothing was imported" in err


def test_import_skips_an_entry_without_url_and_says_so(tmp_path, ctxtap_config) -> None:
    entry = HAR["log"]["entries"][0]
    broken = json.loads(json.dumps(entry))
    del broken["request"]["url"]
    har = tmp_path / "two.har"
    har.write_text(json.dumps({"log": {**HAR["log"], "entries": [broken, entry, broken]}}))
    result = run_ctxtap(["import", str(har), "--out", str(tmp_path / "cap")], ctxtap_config)
    assert "skipped 2 of 3 entries of two.har: no request URL (entries 0, 2)" in result.stderr
    assert "model requests 1" in result.stdout
    manifest = json.loads((tmp_path / "cap" / "manifest.json").read_text())
    assert manifest["options"]["skipped_entries"] == [
        {"file": "two.har", "reason": "no request URL", "count": 2, "of": 3, "entries": [0, 2]}]


@pytest.mark.parametrize("command", [["info"], ["stats"], ["report"], ["publish"], ["analyze"],
                                     ["sql", "SELECT 1"], ["export", "--har", "x.har"], ["diff", "@other"]])
def test_a_folder_of_captures_suggests_the_captures_in_it(capture, tmp_path, ctxtap_config, command) -> None:
    store = tmp_path / "captures"
    store.mkdir()
    for name in ("demo-20261201-100000", "demo-20261202-100000"):
        shutil.copytree(capture, store / name)
    args = [command[0], str(store), *command[1:]]
    if command[0] == "diff":
        args[-1] = str(store)
    if command[0] == "export":
        args[-1] = str(tmp_path / "x.har")
    err = failed(args, ctxtap_config)
    assert f"{store} holds captures, not a capture: e.g. {store / 'demo-20261202-100000'}" in err, err
    assert str(store / "demo-20261201-100000") in err


# --- options --------------------------------------------------------------------------------------


def _commands(group: click.Group, prefix: str = "") -> list[tuple[str, click.Command]]:
    ctx = click.Context(group)
    found = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if isinstance(command, click.Group):
            found += _commands(command, f"{prefix}{name} ")
        elif command is not None:
            found.append((f"{prefix}{name}", command))
    return found


def test_every_output_option_is_o_and_out() -> None:
    """Where a command writes a file or directory of its own choosing, `-o/--out` names it, whatever
    longer name it had before."""
    from ctxtap.cli.main import main

    outputs = {}
    for name, command in _commands(main):
        for param in command.params:
            if isinstance(param, click.Option) and {"--out", "--output", "--html"} & set(param.opts):
                outputs[name] = param.opts
    assert {"demo", "record", "proxy", "import", "report", "publish", "replay", "diff", "experiment run",
            "experiment report"} <= set(outputs)
    assert all("-o" in opts and "--out" in opts for opts in outputs.values()), outputs
    assert "--output" in outputs["report"] and "--html" in outputs["diff"]  # the old names still work


def test_diff_and_experiment_ignore_ids_by_default_and_both_flags_work() -> None:
    from ctxtap.cli.diff import diff
    from ctxtap.cli.experiment import report

    for command in (diff, report):
        option = next(p for p in command.params if p.name == "ignore_ids")
        assert option.default is True and set(option.opts + option.secondary_opts) == {"--ignore-ids",
                                                                                         "--strict-ids"}


def test_stats_json_has_the_figures_of_the_text(capture, ctxtap_config) -> None:
    text = run_ctxtap(["stats", str(capture)], ctxtap_config).stdout
    data = json.loads(run_ctxtap(["stats", str(capture), "--json"], ctxtap_config).stdout)
    session = data["sessions"][0]
    assert f"requests {session['n_requests']} (main {session['n_main']}, side {session['n_side']})" in text
    assert sum(data["requests_by_purpose"].values()) == 1
    assert all(f"  {p:<16} {n}" in text for p, n in data["requests_by_purpose"].items())
    assert set(data) >= {"sessions", "requests_by_purpose", "errors_by_layer", "growth", "cache_misses",
                         "prefix_changes", "tool_calls", "process_efficiency"}
    assert data["process_efficiency"][0]["session_id"] == session["session_id"]


def test_help_examples_stay_on_their_lines() -> None:
    """click rewraps paragraphs: an example command must come out of --help as written."""
    from ctxtap.cli.main import main

    for name, command in _commands(main):
        rendered = run_help(command, name)
        for line in (command.help or "").splitlines():
            example = line.strip()
            if example.startswith(("ctxtap ", "Example: ctxtap ")):
                assert any(x.strip() == example for x in rendered.splitlines()), (name, example, rendered)


def run_help(command: click.Command, name: str) -> str:
    with click.Context(command, info_name=f"ctxtap {name}", terminal_width=80, max_content_width=80) as ctx:
        return command.get_help(ctx)


def test_sql_help_lists_every_view_and_macro(capture) -> None:
    from ctxtap.analysis.db import connect
    from ctxtap.analysis.views import view_names
    from ctxtap.cli.main import sql

    con = connect([capture])
    created = {r[0] for r in con.execute(
        "SELECT view_name FROM duckdb_views() WHERE NOT internal AND view_name NOT LIKE 't\\_%' ESCAPE '\\' "
        "UNION SELECT function_name FROM duckdb_functions() WHERE function_type = 'table_macro' "
        "AND NOT internal").fetchall()}
    names = view_names()
    assert {n.split("(")[0] for n in names} == created and "request_bins(k)" in names, names
    words = {w.strip(",.") for w in run_help(sql, "sql").split()}
    assert set(names) <= words, set(names) - words


def test_sql_table_shows_times_and_rounded_floats(capture, ctxtap_config) -> None:
    query = "SELECT ts_start, 0.1::DOUBLE + 0.2::DOUBLE AS noisy, cost_usd, 12345.678::DOUBLE AS big FROM requests"
    table = run_ctxtap(["sql", str(capture), query], ctxtap_config).stdout
    row = table.splitlines()[2].split()
    assert row[0] == "2026-11-29T10:00:00.000Z" and row[1] == "0.3" and row[3] == "12345.7", table
    data = json.loads(run_ctxtap(["sql", str(capture), query, "--format", "json"], ctxtap_config).stdout)
    assert data[0]["ts_start"] == pytest.approx(1795946400.0) and data[0]["noisy"] == 0.30000000000000004


def test_request_bins_has_what_the_readme_promises(capture, ctxtap_config) -> None:
    """README: 'a thread's requests in bins of k (means, cumulative input, misses)'."""
    data = json.loads(run_ctxtap(["sql", str(capture), "SELECT * FROM request_bins(5)", "--format", "json"],
                                 ctxtap_config).stdout)
    row = data[0]
    assert {"bin", "n_requests", "mean_input_tokens_estimated", "mean_input_tokens_reported",
            "cumulative_input_tokens", "n_misses"} <= set(row), row
    assert row["n_requests"] == 1 and row["bin"] == 0


def test_hints_spell_ctxtap_as_it_was_run(tmp_path, monkeypatch) -> None:
    """`ctxtap` only where the PATH finds this very script; else its path, relative inside the working folder."""
    from ctxtap.cli.invocation import invoked_as

    script = tmp_path / "repo" / ".venv" / "bin" / "ctxtap"
    script.parent.mkdir(parents=True)
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    monkeypatch.chdir(tmp_path / "repo")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert invoked_as(str(script)) == ".venv/bin/ctxtap"
    assert invoked_as(".venv/bin/ctxtap") == ".venv/bin/ctxtap"
    python = script.parent / "python"
    assert invoked_as(str(tmp_path / "ctxtap" / "cli" / "main.py"), str(python)) == ".venv/bin/python -m ctxtap.cli"
    assert invoked_as(str(script.parent.parent)) == "ctxtap"  # not a script: the plain name
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert invoked_as(str(script)) == str(script)
    monkeypatch.setenv("PATH", str(script.parent))
    assert invoked_as(str(script)) == "ctxtap"
