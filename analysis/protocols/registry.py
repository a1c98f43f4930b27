"""The protocol registry: every API family the analyzer reads, behind one interface.

A protocol module (one per family: `anthropic`, `openai_responses`,
`chat_completions`, `gemini`, ...) defines a `Protocol` subclass and a module-level
`PROTOCOL` instance. Modules in this package are found on first use, so adding a
family is one module here plus its fixtures; a test (or a plugin) can also
`register()` a protocol defined anywhere and `unregister()` it afterwards.

What a protocol owns:

* recognition — which request paths it serves (and optionally which hosts), the
  endpoint kind each path means (generate, count_tokens, compact, ...) and
  whether it also speaks over WebSocket (`ws_api`);
* requests — body to ordered block drafts (`parse_request`), plus any
  per-capture state a family needs across requests (`new_state`, `remember`:
  the Responses `previous_response_id` chain lives here);
* responses — HTTP JSON and SSE reassembly (`parse_response`), error bodies
  (`parse_error_response`), WebSocket frames (`ws_turns`, `parse_ws_request`,
  `parse_ws_response`);
* normalisation — usage (`usage`), error details the generic layer
  classification cannot know (`error_hints`), tool-call arguments of replayed
  calls (`replayed_call`);
* serialisation — edited blocks back to wire bytes (`serialise`, built on
  `wire_path` and `text_key`, see `analysis.protocols.editing`).

Which host carries model traffic at all is decided at record time by
`ctxtap.capture.classify` (the proxy must not import the analyzer); this
registry decides which protocol a recorded flow speaks.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ctxtap.analysis.builtins import BuiltinModules
from ctxtap.analysis.parsing.errors import ErrorHints, classify_error, parse_json_body, read_hints_with
from ctxtap.analysis.parsing.models import ParsedResponse, Usage
from ctxtap.analysis.protocols.common import RequestDraft

if TYPE_CHECKING:
    from ctxtap.analysis.parsing.memo import ParseMemo
    from ctxtap.analysis.protocols.editing import Edit
    from ctxtap.capture.exchange import WsMessage


@dataclass(frozen=True)
class Endpoint:
    """A request path a protocol serves and the kind of call it is."""

    pattern: re.Pattern[str]  # searched in the path without its query string
    kind: str  # generate | count_tokens | compact | ...


@dataclass
class RequestContext:
    """What a request parser may use besides the body."""

    path: str  # the request path including the query string
    state: Any = None  # the protocol's per-capture state (`Protocol.new_state`)
    memo: ParseMemo | None = None  # reuse of parsing work across requests (`analysis.memo`)


@dataclass(frozen=True)
class WsTurn:
    """One model call on a WebSocket: the client frame that asked and the server frames after it."""

    request: WsMessage
    obj: Any  # the request frame as JSON (None when it is not valid JSON)
    server: list[WsMessage]


@dataclass(frozen=True)
class ReplayedCall:
    """Name and arguments of a tool call replayed in a request's history."""

    name: str | None
    arguments: Any  # JSON text or a JSON value, as the wire has it


class Protocol:
    """One API family. Subclasses set the class attributes and override what they speak."""

    api: str = ""  # requests.api for HTTP calls, e.g. "messages"
    ws_api: str | None = None  # requests.api for calls over a WebSocket; None: no WebSocket
    title: str = ""  # human name, e.g. "Anthropic Messages"
    order: int = 100  # recognition order: lower first (built-ins use 10..40)
    endpoints: tuple[Endpoint, ...] = ()
    hosts: tuple[str, ...] = ()  # host patterns (exact, or ".suffix"); () = any model host
    history_arrays: tuple[str, ...] = ()  # top-level arrays resent on every call (incremental scanning)
    content_fields: frozenset[str] = frozenset()  # top-level request fields that hold blocks
    tool_results: dict[str, str] = {}  # wire type of a tool-result block -> how results travel, in words
    cache_breakpoints: bool = False  # per-block cache breakpoints (Anthropic `cache_control`) can be edited

    # --- recognition -----------------------------------------------------------------

    def recognise(self, host: str, path: str, websocket: bool = False) -> str | None:
        """The endpoint kind when this protocol serves `path` on `host`, else None."""
        if websocket and self.ws_api is None:
            return None
        if self.hosts and not _host_matches(host, self.hosts):
            return None
        bare = path.split("?", 1)[0]
        for endpoint in self.endpoints:
            if endpoint.pattern.search(bare):
                return endpoint.kind
        return None

    def api_for(self, websocket: bool) -> str:
        return (self.ws_api or self.api) if websocket else self.api

    # --- requests ----------------------------------------------------------------------

    def new_state(self) -> Any:
        """Per-capture state shared by this protocol's requests (None: stateless)."""
        return None

    def parse_request(self, body: Any, ctx: RequestContext) -> RequestDraft:
        raise NotImplementedError

    def remember(self, state: Any, body: Any, draft: RequestDraft, response: ParsedResponse) -> None:
        """Update the per-capture state after a call (e.g. the Responses chain)."""

    def link_response(self, draft: RequestDraft, response: ParsedResponse) -> ParsedResponse:
        """The response with what only its request tells filled in (Gemini: the ids of id-less calls)."""
        return response

    # --- responses ----------------------------------------------------------------------

    def parse_response(self, raw: bytes, sse: bool, endpoint: str) -> ParsedResponse:
        """A non-empty 2xx response body: JSON, SSE or the family's own stream form."""
        raise NotImplementedError

    def parse_error_response(
        self, status: int, raw: bytes | None, headers: list[tuple[str, str]], now: float | None
    ) -> ParsedResponse:
        """An HTTP error (status >= 400): the error classified by layer."""
        body = parse_json_body(raw)
        error = classify_error(status, body, headers, now=now, rule_prefix="http:")
        ok = body is not None or not raw
        return ParsedResponse(
            error=error,
            parse_status="ok" if ok else "partial",
            parse_error=None if ok else "error body is not JSON",
        )

    def usage(self, raw_usage: Any) -> Usage:
        """The provider's usage object, normalised (never a silent zero)."""
        return Usage()

    def error_hints(self, error: dict[str, Any], headers: dict[str, str]) -> ErrorHints | None:
        """Facts in this family's error objects or headers that the generic rules cannot know."""
        return None

    def replayed_call(self, wire: dict[str, Any]) -> ReplayedCall | None:
        """Name and arguments of a replayed tool-call block's wire object, if it has this family's shape."""
        return None

    # --- WebSocket ------------------------------------------------------------------------

    def ws_turns(self, messages: Sequence[WsMessage]) -> list[WsTurn]:
        """Split a socket's messages (in order) into model calls."""
        return []

    def parse_ws_request(self, obj: Any, ctx: RequestContext, last_response_id: str | None) -> tuple[Any, RequestDraft]:
        """(body, draft) of a request frame; `last_response_id` is the socket's previous response."""
        raise NotImplementedError

    def parse_ws_response(self, frames: Sequence[WsMessage]) -> ParsedResponse:
        raise NotImplementedError

    # --- serialisation -----------------------------------------------------------------------

    def wire_path(self, body: Any, path: str) -> list[str | int]:
        """JSON location (keys and indexes from the body's root) of the block at `path`."""
        from ctxtap.analysis.protocols.editing import block_steps

        return block_steps(path)

    def text_key(self, wire: dict[str, Any]) -> str | None:
        """Key of a structured block's replaceable text (None: the block has no text to replace)."""
        for key in ("text", "content", "output"):
            if isinstance(wire.get(key), str | list):
                return key
        return None

    def serialise(self, raw: bytes, edits: Sequence[Edit] = ()) -> bytes:
        """The request body with `edits` applied; everything not edited keeps its bytes."""
        from ctxtap.analysis.protocols.editing import apply_edits

        return apply_edits(self, raw, edits)


