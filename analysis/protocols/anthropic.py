"""Anthropic Messages API (also `?beta=true` and `count_tokens`), JSON and SSE.

Effective order is tools -> system -> messages, the order Anthropic builds its
cache prefix in. Streams are rebuilt block by block from `index`: text and
thinking deltas are concatenated, `input_json_delta` fragments are joined into
the tool call's arguments, usage starts from `message_start` and is patched by
every `message_delta` (its counts are cumulative).
"""

from __future__ import annotations

import re
from typing import Any

from ctxtap.analysis.blocks.drafts import BlockDraft, structured_draft
from ctxtap.analysis.cache import cachediag
from ctxtap.analysis.parsing.canonical import canonical_json, loads
from ctxtap.analysis.parsing.errors import classify_error
from ctxtap.analysis.parsing.models import ParsedResponse, Role, ToolCall, Usage
from ctxtap.analysis.parsing.usage import derived, get_path, reported
from ctxtap.analysis.protocols.common import (
    CallNames,
    RequestDraft,
    as_bool,
    as_dict,
    as_int,
    as_list,
    as_str,
    each_item,
    load_response_object,
    norm_role,
    parts_text,
    source_text,
    stream_outcome,
    text_kind,
)
from ctxtap.analysis.protocols.registry import Endpoint, ErrorHints, Protocol, ReplayedCall, RequestContext
from ctxtap.wire.sse import parse_sse

TOOL_CALL_TYPES = frozenset({"tool_use", "server_tool_use", "mcp_tool_use"})


def parse_request(body: Any, memo: Any = None) -> RequestDraft:
    d = RequestDraft()
    if not isinstance(body, dict):
        d.status, d.error = "error", "request body is not a JSON object"
        return d
    d.model = as_str(body.get("model"))
    d.stream = as_bool(body.get("stream"))
    d.max_output_tokens = as_int(body.get("max_tokens"))
    cc = body.get("cache_control")
    if isinstance(cc, dict):
        d.top_level_cache_control = cc.get("ttl") if cc.get("ttl") in ("5m", "1h") else "ephemeral"
    d.facts["metadata_user_id"] = as_str(as_dict(body.get("metadata")).get("user_id"))
    d.facts["has_thinking"] = isinstance(body.get("thinking"), dict)
    d.facts["diagnostics_requested"], d.facts["diagnostics_baseline"] = cachediag.anthropic_request(body)

    tools = body.get("tools")
    if tools is not None and not isinstance(tools, list):
        d.warn("tools is not a list")

    def tool_item(tool: Any, i: int) -> None:
        name = as_str(as_dict(tool).get("name")) or as_str(as_dict(tool).get("type"))
        if name:
            d.tool_names.append(name)
        d.blocks.append(
            structured_draft(f"tools[{i}]", "tool_definition", "system", tool, "tool", tool_name=name)
        )

    each_item(memo, "anthropic.tools", as_list(tools), d, tool_item)

    system = body.get("system")
    if isinstance(system, str):
        if system:
            d.blocks.append(BlockDraft("system", "instruction_text", "system", system, system, "text"))
    elif isinstance(system, list):
        each_item(memo, "anthropic.system", system, d,
                  lambda part, j: d.blocks.append(_part(part, f"system[{j}]", "system", None, {})))
    elif system is not None:
        d.warn("system is neither a string nor a list")

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
        if isinstance(content, str):
            if content:
                d.blocks.append(
                    BlockDraft(f"messages[{i}].content", text_kind(role), role, content, content, "text", item_index=i)
                )
        elif isinstance(content, list):
            for j, part in enumerate(content):
                d.blocks.append(_part(part, f"messages[{i}].content[{j}]", role, i, call_names))
        else:
            d.warn(f"messages[{i}].content is neither a string nor a list")

    each_item(memo, "anthropic.messages", as_list(messages), d, message, call_names)
    return d


