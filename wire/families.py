"""Per-API-family and per-provider facts, in one place and registered, not spread over consumers.

An API family (`requests.api`: `messages`, `responses`, `chat-completions`, `gemini`, ...) says how its
streams are framed and end, which WebSocket frames end a response, what its error bodies look like,
and where the content deltas of its stream events are (the redactor joins those before it redacts).
A provider (`requests.provider`: `anthropic`, `openai`, `google`, ...) says its OpenTelemetry name and
the credential a re-send needs. The analyzer's `Protocol` classes parse; these facts are what the
layers that must not import the analyzer (redaction, capture) and the layers that should not have to
find them (replay, export) read. Adding a family or provider is one `register_*` call here (or from a
plug-in); `tests/wire/test_wire_families.py` adds a toy family and finds every consumer served.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

Path = tuple[Any, ...]
# (stream key, path of the delta string) for each content delta one decoded event carries
Deltas = Callable[[dict], Iterator[tuple[tuple, Path]]]


@dataclass(frozen=True)
class Family:
    api: str
    framing: Literal["sse", "ndjson", "eventstream"] = "sse"
    # bytes one of which a complete stream's body contains (a stream without any was cut)
    stream_end: tuple[bytes, ...] = ()
    # WebSocket server frames (their `type`) that end a response
    ws_terminal: frozenset[str] = frozenset()
    # the error body a replay answers with, shaped like the provider's own
    error_body: Callable[[int, str], dict[str, Any]] | None = None
    # whether a decoded stream event is one of this family's, and where its deltas are; `markers`
    # are bytes one of which every event with deltas holds (the redactor's cheap test before parsing)
    knows: Callable[[dict], bool] | None = None
    deltas: Deltas | None = None
    markers: tuple[bytes, ...] = ()


@dataclass(frozen=True)
class Provider:
    name: str
    otel_name: str  # the GenAI convention's gen_ai.provider.name (a well-known value where there is one)
    credential_env: tuple[str, ...] = ()  # environment variables that hold an API key, in order
    credential_header: str = "authorization"
    credential_template: str = "Bearer {}"


_FAMILIES: dict[str, Family] = {}
_PROVIDERS: dict[str, Provider] = {}
_MARKERS: list[tuple[bytes, ...]] = [()]  # every family's delta markers, kept as families register


def register_family(family: Family) -> Family:
    _FAMILIES[family.api] = family
    _MARKERS[0] = tuple(sorted({m for f in _FAMILIES.values() for m in f.markers}))
    return family


def unregister_family(api: str) -> None:
    _FAMILIES.pop(api, None)
    _MARKERS[0] = tuple(sorted({m for f in _FAMILIES.values() for m in f.markers}))


def register_provider(provider: Provider) -> Provider:
    _PROVIDERS[provider.name] = provider
    return provider


def family(api: str | None) -> Family | None:
    """The family of `requests.api` (a WebSocket transport's `-websocket` suffix is the same family)."""
    return _FAMILIES.get((api or "").removesuffix("-websocket"))


def families() -> tuple[Family, ...]:
    return tuple(_FAMILIES.values())


def provider(name: str | None) -> Provider | None:
    return _PROVIDERS.get(name or "")


def error_body(api: str, status: int, message: str) -> dict[str, Any]:
    """An error body shaped like the family's own (OpenAI's shape where the family names none)."""
    known = family(api)
    if known is not None and known.error_body is not None:
        return known.error_body(status, message)
    return {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": "ctxtap_replay"}}


def delta_markers() -> tuple[bytes, ...]:
    return _MARKERS[0]


def ws_terminal_types() -> frozenset[str]:
    return frozenset().union(*(f.ws_terminal for f in _FAMILIES.values()))


def stream_deltas(obj: dict) -> Iterator[tuple[tuple, Path]] | None:
    """The deltas of one decoded stream event, or None when no family knows the event (the redactor
    then reads it generically). Every family's reader is asked once any family knows the event."""
    if not any(f.knows is not None and f.knows(obj) for f in _FAMILIES.values()):
        return None
    return (found for f in _FAMILIES.values() if f.deltas is not None for found in f.deltas(obj))


# --- the built-in families ---------------------------------------------------------------------------

_ANTHROPIC_FIELDS = ("text", "partial_json", "thinking")
_ANTHROPIC_EVENTS = frozenset({"message_start", "message_delta", "message_stop", "content_block_start",
                               "content_block_delta", "content_block_stop", "ping", "error"})
_CHAT_FIELDS = ("content", "reasoning_content", "reasoning", "refusal")
_RESPONSES_END = frozenset({"response.completed", "response.failed", "response.incomplete", "error"})


def _anthropic_knows(obj: dict) -> bool:
    return obj.get("type") in _ANTHROPIC_EVENTS


def _anthropic_deltas(obj: dict) -> Iterator[tuple[tuple, Path]]:
    delta = obj.get("delta")
    if obj.get("type") == "content_block_delta" and isinstance(delta, dict):
        for name in _ANTHROPIC_FIELDS:
            if isinstance(delta.get(name), str):
                yield ("anthropic", obj.get("index"), name), ("delta", name)


def _anthropic_error(status: int, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": "invalid_request_error", "message": message}}


def _responses_knows(obj: dict) -> bool:
    kind = obj.get("type")
    return isinstance(kind, str) and kind.startswith("response.")


def _responses_deltas(obj: dict) -> Iterator[tuple[tuple, Path]]:
    kind, delta = obj.get("type"), obj.get("delta")
    if isinstance(kind, str) and kind.endswith(".delta") and isinstance(delta, str):
        ids = tuple(obj.get(k) for k in ("item_id", "output_index", "content_index", "summary_index"))
        yield (kind, *ids), ("delta",)


def _chat_knows(obj: dict) -> bool:
    return "choices" in obj


def _chat_deltas(obj: dict) -> Iterator[tuple[tuple, Path]]:
    choices = obj.get("choices")
    for i, choice in enumerate(choices if isinstance(choices, list) else ()):
        d = choice.get("delta") if isinstance(choice, dict) else None
        if not isinstance(d, dict):
            continue
        index = choice.get("index", i)
        for name in _CHAT_FIELDS:
            if isinstance(d.get(name), str):
                yield ("chat", index, name), ("choices", i, "delta", name)
        calls = d.get("tool_calls")
        for j, call in enumerate(calls if isinstance(calls, list) else ()):
            fn = call.get("function") if isinstance(call, dict) else None
            if isinstance(fn, dict) and isinstance(fn.get("arguments"), str):
                yield ("chat", index, "tool", call.get("index", j)), \
                    ("choices", i, "delta", "tool_calls", j, "function", "arguments")


def _gemini_knows(obj: dict) -> bool:
    response = obj.get("response")
    return "candidates" in obj or (isinstance(response, dict) and "candidates" in response)


def _gemini_deltas(obj: dict) -> Iterator[tuple[tuple, Path]]:
    root: Any = obj
    prefix: Path = ()
    if isinstance(obj.get("response"), dict) and "candidates" in obj["response"]:  # Code Assist envelope
        root, prefix = obj["response"], ("response",)
    candidates = root.get("candidates")
    for i, cand in enumerate(candidates if isinstance(candidates, list) else ()):
        content = cand.get("content") if isinstance(cand, dict) else None
        parts = content.get("parts") if isinstance(content, dict) else None
        for j, part in enumerate(parts if isinstance(parts, list) else ()):
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                yield ("gemini", cand.get("index", i), bool(part.get("thought"))), \
                    (*prefix, "candidates", i, "content", "parts", j, "text")


def _gemini_error(status: int, message: str) -> dict[str, Any]:
    return {"error": {"code": status, "message": message, "status": "INVALID_ARGUMENT"}}


for _family in (
    Family("messages", stream_end=(b"message_stop",), error_body=_anthropic_error,
           knows=_anthropic_knows, deltas=_anthropic_deltas, markers=(b'"delta"',)),
    # Anthropic's own SSE, through Vertex AI (its events are the same; one reader serves both)
    Family("vertex-messages", stream_end=(b"message_stop",), error_body=_anthropic_error),
    Family("bedrock-messages", framing="eventstream", error_body=_anthropic_error),  # parsers say when cut
    Family("bedrock-converse", framing="eventstream"),
    Family("responses", stream_end=(b"response.completed", b"response.incomplete", b"response.failed"),
           ws_terminal=_RESPONSES_END, knows=_responses_knows, deltas=_responses_deltas, markers=(b'"delta"',)),
    Family("chat-completions", stream_end=(b"[DONE]", b'"finish_reason":"', b'"finish_reason": "'),
           knows=_chat_knows, deltas=_chat_deltas, markers=(b'"delta"',)),
    Family("gemini", stream_end=(b"finishReason",), error_body=_gemini_error,
           knows=_gemini_knows, deltas=_gemini_deltas, markers=(b'"candidates"',)),
    Family("ollama", framing="ndjson"),
):
    register_family(_family)

for _provider in (
    Provider("anthropic", "anthropic", ("ANTHROPIC_API_KEY",), "x-api-key", "{}"),
    Provider("openai", "openai", ("OPENAI_API_KEY",)),
    Provider("moonshot", "moonshot", ("MOONSHOT_API_KEY", "KIMI_API_KEY")),
    Provider("kimi", "kimi", ("KIMI_API_KEY", "MOONSHOT_API_KEY")),
    Provider("google", "gcp.gemini", ("GEMINI_API_KEY", "GOOGLE_API_KEY"), "x-goog-api-key", "{}"),
    Provider("google-vertex", "gcp.vertex_ai"),
    Provider("xai", "x_ai"),
    Provider("deepseek", "deepseek"),
    Provider("mistral", "mistral_ai"),
    Provider("groq", "groq"),
    Provider("azure", "azure.ai.openai"),
    Provider("bedrock", "aws.bedrock"),
):
    register_provider(_provider)
