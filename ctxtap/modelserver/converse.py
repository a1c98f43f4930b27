"""Amazon Bedrock's Converse API, served by translating to and from the Anthropic family.

A Converse request (`toolConfig.tools[].toolSpec`, `system[]`, one-key content
blocks) is read as the Messages body it corresponds to, answered by the
Anthropic renderer, and that answer is written back in Converse's shapes: the
JSON `output.message`, or the stream's events (`messageStart`,
`contentBlockStart` for a tool call, `contentBlockDelta`, `contentBlockStop`,
`messageStop`, `metadata` with the usage) that the server sends as AWS
event-stream frames named by their `:event-type`.
"""

from __future__ import annotations

from typing import Any

from .reply import Event, Reply

_STOP = {"end_turn": "end_turn", "tool_use": "tool_use", "max_tokens": "max_tokens", "stop_sequence": "stop_sequence"}


def to_anthropic(body: dict[str, Any]) -> dict[str, Any]:
    """The Messages body a Converse request stands for."""
    tools = [spec for tool in body.get("toolConfig", {}).get("tools") or [] if (spec := tool.get("toolSpec"))]
    out: dict[str, Any] = {
        "messages": [{"role": m.get("role"), "content": [b for p in m.get("content") or [] if (b := _block(p))]}
                     for m in body.get("messages") or [] if isinstance(m, dict)],
        "max_tokens": (body.get("inferenceConfig") or {}).get("maxTokens", 4096),
    }
    system = [{"type": "text", "text": p["text"]} for p in body.get("system") or [] if isinstance(p.get("text"), str)]
    if system:
        out["system"] = system
    if tools:
        out["tools"] = [{"name": t.get("name"), "description": t.get("description", ""),
                         "input_schema": (t.get("inputSchema") or {}).get("json", {})} for t in tools]
    return out


def _block(part: dict[str, Any]) -> dict[str, Any] | None:
    if isinstance(part.get("text"), str):
        return {"type": "text", "text": part["text"]}
    if isinstance(part.get("toolUse"), dict):
        use = part["toolUse"]
        return {"type": "tool_use", "id": use.get("toolUseId"), "name": use.get("name"), "input": use.get("input", {})}
    if isinstance(part.get("toolResult"), dict):
        result = part["toolResult"]
        content = [{"type": "text", "text": c["text"]} for c in result.get("content") or [] if "text" in c]
        return {"type": "tool_result", "tool_use_id": result.get("toolUseId"), "content": content,
                "is_error": result.get("status") == "error"}
    return None


def _usage(u: dict[str, Any]) -> dict[str, Any]:
    read, write = u.get("cache_read_input_tokens", 0), u.get("cache_creation_input_tokens", 0)
    inputs, output = u.get("input_tokens", 0), u.get("output_tokens", 0)
    return {"inputTokens": inputs, "outputTokens": output, "totalTokens": inputs + read + write + output,
            "cacheReadInputTokens": read, "cacheWriteInputTokens": write}


def render(reply: Reply) -> Reply:
    """The Anthropic renderer's reply in Converse's shapes (errors are left as they are)."""
    if reply.status != 200:
        return reply
    if not reply.is_stream:
        message = reply.body
        content = [{"text": b["text"]} if b["type"] == "text" else
                   {"toolUse": {"toolUseId": b["id"], "name": b["name"], "input": b["input"]}}
                   for b in message["content"]]
        reply.body = {"output": {"message": {"role": "assistant", "content": content}},
                      "stopReason": _STOP.get(message["stop_reason"], message["stop_reason"]),
                      "usage": _usage(message["usage"]), "metrics": {"latencyMs": 1}}
        return reply
    events: list[Event] = []
    stop, usage = "end_turn", {}
    for event in reply.events or []:
        data = event.data if isinstance(event.data, dict) else {}
        kind, index = data.get("type"), data.get("index")
        if kind == "message_start":
            events.append(Event({"role": "assistant"}, "messageStart"))
        elif kind == "content_block_start" and data["content_block"]["type"] == "tool_use":
            block = data["content_block"]
            events.append(Event({"contentBlockIndex": index,
                                 "start": {"toolUse": {"toolUseId": block["id"], "name": block["name"]}}},
                                "contentBlockStart"))
        elif kind == "content_block_delta":
            delta = data["delta"]
            if delta["type"] == "text_delta":
                events.append(Event({"contentBlockIndex": index, "delta": {"text": delta["text"]}}, "contentBlockDelta"))
            elif delta["type"] == "input_json_delta" and delta["partial_json"]:
                events.append(Event({"contentBlockIndex": index, "delta": {"toolUse": {"input": delta["partial_json"]}}},
                                    "contentBlockDelta"))
        elif kind == "content_block_stop":
            events.append(Event({"contentBlockIndex": index}, "contentBlockStop"))
        elif kind == "message_delta":
            stop, usage = data["delta"]["stop_reason"], data.get("usage") or {}
    events.append(Event({"stopReason": _STOP.get(stop, stop)}, "messageStop"))
    events.append(Event({"usage": _usage(usage), "metrics": {"latencyMs": 1}}, "metadata"))
    reply.events = events
    return reply