def _part(part: Any, path: str, role: Role, index: int | None, call_names: CallNames | dict[str, str]) -> BlockDraft:
    """One content block of system[] or messages[].content[]."""
    if isinstance(part, str):
        return BlockDraft(path, text_kind(role), role, part, part, "text", item_index=index)
    p = as_dict(part)
    ptype = as_str(p.get("type")) or ""
    if ptype == "text" or (not ptype and isinstance(p.get("text"), str)):
        return BlockDraft(path, text_kind(role), role, part, str(p.get("text", "")), "text", item_index=index)
    if ptype == "image":
        return BlockDraft(
            path,
            "image",
            role,
            part,
            source_text("image", p.get("source")),
            ptype,
            item_index=index,
        )
    if ptype in ("document", "search_result"):
        text = (
            source_text("document", p.get("source"))
            if ptype == "document"
            else parts_text(p.get("content"))
        )
        return BlockDraft(path, "document", role, part, text, ptype, item_index=index)
    if ptype in TOOL_CALL_TYPES:
        call_id, name = as_str(p.get("id")), as_str(p.get("name"))
        if call_id and name:
            call_names[call_id] = name
        return structured_draft(
            path, "tool_call", role, part, ptype, tool_name=name, call_id=call_id, item_index=index
        )
    if ptype == "tool_result" or ptype.endswith("_tool_result"):
        call_id = as_str(p.get("tool_use_id"))
        return BlockDraft(
            path,
            "tool_result",
            role,
            part,
            parts_text(p.get("content")),
            ptype,
            tool_name=call_names.get(call_id or ""),
            call_id=call_id,
            is_error=as_bool(p.get("is_error")),
            item_index=index,
        )
    if ptype == "thinking":
        return BlockDraft(path, "reasoning", role, part, str(p.get("thinking", "")), ptype, item_index=index)
    if ptype == "redacted_thinking":
        size = len(str(p.get("data", "")))
        return BlockDraft(
            path, "reasoning", role, part, f"[redacted_thinking {size} bytes]", ptype, item_index=index
        )
    if ptype == "compaction":
        content = p.get("content")
        text = (
            content
            if isinstance(content, str)
            else f"[encrypted compaction {len(str(p.get('encrypted_content', '')))} bytes]"
        )
        return BlockDraft(path, "compaction", role, part, text, ptype, item_index=index)
    return structured_draft(path, "other", role, part, ptype or "unknown", item_index=index)


# --- responses -------------------------------------------------------------------


class _Builder:
    """Collects content blocks, usage and stop reason from JSON or stream events."""

    def __init__(self) -> None:
        self.blocks: dict[int, dict[str, Any]] = {}
        self.usage: dict[str, Any] = {}
        self.response_id: str | None = None
        self.model: str | None = None
        self.stop_reason: str | None = None
        self.error = None
        self.finished = False
        self.bad_events = 0
        self.diagnostics = None

    def start_message(self, msg: dict) -> None:
        # cache diagnostics ride on the message: the JSON body, or `message_start` when streaming
        self.diagnostics = cachediag.from_anthropic(msg) or self.diagnostics
        self.response_id = as_str(msg.get("id")) or self.response_id
        self.model = as_str(msg.get("model")) or self.model
        usage = msg.get("usage")
        if isinstance(usage, dict):
            self.usage = dict(usage)
        self.stop_reason = as_str(msg.get("stop_reason")) or self.stop_reason

    def start_block(self, index: int, block: dict) -> None:
        entry = dict(block)
        entry["_json"] = []
        self.blocks[index] = entry

    def delta(self, index: int, delta: dict) -> None:
        entry = self.blocks.setdefault(index, {"type": "text", "_json": []})
        dtype = delta.get("type")
        if dtype == "text_delta":
            entry["text"] = str(entry.get("text") or "") + str(delta.get("text", ""))
        elif dtype == "thinking_delta":
            entry["thinking"] = str(entry.get("thinking") or "") + str(delta.get("thinking", ""))
        elif dtype == "signature_delta":
            entry["signature"] = str(entry.get("signature") or "") + str(delta.get("signature", ""))
        elif dtype == "input_json_delta":
            entry["_json"].append(str(delta.get("partial_json", "")))
        elif dtype == "compaction_delta":
            entry["content"] = str(entry.get("content") or "") + str(delta.get("content") or "")

    def result(self) -> ParsedResponse:
        text, reasoning, calls = [], [], []
        status_note: str | None = None
        for index in sorted(self.blocks):
            b = self.blocks[index]
            btype = as_str(b.get("type")) or ""
            if btype == "text":
                text.append(str(b.get("text") or ""))
            elif btype == "thinking":
                reasoning.append(str(b.get("thinking") or ""))
            elif btype in TOOL_CALL_TYPES:
                fragments = b.get("_json") or []
                arguments = "".join(fragments) if any(fragments) else canonical_json(b.get("input") or {})
                try:
                    loads(arguments)
                except ValueError:
                    status_note = f"tool call {b.get('id')} has incomplete JSON arguments"
                calls.append(
                    ToolCall(
                        call_id=str(b.get("id") or f"index-{index}"),
                        name=str(b.get("name") or ""),
                        arguments=arguments,
                        kind="function" if btype == "tool_use" else "server",
                        index=len(calls),
                    )
                )
        status, parse_error, error = stream_outcome(
            self.error,
            None if self.finished else "stream ended before message_stop",
            bool(self.blocks or self.usage),
            self.bad_events,
            "stream events",
            note=status_note,
        )
        return ParsedResponse(
            response_id=self.response_id,
            model=self.model,
            text="".join(text),
            reasoning="".join(reasoning),
            tool_calls=calls,
            stop_reason=self.stop_reason,
            usage=anthropic_usage(self.usage),
            error=error,
            parse_status=status,
            parse_error=parse_error,
            cache_diagnostics=self.diagnostics,
        )


