"""Read a request the way the fake model needs it: offered tools, loop position, session.

The engine answers from the conversation alone (no per-client state), so a
client that restarts, retries or talks through a proxy still gets the answer
that fits its history. Everything here is a pure function of the request.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

Family = str  # "anthropic" | "responses" | "chat" | "gemini"

RESULT_ITEM_TYPES = {
    "function_call_output",
    "custom_tool_call_output",
    "local_shell_call_output",
    "shell_call_output",
    "apply_patch_call_output",
}


@dataclass(frozen=True)
class ToolSpec:
    """A tool the client offers; `kind` is "function" or "custom" (free-form input)."""

    name: str
    kind: str = "function"
    schema: dict[str, Any] | None = None
    namespace: str | None = None


@dataclass
class Conversation:
    tools: list[ToolSpec] = field(default_factory=list)
    results_in_turn: int = 0  # tool results after the last final (tool-free) assistant answer
    last_user_text: str = ""
    system_text: str = ""
    model: str | None = None


def _text_of(content: Any) -> str:
    """Concatenate the text of a string / part list in any of the four shapes."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_text_of(p) for p in content)
    if isinstance(content, dict):
        for key in ("text", "content", "input_text"):
            if isinstance(content.get(key), str):
                return content[key]
        if "parts" in content:
            return _text_of(content["parts"])
    return ""


