"""Ollama's native API (`/api/chat`, `/api/generate`), JSON and NDJSON streams.

Agents on a local or cloud Ollama (aider's `ollama_chat/` models, Continue, Zed,
Ollama Cloud at `ollama.com`) talk to it without the OpenAI-compatible layer.
Effective order is tools -> messages (chat) or system -> prompt (generate).
Messages are Chat-Completions-like (`tool_calls` with arguments as an object, a
`tool` role naming its tool by `tool_name`, `thinking` beside `content`).
Streams are one JSON object per line, the last with `done: true` and the
counts: `prompt_eval_count` is the prompt tokens Ollama evaluated, which leaves
out a prefix its KV cache kept, so it is reported as the uncached part and the
total read is not known.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ctxtap.analysis.blocks.drafts import BlockDraft, structured_draft
from ctxtap.analysis.parsing.canonical import canonical_json
from ctxtap.analysis.parsing.errors import classify_error
from ctxtap.analysis.parsing.models import ParsedResponse, ToolCall, Usage
from ctxtap.analysis.parsing.usage import reported
from ctxtap.analysis.protocols.chat_completions import message_blocks
from ctxtap.analysis.protocols.common import (
    CallNames,
    RequestDraft,
    as_bool,
    as_dict,
    as_int,
    as_list,
    as_str,
    each_item,
    media_placeholder,
    stream_outcome,
)
from ctxtap.analysis.protocols.registry import Endpoint, Protocol, RequestContext
from ctxtap.wire.ndjson import split_values


def parse_request(body: Any, path: str = "", memo: Any = None) -> RequestDraft:
    d = RequestDraft()
    if not isinstance(body, dict):
        d.status, d.error = "error", "request body is not a JSON object"
        return d
    d.model = as_str(body.get("model"))
    d.stream = as_bool(body.get("stream")) is not False  # Ollama streams unless told not to
    d.max_output_tokens = as_int(as_dict(body.get("options")).get("num_predict"))

    def tool_item(tool: Any, i: int) -> None:
        t = as_dict(tool)
        name = as_str(as_dict(t.get("function")).get("name")) or as_str(t.get("name"))
        if name:
            d.tool_names.append(name)
        d.blocks.append(structured_draft(f"tools[{i}]", "tool_definition", "system", tool, "tool", tool_name=name))

    each_item(memo, "ollama.tools", as_list(body.get("tools")), d, tool_item)
    if "messages" not in body and ("prompt" in body or "system" in body):  # /api/generate
        for key, role, kind in (("system", "system", "instruction_text"), ("prompt", "user", "message_text")):
            value = body.get(key)
            if isinstance(value, str) and value:
                d.blocks.append(BlockDraft(key, kind, role, value, value, "text"))
        for j, image in enumerate(as_list(body.get("images"))):
            d.blocks.append(BlockDraft(f"images[{j}]", "image", "user", image,
                                       media_placeholder("image", None, image), "image"))
        return d
    messages = body.get("messages")
    if not isinstance(messages, list):
        d.warn("messages is missing or not a list")
    call_names = CallNames()

    def message(msg: Any, i: int) -> None:
        if not isinstance(msg, dict):
            d.warn(f"messages[{i}] is not an object")
            return
        thinking = msg.get("thinking")
        if isinstance(thinking, str) and thinking:
            role = "assistant" if msg.get("role") == "assistant" else "user"
            d.blocks.append(BlockDraft(f"messages[{i}].thinking", "reasoning", role, thinking, thinking, "thinking",
                                       item_index=i))
        if msg.get("role") == "tool" and "tool_call_id" not in msg:
            msg = {**msg, "name": msg.get("tool_name") or msg.get("name")}
        message_blocks({k: v for k, v in msg.items() if k != "thinking"}, i, d, call_names)
        for j, image in enumerate(as_list(msg.get("images"))):
            d.blocks.append(BlockDraft(f"messages[{i}].images[{j}]", "image", "user", image,
                                       media_placeholder("image", None, image), "image", item_index=i))

    each_item(memo, "ollama.messages", as_list(messages), d, message, call_names)
    return d


# --- responses -------------------------------------------------------------------


def parse_response(raw: bytes | None) -> ParsedResponse:
    """One JSON object (`stream: false`) or NDJSON lines, the last with `done: true`."""
    text: list[str] = []
    reasoning: list[str] = []
    calls: list[ToolCall] = []
    last: dict = {}
    error = None
    bad = 0
    done = False
    values, bad = split_values(raw or b"")
    for value in values:
        try:
            obj = json.loads(value)
        except ValueError:
            bad += 1
            continue
        if not isinstance(obj, dict):
            bad += 1
            continue
        if "error" in obj:
            error = classify_error(None, {"error": {"message": as_str(obj.get("error"))}}, rule_prefix="stream:")
            continue
        message = as_dict(obj.get("message"))
        for source, key, into in ((message, "content", text), (obj, "response", text),
                                  (message, "thinking", reasoning), (obj, "thinking", reasoning)):
            if isinstance(source.get(key), str):
                into.append(source[key])
        for call in as_list(message.get("tool_calls")):
            fn = as_dict(as_dict(call).get("function"))
            arguments = fn.get("arguments")
            calls.append(ToolCall(
                call_id=as_str(as_dict(call).get("id")) or f"{as_str(fn.get('name')) or 'call'}#{len(calls)}",
                name=as_str(fn.get("name")) or "",
                arguments=arguments if isinstance(arguments, str) else canonical_json(arguments or {}),
                index=len(calls)))
        if obj.get("done") is True:
            done, last = True, obj
    status, parse_error, error = stream_outcome(
        error, None if done or error else "stream ended before done", bool(text or calls or reasoning), bad, "lines")
    return ParsedResponse(
        model=as_str(last.get("model")),
        text="".join(text),
        reasoning="".join(reasoning),
        tool_calls=calls,
        stop_reason=as_str(last.get("done_reason")),
        usage=ollama_usage(last),
        error=error,
        parse_status=status,
        parse_error=parse_error,
    )


def ollama_usage(u: Any) -> Usage:
    """The final line's counts: evaluated prompt tokens (what the KV cache kept is not in them) and output."""
    if not isinstance(u, dict) or ("prompt_eval_count" not in u and "eval_count" not in u):
        return Usage()
    return Usage(input_uncached=reported(u.get("prompt_eval_count")), output=reported(u.get("eval_count")),
                 raw={k: v for k, v in u.items() if k.endswith(("_count", "_duration"))})


# --- the protocol ------------------------------------------------------------------------


class OllamaApi(Protocol):
    api = "ollama"
    title = "Ollama"
    order = 40
    endpoints = (Endpoint(re.compile(r"/api/(?:chat|generate)/?$"), "generate"),)
    history_arrays = ("messages",)
    content_fields = frozenset({"messages", "tools", "prompt", "system"})

    def parse_request(self, body: Any, ctx: RequestContext) -> RequestDraft:
        return parse_request(body, ctx.path, ctx.memo)

    def parse_response(self, raw: bytes, sse: bool, endpoint: str) -> ParsedResponse:
        return parse_response(raw)

    def usage(self, raw_usage: Any) -> Usage:
        return ollama_usage(raw_usage)

PROTOCOL = OllamaApi()
