"""Parsing with a ParseMemo (reuse across requests) gives exactly what parsing from scratch gives."""

from __future__ import annotations

import json

import pytest

from ctxtap.analysis.parsing.memo import ParseMemo
from ctxtap.analysis.parsing.parse import parse_exchanges
from ctxtap.capture.store import Capture
from tests.proxyharness import run_ctxtap
from tests.scenarios import anthropic_session, write_har

RUNS = ["basic/claude", "basic/codex", "basic/codex-sse", "basic/grok", "basic/kimi-code",
        "long/claude", "long/codex-sse", "long/kimi-code"]


def _dump(calls) -> list[dict]:
    return [json.loads(c.model_dump_json()) for c in calls]


def _compare(capture_dir) -> ParseMemo:
    """The analyzer's way (bodies as views, a memo) against bytes parsed from scratch."""
    exchanges = list(Capture.open(capture_dir).exchanges())
    views = list(Capture.open(capture_dir).exchanges(views=True))
    memo = ParseMemo()
    assert _dump(parse_exchanges(views, memo)) == _dump(parse_exchanges(exchanges))
    return memo


def test_memo_is_exact_on_the_scripted_scenario(tmp_path, ctxtap_config):
    har = write_har(anthropic_session(), tmp_path / "s.har")
    run_ctxtap(["import", str(har), "--out", str(tmp_path / "cap")], ctxtap_config)
    memo = _compare(tmp_path / "cap")
    assert memo.bytes_scanned < memo.bytes_seen / 2  # the resent history was not parsed again
    assert memo.prefixes_taken > 0  # the capture's recorded prefixes, not a comparison of bodies


@pytest.mark.parametrize("run", RUNS)
def test_memo_is_exact_on_real_clients(run, real_clients, tmp_path, ctxtap_config):
    run_ctxtap(["import", str(real_clients / run / "flows.mitm"), "--out", str(tmp_path / "cap")], ctxtap_config)
    _compare(tmp_path / "cap")


def _random_sessions(seed: int) -> list[dict]:
    """Growing Anthropic and Chat histories with edits in the middle, odd items and repeats."""
    import random

    from tests.scenarios import _entry

    rnd = random.Random(seed)
    entries = []
    for api in ("anthropic", "chat"):
        history: list = [{"role": "user", "content": "task " + str(seed)}]
        tools = [{"name": f"t{i}", "description": "d" * rnd.randint(1, 50), "input_schema": {"type": "object"}}
                 for i in range(3)]
        for turn in range(12):
            r = rnd.random()
            if r < 0.15 and len(history) > 2:  # an edit in the middle of the history
                history[rnd.randrange(len(history))] = {"role": "user", "content": f"edited {turn}"}
            elif r < 0.22:
                history.append("not an object")  # a malformed item: parsed with a warning
            call_id = f"call_{seed}_{turn}"
            if api == "anthropic":
                history.append({"role": "assistant", "content": [
                    {"type": "tool_use", "id": call_id, "name": "t1", "input": {"n": turn}}]})
                history.append({"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": call_id, "content": "out " * rnd.randint(1, 9)}]})
                body = {"model": "claude-sonnet-4-5", "max_tokens": 9, "tools": tools, "messages": history}
                url = "https://api.anthropic.com/v1/messages"
            else:
                history.append({"role": "assistant", "tool_calls": [
                    {"id": call_id, "type": "function", "function": {"name": "t1", "arguments": "{}"}}]})
                history.append({"role": "tool", "tool_call_id": call_id, "content": "out " * rnd.randint(1, 9)})
                body = {"model": "kimi-for-coding", "messages": history,
                        "tools": [{"type": "function", "function": {"name": "t1", "parameters": {}}}]}
                url = "https://api.kimi.com/coding/v1/chat/completions"
            entries.append(_entry(url, [("content-type", "application/json"), ("session-id", f"s{seed}{api}")],
                                  json.dumps(body).encode(), 200, [("content-type", "application/json")],
                                  b"{}", 1_800_000_000 + len(entries), 0.1))
    return entries


@pytest.mark.parametrize("seed", range(6))
def test_memo_is_exact_on_edited_histories(seed, tmp_path, ctxtap_config):
    from tests.scenarios import Recorded

    har = write_har(Recorded(entries=_random_sessions(seed)), tmp_path / "r.har")
    run_ctxtap(["import", str(har), "--out", str(tmp_path / "cap")], ctxtap_config)
    assert _compare(tmp_path / "cap").prefixes_taken > 0
