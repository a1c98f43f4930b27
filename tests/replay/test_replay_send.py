"""`ctxtap replay CAPTURE --send --upstream URL`: a recorded thread re-sent to the scripted model server
through the real recording proxy, with layout transforms, the placeholder guard and the confirmation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxtap.analysis.db import connect
from ctxtap.analysis.protocols import registry
from ctxtap.capture.store import Capture
from ctxtap.modelserver import ModelServer
from ctxtap.replay.cassette import load
from ctxtap.replay.send import Transforms, plan, select, strip_times
from tests.replaycaptures import record, replay

SECRET = "sk-ant-api03-" + "Zx8Kq2Lm9Pw4" * 7 + "Zx8Kq2Lm9" + "AA"  # shaped like an Anthropic key


@pytest.fixture(scope="module")
def stamped(tmp_path_factory, ctxtap_config) -> Path:
    """Claude's session where a timestamp leads the system prompt from turn 2 on (a cache miss when it appears)."""
    return record(tmp_path_factory.mktemp("send-stamped"), ctxtap_config, "claude", turns=4, volatile_turn=2,
                  inject_error=False)


def _send(capture: Path, out: Path, config: Path, *args: str, env: dict | None = None, served: list | None = None):
    with ModelServer() as server:  # a fresh provider: its cache starts empty for every run
        result = replay(capture, out, config, "--send", "--upstream", server.url, *args, agent=None, env=env)
        received = list(server.received)
        if served is not None:
            served.extend(server.exchanges)
    return result, received


def _hit_rate(out: Path) -> float:
    from ctxtap.analysis.build import ensure_analysis
    from ctxtap.analysis.db import connect

    ensure_analysis(out)
    read, total = connect([out]).execute(
        "SELECT sum(cache_read_tokens), sum(input_tokens_reported) FROM requests").fetchone()
    return read / total


def test_strip_timestamps_raises_the_cache_hit_rate(stamped, tmp_path, ctxtap_config):
    plain, _ = _send(stamped, tmp_path / "plain", ctxtap_config, "--yes")
    stripped, received = _send(stamped, tmp_path / "stripped", ctxtap_config, "--yes", "--strip-timestamps")
    assert plain.returncode == 0 and stripped.returncode == 0, plain.stderr + stripped.stderr
    assert "will send 8 requests of thread" in stripped.stderr and "est. $" in stripped.stderr
    assert "nothing is executed" in stripped.stderr
    # what reached the provider: the recorded bodies, the timestamp line gone, nothing else changed
    source = load(stamped)
    bodies = [json.loads(r.body) for r in received]
    assert len(bodies) == 8 and all("Current time:" not in json.dumps(b["system"]) for b in bodies)
    assert bodies[0] == json.loads(source.calls[0].request_body)  # no timestamp yet: byte-for-byte the recording
    assert all(b["system"][-1]["cache_control"] == {"type": "ephemeral"} for b in bodies)
    # the cache reads more, shown against the recording by the diff engine
    assert _hit_rate(tmp_path / "stripped") > _hit_rate(tmp_path / "plain") + 0.05
    lines = stripped.stderr.splitlines()
    head = next(line for line in lines if line.startswith("cache hit rate"))
    assert "recorded ->" in head and "re-sent" in head
    third = connect([stamped]).execute(  # the third request re-sent, by the #N the report gives it
        "SELECT request_number FROM requests WHERE thread_kind = 'main' AND status = 200 ORDER BY ts_start "
        "LIMIT 1 OFFSET 2").fetchone()[0]
    first_stamped = next(line for line in lines if line.startswith(f"  request #{third}:"))
    assert "cache read 0 -> " in first_stamped and "cache read 0 -> 0 " not in first_stamped
    assert "a timestamp removed" in first_stamped and "system[2]" in first_stamped
    # recorded as a new capture linked to its source
    link = Capture.open(tmp_path / "stripped").manifest.replay
    assert link["mode"] == "send" and link["transforms"] == ["strip-timestamps"]
    assert link["source_capture_id"] == Capture.open(stamped).manifest.capture_id


def test_a_request_holding_a_placeholder_is_refused(tmp_path_factory, tmp_path, ctxtap_config):
    capture = record(tmp_path_factory.mktemp("send-secret"), ctxtap_config, "claude", turns=1, inject_error=False,
                     prompt_suffix=f" My key is {SECRET} - keep it safe.")
    body = load(capture).calls[0].request_body
    assert SECRET.encode() not in body and b"[REDACTED:" in body  # the capture holds the placeholder only
    refused, received = _send(capture, tmp_path / "refused", ctxtap_config, "--yes")
    assert refused.returncode == 1 and received == []
    assert "refusing to send" in refused.stderr and "redaction placeholder" in refused.stderr
    assert "--allow-placeholders" in refused.stderr
    allowed, received = _send(capture, tmp_path / "allowed", ctxtap_config, "--yes", "--allow-placeholders")
    assert allowed.returncode == 0, allowed.stderr
    assert received and all(SECRET.encode() not in r.body for r in received)
    assert any(b"[REDACTED:" in r.body for r in received)


