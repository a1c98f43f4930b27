"""A client that closes at its stream's last event, through a real `ctxtap proxy` process.

Chat clients stop reading at `data: [DONE]` and close the connection; when the close
beats the chunked terminator through the proxy, mitmproxy marks the flow "Client
disconnected." although the client had the whole answer. The scripted server holds the
terminator back (`linger`) so that race is won every time; a stream cut by the server
(`cut`) is the failure it must not be confused with.
"""

from __future__ import annotations

import json

from ctxtap.analysis.build import ensure_analysis
from ctxtap.analysis.db import connect
from ctxtap.modelserver import ModelServer, Script
from ctxtap.modelserver.client import HttpClient
from ctxtap.replay.cassette import load
from tests.proxyharness import routes_to, start_proxy

SCRIPT = Script.model_validate({"steps": [{"events": 6, "event_bytes": 40}]})


def _ask(proxy, inject: str, session: str) -> list[str]:
    """One Kimi chat stream read as the OpenAI SDK reads it: up to [DONE], then the connection closed."""
    client = HttpClient("https://api.kimi.com", proxy=proxy.url, ca_file=proxy.ca_bundle, timeout=60)
    body = json.dumps({"model": "kimi-for-coding", "stream": True, "stream_options": {"include_usage": True},
                       "prompt_cache_key": session, "messages": [{"role": "user", "content": "hi"}]}).encode()
    resp = client.request("POST", "/coding/v1/chat/completions", body,
                          [("content-type", "application/json"), ("user-agent", "KimiCLI/1.50.0"),
                           ("x-ctxtap-inject", inject)])
    seen = []
    try:
        for event in resp.events():
            seen.append(event.data)
            if event.data == "[DONE]":
                break
    except OSError:
        pass  # the cut stream
    client.close()
    return seen


def test_a_close_after_the_last_event_is_no_failed_call_nor_a_cut_replay(tmp_path, ctxtap_config):
    with ModelServer(script=SCRIPT) as server:
        proxy = start_proxy(tmp_path / "cap", ctxtap_config, routes_to(server.url))
        try:
            whole = _ask(proxy, "linger=2", "whole")
            cut = _ask(proxy, "cut=2", "cut")
        finally:
            proxy.stop()
    assert whole[-1] == "[DONE]" and "[DONE]" not in cut
    ensure_analysis(proxy.out)
    con = connect([proxy.out])
    rows = dict(con.execute("""SELECT r.session_id LIKE '%whole%', struct_pack(r.parse_status, r.parse_error,
                                      e.error_layer) FROM requests r LEFT JOIN errors e USING (request_id)""").fetchall())
    # the client had the whole answer: no failed call, the connection error kept as a note
    assert rows[True]["parse_status"] == "ok" and rows[True]["error_layer"] is None
    assert rows[True]["parse_error"] == "connection closed after the response ended: Client disconnected."
    # the server cut the stream: a failed call
    assert rows[False]["parse_status"] in ("partial", "error") and rows[False]["error_layer"] == "protocol"
    # a replay plays the whole answer back and refuses only the cut one
    problems = {b'"whole"' in call.request_body: call.problem for call in load(proxy.out).calls}
    assert problems[True] is None and problems[False].startswith("truncated stream"), problems
