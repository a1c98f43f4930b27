"""Amazon Bedrock's Converse API (`/model/<id>/converse`, `/converse-stream`), JSON and event-stream frames.

The provider-neutral API of Bedrock, used by Cline and Roo Code, the AI SDK's
Bedrock provider (opencode), Strands and LiteLLM. Effective order is
`toolConfig.tools` -> `system` -> `messages`. Content blocks are one-key objects
(`{"text": ...}`, `{"toolUse": ...}`, `{"toolResult": ...}`, `{"reasoningContent": ...}`,
`{"cachePoint": ...}`). A streamed answer is AWS event-stream frames whose
`:event-type` header names the event (`contentBlockDelta`, `messageStop`,
`metadata` with the usage, ...) and whose payload is its JSON.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import unquote

from ctxtap.analysis.blocks.drafts import BlockDraft, structured_draft
from ctxtap.analysis.parsing.canonical import canonical_json
from ctxtap.analysis.parsing.errors import classify_error
from ctxtap.analysis.parsing.models import ParsedResponse, Role, ToolCall, Usage
from ctxtap.analysis.parsing.usage import derived, reported
from ctxtap.analysis.protocols.common import (
    CallNames,
    RequestDraft,
    as_dict,
    as_int,
    as_list,
    as_str,
    each_item,
    load_response_object,
    media_placeholder,
    norm_role,
    parts_text,
    stream_outcome,
    text_kind,
)
from ctxtap.analysis.protocols.registry import Endpoint, Protocol, ReplayedCall, RequestContext
from ctxtap.wire.eventstream import looks_like_eventstream, read_messages

_PATH = re.compile(r"/model/(?P<model>[^/]+)/converse(?P<stream>-stream)?$")


def parse_request(body: Any, path: str = "", memo: Any = None) -> RequestDraft:
    d = RequestDraft()
    if not isinstance(body, dict):
        d.status, d.error = "error", "request body is not a JSON object"
        return d
    m = _PATH.search(path.split("?", 1)[0])
    d.model = unquote(m.group("model")) if m else as_str(body.get("modelId"))
    d.stream = bool(m and m.group("stream"))
    d.max_output_tokens = as_int(as_dict(body.get("inferenceConfig")).get("maxTokens"))

    def tool_item(tool: Any, i: int) -> None:
        spec = as_dict(as_dict(tool).get("toolSpec"))
        name = as_str(spec.get("name"))
        if name:
            d.tool_names.append(name)
            d.blocks.append(structured_draft(f"toolConfig.tools[{i}]", "tool_definition", "system", tool,
                                             "toolSpec", tool_name=name))
        else:  # a cachePoint between tools, or a shape this parser does not know
            d.blocks.append(structured_draft(f"toolConfig.tools[{i}]", "other", "system", tool,
                                             next(iter(as_dict(tool)), "unknown")))

    each_item(memo, "converse.tools", as_list(as_dict(body.get("toolConfig")).get("tools")), d, tool_item)
    system = body.get("system")
    if system is not None and not isinstance(system, list):
        d.warn("system is not a list")
    for j, part in enumerate(as_list(system)):
        d.blocks.append(_part(part, f"system[{j}]", "system", None, {}))

    messages = body.get("messages")
    if not isinstance(messages, list):
        d.warn("messages is missing or not a list")
    call_names = CallNames()

    def message(msg: Any, i: int) -> None:
        if not isinstance(msg, dict):
            d.warn(f"messages[{i}] is not an object")
            return
        role = norm_role(msg.get("role"))
        content = msg.get("content")
        if not isinstance(content, list):
            d.warn(f"messages[{i}].content is not a list")
        for j, part in enumerate(as_list(content)):
            d.blocks.append(_part(part, f"messages[{i}].content[{j}]", role, i, call_names))

    each_item(memo, "converse.messages", as_list(messages), d, message, call_names)
    return d


def _part(part: Any, path: str, role: Role, index: int | None, call_names: CallNames | dict[str, str]) -> BlockDraft:
    """One content block: an object with one key naming its type."""
    p = as_dict(part)
    if isinstance(p.get("text"), str):
        kind = "instruction_text" if role == "system" else text_kind(role)
        return BlockDraft(path, kind, role, part, p["text"], "text", item_index=index)
    for media in ("image", "document", "video"):
        if isinstance(p.get(media), dict):
            m = p[media]
            source = as_dict(m.get("source"))
            data = source.get("bytes") or source.get("s3Location") or source.get("text") or ""
            kind = "image" if media == "image" else "document"
            text = media_placeholder(media, as_str(m.get("format")), data)
            return BlockDraft(path, kind, role, part, text, media, item_index=index)
    if isinstance(p.get("toolUse"), dict):
        use = p["toolUse"]
        call_id, name = as_str(use.get("toolUseId")), as_str(use.get("name"))
        if call_id and name:
            call_names[call_id] = name
        return structured_draft(path, "tool_call", role, part, "toolUse", tool_name=name, call_id=call_id,
                                item_index=index)
    if isinstance(p.get("toolResult"), dict):
        result = p["toolResult"]
        call_id = as_str(result.get("toolUseId"))
        return BlockDraft(path, "tool_result", role, part, _result_text(result.get("content")), "toolResult",
                          tool_name=call_names.get(call_id or ""), call_id=call_id,
                          is_error=result.get("status") == "error", item_index=index)
    if isinstance(p.get("reasoningContent"), dict):
        reasoning = p["reasoningContent"]
        text = as_str(as_dict(reasoning.get("reasoningText")).get("text"))
        if text is None:
            text = f"[redacted reasoning {len(str(reasoning.get('redactedContent', '')))} bytes]"
        return BlockDraft(path, "reasoning", role, part, text, "reasoningContent", item_index=index)
    return structured_draft(path, "other", role, part, next(iter(p), "unknown"), item_index=index)


def _result_text(content: Any) -> str:
    """A tool result's content list (`text`, `json`, media) as text."""
    out = []
    for item in as_list(content):
        c = as_dict(item)
        if isinstance(c.get("text"), str):
            out.append(c["text"])
        elif "json" in c:
            out.append(canonical_json(c["json"]))
        else:
            out.append(parts_text([item]))
    return "\n".join(out)


