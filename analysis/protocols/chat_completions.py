"""OpenAI Chat Completions and compatible APIs (Moonshot/Kimi, DeepSeek, xAI, ...), JSON and SSE.

Effective order is tools -> messages. Streams: content and `reasoning_content`
deltas are concatenated; tool-call fragments are grouped by `index` (id and name
arrive only on the first fragment); usage may sit on the chunk or, for Moonshot,
inside `choices[0]`. A stream cut before its usage chunk reports usage as not
available, never as zero.
"""

from __future__ import annotations

import re
from typing import Any

from ctxtap.analysis.blocks.drafts import BlockDraft, structured_draft
from ctxtap.analysis.parsing.canonical import canonical_json, loads
from ctxtap.analysis.parsing.errors import classify_error
from ctxtap.analysis.parsing.models import ParsedResponse, Role, ToolCall, Usage
from ctxtap.analysis.parsing.usage import get_path, inclusive, reported
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
    stream_outcome,
    text_kind,
)
from ctxtap.analysis.protocols.registry import Endpoint, Protocol, ReplayedCall, RequestContext
from ctxtap.wire.sse import parse_sse


def parse_request(body: Any, memo: Any = None) -> RequestDraft:
    d = RequestDraft()
    if not isinstance(body, dict):
        d.status, d.error = "error", "request body is not a JSON object"
        return d
    d.model = as_str(body.get("model"))
    d.stream = as_bool(body.get("stream"))
    d.max_output_tokens = as_int(body.get("max_completion_tokens"))
    if d.max_output_tokens is None:
        d.max_output_tokens = as_int(body.get("max_tokens"))
    d.facts["prompt_cache_key"] = as_str(body.get("prompt_cache_key"))
    d.facts["user"] = as_str(body.get("user")) or as_str(body.get("safety_identifier"))
    d.facts["metadata"] = as_dict(body.get("metadata"))
    d.facts["json_schema_output"] = as_dict(body.get("response_format")).get("type") in (
        "json_schema",
        "json_object",
    )
    d.facts["include_usage"] = as_bool(as_dict(body.get("stream_options")).get("include_usage"))

    tools = body.get("tools")
    if tools is not None and not isinstance(tools, list):
        d.warn("tools is not a list")

    def tool_item(tool: Any, i: int) -> None:
        t = as_dict(tool)
        name = (
            as_str(as_dict(t.get("function")).get("name")) or as_str(t.get("name")) or as_str(t.get("type"))
        )
        if name:
            d.tool_names.append(name)
        d.blocks.append(
            structured_draft(f"tools[{i}]", "tool_definition", "system", tool, "tool", tool_name=name)
        )

    each_item(memo, "chat.tools", as_list(tools), d, tool_item)
    for i, fn in enumerate(as_list(body.get("functions"))):  # legacy function calling
        name = as_str(as_dict(fn).get("name"))
        if name:
            d.tool_names.append(name)
        d.blocks.append(
            structured_draft(f"functions[{i}]", "tool_definition", "system", fn, "function", tool_name=name)
        )

    messages = body.get("messages")
    if not isinstance(messages, list):
        d.warn("messages is missing or not a list")
    call_names = CallNames()

    def message(msg: Any, i: int) -> None:
        if not isinstance(msg, dict):
            d.warn(f"messages[{i}] is not an object")
            return
        message_blocks(msg, i, d, call_names)

    each_item(memo, "chat.messages", as_list(messages), d, message, call_names)
    return d


