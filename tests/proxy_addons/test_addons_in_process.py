"""The addons in process, with mitmproxy's own test helpers (`taddons`, `tflow`): the router's
rewriting and offline answers, and the recorder's chain from request headers to a finalized capture,
without starting a proxy. The proxy-process tests (tests/proxy_addons/test_proxy_*.py) cover the same addons on
the wire."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from mitmproxy import exceptions, http
from mitmproxy.addons.proxyserver import Proxyserver
from mitmproxy.flow import Error
from mitmproxy.test import taddons, tflow, tutils

from ctxtap.capture.store import Capture
from ctxtap.proxy_addons.recorder import Recorder, RecorderTail
from ctxtap.proxy_addons.router import Router
from tests.proxyharness import all_stored_bytes

API_KEY = "sk-ant-api03-" + "Zq7Lk2Vw9Rt4Yp1Mx8Nc3Bh6Gf5Dj0Sa" * 3 + "-AbCdEf12AA"


def _flow(host: str, path: str, method: bytes = b"POST", body: bytes = b"{}",
          headers: tuple[tuple[bytes, bytes], ...] = ()) -> http.HTTPFlow:
    request = tutils.treq(host=host, port=443, scheme=b"https", method=method, path=path.encode(),
                          headers=http.Headers(((b"content-type", b"application/json"), *headers)),
                          content=body)
    return tflow.tflow(req=request, resp=False)


def _respond(flow: http.HTTPFlow, body: bytes, content_type: bytes = b"application/json") -> None:
    flow.response = tutils.tresp(status_code=200, content=body,
                                 headers=http.Headers(((b"content-type", content_type),)))


# --- the router ----------------------------------------------------------------------------------


def test_a_route_rewrites_scheme_host_port_and_path_and_leaves_other_hosts() -> None:
    router = Router()
    with taddons.context(router, Proxyserver()) as tctx:
        tctx.configure(router, ctxtap_route=["api.anthropic.com=http://127.0.0.1:8123/prefix"])
        routed, other = _flow("api.anthropic.com", "/v1/messages"), _flow("example.org", "/x")
        router.requestheaders(routed)
        router.requestheaders(other)
        assert (routed.request.scheme, routed.request.host, routed.request.port, routed.request.path) == \
            ("http", "127.0.0.1", 8123, "/prefix/v1/messages")
        assert (other.request.host, other.request.port, other.request.path) == ("example.org", 443, "/x")
        assert tctx.options.connection_strategy == "lazy"  # eager would connect to the real host first


def test_a_malformed_route_is_an_option_error() -> None:
    router = Router()
    with taddons.context(router, Proxyserver()) as tctx, pytest.raises(exceptions.OptionsError):
        tctx.configure(router, ctxtap_route=["no-equals-sign"])


def test_offline_answers_unrouted_requests_locally_and_lets_routed_ones_through() -> None:
    router = Router()
    with taddons.context(router, Proxyserver()) as tctx:
        tctx.configure(router, ctxtap_offline=True, ctxtap_route=["api.openai.com=http://127.0.0.1:9"])
        get, post = _flow("update.example", "/v", method=b"GET"), _flow("telemetry.example", "/t")
        routed = _flow("api.openai.com", "/v1/responses")
        for flow in (get, post, routed):
            router.requestheaders(flow)
            router.request(flow)
        assert get.response.status_code == 404 and get.metadata["ctxtap_offline"]
        assert post.response.status_code == 200 and post.response.content == b"{}"
        assert routed.response is None and "ctxtap_offline" not in routed.metadata


# --- the recorder --------------------------------------------------------------------------------


def _record(tmp_path: Path, flows: list[tuple[http.HTTPFlow, bytes | None, bytes]], **options) -> Path:
    """Run the recorder's hooks over finished flows with the in-process writer; finalize."""
    head = Recorder()
    tail = RecorderTail(head)
    out = tmp_path / "cap"
    with taddons.context(head, Router(), Proxyserver()) as tctx:
        tctx.configure(head, ctxtap_out=str(out), ctxtap_writer_process=False, **options)

        async def run() -> None:
            for flow, response, content_type in flows:
                head.requestheaders(flow)
                head.request(flow)
                tail.request(flow)
                if response is None:
                    flow.error = Error("connection reset by peer")
                    await tail.error(flow)
                    continue
                _respond(flow, b"", content_type)
                head.responseheaders(flow)
                if callable(flow.response.stream):  # a streamed answer goes through the tap in pieces
                    for i in range(0, len(response), 7):
                        assert flow.response.stream(response[i:i + 7]) == response[i:i + 7]
                    flow.response.stream(b"")
                else:
                    flow.response.content = response
                await tail.response(flow)

        asyncio.run(run())
        head.done()
    return out


def test_a_model_call_is_recorded_redacted_and_other_traffic_only_as_metadata(tmp_path, ctxtap_config) -> None:
    body = json.dumps({"model": "claude-haiku-4-5", "max_tokens": 5,
                       "messages": [{"role": "user", "content": "hi"}]}).encode()
    model = _flow("api.anthropic.com", "/v1/messages", body=body, headers=((b"x-api-key", API_KEY.encode()),))
    other = _flow("registry.npmjs.org", "/left-pad", method=b"GET", body=b"")
    answer = json.dumps({"type": "message", "content": [{"type": "text", "text": "hello"}],
                         "usage": {"input_tokens": 3, "output_tokens": 1}}).encode()
    out = _record(tmp_path, [(model, answer, b"application/json"), (other, b"not kept in full", b"text/plain")])
    capture = Capture.open(out)
    assert capture.manifest.status == "finalized"
    assert capture.manifest.counts["model_requests"] == 1 and capture.manifest.counts["flows"] == 2
    stored = b"".join(data for _, data in all_stored_bytes(out))
    assert API_KEY.encode() not in stored and b"Zq7Lk2Vw9Rt4" not in stored
    assert b"hello" in stored and b"not kept in full" not in stored


def test_a_streamed_answer_passes_through_the_tap_unchanged_and_is_stored_whole(tmp_path, ctxtap_config) -> None:
    events = b"".join(b"data: " + json.dumps({"i": i, "text": f"piece {i}"}).encode() + b"\n\n" for i in range(40))
    flow = _flow("api.openai.com", "/v1/chat/completions",
                 body=json.dumps({"model": "gpt-5", "stream": True, "messages": []}).encode())
    out = _record(tmp_path, [(flow, events, b"text/event-stream")])
    stored = b"".join(data for _, data in all_stored_bytes(out))
    assert all(f"piece {i}".encode() in stored for i in range(40))
    assert Capture.open(out).manifest.counts["model_requests"] == 1


def test_a_failed_flow_is_recorded_with_its_error(tmp_path, ctxtap_config) -> None:
    flow = _flow("api.anthropic.com", "/v1/messages", body=b'{"model": "claude-haiku-4-5", "messages": []}')
    out = _record(tmp_path, [(flow, None, b"")])
    capture = Capture.open(out)
    assert capture.manifest.counts["model_requests"] == 1
    stored = b"".join(data for _, data in all_stored_bytes(out))
    assert b"connection reset by peer" in stored
