"""Gemini generateContent / streamGenerateContent, bare or in Code Assist envelopes."""

from __future__ import annotations

from typing import Any

from ..reply import Answer, Event, RenderContext, Reply, new_id


def usage(ctx: RenderContext, final: bool = True) -> dict[str, Any]:
    u = ctx.usage
    out: dict[str, Any] = {"promptTokenCount": u.total}
    if final:
        out["candidatesTokenCount"] = ctx.output_tokens
    out["totalTokenCount"] = u.total + (ctx.output_tokens if final else 0)
    if u.read:
        out["cachedContentTokenCount"] = u.read
    out["promptTokensDetails"] = [{"modality": "TEXT", "tokenCount": u.total}]
    if u.read:
        out["cacheTokensDetails"] = [{"modality": "TEXT", "tokenCount": u.read}]
    if ctx.reasoning_tokens:
        out["thoughtsTokenCount"] = ctx.reasoning_tokens
    return out


def _chunk(ctx: RenderContext, parts: list[dict[str, Any]], response_id: str, finish: bool) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        candidate["finishReason"] = "STOP"
    data = {"candidates": [candidate], "usageMetadata": usage(ctx, finish), "modelVersion": ctx.model,
            "responseId": response_id}
    return {"response": data, "traceId": response_id} if ctx.wrapped else data


def render(answer: Answer, ctx: RenderContext) -> Reply:
    response_id = new_id("", 22)
    calls = [{"functionCall": {"name": c.name, "args": c.arguments or {}}} for c in answer.calls]
    if not ctx.stream:
        parts = ([{"text": answer.text}] if answer.text else []) + calls
        return Reply(body=_chunk(ctx, parts, response_id, True))
    pieces = [{"text": t} for t in (answer.text_deltas or ([answer.text] if answer.text else []))]
    groups: list[list[dict[str, Any]]] = [[p] for p in pieces]
    if calls:
        groups.append(calls)  # function calls arrive whole, in one chunk
    if not groups:
        groups.append([{"text": ""}])
    events = [Event(_chunk(ctx, g, response_id, i == len(groups) - 1)) for i, g in enumerate(groups)]
    return Reply(events=events)
