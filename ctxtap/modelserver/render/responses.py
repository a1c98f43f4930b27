"""OpenAI Responses: the response object, or its SSE / WebSocket event sequence."""

from __future__ import annotations

import base64
import os
import time
from typing import Any

from ..reply import Answer, Event, RenderContext, Reply, new_id, split_text


def usage(ctx: RenderContext) -> dict[str, Any]:
    u = ctx.usage
    return {
        "input_tokens": u.total,
        "input_tokens_details": {"cached_tokens": u.read},
        "output_tokens": ctx.output_tokens,
        "output_tokens_details": {"reasoning_tokens": ctx.reasoning_tokens},
        "total_tokens": u.total + ctx.output_tokens,
    }


def response_object(ctx: RenderContext, status: str, output: list[dict[str, Any]], with_usage: bool) -> dict[str, Any]:
    req = ctx.request
    reasoning = req.get("reasoning") if isinstance(req.get("reasoning"), dict) else {}
    return {
        "id": ctx.response_id, "object": "response", "created_at": int(time.time()), "status": status,
        "error": None, "incomplete_details": None, "instructions": None, "metadata": {}, "model": ctx.model,
        "output": output, "parallel_tool_calls": bool(req.get("parallel_tool_calls", True)),
        "previous_response_id": ctx.previous_response_id,
        "reasoning": {"effort": reasoning.get("effort"), "summary": reasoning.get("summary")},
        "store": bool(req.get("store", False)), "temperature": 1.0, "text": {"format": {"type": "text"}},
        "tool_choice": req.get("tool_choice", "auto"), "tools": [], "top_p": 1.0, "truncation": "disabled",
        "usage": usage(ctx) if with_usage else None, "user": None,
        # the final response object carries the cache diagnostics a request asked for
        **(dict([ctx.diagnostics]) if ctx.diagnostics and with_usage else {}),
    }


def output_items(answer: Answer) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if answer.reasoning:
        # a real one is kilobytes of Fernet-style base64: long enough that it always holds `+` or `/`, as
        # real ones do (96 bytes sometimes held none, and then read as a glued key)
        blob = base64.b64encode(os.urandom(1536)).decode()
        items.append({"type": "reasoning", "id": new_id("rs_"), "summary": [], "encrypted_content": "gAAAAB" + blob})
    if answer.text:
        items.append({"type": "message", "id": new_id("msg_"), "status": "completed", "role": "assistant",
                      "content": [{"type": "output_text", "text": answer.text, "annotations": []}]})
    for call in answer.calls:
        if call.kind == "custom":
            item = {"type": "custom_tool_call", "id": new_id("ctc_"), "call_id": call.call_id, "name": call.name,
                    "input": call.input or "", "status": "completed"}
        elif call.kind == "local_shell":
            item = {"type": "local_shell_call", "id": new_id("lsh_"), "call_id": call.call_id, "status": "completed",
                    "action": call.arguments}
        else:
            item = {"type": "function_call", "id": new_id("fc_"), "call_id": call.call_id, "name": call.name,
                    "arguments": call.arguments_json, "status": "completed"}
        if call.namespace:
            item["namespace"] = call.namespace
        items.append(item)
    return items


def _item_events(index: int, item: dict[str, Any], answer: Answer, ctx: RenderContext) -> list[dict[str, Any]]:
    kind = item["type"]
    opened = {**item, "status": "in_progress"}
    out: list[dict[str, Any]] = []
    if kind == "message":
        opened["content"] = []
        part = {"type": "output_text", "text": "", "annotations": []}
        base = {"item_id": item["id"], "output_index": index, "content_index": 0}
        out.append({"type": "response.output_item.added", "output_index": index, "item": opened})
        out.append({"type": "response.content_part.added", **base, "part": part})
        for piece in answer.text_deltas or [answer.text or ""]:
            out.append({"type": "response.output_text.delta", **base, "delta": piece, "logprobs": []})
        text = answer.text or ""
        out.append({"type": "response.output_text.done", **base, "text": text, "logprobs": []})
        out.append({"type": "response.content_part.done", **base, "part": {**part, "text": text}})
    elif kind == "function_call":
        out.append({"type": "response.output_item.added", "output_index": index, "item": {**opened, "arguments": ""}})
        base = {"item_id": item["id"], "output_index": index}
        for piece in split_text(item["arguments"], ctx.delta_chars):
            out.append({"type": "response.function_call_arguments.delta", **base, "delta": piece})
        out.append({"type": "response.function_call_arguments.done", **base, "name": item["name"], "arguments": item["arguments"]})
    elif kind == "custom_tool_call":
        out.append({"type": "response.output_item.added", "output_index": index, "item": {**opened, "input": ""}})
        base = {"item_id": item["id"], "output_index": index}
        for piece in split_text(item["input"], ctx.delta_chars):
            out.append({"type": "response.custom_tool_call_input.delta", **base, "delta": piece})
        out.append({"type": "response.custom_tool_call_input.done", **base, "input": item["input"]})
    else:
        out.append({"type": "response.output_item.added", "output_index": index, "item": opened})
    out.append({"type": "response.output_item.done", "output_index": index, "item": item})
    return out


def render(answer: Answer, ctx: RenderContext) -> Reply:
    output = output_items(answer)
    if not ctx.stream:
        return Reply(body=response_object(ctx, "completed", output, True), output=output)
    payloads = [
        {"type": "response.created", "response": response_object(ctx, "in_progress", [], False)},
        {"type": "response.in_progress", "response": response_object(ctx, "in_progress", [], False)},
    ]
    for index, item in enumerate(output):
        payloads.extend(_item_events(index, item, answer, ctx))
    payloads.append({"type": "response.completed", "response": response_object(ctx, "completed", output, True)})
    events = [Event({"type": p["type"], "sequence_number": n, **{k: v for k, v in p.items() if k != "type"}}, p["type"])
              for n, p in enumerate(payloads)]
    return Reply(events=events, output=output)


def failed_events(ctx: RenderContext, seq: int) -> list[Event]:
    """An in-stream failure: an `error` event then a terminal `response.failed`."""
    err = {"code": "server_error", "message": "The server had an error while processing your request."}
    failed = response_object(ctx, "failed", [], False)
    failed["error"] = err
    return [
        Event({"type": "error", "sequence_number": seq, **err, "param": None}, "error"),
        Event({"type": "response.failed", "sequence_number": seq + 1, "response": failed}, "response.failed"),
    ]


def compact(ctx: RenderContext, items: list[dict[str, Any]]) -> dict[str, Any]:
    """`POST /responses/compact`: user messages kept, the rest folded into a compaction item."""
    kept = [i for i in items if isinstance(i, dict) and i.get("type", "message") == "message" and i.get("role") == "user"]
    blob = base64.b64encode(os.urandom(192)).decode()
    output = [*kept[-2:], {"type": "compaction", "id": new_id("cmp_"), "encrypted_content": "gAAAAB" + blob}]
    return {"id": ctx.response_id, "object": "response.compaction", "created_at": int(time.time()),
            "output": output, "usage": usage(ctx)}