# --- responses -------------------------------------------------------------------


class _Builder:
    def __init__(self) -> None:
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.stop: str | None = None
        self.usage: dict | None = None
        self.error = None
        self.bad_events = 0
        self.started = False

    def block(self, index: int, part: dict) -> None:
        """A whole content block (non-streamed answer) or a stream's block start."""
        if isinstance(part.get("text"), str):
            self.text.append(part["text"])
        elif isinstance(part.get("reasoningContent"), dict):
            self.reasoning.append(as_str(as_dict(part["reasoningContent"].get("reasoningText")).get("text")) or "")
        elif isinstance(part.get("toolUse"), dict):
            use = part["toolUse"]
            entry = self.calls.setdefault(index, {"id": None, "name": "", "input": []})
            entry["id"] = as_str(use.get("toolUseId")) or entry["id"]
            entry["name"] = as_str(use.get("name")) or entry["name"]
            if "input" in use:
                value = use["input"]
                entry["input"].append(value if isinstance(value, str) else canonical_json(value))

    def delta(self, index: int, delta: dict) -> None:
        if isinstance(delta.get("text"), str):
            self.text.append(delta["text"])
        elif isinstance(delta.get("reasoningContent"), dict):
            self.reasoning.append(as_str(delta["reasoningContent"].get("text")) or "")
        elif isinstance(delta.get("toolUse"), dict):
            entry = self.calls.setdefault(index, {"id": None, "name": "", "input": []})
            value = delta["toolUse"].get("input")
            if isinstance(value, str):
                entry["input"].append(value)

    def result(self, truncated: str | None) -> ParsedResponse:
        calls = [ToolCall(call_id=c["id"] or f"index-{i}", name=c["name"], arguments="".join(c["input"]), index=n)
                 for n, (i, c) in enumerate(sorted(self.calls.items()))]
        status, parse_error, error = stream_outcome(
            self.error, truncated, bool(self.text or self.calls or self.reasoning or self.stop),
            self.bad_events, "frames")
        return ParsedResponse(
            text="".join(self.text),
            reasoning="".join(self.reasoning),
            tool_calls=calls,
            stop_reason=self.stop,
            usage=converse_usage(self.usage) if self.usage else Usage(),
            error=error,
            parse_status=status,
            parse_error=parse_error,
        )