def message_blocks(msg: dict, i: int, d: RequestDraft, call_names: CallNames | dict[str, str]) -> None:
    """The blocks of one message (Ollama's messages are read the same way)."""
    role = norm_role(msg.get("role"))
    content = msg.get("content")
    if role == "tool":
        call_id = as_str(msg.get("tool_call_id"))
        name = call_names.get(call_id or "") or as_str(msg.get("name"))
        d.blocks.append(
            BlockDraft(
                f"messages[{i}]",
                "tool_result",
                "tool",
                msg,
                parts_text(content),
                "tool",
                tool_name=name,
                call_id=call_id,
                item_index=i,
            )
        )
        return
    for key in ("reasoning_content", "reasoning"):
        reasoning = msg.get(key)
        if isinstance(reasoning, str) and reasoning:
            d.blocks.append(
                BlockDraft(f"messages[{i}].{key}", "reasoning", role, reasoning, reasoning, key, item_index=i)
            )
    if isinstance(content, str):
        if content:
            d.blocks.append(
                BlockDraft(
                    f"messages[{i}].content", text_kind(role), role, content, content, "text", item_index=i
                )
            )
    elif isinstance(content, list):
        for j, part in enumerate(content):
            d.blocks.append(_part(part, f"messages[{i}].content[{j}]", role, i))
    elif content is not None:
        d.warn(f"messages[{i}].content is neither a string nor a list")
    for k, call in enumerate(as_list(msg.get("tool_calls"))):
        c = as_dict(call)
        call_id = as_str(c.get("id"))
        name = as_str(as_dict(c.get("function")).get("name"))
        if call_id and name:
            call_names[call_id] = name
        d.blocks.append(
            structured_draft(
                f"messages[{i}].tool_calls[{k}]",
                "tool_call",
                role,
                call,
                "tool_call",
                tool_name=name,
                call_id=call_id,
                item_index=i,
            )
        )
    fc = msg.get("function_call")
    if isinstance(fc, dict):
        d.blocks.append(
            structured_draft(
                f"messages[{i}].function_call",
                "tool_call",
                role,
                fc,
                "function_call",
                tool_name=as_str(fc.get("name")),
                item_index=i,
            )
        )


def _part(part: Any, path: str, role: Role, index: int) -> BlockDraft:
    if isinstance(part, str):
        return BlockDraft(path, text_kind(role), role, part, part, "text", item_index=index)
    p = as_dict(part)
    ptype = as_str(p.get("type")) or ""
    if ptype == "text" or (not ptype and isinstance(p.get("text"), str)):
        return BlockDraft(
            path, text_kind(role), role, part, str(p.get("text") or ""), "text", item_index=index
        )
    if ptype == "image_url":
        return BlockDraft(path, "image", role, part, parts_text([part]), ptype, item_index=index)
    if ptype in ("input_audio", "video_url", "audio_url", "file"):
        media = ptype.split("_")[0] if ptype != "file" else "file"
        return BlockDraft(path, "document", role, part, f"[{media} {ptype}]", ptype, item_index=index)
    return structured_draft(path, "other", role, part, ptype or "unknown", item_index=index)


# --- responses -------------------------------------------------------------------


class _Builder:
    def __init__(self) -> None:
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.finish: str | None = None
        self.usage: dict | None = None
        self.response_id: str | None = None
        self.model: str | None = None
        self.error = None
        self.bad_events = 0

    def chunk(self, obj: dict, stream: bool) -> None:
        if isinstance(obj.get("error"), dict | str):
            self.error = classify_error(
                as_int(as_dict(obj.get("error")).get("code")),
                obj,
                rule_prefix="stream:" if stream else "body:",
            )
            return
        self.response_id = self.response_id or as_str(obj.get("id"))
        self.model = self.model or as_str(obj.get("model"))
        if isinstance(obj.get("usage"), dict):
            self.usage = obj["usage"]
        choices = obj.get("choices")
        for choice in as_list(choices):
            c = as_dict(choice)
            if as_int(c.get("index")) not in (None, 0):
                continue  # n>1: only the first choice is the model's answer the client uses
            if isinstance(c.get("usage"), dict):
                self.usage = c["usage"]
            if as_str(c.get("finish_reason")):
                self.finish = c["finish_reason"]
            delta = as_dict(c.get("delta") if stream else c.get("message"))
            if not delta and not stream:
                delta = as_dict(c.get("delta"))
            content = delta.get("content")
            if isinstance(content, str):
                self.text.append(content)
            elif isinstance(content, list):
                self.text.append(parts_text(content))
            for key in ("reasoning_content", "reasoning"):
                if isinstance(delta.get(key), str):
                    self.reasoning.append(delta[key])
            for k, call in enumerate(as_list(delta.get("tool_calls"))):
                tc = as_dict(call)
                index = as_int(tc.get("index"))
                if index is None:
                    index = k if not stream else len(self.calls)
                entry = self.calls.setdefault(index, {"id": None, "name": "", "arguments": []})
                entry["id"] = as_str(tc.get("id")) or entry["id"]
                fn = as_dict(tc.get("function"))
                if as_str(fn.get("name")) and not entry["name"]:
                    entry["name"] = fn["name"]
                arguments = fn.get("arguments")
                if isinstance(arguments, str):
                    entry["arguments"].append(arguments)
                elif arguments is not None:
                    entry["arguments"].append(canonical_json(arguments))

    def result(self, complete: bool, had_done: bool) -> ParsedResponse:
        calls = [
            ToolCall(
                call_id=str(c["id"] or f"index-{i}"),
                name=c["name"],
                arguments="".join(c["arguments"]),
                index=n,
            )
            for n, (i, c) in enumerate(sorted(self.calls.items()))
        ]
        truncated = None
        if not complete:
            truncated = "stream ended before [DONE]" if not had_done else "stream incomplete"
        parse_status, parse_error, error = stream_outcome(
            self.error,
            truncated,
            bool(self.text or self.calls or self.finish or self.reasoning),
            self.bad_events,
            "stream chunks",
        )
        return ParsedResponse(
            response_id=self.response_id,
            model=self.model,
            text="".join(self.text),
            reasoning="".join(self.reasoning),
            tool_calls=calls,
            stop_reason=self.finish,
            usage=chat_usage(self.usage) if self.usage else Usage(),
            error=error,
            parse_status=parse_status,
            parse_error=parse_error,
        )


