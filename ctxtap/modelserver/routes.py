"""Map a request line to the API it speaks, whatever prefix the client puts in front.

Clients use provider-specific prefixes (`/coding/v1/chat/completions`,
`/backend-api/codex/responses`, `/v1internal:streamGenerateContent`), so
matching is on the path suffix, as gateways do.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_GEMINI = re.compile(r"(?:/models/(?P<model>[^/:]+))?(?P<internal>/v1internal)?:(?P<method>streamGenerateContent|generateContent|countTokens)$")


@dataclass(frozen=True)
class Route:
    api: str  # messages | count_tokens | responses | compact | chat | gemini | gemini_count | models
    family: str  # anthropic | responses | chat | gemini
    stream: bool | None = None  # None: from the body's "stream" flag
    wrapped: bool = False  # Gemini Code Assist envelope
    model: str | None = None  # Gemini: from the path


def match_route(method: str, path: str) -> Route | None:
    """The API of a request, or None when the server does not speak it."""
    clean = path.split("?", 1)[0].rstrip("/")
    method = method.upper()
    if method == "GET":
        if clean.endswith("/models"):
            return Route("models", "responses")
        return None
    if method != "POST":
        return None
    if clean.endswith("/messages/count_tokens"):
        return Route("count_tokens", "anthropic", stream=False)
    if clean.endswith("/messages"):
        return Route("messages", "anthropic")
    if clean.endswith("/responses/compact"):
        return Route("compact", "responses", stream=False)
    if clean.endswith("/responses"):
        return Route("responses", "responses")
    if clean.endswith("/chat/completions"):
        return Route("chat", "chat")
    m = _GEMINI.search(clean)
    if m:
        wrapped = bool(m.group("internal"))
        if m.group("method") == "countTokens":
            return Route("gemini_count", "gemini", stream=False, wrapped=wrapped, model=m.group("model"))
        return Route("gemini", "gemini", stream=m.group("method") == "streamGenerateContent", wrapped=wrapped,
                     model=m.group("model"))
    return None


def guess_family(path: str) -> str:
    """Best-effort family for error bodies on paths the server does not serve."""
    if "/messages" in path:
        return "anthropic"
    if ":" in path.rsplit("/", 1)[-1] or "v1beta" in path or "v1internal" in path:
        return "gemini"
    if "/chat/" in path:
        return "chat"
    return "responses"


def is_websocket_path(path: str) -> bool:
    return path.split("?", 1)[0].rstrip("/").endswith("/responses")