def parse_response(raw: bytes | None, sse: bool, endpoint: str) -> ParsedResponse:
    """A 2xx response body: count_tokens result, JSON message or SSE stream."""
    if sse:
        return _parse_stream(raw)
    obj, failure = load_response_object(raw)
    if obj is None:
        return failure
    if obj.get("type") == "error" or "error" in obj and "content" not in obj:
        return ParsedResponse(error=classify_error(None, obj, rule_prefix="body:"))
    if endpoint == "count_tokens" or ("input_tokens" in obj and "content" not in obj):
        count = as_int(obj.get("input_tokens"))
        return ParsedResponse(
            counted_input_tokens=count,
            parse_status="ok" if count is not None else "partial",
            parse_error=None if count is not None else "no input_tokens in count_tokens response",
        )
    b = _Builder()
    b.start_message(obj)
    content = obj.get("content")
    if not isinstance(content, list):
        b.bad_events += 1
    for i, block in enumerate(as_list(content)):
        if isinstance(block, dict):
            b.blocks[i] = {**block, "_json": []}
    b.finished = True
    return b.result()


def _parse_stream(raw: bytes | None) -> ParsedResponse:
    stream = parse_sse(raw)
    b = _Builder()
    for ev in stream.events:
        try:
            obj = loads(ev.data)
        except ValueError:
            b.bad_events += 1
            continue
        if not isinstance(obj, dict):
            b.bad_events += 1
            continue
        etype = obj.get("type") or ev.event
        index = as_int(obj.get("index"))
        if etype == "message_start":
            b.start_message(as_dict(obj.get("message")))
        elif etype == "content_block_start" and index is not None:
            b.start_block(index, as_dict(obj.get("content_block")))
        elif etype == "content_block_delta" and index is not None:
            b.delta(index, as_dict(obj.get("delta")))
        elif etype == "message_delta":
            delta = as_dict(obj.get("delta"))
            b.stop_reason = as_str(delta.get("stop_reason")) or b.stop_reason
            usage = obj.get("usage")
            if isinstance(usage, dict):
                b.usage.update({k: v for k, v in usage.items() if v is not None})
        elif etype == "message_stop":
            b.finished = True
        elif etype == "error":
            b.error = classify_error(None, obj, rule_prefix="stream:")
    return b.result()


# --- usage -----------------------------------------------------------------------------


def anthropic_usage(u: Any) -> Usage:
    """Messages API: input_tokens is the uncached part; cache counters are additive."""
    if not isinstance(u, dict) or not u:
        return Usage()
    uncached = reported(u.get("input_tokens"))
    read = reported(u.get("cache_read_input_tokens"))
    write = reported(u.get("cache_creation_input_tokens"))
    w5 = reported(get_path(u, "cache_creation", "ephemeral_5m_input_tokens"))
    w1 = reported(get_path(u, "cache_creation", "ephemeral_1h_input_tokens"))
    return Usage(
        input_total=derived(uncached, read, write, assume_zero=True),
        input_uncached=uncached,
        cache_read=read,
        cache_write=write,
        cache_write_5m=w5,
        cache_write_1h=w1,
        output=reported(u.get("output_tokens")),
        reasoning=reported(get_path(u, "output_tokens_details", "thinking_tokens")),
        cache_semantics="additive",
        raw=u,
    )


# --- the protocol ------------------------------------------------------------------------


class AnthropicMessages(Protocol):
    api = "messages"
    title = "Anthropic Messages"
    order = 10
    endpoints = (
        Endpoint(re.compile(r"/messages/count_tokens$"), "count_tokens"),
        Endpoint(re.compile(r"/messages(/count_tokens)?/?$"), "generate"),
    )
    history_arrays = ("messages",)
    content_fields = frozenset({"messages", "system", "tools"})
    tool_results = {"tool_result": "tool_result blocks in user messages"}
    cache_breakpoints = True

    def parse_request(self, body: Any, ctx: RequestContext) -> RequestDraft:
        return parse_request(body, ctx.memo)

    def parse_response(self, raw: bytes, sse: bool, endpoint: str) -> ParsedResponse:
        return parse_response(raw, sse, endpoint)

    def usage(self, raw_usage: Any) -> Usage:
        return anthropic_usage(raw_usage)

    def error_hints(self, error: dict[str, Any], headers: dict[str, str]) -> ErrorHints | None:
        # a rejected unified rate limit (subscription allowance) does not clear by retrying
        if headers.get("anthropic-ratelimit-unified-status") == "rejected":
            return ErrorHints(retryable=False)
        return None

    def replayed_call(self, wire: dict[str, Any]) -> ReplayedCall | None:
        if "input" in wire and wire.get("type") in TOOL_CALL_TYPES | {None}:
            return ReplayedCall(as_str(wire.get("name")), wire["input"])
        return None

    def text_key(self, wire: dict[str, Any]) -> str | None:
        if wire.get("type") == "thinking":
            return "thinking"
        return super().text_key(wire)


PROTOCOL = AnthropicMessages()
