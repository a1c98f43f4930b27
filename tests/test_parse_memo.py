"""Parsing with a ParseMemo (reuse across requests) gives exactly what parsing from scratch gives."""

from __future__ import annotations

import json

import pytest

from analysis.memo import ParseMemo
from analysis.parse import parse_exchanges
from ctxtap.capture.store import Capture
from tests.proxyharness import run_ctxtap
from tests.scenarios import anthropic_session, write_har

RUNS = ["basic/claude", "basic/codex", "basic/codex-sse", "basic/grok", "basic/kimi-code",
        "long/claude", "long/codex-sse", "long/kimi-code"]


def _dump(calls) -> list[dict]:
    return [json.loads(c.model_dump_json()) for c in calls]


def _compare(capture_dir) -> ParseMemo:
    exchanges = list(Capture.open(capture_dir).exchanges())
    memo = ParseMemo()
    assert _dump(parse_exchanges(exchanges, memo)) == _dump(parse_exchanges(exchanges))
    return memo


def test_memo_is_exact_on_the_scripted_scenario(tmp_path, ctxtap_config):
    har = write_har(anthropic_session(), tmp_path / "s.har")
    run_ctxtap(["import", str(har), "--out", str(tmp_path / "cap")], ctxtap_config)
    memo = _compare(tmp_path / "cap")
    assert memo.bytes_scanned < memo.bytes_seen / 2  # the resent history was not parsed again


@pytest.mark.parametrize("run", RUNS)
def test_memo_is_exact_on_real_clients(run, real_clients, tmp_path, ctxtap_config):
    run_ctxtap(["import", str(real_clients / run / "flows.mitm"), "--out", str(tmp_path / "cap")], ctxtap_config)
    _compare(tmp_path / "cap")