def parse_response(raw: bytes | None, sse: bool) -> ParsedResponse:
    b = _Builder()
    if raw and looks_like_eventstream(raw):
        messages, complete = read_messages(raw)
        for message in messages:
            event = message.headers.get(":event-type", "")
            try:
                obj = json.loads(message.payload)
            except ValueError:
                b.bad_events += 1
                continue
            if not isinstance(obj, dict):
                b.bad_events += 1
                continue
            if message.headers.get(":message-type") in ("exception", "error"):
                code = message.headers.get(":exception-type") or message.headers.get(":error-code") or event
                b.error = classify_error(None, {"error": {"type": code, "message": obj.get("message")}},
                                         rule_prefix="stream:")
                continue
            index = as_int(obj.get("contentBlockIndex")) or 0
            if event == "messageStart":
                b.started = True
            elif event == "contentBlockStart":
                b.block(index, as_dict(obj.get("start")))
            elif event == "contentBlockDelta":
                b.delta(index, as_dict(obj.get("delta")))
            elif event == "messageStop":
                b.stop = as_str(obj.get("stopReason")) or b.stop
            elif event == "metadata":
                b.usage = as_dict(obj.get("usage")) or b.usage
        if not complete:
            b.bad_events += 1  # the body ends inside a frame, or a frame does not check out
        return b.result(None if b.stop or b.error else "stream ended before messageStop")
    obj, failure = load_response_object(raw)
    if obj is None:
        return failure
    if "output" not in obj and ("message" in obj or "Message" in obj):
        return ParsedResponse(error=classify_error(None, {"error": {"message": obj.get("message")}},
                                                   rule_prefix="body:"))
    for i, part in enumerate(as_list(as_dict(as_dict(obj.get("output")).get("message")).get("content"))):
        b.block(i, as_dict(part))
    b.stop = as_str(obj.get("stopReason"))
    b.usage = as_dict(obj.get("usage")) or None
    if not isinstance(obj.get("output"), dict):
        b.bad_events += 1
    return b.result(None)


def converse_usage(u: Any) -> Usage:
    """Converse counts input without the cached part; cache reads and writes come apart (additive)."""
    if not isinstance(u, dict) or not u:
        return Usage()
    uncached = reported(u.get("inputTokens"))
    read = reported(u.get("cacheReadInputTokens"))
    write = reported(u.get("cacheWriteInputTokens"))
    return Usage(
        input_total=derived(uncached, read, write, assume_zero=True),
        input_uncached=uncached,
        cache_read=read,
        cache_write=write,
        output=reported(u.get("outputTokens")),
        cache_semantics="additive",
        raw=u,
    )


# --- the protocol ------------------------------------------------------------------------


class BedrockConverse(Protocol):
    api = "bedrock-converse"
    title = "Amazon Bedrock Converse"
    order = 35
    endpoints = (Endpoint(_PATH, "generate"),)
    history_arrays = ("messages",)
    content_fields = frozenset({"messages", "system", "toolConfig"})
    tool_results = {"toolResult": "toolResult blocks in user messages"}

    def parse_request(self, body: Any, ctx: RequestContext) -> RequestDraft:
        return parse_request(body, ctx.path, ctx.memo)

    def parse_response(self, raw: bytes, sse: bool, endpoint: str) -> ParsedResponse:
        return parse_response(raw, sse)

    def usage(self, raw_usage: Any) -> Usage:
        return converse_usage(raw_usage)

    def replayed_call(self, wire: dict[str, Any]) -> ReplayedCall | None:
        use = wire.get("toolUse")
        if isinstance(use, dict) and "input" in use:
            return ReplayedCall(as_str(use.get("name")), use["input"])
        return None


PROTOCOL = BedrockConverse()
