"""`ctxtap record --telemetry`: which switches each client gets, that the user's own settings
win, and that an exporting process's telemetry ends up in the capture (real `ctxtap record`,
real receiver; the exporting "client" is a small script that behaves like an OTLP exporter,
the real CLIs are in the real-CLI tier)."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

from ctxtap.cli import telemetry_env
from tests.proxyharness import run_ctxtap

EXPORTER = r'''#!PYTHON
"""Exports one log record to the OTLP endpoint in its environment, like an OTel SDK would."""
import json, os, sys, urllib.request
sys.path.insert(0, ROOT)
from tests.capture.otlp_logs import claude_tool_result_logs
endpoint = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or os.environ.get("GEMINI_TELEMETRY_OTLP_ENDPOINT")
with open(os.environ["SEEN_FILE"], "w") as fh:
    json.dump({"argv": sys.argv, "env": {k: v for k, v in os.environ.items()
               if k.startswith(("OTEL_", "GEMINI_TELEMETRY", "CLAUDE_CODE_"))}}, fh)
if endpoint and os.environ.get("OTEL_LOGS_EXPORTER", "otlp") == "otlp" and "127.0.0.1" in endpoint:
    req = urllib.request.Request(endpoint + "/v1/logs", data=claude_tool_result_logs(1764590000000000000),
                                 headers={"content-type": "application/x-protobuf"}, method="POST")
    urllib.request.urlopen(req, timeout=10).read()
'''


def _client(tmp_path: Path, name: str) -> Path:
    path = tmp_path / "bin" / name
    path.parent.mkdir(exist_ok=True)
    root = str(Path(__file__).resolve().parents[2])
    path.write_text(EXPORTER.replace("PYTHON", sys.executable).replace("ROOT", repr(root)))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def _clean_env() -> dict[str, str]:
    return {k: "" for k in os.environ if k.startswith(("OTEL_", "GEMINI_TELEMETRY_"))}


def test_record_points_claude_code_at_the_receiver_and_stores_what_it_exports(tmp_path, ctxtap_config) -> None:
    out, seen = tmp_path / "cap", tmp_path / "seen.json"
    run_ctxtap(["record", "--out", str(out), "--", str(_client(tmp_path, "claude")), "-p", "hi"], ctxtap_config,
               extra_env={"SEEN_FILE": str(seen)})
    env = json.loads(seen.read_text())["env"]
    assert env["CLAUDE_CODE_ENABLE_TELEMETRY"] == "1" and env["OTEL_LOGS_EXPORTER"] == "otlp"
    assert env["OTEL_EXPORTER_OTLP_PROTOCOL"] == "http/protobuf"
    token = env["OTEL_EXPORTER_OTLP_ENDPOINT"].rsplit("/", 1)[1]
    manifest = json.loads((out / "manifest.json").read_text())
    client = manifest["telemetry"]["client"]
    assert client["client"] == "claude-code" and client["enabled"] is True
    assert client["injected_env"]["OTEL_EXPORTER_OTLP_ENDPOINT"].endswith("/<token>")
    assert set(client["injected_env"]) == {k for k in env if k != "OTEL_EXPORTER_OTLP_ENDPOINT"} | {
        "OTEL_EXPORTER_OTLP_ENDPOINT"}
    assert token not in (out / "manifest.json").read_text()
    assert manifest["counts"]["telemetry_records"] == 1
    from ctxtap.capture.store import Capture

    records = Capture.open(out).telemetry_records().to_pylist()
    assert [r["name"] for r in records] == ["tool_result"]


def test_user_settings_win_and_no_telemetry_injects_nothing(tmp_path, ctxtap_config) -> None:
    seen = tmp_path / "seen.json"
    mine = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector.example:4318", "OTEL_LOGS_EXPORTER": "none"}
    result = run_ctxtap(["record", "--out", str(tmp_path / "a"), "--", str(_client(tmp_path, "claude"))],
                        ctxtap_config, extra_env={"SEEN_FILE": str(seen), **mine})
    env = json.loads(seen.read_text())["env"]
    assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == mine["OTEL_EXPORTER_OTLP_ENDPOINT"]
    assert "CLAUDE_CODE_ENABLE_TELEMETRY" not in env
    assert "user's own telemetry settings win" in result.stderr
    client = json.loads((tmp_path / "a" / "manifest.json").read_text())["telemetry"]["client"]
    assert client["enabled"] is False and client["injected_env"] == {}
    assert {"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_LOGS_EXPORTER"} <= set(client["user_settings_seen"])
    assert "collector.example" not in (tmp_path / "a" / "manifest.json").read_text()  # names, never values

    run_ctxtap(["record", "--no-telemetry", "--out", str(tmp_path / "b"), "--", str(_client(tmp_path, "claude"))],
               ctxtap_config, extra_env={"SEEN_FILE": str(seen), **_clean_env()})
    assert not any(v for v in json.loads(seen.read_text())["env"].values())
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert manifest["telemetry"]["client"]["reason"] == "--no-telemetry" and "receiver" not in manifest["telemetry"]


def test_gemini_gets_its_own_switches_and_codex_config_overrides(tmp_path) -> None:
    p = telemetry_env.fill(telemetry_env.plan(["/opt/x/bin/gemini", "-p", "t"], {}), "http://127.0.0.1:9/TOK")
    assert p.env == {"GEMINI_TELEMETRY_ENABLED": "true", "GEMINI_TELEMETRY_TARGET": "local",
                     "GEMINI_TELEMETRY_OTLP_PROTOCOL": "http", "GEMINI_TELEMETRY_OTLP_ENDPOINT": "http://127.0.0.1:9/TOK",
                     "GEMINI_TELEMETRY_LOG_PROMPTS": "false"}
    codex = telemetry_env.fill(telemetry_env.plan(["node", "/x/@openai/codex/bin/codex.js", "exec", "t"],
                                                  {"HOME": str(tmp_path)}), "http://127.0.0.1:9/TOK")
    assert codex.client == "codex" and not codex.env
    assert codex.argv[:2] == ["node", "/x/@openai/codex/bin/codex.js"] and codex.argv[-2:] == ["exec", "t"]
    assert codex.argv[2:6] == [
        "-c", 'otel.exporter={otlp-http={endpoint="http://127.0.0.1:9/TOK/v1/logs",protocol="binary"}}',
        "-c", 'otel.trace_exporter={otlp-http={endpoint="http://127.0.0.1:9/TOK/v1/traces",protocol="binary"}}']
    assert "TOK" not in json.dumps(codex.manifest("TOK"))
    # a Codex home with its own [otel] table: the user's config wins, and it is only read
    (tmp_path / ".codex").mkdir()
    (tmp_path / ".codex" / "config.toml").write_text('[otel]\nexporter = "none"\n')
    mine = telemetry_env.plan(["codex", "exec", "t"], {"HOME": str(tmp_path)})
    assert not mine.enabled and "[otel]" in mine.reason
    assert (tmp_path / ".codex" / "config.toml").read_text() == '[otel]\nexporter = "none"\n'
    unknown = telemetry_env.plan(["kimi", "-p", "t"], {})
    assert unknown.client is None and not unknown.enabled
