"""Serialize a request into the byte prefix a provider's prompt cache would see.

JSON key order of a body says nothing about cache order (Claude Code sends
`messages` before `system`), so each API family is flattened in its documented
cache order: tools -> system/instructions -> conversation. Each block becomes
one segment; Anthropic `cache_control` markers become breakpoints.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .conversation import Family

# Claude Code's attribution block changes with every request (`cch=`); the real
# API evidently leaves it out of the cache key, or Claude Code would never hit.
_VOLATILE_SYSTEM_PREFIX = "x-anthropic-billing-header:"


@dataclass
class Prefix:
    data: bytes = b""
    boundaries: list[int] = field(default_factory=list)  # byte offsets where blocks end
    breakpoints: list[tuple[int, str]] = field(default_factory=list)  # (offset, ttl "5m"|"1h")


class _Builder:
    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.size = 0
        self.prefix = Prefix()

    def add(self, tag: str, block: Any) -> None:
        cache_control = block.get("cache_control") if isinstance(block, dict) else None
        if cache_control is not None:
            block = {k: v for k, v in block.items() if k != "cache_control"}
        data = json.dumps({tag: block}, ensure_ascii=False, separators=(",", ":")).encode()
        self.parts.append(data)
        self.size += len(data)
        self.prefix.boundaries.append(self.size)
        if isinstance(cache_control, dict):
            self.mark(str(cache_control.get("ttl") or "5m"))

    def mark(self, ttl: str) -> None:
        if self.size:
            self.prefix.breakpoints.append((self.size, ttl))

    def build(self) -> Prefix:
        self.prefix.data = b"".join(self.parts)
        return self.prefix


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, list):
        return content
    return [{"type": "text", "text": content if isinstance(content, str) else json.dumps(content)}]


def _anthropic(body: dict[str, Any], b: _Builder) -> None:
    for tool in body.get("tools") or []:
        b.add("tool", tool)
    for block in _blocks(body.get("system") or []):
        if isinstance(block, dict) and str(block.get("text", "")).startswith(_VOLATILE_SYSTEM_PREFIX):
            continue
        b.add("system", block)
    for msg in body.get("messages") or []:
        if isinstance(msg, dict):
            for block in _blocks(msg.get("content")):
                b.add(str(msg.get("role")), block)
    top = body.get("cache_control")
    if isinstance(top, dict):  # automatic caching: breakpoint on the last block
        b.mark(str(top.get("ttl") or "5m"))


def _responses(body: dict[str, Any], b: _Builder) -> None:
    for tool in body.get("tools") or []:
        b.add("tool", tool)
    if body.get("instructions"):
        b.add("instructions", body["instructions"])
    items = body.get("input")
    if isinstance(items, str):
        items = [{"type": "message", "role": "user", "content": items}]
    for item in items or []:
        b.add("item", item)


def _chat(body: dict[str, Any], b: _Builder) -> None:
    for tool in body.get("tools") or []:
        b.add("tool", tool)
    for msg in body.get("messages") or []:
        b.add("message", msg)


def _gemini(body: dict[str, Any], b: _Builder) -> None:
    for tool in body.get("tools") or []:
        b.add("tool", tool)
    if body.get("systemInstruction"):
        b.add("system", body["systemInstruction"])
    for content in body.get("contents") or []:
        b.add("content", content)


_FLATTENERS = {"anthropic": _anthropic, "responses": _responses, "chat": _chat, "gemini": _gemini}


def build_prefix(family: Family, body: dict[str, Any]) -> Prefix:
    """The cache-ordered byte prefix of a (decoded, unwrapped) request body."""
    builder = _Builder()
    _FLATTENERS[family](body, builder)
    return builder.build()
