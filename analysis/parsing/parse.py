"""Entry points: recorded exchanges in, normalised `ModelCall`s out.

`parse_exchange` handles one HTTP flow (one call) or one WebSocket connection (one
call per request frame). Which protocol reads an exchange comes from the protocol
registry (`analysis.protocols.registry`); what is protocol-independent lives
here: identity, purpose, attribution, timing and the guard that turns a parser
crash into a reported call. `parse_exchanges` keeps a `ParseState` across flows
so per-capture protocol state (the Responses `previous_response_id` chain)
carries from one request to the next. Both are pure and never raise: a malformed
body or stream yields a call whose `parse_status` is "partial" or "error",
keeping what could be parsed.
"""

from __future__ import annotations

import traceback
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ctxtap.analysis.blocks.blockscan import BlockScan
from ctxtap.analysis.parsing.errors import protocol_error, transport_error
from ctxtap.analysis.parsing.memo import ParseMemo
from ctxtap.analysis.parsing.models import CallIdentity, ModelCall, ParsedRequest, ParsedResponse, PurposeInfo
from ctxtap.analysis.protocols import registry
from ctxtap.analysis.protocols.common import RequestDraft, load_json
from ctxtap.analysis.protocols.registry import Protocol, RequestContext, WsTurn
from ctxtap.analysis.rules.attribution import attribute_scanned
from ctxtap.analysis.threads.identity import extra_request_headers, identify
from ctxtap.analysis.threads.purpose import Facts, classify_purpose
from ctxtap.capture.bodies import as_bytes
from ctxtap.capture.classify import classify_client, model_host, stream_key
from ctxtap.capture.exchange import Exchange, WsMessage
from ctxtap.capture.headers import body_transport, lower_headers
from ctxtap.wire.sse import is_sse_response

__all__ = ["ParseState", "ProtocolMatch", "parse_exchange", "parse_exchanges", "route"]


@dataclass(frozen=True)
class ProtocolMatch:
    """Which protocol reads an exchange, for which provider, as which api and endpoint."""

    protocol: Protocol
    provider: str
    api: str
    endpoint: str


@dataclass
class ParseState:
    """Per-capture state of each protocol (e.g. the Responses chain), created on first use."""

    states: dict[str, Any] = field(default_factory=dict)
    disabled_clients: frozenset[str] = frozenset()  # clients whose own rules are switched off (benchmarks)

    def of(self, protocol: Protocol) -> Any:
        if protocol.api not in self.states:
            self.states[protocol.api] = protocol.new_state()
        return self.states[protocol.api]


def route(ex: Exchange) -> ProtocolMatch | None:
    """Which protocol reads this exchange; None for non-model traffic."""
    websocket = ex.kind == "websocket"
    if not websocket and ex.method.upper() == "GET":
        return None
    recorded = {ex.host: ex.provider} if ex.provider and ex.provider != "unknown" else None
    provider = model_host(ex.host, ex.path, recorded)
    if provider is None:
        return None
    found = registry.recognise(ex.host, ex.path, websocket)
    if found is None:
        return None
    protocol, endpoint = found
    return ProtocolMatch(protocol, provider, protocol.api_for(websocket), endpoint)


def parse_exchanges(exchanges: Iterable[Exchange], memo: ParseMemo | None = None,
                    disabled_clients: Iterable[str] = ()) -> Iterator[ModelCall]:
    """Parse exchanges in capture order, carrying protocol state (Responses continuations) across flows.

    With a `ParseMemo`, history resent by later requests is parsed only once. `disabled_clients`
    switches those clients' own rules off (attribution, purpose, identity), leaving the
    client-independent ones: how ctxtap reads a client it has never seen.
    """
    state = ParseState(disabled_clients=frozenset(disabled_clients))
    for ex in exchanges:
        yield from parse_exchange(ex, state, memo)


def parse_exchange(ex: Exchange, state: ParseState | None = None, memo: ParseMemo | None = None) -> list[ModelCall]:
    """All model calls in one exchange ([] for non-model traffic)."""
    try:
        r = route(ex)
    except Exception:  # classification must never break a capture
        return []
    if r is None:
        return []
    state = state if state is not None else ParseState()
    if ex.kind == "websocket":
        if r.protocol.ws_api is None:
            return []
        return _parse_websocket(ex, r, state, memo)
    try:
        return [_parse_http(ex, r, state, memo)]
    except Exception as exc:  # last-resort guard; the call is still reported
        return [_failed_call(ex, r, exc)]


