"""Map a request line to the API it speaks, whatever prefix the client puts in front.

Clients use provider-specific prefixes (`/coding/v1/chat/completions`,
`/backend-api/codex/responses`, `/v1internal:streamGenerateContent`), so
matching is on the path suffix, as gateways do. Claude on Bedrock
(`/model/<id>/invoke-with-response-stream`, Converse's `/model/<id>/converse-stream`) and on Vertex AI
(`…/publishers/anthropic/models/<id>:streamRawPredict`) is the Anthropic family.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote

_BEDROCK = re.compile(r"/model/(?P<model>[^/]+)/(?P<op>invoke|converse)(?P<stream>-with-response-stream|-stream)?$")
_VERTEX = re.compile(r"/publishers/anthropic/models/(?P<model>[^/:]+):(?P<method>streamRawPredict|rawPredict)$")
_GEMINI = re.compile(r"(?:/models/(?P<model>[^/:]+))?(?P<internal>/v1internal)?:(?P<method>streamGenerateContent|generateContent|countTokens)$")


@dataclass(frozen=True)
class Route:
    api: str  # messages | count_tokens | responses | compact | chat | gemini | gemini_count | models
    family: str  # anthropic | responses | chat | gemini
    stream: bool | None = None  # None: from the body's "stream" flag
    wrapped: bool = False  # Gemini Code Assist envelope
    model: str | None = None  # Gemini, Bedrock, Vertex: from the path
    eventstream: str | None = None  # Bedrock: the stream goes out as AWS event-stream frames ("invoke", "converse")
    converse: bool = False  # Bedrock's Converse API: translated to and from the Anthropic family (`converse.py`)


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
    m = _BEDROCK.search(clean)
    if m:  # Claude on Amazon Bedrock (Messages, or Converse): the model in the path, the stream in binary frames
        stream, op = bool(m.group("stream")), m.group("op")
        return Route("messages", "anthropic", stream=stream, model=unquote(m.group("model")),
                     eventstream=op if stream else None, converse=op == "converse")
    m = _VERTEX.search(clean)
    if m:  # Anthropic Messages on Google Vertex AI: the model in the path, Anthropic's own SSE
        if m.group("model") == "count-tokens":
            return Route("count_tokens", "anthropic", stream=False)
        return Route("messages", "anthropic", stream=m.group("method") == "streamRawPredict", model=m.group("model"))
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
