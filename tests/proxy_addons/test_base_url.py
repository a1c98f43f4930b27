"""`ctxtap record --base-url`: a client that ignores HTTPS_PROXY but reads OPENAI_BASE_URL is recorded
through a loopback reverse proxy, under the provider's own URL; without it, the run says to use it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq

from ctxtap.modelserver import ModelServer
from tests.proxyharness import ROOT, ctxtap_env

CLIENT = ROOT / "tests" / "base_url_client.py"


def _record(tmp: Path, config: Path, extra: list[str]) -> tuple[Path, subprocess.CompletedProcess]:
    out = tmp / ("cap" + "-".join(extra))
    with ModelServer(script=json.dumps({"steps": [{"text": "hi"}]})) as srv:
        args = ["record", "--out", str(out), "--no-telemetry", "--no-effects",
                "--route", f"api.openai.com={srv.url}", *extra]
        env = ctxtap_env(config) | {"PYTHONPATH": str(ROOT), "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
        done = subprocess.run([sys.executable, "-m", "ctxtap.cli.main", *args, "--", sys.executable, str(CLIENT)],
                              cwd=tmp, env=env, capture_output=True, text=True, timeout=240)
    return out, done


def test_a_client_that_ignores_proxies_is_recorded_under_the_provider_url(tmp_path, ctxtap_config) -> None:
    out, done = _record(tmp_path, ctxtap_config, ["--base-url"])
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["hi", "hi"]
    flows = pq.read_table(out / "flows.parquet").to_pylist()
    urls = [f["url"] for f in flows]
    assert urls == ["https://api.openai.com/v1/chat/completions"] * 2, urls
    assert {f["provider"] for f in flows} == {"openai"} and {f["client"] for f in flows} == {"base-url-bot"}
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["counts"]["model_requests"] == 2


def test_without_base_url_the_run_says_to_use_it(tmp_path, ctxtap_config) -> None:
    out, done = _record(tmp_path, ctxtap_config, [])
    assert done.returncode != 0  # the client could not reach the base URL it was given
    assert "no model request was seen" in done.stderr and "--base-url" in done.stderr