def _anthropic(body: dict[str, Any]) -> Conversation:
    conv = Conversation(model=body.get("model"), system_text=_text_of(body.get("system")))
    for tool in body.get("tools") or []:
        if isinstance(tool, dict) and tool.get("name"):
            kind = "function" if "input_schema" in tool or tool.get("type") in (None, "custom") else "server"
            conv.tools.append(ToolSpec(tool["name"], kind, tool.get("input_schema")))
    for msg in body.get("messages") or []:
        if not isinstance(msg, dict):
            continue
        content = msg.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content or ""}]
        if msg.get("role") == "assistant":
            if not any(isinstance(b, dict) and b.get("type") in ("tool_use", "server_tool_use") for b in blocks):
                conv.results_in_turn = 0
        elif msg.get("role") == "user":
            results = sum(1 for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result")
            conv.results_in_turn += results
            if not results:
                conv.last_user_text = _text_of([b for b in blocks if isinstance(b, dict)])
        elif msg.get("role") == "system":  # Claude Code sends mid-conversation system messages
            conv.system_text += "\n" + _text_of(content)
    return conv


def _responses_tools(tools: list[Any], namespace: str | None, out: list[ToolSpec]) -> None:
    for tool in tools:
        if not isinstance(tool, dict):
            continue
        kind = tool.get("type")
        if kind == "namespace":
            _responses_tools(tool.get("tools") or [], tool.get("name"), out)
        elif kind in ("function", "custom") and tool.get("name"):
            out.append(ToolSpec(tool["name"], kind, tool.get("parameters"), namespace))
        elif kind == "local_shell":
            out.append(ToolSpec("local_shell", "local_shell"))


def _responses(body: dict[str, Any]) -> Conversation:
    conv = Conversation(model=body.get("model"), system_text=str(body.get("instructions") or ""))
    _responses_tools(body.get("tools") or [], None, conv.tools)
    items = body.get("input")
    if isinstance(items, str):
        items = [{"type": "message", "role": "user", "content": items}]
    for item in items or []:
        if not isinstance(item, dict):
            continue
        kind = item.get("type", "message")
        if kind == "additional_tools":
            _responses_tools(item.get("tools") or [], None, conv.tools)
        elif kind in RESULT_ITEM_TYPES:
            conv.results_in_turn += 1
        elif kind == "message":
            role = item.get("role")
            if role == "assistant":
                conv.results_in_turn = 0
            elif role == "user":
                conv.last_user_text = _text_of(item.get("content"))
            elif role in ("developer", "system"):
                conv.system_text += "\n" + _text_of(item.get("content"))
    return conv


def _chat(body: dict[str, Any]) -> Conversation:
    conv = Conversation(model=body.get("model"))
    for tool in body.get("tools") or []:
        fn = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(fn, dict) and fn.get("name") and tool.get("type", "function") == "function":
            conv.tools.append(ToolSpec(fn["name"], "function", fn.get("parameters")))
    for msg in body.get("messages") or []:
        if not isinstance(msg, dict):
            continue
        role = msg.get("role")
        if role == "assistant" and not msg.get("tool_calls"):
            conv.results_in_turn = 0
        elif role == "tool":
            conv.results_in_turn += 1
        elif role == "user":
            conv.last_user_text = _text_of(msg.get("content"))
        elif role == "system":
            conv.system_text += _text_of(msg.get("content"))
    return conv


def _gemini(body: dict[str, Any]) -> Conversation:
    conv = Conversation(model=body.get("model"), system_text=_text_of(body.get("systemInstruction")))
    for tool in body.get("tools") or []:
        for decl in (tool or {}).get("functionDeclarations") or []:
            if isinstance(decl, dict) and decl.get("name"):
                schema = decl.get("parametersJsonSchema") or decl.get("parameters")
                conv.tools.append(ToolSpec(decl["name"], "function", schema))
    for content in body.get("contents") or []:
        if not isinstance(content, dict):
            continue
        parts = [p for p in content.get("parts") or [] if isinstance(p, dict)]
        if content.get("role") == "model":
            if not any("functionCall" in p for p in parts):
                conv.results_in_turn = 0
        else:
            results = sum(1 for p in parts if "functionResponse" in p)
            conv.results_in_turn += results
            if not results:
                conv.last_user_text = _text_of(parts)
    return conv


_SHAPES: dict[str, list[tuple[str, tuple[type, ...], bool]]] = {
    # field, allowed types, required
    "anthropic": [("messages", (list,), True), ("system", (str, list), False), ("tools", (list,), False)],
    "responses": [("input", (str, list), False), ("tools", (list,), False), ("instructions", (str,), False)],
    "chat": [("messages", (list,), True), ("tools", (list,), False)],
    "gemini": [("contents", (list,), True), ("tools", (list,), False), ("systemInstruction", (dict, str), False)],
}


def shape_problem(family: Family, body: dict[str, Any]) -> str | None:
    """What a provider would reject as a 400 in the top-level shape of a body, if anything."""
    for name, types, required in _SHAPES[family]:
        value = body.get(name)
        if value is None:
            if required:
                return f"{name}: Field required"
        elif not isinstance(value, types):
            expected = " or ".join("array" if t is list else "object" if t is dict else "string" for t in types)
            return f"{name}: Input should be a valid {expected}"
    return None


_READERS = {"anthropic": _anthropic, "responses": _responses, "chat": _chat, "gemini": _gemini}


def read_conversation(family: Family, body: dict[str, Any]) -> Conversation:
    """What the model needs to know about a request body of the given API family."""
    return _READERS[family](body)


def _header(headers: Mapping[str, str], *names: str) -> str | None:
    for name in names:
        value = headers.get(name)
        if value:
            return value
    return None


def session_key(family: Family, headers: Mapping[str, str], body: dict[str, Any], client_host: str) -> str:
    """The prompt-cache partition: the client's own session id where it sends one.

    Priority: body `prompt_cache_key`, Claude's session header, Codex session
    headers, Anthropic `metadata.user_id` session, Gemini Code Assist session,
    then the client address (as a provider would route an anonymous key).
    `headers` must have lower-case keys.
    """
    key = body.get("prompt_cache_key")
    if not key:
        key = _header(headers, "x-claude-code-session-id", "session-id", "session_id", "thread-id", "conversation_id")
    if not key:
        user_id = (body.get("metadata") or {}).get("user_id") if isinstance(body.get("metadata"), dict) else None
        if isinstance(user_id, str):
            try:
                key = (json.loads(user_id) or {}).get("session_id")
            except (ValueError, AttributeError):
                key = user_id.rpartition("_session_")[2] or None
    if not key and isinstance(body.get("request"), dict):
        key = body["request"].get("session_id")
    return f"{family}:{key or client_host}"
