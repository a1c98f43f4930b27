"""Every command fails with its cause and the next step, through the real CLI, never a traceback."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys

import pytest

from tests.cli.one_call_har import HAR
from tests.proxyharness import ROOT, ctxtap_env, run_ctxtap, start_proxy


def fails(args, config, *, code: int = 1, timeout: float = 120, **kw) -> str:
    """Run `ctxtap ARGS`, expect exit `code`, return stderr (which must hold no traceback)."""
    result = run_ctxtap(args, config, check=False, timeout=timeout, **kw)
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr + result.stdout, result.stderr
    return result.stderr


@pytest.fixture(scope="module")
def capture(tmp_path_factory, ctxtap_config):
    """A small real capture, made by `ctxtap import`."""
    base = tmp_path_factory.mktemp("cli-failures")
    har = base / "one.har"
    har.write_text(json.dumps(HAR))
    run_ctxtap(["import", str(har), "--out", str(base / "cap")], ctxtap_config)
    return base / "cap"


@pytest.fixture
def damaged(capture, tmp_path):
    """A copy of the capture whose flows.parquet is cut short, as after a full disk."""
    copy = tmp_path / "damaged"
    shutil.copytree(capture, copy)
    data = (copy / "flows.parquet").read_bytes()
    (copy / "flows.parquet").write_bytes(data[: len(data) // 3])
    return copy


@pytest.fixture
def a_file(tmp_path):
    """A plain file, so that FILE/sub is a path nothing can be written to (even as root)."""
    path = tmp_path / "a-file"
    path.write_text("x")
    return path


# --- the loopback interface ----------------------------------------------------------------


def _unshare_works() -> bool:
    if not shutil.which("unshare"):
        return False
    return subprocess.run(["unshare", "-rn", "true"], capture_output=True).returncode == 0


@pytest.mark.skipif(not _unshare_works(), reason="needs `unshare -rn` (user and network namespaces)")
def test_demo_without_loopback_says_why_and_what_to_do(tmp_path, ctxtap_config):
    result = subprocess.run(["unshare", "-rn", sys.executable, "-m", "ctxtap.cli", "demo", "-o", str(tmp_path / "d")],
                            capture_output=True, text=True, env=ctxtap_env(ctxtap_config), cwd=ROOT, timeout=120)
    assert result.returncode == 1
    assert "127.0.0.1" in result.stderr and "loopback interface is down" in result.stderr
    assert "ip link set lo up" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "d" / "manifest.json").exists()


@pytest.mark.skipif(not _unshare_works(), reason="needs `unshare -rn` (user and network namespaces)")
def test_record_without_loopback_says_why(tmp_path, ctxtap_config):
    result = subprocess.run(["unshare", "-rn", sys.executable, "-m", "ctxtap.cli", "record", "--out",
                             str(tmp_path / "r"), "--", "true"],
                            capture_output=True, text=True, env=ctxtap_env(ctxtap_config), cwd=ROOT, timeout=120)
    assert result.returncode == 1 and "loopback interface is down" in result.stderr


# --- record and proxy ----------------------------------------------------------------------


def test_record_a_missing_command(tmp_path, ctxtap_config):
    err = fails(["record", "--out", str(tmp_path / "r"), "--", "no-such-command-xyz", "-p", "hi"], ctxtap_config,
                code=127)
    assert "command not found: no-such-command-xyz" in err and "PATH" in err
    assert not (tmp_path / "r").exists()  # nothing started, nothing left behind


def test_record_a_file_that_is_not_executable(tmp_path, ctxtap_config):
    script = tmp_path / "script.sh"
    script.write_text("echo hi\n")
    err = fails(["record", "--out", str(tmp_path / "r"), "--", str(script)], ctxtap_config, code=126)
    assert "not an executable file" in err and "chmod +x" in err


def test_proxy_on_a_port_in_use(tmp_path, ctxtap_config):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        err = fails(["proxy", "--port", str(port), "--out", str(tmp_path / "p")], ctxtap_config)
    assert f"127.0.0.1:{port}" in err and "already in use" in err and "--port 0" in err


def test_record_on_an_address_this_machine_does_not_have(tmp_path, ctxtap_config):
    err = fails(["record", "--listen-host", "192.0.2.1", "--out", str(tmp_path / "r"), "--", "true"], ctxtap_config)
    assert "192.0.2.1 is not an address of this machine" in err and "--listen-host" in err


def test_proxy_with_a_bad_route(tmp_path, ctxtap_config):
    err = fails(["proxy", "--port", "0", "--out", str(tmp_path / "p"), "--route", "api.anthropic.com"],
                ctxtap_config, code=2)
    assert "invalid route 'api.anthropic.com'" in err and "HOST=http(s)://" in err


def test_proxy_and_record_into_an_existing_capture(capture, ctxtap_config):
    for args in (["proxy", "--port", "0", "--out", str(capture)], ["record", "--out", str(capture), "--", "true"],
                 ["import", str(capture / "manifest.json"), "--out", str(capture)]):
        err = fails(args, ctxtap_config)
        assert f"{capture} already holds a capture" in err and "Choose another --out" in err


def test_record_into_a_capture_being_recorded(tmp_path, ctxtap_config):
    live = start_proxy(tmp_path / "live", ctxtap_config)
    try:
        err = fails(["record", "--out", str(tmp_path / "live"), "--", "true"], ctxtap_config)
        assert "is being recorded right now by another ctxtap process" in err
    finally:
        live.stop()


def test_proxy_into_an_unwritable_directory(a_file, ctxtap_config):
    err = fails(["proxy", "--port", "0", "--out", str(a_file / "cap")], ctxtap_config)
    assert f"cannot write to {a_file / 'cap'}" in err and "not a directory" in err and "--out" in err


# --- import --------------------------------------------------------------------------------


def test_import_a_broken_har_leaves_nothing_behind(tmp_path, ctxtap_config):
    har = tmp_path / "broken.har"
    har.write_text(json.dumps(HAR)[:200])
    err = fails(["import", str(har), "--out", str(tmp_path / "out")], ctxtap_config)
    assert "not valid HAR JSON" in err and "Nothing was imported" in err
    assert not (tmp_path / "out").exists()  # so the same command works once the file is fixed


# --- reading a capture ---------------------------------------------------------------------


@pytest.mark.parametrize("command", [["analyze"], ["stats"], ["report"], ["publish"], ["export", "--har", "x.har"],
                                     ["sql", "SELECT count(*) FROM requests"]])
def test_every_reader_names_a_damaged_parquet_file(damaged, ctxtap_config, command):
    args = [command[0], str(damaged), *command[1:]]
    if command[0] == "export":
        args[-1] = str(damaged.parent / "x.har")
    err = fails(args, ctxtap_config)
    assert f"cannot read {damaged / 'flows.parquet'}" in err and "The capture is damaged" in err


def test_info_on_a_damaged_manifest(capture, tmp_path, ctxtap_config):
    copy = tmp_path / "cap"
    shutil.copytree(capture, copy)
    (copy / "manifest.json").write_text('{"capture_id": ')
    err = fails(["info", str(copy)], ctxtap_config)
    assert f"{copy / 'manifest.json'} is damaged" in err and "Restore it from a copy" in err


@pytest.mark.parametrize("command", [["info"], ["analyze"], ["report"]])
def test_a_capture_in_a_newer_format_is_refused_with_the_way_out(capture, tmp_path, ctxtap_config, command):
    """Its bodies may be stored in a way this ctxtap does not know: reading them anyway could
    give wrong bytes, so it says so and what to do."""
    copy = tmp_path / "cap"
    shutil.copytree(capture, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    (copy / "manifest.json").write_text(json.dumps({**manifest, "format_version": manifest["format_version"] + 1}))
    err = fails([command[0], str(copy)], ctxtap_config)
    assert f"is in capture format {manifest['format_version'] + 1}, newer than this" in err
    assert "upgrade ctxtap" in err


def test_info_on_a_directory_that_is_not_a_capture(tmp_path, ctxtap_config):
    err = fails(["info", str(tmp_path)], ctxtap_config)
    assert "is not a ctxtap capture (no manifest.json)" in err


def test_sql_with_a_bad_query_lists_the_views(capture, ctxtap_config):
    err = fails(["sql", str(capture), "SELEC * FROM requests"], ctxtap_config)
    assert "the query failed" in err and "syntax error" in err
    assert "requests" in err and "tool_calls" in err and "DESCRIBE requests" in err


def test_sql_with_an_unknown_column(capture, ctxtap_config):
    err = fails(["sql", str(capture), "SELECT no_such_column FROM requests"], ctxtap_config)
    assert "no_such_column" in err and "docs/analysis-schema.md" in err


def test_analyze_with_a_price_table_that_is_not_toml(capture, tmp_path, ctxtap_config):
    prices = tmp_path / "prices.toml"
    prices.write_text("[[model]\nmatch = ")
    err = fails(["analyze", "--prices", str(prices), str(capture)], ctxtap_config)
    assert f"{prices} (--prices) is not valid TOML" in err and "analysis/cache/prices.toml" in err


def test_analyze_with_a_price_entry_missing_a_field(capture, tmp_path, ctxtap_config):
    prices = tmp_path / "prices.toml"
    prices.write_text('[[model]]\nmatch = "claude-*"\ninput = 1.0\n')
    err = fails(["analyze", "--prices", str(prices), str(capture)], ctxtap_config)
    assert "has an entry that cannot be used" in err and "'output'" in err


# --- writing outputs -----------------------------------------------------------------------


@pytest.mark.parametrize("command, option", [(["report", "-o"], "-o"), (["publish", "-o"], "-o"),
                                             (["export", "--har"], "--har")])
def test_outputs_into_an_unwritable_place(capture, a_file, ctxtap_config, command, option):
    err = fails([command[0], str(capture), command[1], str(a_file / "sub" / "out.x")], ctxtap_config)
    assert f"cannot write to {a_file}" in err and f"Choose another {option}" in err
