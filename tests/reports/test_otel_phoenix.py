"""`ctxtap export --otlp` into a real OTLP consumer: Arize Phoenix, started on loopback by the test.

Phoenix lives in its own virtualenv (`.venv-phoenix`, built by `.ci/phoenix-venv`; its pins clash
with mitmproxy 11's), so this test skips cleanly when that is absent. Phoenix runs offline: its
telemetry and external resources are switched off, its agent assistant is disabled, and any
outbound HTTP(S) it might try goes to a dead loopback proxy. Auth is on, with an admin secret the
test makes, so it refuses requests without the token like every server here.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.analysis.evidence_support import evidence_har
from tests.conftest import ROOT
from tests.proxyharness import run_ctxtap

PHOENIX = Path(os.environ.get("CTXTAP_PHOENIX_VENV", ROOT / ".venv-phoenix")) / "bin" / "phoenix"
START_TIMEOUT_S = 240  # first start creates its database; two shared cores make that slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str, token: str | None) -> tuple[int, bytes]:
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(req, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory) -> Iterator[tuple[str, str]]:
    if not PHOENIX.exists():
        pytest.skip(f"Arize Phoenix is not installed in {PHOENIX.parent.parent.name} (build it with .ci/phoenix-venv)")
    home = tmp_path_factory.mktemp("phoenix")
    port, grpc_port = _free_port(), _free_port()
    admin = "a1" + secrets.token_hex(20)
    env = {
        "PATH": "/usr/bin:/bin", "HOME": str(home), "PHOENIX_WORKING_DIR": str(home / "wd"),
        "PHOENIX_HOST": "127.0.0.1", "PHOENIX_PORT": str(port), "PHOENIX_GRPC_PORT": str(grpc_port),
        "PHOENIX_TELEMETRY_ENABLED": "false", "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",
        "PHOENIX_DISABLE_AGENT_ASSISTANT": "true",
        "PHOENIX_ENABLE_AUTH": "true", "PHOENIX_SECRET": "s1" + secrets.token_hex(20), "PHOENIX_ADMIN_SECRET": admin,
        # nothing leaves the machine: outbound HTTP(S) goes to a port where nothing listens
        "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9", "NO_PROXY": "127.0.0.1,localhost",
    }
    log = (home / "phoenix.log").open("wb")
    proc = subprocess.Popen([str(PHOENIX), "serve"], env=env, stdout=log, stderr=subprocess.STDOUT, cwd=home)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                pytest.fail(f"Phoenix exited with {proc.returncode}: {(home / 'phoenix.log').read_text()[-2000:]}")
            try:
                if _get(url + "/healthz", None)[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(1)
        else:
            pytest.fail(f"Phoenix did not start in {START_TIMEOUT_S} s")
        yield url, admin
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def _attrs(span: dict) -> dict:
    out = {}
    for a in span.get("attributes", []):
        value = {k: v for k, v in a["value"].items() if v is not None}
        out[a["key"]] = next(iter(value.values()), None)
    return out


def _spans(url: str, token: str, expected: int) -> list[dict]:
    """Phoenix ingests asynchronously: poll its span search API until every span is there."""
    deadline = time.monotonic() + 60
    spans: list[dict] = []
    while time.monotonic() < deadline:
        status, body = _get(f"{url}/v1/projects/default/spans/otlpv1?limit=1000", token)
        assert status == 200, body[:300]
        spans = json.loads(body)["data"]
        if len(spans) >= expected:
            return spans
        time.sleep(1)
    return spans


def test_phoenix_receives_genai_spans(phoenix, tmp_path, ctxtap_config):
    url, token = phoenix
    cap = tmp_path / "cap"
    run_ctxtap(["import", str(evidence_har(tmp_path / "s.har", retry_wait_s=3.5)), "--out", str(cap)], ctxtap_config)
    # without its token Phoenix refuses the spans, and the command says what to do
    refused = run_ctxtap(["export", str(cap), "--otlp", url], ctxtap_config, check=False)
    assert refused.returncode == 1 and "401" in refused.stderr and "--otlp-header" in refused.stderr
    sent = run_ctxtap(["export", str(cap), "--otlp", url, "--otlp-header", f"Authorization=Bearer {token}"],
                      ctxtap_config)
    assert "sent 11 spans" in sent.stdout
    spans = _spans(url, token, 11)
    assert len(spans) == 11
    by_op: dict[str, list[dict]] = {}
    for s in spans:
        by_op.setdefault(_attrs(s)["gen_ai.operation.name"], []).append(s)
    assert {k: len(v) for k, v in by_op.items()} == {"invoke_agent": 2, "chat": 6, "execute_tool": 3}
    ok_chats = [_attrs(s) for s in by_op["chat"] if _attrs(s).get("http.response.status_code") == 200]
    a = ok_chats[0]
    assert a["gen_ai.provider.name"] == "anthropic" and a["gen_ai.request.model"] == "claude-sonnet-4-5"
    assert int(a["gen_ai.usage.input_tokens"]) == 1150 and int(a["gen_ai.usage.output_tokens"]) == 10
    assert int(a["gen_ai.usage.cache_read.input_tokens"]) == 1000
    assert int(a["gen_ai.usage.cache_creation.input_tokens"]) == 50
    assert a["gen_ai.conversation.id"].startswith("claude-code:")
    tools = {_attrs(s)["gen_ai.tool.call.id"]: _attrs(s) for s in by_op["execute_tool"]}
    assert set(tools) == {"toolu_01", "toolu_02", "toolu_03"}
    assert tools["toolu_02"]["gen_ai.tool.name"] == "Bash" and tools["toolu_02"]["ctxtap.result_status"] == "truncated"
    # the tree arrives intact: chat and tool spans under their turn's invoke_agent span
    agent_ids = {s["span_id"] for s in by_op["invoke_agent"]}
    assert all(s["parent_span_id"] in agent_ids for s in by_op["chat"] + by_op["execute_tool"])