def parse_response(raw: bytes | None, sse: bool) -> ParsedResponse:
    b = _Builder()
    if sse:
        stream = parse_sse(raw)
        had_done = False
        for ev in stream.events:
            data = ev.data.strip()
            if data == "[DONE]":
                had_done = True
                continue
            try:
                obj = loads(data)
            except ValueError:
                b.bad_events += 1
                continue
            if isinstance(obj, dict):
                b.chunk(obj, stream=True)
            else:
                b.bad_events += 1
        # some compatible servers omit [DONE]; a finish reason plus usage is a complete answer
        complete = had_done or (b.finish is not None and b.usage is not None and stream.complete)
        return b.result(complete, had_done)
    obj, failure = load_response_object(raw)
    if obj is None:
        return failure
    b.chunk(obj, stream=False)
    if not isinstance(obj.get("choices"), list) and b.error is None:
        b.bad_events += 1
    return b.result(True, True)


# --- usage -----------------------------------------------------------------------------


def chat_usage(u: Any) -> Usage:
    """Chat Completions incl. Moonshot top-level cached_tokens and DeepSeek hit/miss counters."""
    if not isinstance(u, dict) or not u:
        return Usage()
    read_value = u.get("cached_tokens")
    if as_int(read_value) is None:
        read_value = get_path(u, "prompt_tokens_details", "cached_tokens")
    if as_int(read_value) is None:
        read_value = u.get("prompt_cache_hit_tokens")
    miss = reported(u.get("prompt_cache_miss_tokens"))
    return inclusive(
        total=reported(u.get("prompt_tokens")),
        read=reported(read_value),
        write=reported(get_path(u, "prompt_tokens_details", "cache_write_tokens")),
        output=reported(u.get("completion_tokens")),
        reasoning=reported(get_path(u, "completion_tokens_details", "reasoning_tokens")),
        raw=u,
        uncached=miss if miss.value is not None else None,
    )


# --- the protocol ------------------------------------------------------------------------


class ChatCompletions(Protocol):
    api = "chat-completions"
    title = "Chat Completions"
    order = 30
    endpoints = (Endpoint(re.compile(r"/chat/completions/?$"), "generate"),)
    history_arrays = ("messages",)
    # `prompt`: the legacy completions field, which compatible servers still accept
    content_fields = frozenset({"messages", "tools", "functions", "prompt"})

    def parse_request(self, body: Any, ctx: RequestContext) -> RequestDraft:
        return parse_request(body, ctx.memo)

    def parse_response(self, raw: bytes, sse: bool, endpoint: str) -> ParsedResponse:
        return parse_response(raw, sse)

    def usage(self, raw_usage: Any) -> Usage:
        return chat_usage(raw_usage)

    def replayed_call(self, wire: dict[str, Any]) -> ReplayedCall | None:
        function = wire.get("function")
        if isinstance(function, dict) and "arguments" in function:
            return ReplayedCall(as_str(function.get("name")), function["arguments"])
        if "arguments" in wire:  # a legacy `function_call`
            return ReplayedCall(as_str(wire.get("name")), wire["arguments"])
        return None


PROTOCOL = ChatCompletions()
