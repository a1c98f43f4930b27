"""A new provider is one protocol module plus fixtures: a toy JSON API registered from this module alone.

The toy API: request `{"model", "prompt_parts": [{"role", "text"}], "tools": [{"name", ...}]}`, response
`{"id", "text", "usage": {"input", "cached", "output"}}` or `{"error": {"type", "message"}}`. Nothing
outside this file knows it; it is parsed from an `Exchange`, and from a capture written by the importer
(a POST to a known provider host on a model-looking path, and one to a host added with --model-host)
through `ctxtap analyze` into the views.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from ctxtap.analysis.blocks.drafts import BlockDraft, structured_draft
from ctxtap.analysis.parsing.errors import classify_error
from ctxtap.analysis.parsing.models import ParsedResponse, TokenCount, Usage
from ctxtap.analysis.parsing.parse import parse_exchange
from ctxtap.analysis.parsing.usage import inclusive, reported
from ctxtap.analysis.protocols import registry
from ctxtap.analysis.protocols.common import (
    RequestDraft,
    as_dict,
    as_list,
    as_str,
    load_response_object,
    norm_role,
    text_kind,
)
from ctxtap.analysis.protocols.editing import DropBlock, ReplaceText
from ctxtap.analysis.protocols.registry import Endpoint, Protocol, ReplayedCall, RequestContext
from tests.corpus import http_exchange


class ToyProtocol(Protocol):
    api = "toy"
    title = "Toy JSON API"
    order = 90
    endpoints = (Endpoint(re.compile(r"/toy/generate$"), "generate"),
                 Endpoint(re.compile(r"/toy/count$"), "count_tokens"))
    history_arrays = ("prompt_parts",)
    content_fields = frozenset({"prompt_parts", "tools"})

    def parse_request(self, body: Any, ctx: RequestContext) -> RequestDraft:
        d = RequestDraft()
        if not isinstance(body, dict):
            d.status, d.error = "error", "request body is not a JSON object"
            return d
        d.model = as_str(body.get("model"))
        for i, tool in enumerate(as_list(body.get("tools"))):
            name = as_str(as_dict(tool).get("name"))
            if name:
                d.tool_names.append(name)
            d.blocks.append(structured_draft(f"tools[{i}]", "tool_definition", "system", tool, "tool", tool_name=name))
        for i, part in enumerate(as_list(body.get("prompt_parts"))):
            p = as_dict(part)
            role = norm_role(p.get("role"))
            if isinstance(p.get("text"), str):
                d.blocks.append(BlockDraft(f"prompt_parts[{i}]", text_kind(role), role, part, p["text"], "part",
                                           item_index=i))
            else:
                d.warn(f"prompt_parts[{i}] has no text")
        return d

    def parse_response(self, raw: bytes, sse: bool, endpoint: str) -> ParsedResponse:
        obj, failure = load_response_object(raw)
        if obj is None:
            return failure
        if isinstance(obj.get("error"), dict):
            return ParsedResponse(error=classify_error(None, obj, rule_prefix="body:"))
        return ParsedResponse(response_id=as_str(obj.get("id")), text=as_str(obj.get("text")) or "",
                              stop_reason="done", usage=self.usage(obj.get("usage")))

    def usage(self, raw_usage: Any) -> Usage:
        u = as_dict(raw_usage)
        if not u:
            return Usage()
        return inclusive(total=reported(u.get("input")), read=reported(u.get("cached")), write=TokenCount(),
                         output=reported(u.get("output")), reasoning=TokenCount(), raw=u)

    def replayed_call(self, wire: dict[str, Any]) -> ReplayedCall | None:
        return None


TOOLS = [{"name": "read_file", "description": "Read a file", "schema": {"type": "object"}}]
PARTS = [
    {"role": "system", "text": "You are ToyAgent. Answer briefly."},
    {"role": "user", "text": "Working directory: /srv/toy\nPlatform: linux\nShell: bash"},
    {"role": "user", "text": "What does main.py do?"},
]
BODY = {"model": "toy-1", "prompt_parts": PARTS, "tools": TOOLS}
REPLY = {"id": "toy-r1", "text": "It prints hello.", "usage": {"input": 120, "cached": 100, "output": 7}}
LIMITED = {"error": {"type": "rate_limit_exceeded", "message": "slow down, try again in 3s"}}


@pytest.fixture
def toy() -> ToyProtocol:
    protocol = registry.register(ToyProtocol())
    yield protocol
    registry.unregister("toy")
    assert registry.get("toy") is None


def test_unregistered_toy_traffic_is_not_a_model_call():
    assert registry.get("toy") is None
    assert parse_exchange(http_exchange("/v1/toy/generate", BODY, REPLY, host="api.mistral.ai")) == []


def test_toy_exchange_parses_end_to_end(toy):
    (call,) = parse_exchange(http_exchange("/v1/toy/generate", BODY, REPLY, host="api.mistral.ai",
                                           headers=[("user-agent", "toyagent/0.1"), ("x-session-id", "toy-s1")]))
    assert (call.provider, call.api, call.request.endpoint, call.transport) == ("mistral", "toy", "generate", "json")
    layout = [(b.path, b.kind, b.role, b.source, b.rule_id) for b in call.request.blocks]
    assert layout == [
        ("tools[0]", "tool_definition", "system", "tool_catalogue", "generic.tool-definition"),
        ("prompt_parts[0]", "instruction_text", "system", "platform_rules", "generic.system-text"),
        ("prompt_parts[1]", "message_text", "user", "runtime_environment", "generic.environment"),
        ("prompt_parts[2]", "message_text", "user", "user_task", "generic.first-user-text-task"),
    ]
    assert call.request.tool_names == ["read_file"] and call.request.model == "toy-1"
    usage = call.response.usage
    assert (usage.input_total.value, usage.cache_read.value, usage.input_uncached.value, usage.output.value) == (
        120, 100, 20, 7)
    assert usage.cache_semantics == "inclusive" and usage.input_total.status == "reported"
    assert call.response.text == "It prints hello." and call.response.parse_status == "ok"
    assert call.identity.client == "toyagent" and call.identity.session_id == "toy-s1"
    assert call.purpose.purpose == "main"

    (failed,) = parse_exchange(http_exchange("/v1/toy/generate", BODY, LIMITED, host="api.mistral.ai", status=429))
    assert failed.response.error.layer == "rate_limit" and failed.response.error.retry_after_s == 3.0

    (counted,) = parse_exchange(http_exchange("/v1/toy/count", BODY, {"id": "c", "text": ""}, host="api.mistral.ai"))
    assert counted.request.endpoint == "count_tokens" and counted.purpose.purpose == "count_tokens"


def test_toy_request_serialises_with_the_generic_editor(toy):
    raw = json.dumps(BODY, separators=(",", ":")).encode()
    assert toy.serialise(raw) is raw
    edited = toy.serialise(raw, [ReplaceText(path="prompt_parts[2]", text="What does app.py do?"),
                                 DropBlock(path="prompt_parts[1]")])
    reparsed = toy.parse_request(json.loads(edited), RequestContext("/v1/toy/generate"))
    assert [b.text for b in reparsed.blocks[1:]] == ["You are ToyAgent. Answer briefly.", "What does app.py do?"]
    assert edited.startswith(raw[: raw.index(b'"prompt_parts"')])  # untouched fields keep their bytes


def _entry(url: str, body: dict, status: int, response: dict, start: float) -> dict:
    from tests.scenarios import _entry as har_entry

    return har_entry(url, [("content-type", "application/json"), ("user-agent", "toyagent/0.1"),
                           ("x-session-id", "toy-s1"), ("authorization", "Bearer toy-secret-token-0123456789")],
                     json.dumps(body).encode(), status, [("content-type", "application/json")],
                     json.dumps(response).encode(), start, 0.4)


def test_toy_capture_through_ctxtap_analyze(toy, tmp_path: Path, ctxtap_config):
    from ctxtap.analysis.db import connect
    from ctxtap.capture.store import Capture
    from ctxtap.cli.main import main
    from tests.scenarios import Recorded, write_har

    follow_up = {**BODY, "prompt_parts": [*PARTS, {"role": "assistant", "text": "It prints hello."},
                                          {"role": "user", "text": "And tests.py?"}]}
    entries = [
        _entry("https://api.mistral.ai/v1/toy/generate", BODY, 200, REPLY, 1_800_000_000),
        _entry("https://api.mistral.ai/v1/toy/generate", follow_up, 429, LIMITED, 1_800_000_002),
        _entry("https://toy.example/v1/toy/generate", follow_up, 200, {**REPLY, "id": "toy-r2"}, 1_800_000_004),
        _entry("https://api.mistral.ai/api/telemetry", {"event": "x"}, 200, {}, 1_800_000_005),
    ]
    har = write_har(Recorded(entries=entries), tmp_path / "toy.har")
    capture = tmp_path / "cap"
    for args in (["import", str(har), "--out", str(capture), "--model-host", "toy.example=toy"],
                 ["analyze", str(capture)]):
        with pytest.raises(SystemExit) as done:
            main(args)
        assert done.value.code in (0, None)

    flows = {f["url"]: f for f in Capture.open(capture).flows().to_pylist()}
    assert flows["https://api.mistral.ai/v1/toy/generate"]["record_mode"] == "full"  # a model-looking path
    assert flows["https://api.mistral.ai/api/telemetry"]["record_mode"] == "metadata"

    con = connect([capture])
    requests = con.execute(
        "SELECT provider, api, endpoint, status, input_tokens_reported, cache_read_tokens, output_tokens, "
        "n_blocks, n_tools, session_id FROM requests ORDER BY ts_start").fetchall()
    assert requests == [
        ("mistral", "toy", "generate", 200, 120, 100, 7, 4, 1, requests[0][-1]),
        ("mistral", "toy", "generate", 429, None, None, None, 6, 1, requests[0][-1]),
        ("toy", "toy", "generate", 200, 120, 100, 7, 6, 1, requests[0][-1]),
    ]
    assert requests[0][-1].endswith("toy-s1")
    blocks = con.execute("SELECT path, source, rule_id FROM blocks b JOIN requests r USING (request_id) "
                         "WHERE r.provider = 'toy' ORDER BY position").fetchall()
    assert [b[0] for b in blocks] == ["tools[0]"] + [f"prompt_parts[{i}]" for i in range(5)]
    assert blocks[4] == ("prompt_parts[3]", "assistant_output", "generic.assistant-text")
    errors = con.execute("SELECT error_layer, error_code, retry_after_s FROM errors").fetchall()
    assert errors == [("rate_limit", "rate_limit_exceeded", 3.0)]