# --- HTTP -------------------------------------------------------------------------


def _parse_http(ex: Exchange, r: ProtocolMatch, state: ParseState, memo: ParseMemo | None = None) -> ModelCall:
    raw = ex.request_body
    protocol = r.protocol
    pstate = state.of(protocol)
    if memo is not None:
        body, load_error = memo.load_body(stream_key(ex.host, ex.path, ex.request_headers), raw,
                                          protocol.history_arrays, ex.request_body_id, ex.request_body_base)
    else:
        body, load_error = load_json(None if raw is None else as_bytes(raw))
    if body is None:
        draft = RequestDraft(status="error", error=f"request body: {load_error}")
    else:
        draft = protocol.parse_request(body, RequestContext(ex.path, pstate, memo))
    headers = list(ex.request_headers)
    identity = identify(headers, raw, draft.facts, ex.client, ex.client_version, state.disabled_clients)
    request, scan = _request(r, draft, identity, memo, state.disabled_clients)
    response = protocol.link_response(draft, _http_response(ex, r))
    purpose = _purpose(r, request, identity, lower_headers(headers), draft, scan, state.disabled_clients)
    protocol.remember(pstate, body, draft, response)
    return ModelCall(
        call_key=ex.flow_id,
        flow_id=ex.flow_id,
        provider=r.provider,
        api=r.api,
        transport=body_transport(ex.header("content-type", response=True), ex.response_body),  # type: ignore[arg-type]
        ts_start=ex.ts_start,
        ts_first_byte=ex.ts_first_byte,
        ts_response_headers=ex.ts_response_headers,
        ts_end=ex.ts_end,
        http_status=ex.status,
        identity=identity,
        purpose=purpose,
        request=request,
        response=response,
        request_bytes=len(raw or b""),
    )


def _http_response(ex: Exchange, r: ProtocolMatch) -> ParsedResponse:
    if ex.status is None:
        message = ex.error or "no response recorded"
        return ParsedResponse(
            parse_status="not_applicable", parse_error=message, error=transport_error(message)
        )
    raw = ex.response_body
    if ex.status >= 400:
        return r.protocol.parse_error_response(ex.status, raw, ex.response_headers, ex.ts_end or ex.ts_start)
    if ex.status < 200 or ex.status >= 300:
        return ParsedResponse(
            parse_status="not_applicable", parse_error=f"HTTP {ex.status}: no model response"
        )
    if not raw:
        message = ex.error or "empty response body"
        return ParsedResponse(
            parse_status="error", parse_error=message, error=protocol_error(message, "body.empty", ex.status)
        )
    sse = is_sse_response(ex.header("content-type", response=True), raw)
    response = r.protocol.parse_response(raw, sse, r.endpoint)
    if ex.error and response.parse_status == "ok" and response.error is None:
        # The body parsed whole (a stream up to its proper end), so the model call succeeded and the
        # flow's error came after: a client that stops reading at its stream's last event and closes
        # before the chunked terminator arrives. Kept as a note, not counted as a failed call.
        response.parse_error = f"connection closed after the response ended: {ex.error}"
    return response


# --- WebSocket ----------------------------------------------------------------------


def _parse_websocket(ex: Exchange, r: ProtocolMatch, state: ParseState,
                     memo: ParseMemo | None = None) -> list[ModelCall]:
    calls: list[ModelCall] = []
    last_response: str | None = None
    for turn in r.protocol.ws_turns(ex.ws_messages):
        try:
            call = _ws_call(ex, r, state, turn, last_response, memo)
            last_response = call.response.response_id or last_response
        except Exception as exc:  # one bad frame must not hide the others
            call = _failed_call(ex, r, exc, turn.request)
        calls.append(call)
    return calls


