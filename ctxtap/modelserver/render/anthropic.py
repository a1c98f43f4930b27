"""Anthropic Messages: JSON message or the message_start ... message_stop SSE sequence."""

from __future__ import annotations

from typing import Any

from ..reply import Answer, Event, RenderContext, Reply, new_id, split_text


def usage(ctx: RenderContext, output_tokens: int) -> dict[str, Any]:
    u = ctx.usage
    return {
        "input_tokens": u.uncached,
        "cache_creation_input_tokens": u.write,
        "cache_read_input_tokens": u.read,
        "cache_creation": {"ephemeral_5m_input_tokens": u.write - u.write_1h, "ephemeral_1h_input_tokens": u.write_1h},
        "output_tokens": output_tokens,
        "service_tier": "standard",
    }


def _content(answer: Answer) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if answer.text:
        blocks.append({"type": "text", "text": answer.text})
    for call in answer.calls:
        blocks.append({"type": "tool_use", "id": "toolu_" + call.call_id[5:], "name": call.name, "input": call.arguments or {}})
    return blocks


def render(answer: Answer, ctx: RenderContext) -> Reply:
    msg_id = ctx.response_id if ctx.response_id.startswith("msg_") else new_id("msg_")
    stop = "tool_use" if answer.calls else "end_turn"
    content = _content(answer)
    # cache diagnostics ride on the message (on `message_start` when streaming), where asked for
    extra = dict([ctx.diagnostics]) if ctx.diagnostics else {}
    if not ctx.stream:
        return Reply(body={
            "id": msg_id, "type": "message", "role": "assistant", "model": ctx.model, "content": content,
            "stop_reason": stop, "stop_sequence": None, **extra, "usage": usage(ctx, ctx.output_tokens),
        })
    start = {"id": msg_id, "type": "message", "role": "assistant", "model": ctx.model, "content": [],
             "stop_reason": None, "stop_sequence": None, **extra, "usage": usage(ctx, 1)}
    events = [Event({"type": "message_start", "message": start}, "message_start"), Event({"type": "ping"}, "ping")]

    def add(data: dict[str, Any]) -> None:
        events.append(Event(data, data["type"]))

    for index, block in enumerate(content):
        if block["type"] == "text":
            add({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})
            for piece in answer.text_deltas or [block["text"]]:
                add({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}})
        else:
            add({"type": "content_block_start", "index": index, "content_block": {**block, "input": {}}})
            add({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": ""}})
            call = answer.calls[index - (1 if answer.text else 0)]
            for piece in split_text(call.arguments_json, ctx.delta_chars):
                add({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": piece}})
        add({"type": "content_block_stop", "index": index})
    add({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": usage(ctx, ctx.output_tokens)})
    add({"type": "message_stop"})
    return Reply(events=events)
