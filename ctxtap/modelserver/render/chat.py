"""Chat Completions: JSON completion, or chunks ending in a usage chunk and `data: [DONE]`.

Two usage styles: OpenAI (final chunk with `choices: []` when
`stream_options.include_usage`) and Moonshot/Kimi (usage inside `choices[0]`
of the finishing chunk, cache hits as top-level `usage.cached_tokens`).
"""

from __future__ import annotations

import time
from typing import Any

from ..reply import Answer, Event, RenderContext, Reply, new_id, split_text


def usage(ctx: RenderContext) -> dict[str, Any]:
    u = ctx.usage
    out: dict[str, Any] = {
        "prompt_tokens": u.total,
        "completion_tokens": ctx.output_tokens,
        "total_tokens": u.total + ctx.output_tokens,
        "prompt_tokens_details": {"cached_tokens": u.read},
        "completion_tokens_details": {"reasoning_tokens": ctx.reasoning_tokens},
    }
    if ctx.moonshot:
        out["cached_tokens"] = u.read
    return out


def _tool_calls(answer: Answer) -> list[dict[str, Any]]:
    return [{"id": c.call_id, "type": "function", "function": {"name": c.name, "arguments": c.arguments_json}}
            for c in answer.calls]


def render(answer: Answer, ctx: RenderContext) -> Reply:
    cid = new_id("chatcmpl-")
    created = int(time.time())
    finish = "tool_calls" if answer.calls else "stop"
    if not ctx.stream:
        message: dict[str, Any] = {"role": "assistant", "content": answer.text}
        if answer.calls:
            message["tool_calls"] = _tool_calls(answer)
        return Reply(body={"id": cid, "object": "chat.completion", "created": created, "model": ctx.model,
                           "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
                           "usage": usage(ctx)})

    def chunk(delta: dict[str, Any], finish_reason: str | None = None, **extra: Any) -> Event:
        choice: dict[str, Any] = {"index": 0, "delta": delta, "finish_reason": finish_reason, **extra}
        data: dict[str, Any] = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": ctx.model,
                                "choices": [choice]}
        if ctx.include_usage and not ctx.moonshot:
            data["usage"] = None
        return Event(data)

    events = [chunk({"role": "assistant", "content": ""})]
    if answer.text:
        events.extend(chunk({"content": piece}) for piece in answer.text_deltas or [answer.text])
    for index, call in enumerate(answer.calls):
        head = {"index": index, "id": call.call_id, "type": "function", "function": {"name": call.name, "arguments": ""}}
        events.append(chunk({"tool_calls": [head]}))
        for piece in split_text(call.arguments_json, ctx.delta_chars):
            events.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
    if ctx.moonshot:
        events.append(chunk({}, finish, usage=usage(ctx)))
    else:
        events.append(chunk({}, finish))
        if ctx.include_usage:
            events.append(Event({"id": cid, "object": "chat.completion.chunk", "created": created, "model": ctx.model,
                                 "choices": [], "usage": usage(ctx)}))
    events.append(Event("[DONE]"))
    return Reply(events=events)
