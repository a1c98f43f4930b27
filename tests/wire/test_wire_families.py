"""A toy API family and provider, registered in `ctxtap.wire.families` alone, are served by every
consumer of the per-family facts: the redactor joins the family's stream deltas before it redacts,
replay knows when its stream was cut, answers in its error shape and sends its credential, the
capture waits for its terminal WebSocket frame, and the OpenTelemetry export names its provider."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from ctxtap.wire import families
from ctxtap.wire.families import Family, Provider

KEY = b"k" * 32
TOKEN = "ghp_" + "Q7xk2MZpL9" * 4


def _toy_knows(obj: dict) -> bool:
    return str(obj.get("kind", "")).startswith("toy.")


def _toy_deltas(obj: dict) -> Iterator[tuple[tuple, tuple]]:
    if obj.get("kind") == "toy.piece" and isinstance(obj.get("piece"), str):
        yield ("toy", obj.get("slot")), ("piece",)


TOY = Family("toy-chat", stream_end=(b"toy.done",), ws_terminal=frozenset({"toy.done"}),
             error_body=lambda status, message: {"toy_error": {"status": status, "why": message}},
             knows=_toy_knows, deltas=_toy_deltas, markers=(b'"piece"',))
TOYCO = Provider("toyco", "toy.ai", ("TOY_API_KEY",), "x-toy-key", "Toy {}")


@pytest.fixture
def toy(monkeypatch):
    families.register_family(TOY)
    monkeypatch.setitem(families._PROVIDERS, TOYCO.name, TOYCO)
    yield
    families.unregister_family(TOY.api)
    assert b'"piece"' not in families.delta_markers()


def _split_secret_stream() -> bytes:
    pieces = [TOKEN[:9], TOKEN[9:25], TOKEN[25:]]
    events = [{"kind": "toy.piece", "slot": 0, "piece": f"the key is {pieces[0]}"},
              *({"kind": "toy.piece", "slot": 0, "piece": p} for p in pieces[1:]),
              {"kind": "toy.done"}]
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)


def _redacted(body: bytes) -> bytes:
    from ctxtap.redaction import Redactor

    return Redactor(KEY, "c").redact_bytes(body)


def test_without_its_facts_a_secret_split_over_the_toy_deltas_is_not_joined() -> None:
    """The control: no rule reads `piece`, so the fragments stay (the registration below is what works)."""
    assert b"Q7xk2MZpL9" in _redacted(_split_secret_stream())


def test_the_redactor_joins_the_toy_familys_deltas(toy) -> None:
    out = _redacted(_split_secret_stream())
    assert b"Q7xk2MZpL9" not in out and b"MZpL9" not in out and b"[REDACTED:github-token:" in out
    assert [json.loads(line[5:])["kind"] for line in out.splitlines() if line.startswith(b"data:")] == \
        ["toy.piece"] * 3 + ["toy.done"]


def test_replay_reads_the_toy_familys_end_error_shape_and_credential(toy) -> None:
    from ctxtap.replay.cassette import _whole
    from ctxtap.replay.send import credentials
    from ctxtap.replay.server import provider_error

    assert _whole("toy-chat", "sse", _split_secret_stream())
    assert not _whole("toy-chat", "sse", _split_secret_stream().rsplit(b"data:", 1)[0])
    assert provider_error("toy-chat", 400, "no match") == {"toy_error": {"status": 400, "why": "no match"}}
    assert credentials("toyco", "https://api.toy.example", {"TOY_API_KEY": "abc"}) == [("x-toy-key", "Toy abc")]


def test_the_capture_waits_for_the_toy_terminal_frame_and_export_names_the_provider(toy) -> None:
    from ctxtap.capture.events import WsMessageEvent, is_terminal_ws_message
    from ctxtap.reports.otel.spans import _provider_name

    def frame(kind: str) -> WsMessageEvent:
        return WsMessageEvent(flow_id="f", index=0, from_client=False, ts=0.0, is_text=True,
                              content=json.dumps({"type": kind}).encode(), record_full=True)

    assert is_terminal_ws_message(frame("toy.done")) and not is_terminal_ws_message(frame("toy.piece"))
    assert _provider_name("toyco") == "toy.ai" and _provider_name("unlisted") == "unlisted"


def test_the_built_in_facts_are_what_the_consumers_had() -> None:
    assert families.family("responses-websocket") is families.family("responses")
    assert families.ws_terminal_types() == {"response.completed", "response.failed", "response.incomplete", "error"}
    assert families.error_body("messages", 400, "m")["type"] == "error"
    assert families.provider("google").credential_header == "x-goog-api-key"