def test_nothing_is_sent_without_confirmation_or_credentials(stamped, tmp_path, ctxtap_config):
    unconfirmed, received = _send(stamped, tmp_path / "unconfirmed", ctxtap_config)
    assert unconfirmed.returncode == 1 and received == []
    assert "will send 8 requests" in unconfirmed.stderr and "pass --yes" in unconfirmed.stderr
    no_key = replay(stamped, tmp_path / "nokey", ctxtap_config, "--send", "--upstream", "https://api.example.invalid",
                    "--yes", agent=None, env={"ANTHROPIC_API_KEY": ""})
    assert no_key.returncode == 1 and "set ANTHROPIC_API_KEY in the environment" in no_key.stderr
    assert not (tmp_path / "nokey").exists()


def test_layout_transforms_edit_the_stored_body_through_the_serialiser(stamped):
    cassette = load(stamped)
    calls, label = select(cassette, stamped, None, None)  # the main thread, as the command picks it
    assert label.startswith("thread ") and len(calls) == 8
    protocol = registry.get("messages")
    assert protocol is not None
    moved = plan(cassette, calls, Transforms(move_dynamic_after_breakpoint=True, sort_tools=True))
    for item in moved:
        body = json.loads(item.body)
        names = [t["name"] for t in body["tools"]]
        assert names == sorted(names)
        # the billing header changes every request: it now sits after the system prompt's breakpoint
        assert body["system"][-1]["text"].startswith("x-anthropic-billing-header")
        assert any("cache_control" in b for b in body["system"][:-1])
    dropped = plan(cassette, calls[:1], Transforms(drop_blocks=["tools[0]"], breakpoints=[1]))[0]
    before, after = json.loads(calls[0].request_body), json.loads(dropped.body)
    assert len(after["tools"]) == len(before["tools"]) - 1 and after["tools"][0]["cache_control"]
    assert plan(cassette, calls[:1], Transforms())[0].body is calls[0].request_body  # no edits: the same bytes


def test_strip_times_removes_a_stamp_line_whole_and_a_date_in_place():
    assert strip_times("Current time: 2026-12-01T11:44:13Z\nYou are an agent.\n") == "You are an agent.\n"
    assert strip_times("Logs from 2026-12-01 show a failure.") == "Logs from  show a failure."
    assert strip_times("No dates here.") == "No dates here."


def test_the_thread_or_session_is_chosen_by_id(stamped):
    from ctxtap.replay.send import SendError

    cassette = load(stamped)
    main, label = select(cassette, stamped, None, None)
    thread = label.removeprefix("thread ")
    assert select(cassette, stamped, thread, None)[0] == main
    from ctxtap.analysis.db import connect

    [(session,)] = connect([stamped]).execute(
        "SELECT DISTINCT session_id FROM requests WHERE thread_id = ?", [thread]).fetchall()
    whole, label = select(cassette, stamped, None, session)
    assert label == f"session {session}" and len(whole) > len(main)  # the side request (the title) too
    with pytest.raises(SendError, match="no requests in thread nope"):
        select(cassette, stamped, "nope", None)


def test_a_websocket_thread_is_re_sent_on_a_new_socket_with_its_chain_re_pointed(tmp_path_factory, tmp_path,
                                                                                   ctxtap_config):
    capture = record(tmp_path_factory.mktemp("send-codex"), ctxtap_config, "codex", inject_error=False)
    served: list = []
    result, received = _send(capture, tmp_path / "sent", ctxtap_config, "--yes", served=served)
    assert result.returncode == 0, result.stderr
    sent = [line for line in result.stderr.splitlines() if line.startswith("ctxtap replay: sent ")]
    assert sent and all(line.endswith("response.completed") for line in sent)
    frames = [json.loads(f) for r in received for f in r.ws_frames]
    assert len(frames) == len(sent)
    issued = {x.response_id for x in served if x.response_id}
    recorded = {c.response_id for c in load(capture).calls if c.response_id}
    continuations = [f["previous_response_id"] for f in frames if f.get("previous_response_id")]
    assert continuations and set(continuations) <= issued and not set(continuations) & recorded
    assert "cache hit rate" in result.stderr