def _ws_call(ex: Exchange, r: ProtocolMatch, state: ParseState, turn: WsTurn, last_response: str | None,
             memo: ParseMemo | None = None) -> ModelCall:
    protocol, message, server = r.protocol, turn.request, turn.server
    pstate = state.of(protocol)
    body, draft = protocol.parse_ws_request(turn.obj, RequestContext(ex.path, pstate, memo), last_response)
    headers = extra_request_headers(draft.facts, state.disabled_clients) + list(ex.request_headers)
    identity = identify(headers, message.content, draft.facts, ex.client, ex.client_version, state.disabled_clients)
    request, scan = _request(r, draft, identity, memo, state.disabled_clients)
    response = protocol.parse_ws_response(server)
    if not server and ex.error:
        response.parse_error = ex.error
    purpose = _purpose(r, request, identity, lower_headers(headers), draft, scan, state.disabled_clients)
    protocol.remember(pstate, body, draft, response)
    return ModelCall(
        call_key=f"{ex.flow_id}#{message.index}",
        flow_id=ex.flow_id,
        ws_index=message.index,
        provider=r.provider,
        api=r.api,
        transport="websocket",
        ts_start=message.ts,
        ts_first_byte=server[0].ts if server else None,
        ts_end=server[-1].ts if server else None,
        http_status=ex.status,
        identity=identity,
        purpose=purpose,
        request=request,
        response=response,
        request_bytes=len(message.content),
    )


# --- shared -------------------------------------------------------------------------


def _request(r: ProtocolMatch, draft: RequestDraft, identity: CallIdentity, memo: ParseMemo | None = None,
             disabled_clients: frozenset[str] = frozenset()) -> tuple[ParsedRequest, BlockScan]:
    blocks, scan = attribute_scanned(draft.blocks, identity.client, r.api, memo, disabled_clients)
    request = ParsedRequest(
        api=r.api,
        endpoint=draft.endpoint or r.endpoint,
        model=draft.model,
        stream=draft.stream,
        max_output_tokens=draft.max_output_tokens,
        blocks=[],
        n_tools=len(draft.tool_names),
        tool_names=draft.tool_names,
        previous_response_id=draft.previous_response_id,
        effective_input_complete=draft.complete,
        top_level_cache_control=draft.top_level_cache_control,
        diagnostics_requested=bool(draft.facts.get("diagnostics_requested")),
        diagnostics_baseline=draft.facts.get("diagnostics_baseline"),
        parse_status=draft.status,
        parse_error=draft.error or ("; ".join(draft.warnings[:3]) if draft.warnings else None),
        warnings=draft.warnings,
    )
    # The blocks are finished Block models already: validating the list again would cost
    # time per block of history on every request. Nothing changes a request's list in place.
    request.blocks = blocks
    return request, scan


def _purpose(
    r: ProtocolMatch, request: ParsedRequest, identity: CallIdentity, headers: dict[str, str], draft: RequestDraft,
    scan: BlockScan | None = None, disabled_clients: frozenset[str] = frozenset(),
) -> PurposeInfo:
    facts = Facts(
        endpoint=request.endpoint,
        api=r.api,
        client=identity.client,
        headers=headers,
        request=request,
        body_facts=draft.facts,
        scan=scan,
    )
    return classify_purpose(facts, disabled_clients)


def _failed_call(ex: Exchange, r: ProtocolMatch, exc: BaseException, message: WsMessage | None = None) -> ModelCall:
    """A call whose parsing crashed: reported with the error instead of disappearing."""
    where = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    detail = f"internal parser error: {type(exc).__name__}: {str(exc)[:300]}"
    if where is not None:
        detail += f" ({where.filename.rsplit('/', 1)[-1]}:{where.lineno})"
    try:
        cc = classify_client(ex.request_headers)
        identity = CallIdentity(client=cc.client, client_version=cc.version, client_rule=cc.rule)
    except Exception:
        identity = CallIdentity()
    return ModelCall(
        call_key=f"{ex.flow_id}#{message.index}" if message else ex.flow_id,
        flow_id=ex.flow_id,
        ws_index=message.index if message else None,
        provider=r.provider,
        api=r.api,
        transport="websocket" if message else "none",
        ts_start=message.ts if message else ex.ts_start,
        ts_end=ex.ts_end,
        http_status=ex.status,
        identity=identity,
        purpose=PurposeInfo(purpose="other", rule_id="parse.failed", evidence=[detail]),
        request=ParsedRequest(api=r.api, endpoint=r.endpoint, parse_status="error", parse_error=detail),
        response=ParsedResponse(parse_status="error", parse_error=detail),
        request_bytes=len(message.content) if message else len(ex.request_body or b""),
    )