def _host_matches(host: str, patterns: tuple[str, ...]) -> bool:
    host = host.lower().rstrip(".")
    return any(host.endswith(p) if p.startswith((".", "-")) else host == p for p in patterns)


# --- the registry ------------------------------------------------------------------------------

_registered: dict[str, Protocol] = {}
_ordered: list[Protocol] = []


def _add_builtin(module: ModuleType) -> None:
    protocol = getattr(module, "PROTOCOL", None)
    if isinstance(protocol, Protocol) and protocol.api not in _registered:
        _add(protocol)


# Every module of this package is imported once, and the `PROTOCOL` each defines registered.
_load_builtins = BuiltinModules("ctxtap.analysis.protocols", _add_builtin).load


def _add(protocol: Protocol) -> None:
    if not protocol.api:
        raise ValueError(f"{type(protocol).__name__} has no api name")
    _registered[protocol.api] = protocol
    _ordered[:] = sorted(_registered.values(), key=lambda p: p.order)


def register(protocol: Protocol) -> Protocol:
    """Add a protocol (replacing one with the same api name); returns it."""
    _load_builtins()
    _add(protocol)
    return protocol


def unregister(api: str) -> None:
    """Remove a protocol by its api name (no error when it is not registered)."""
    _load_builtins()
    _registered.pop(api, None)
    _ordered[:] = sorted(_registered.values(), key=lambda p: p.order)


def protocols() -> list[Protocol]:
    """Registered protocols in recognition order."""
    _load_builtins()
    return list(_ordered)


def get(api: str) -> Protocol | None:
    """The protocol behind an api name (HTTP or WebSocket), or None."""
    _load_builtins()
    found = _registered.get(api)
    if found is not None:
        return found
    return next((p for p in _ordered if p.ws_api == api), None)


def recognise(host: str, path: str, websocket: bool = False) -> tuple[Protocol, str] | None:
    """(protocol, endpoint kind) of the first protocol that serves this request, or None."""
    _load_builtins()
    for protocol in _ordered:
        endpoint = protocol.recognise(host, path, websocket)
        if endpoint is not None:
            return protocol, endpoint
    return None


def error_hints(error: dict[str, Any], headers: dict[str, str]) -> ErrorHints:
    """Every protocol's hints about one error, merged (first answer wins per field)."""
    retry: float | None = None
    quota = False
    retryable: bool | None = None
    for protocol in protocols():
        hints = protocol.error_hints(error, headers)
        if hints is None:
            continue
        retry = hints.retry_after_s if retry is None else retry
        quota = quota or hints.quota_exhausted
        retryable = hints.retryable if retryable is None else retryable
    return ErrorHints(retry, quota, retryable)


def replayed_call(wire: Any) -> ReplayedCall | None:
    """Name and arguments of a replayed tool-call block, whichever family's shape it has."""
    if not isinstance(wire, dict):
        return None
    for protocol in protocols():
        found = protocol.replayed_call(wire)
        if found is not None:
            return found
    return None


def history_arrays() -> frozenset[str]:
    """Top-level request arrays that hold a conversation, across all protocols."""
    return frozenset(key for p in protocols() for key in p.history_arrays)


def tool_result_shapes() -> dict[str, str]:
    """Wire type of a tool-result block -> how the protocol returns tool results, across all protocols."""
    return {k: v for p in protocols() for k, v in p.tool_results.items()}


def content_fields() -> frozenset[str]:
    """Top-level request fields that hold blocks, across all protocols."""
    return frozenset(key for p in protocols() for key in p.content_fields)


read_hints_with(error_hints)
