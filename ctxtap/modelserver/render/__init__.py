"""Per-provider renderers: turn an Answer into that provider's JSON body or stream events."""

from __future__ import annotations

from . import anthropic, chat, gemini, responses

__all__ = ["anthropic", "chat", "gemini", "responses"]
