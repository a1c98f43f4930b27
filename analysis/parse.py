"""Entry points: recorded exchanges in, normalised `ModelCall`s out.

`parse_exchange` handles one HTTP flow (one call) or one WebSocket connection (one
call per client `response.create` frame). `parse_exchanges` keeps a
`ResponsesChain` across flows so `previous_response_id` continuations resolve to
the full effective input. Both are pure and never raise: a malformed body or
stream yields a call whose `parse_status` is "partial" or "error", keeping what
could be parsed.
"""

from __future__ import annotations

import traceback
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from analysis.attribution import attribute
from analysis.canonical import loads
from analysis.chain import ResponsesChain
from analysis.errors import classify_error, parse_json_body, protocol_error, transport_error
from analysis.identity import frame_headers, headers_dict, identify, turn_metadata
from analysis.memo import ParseMemo
from analysis.models import Identity, ModelCall, ParsedRequest, ParsedResponse, PurposeInfo, Transport
from analysis.protocols import anthropic, chat_completions, gemini, openai_responses
from analysis.protocols.common import RequestDraft, as_dict, as_str, load_json, looks_like_sse
from analysis.purpose import Facts, classify_purpose
from ctxtap.capture.classify import SESSION_HEADERS, classify_client, classify_flow
from ctxtap.capture.exchange import Exchange, WsMessage

__all__ = ["ResponsesChain", "parse_exchange", "parse_exchanges", "route"]

PARSED_APIS = frozenset({"messages", "responses", "responses-websocket", "chat-completions", "gemini"})
WS_REQUEST_TYPES = ("response.create", "response.append")


@dataclass(frozen=True)
class Route:
    provider: str
    api: str
    endpoint: str


def route(ex: Exchange) -> Route | None:
    """Which parser handles this exchange; None for non-model traffic."""
    websocket = ex.kind == "websocket"
    extra = {ex.host: ex.provider} if ex.provider and ex.provider != "unknown" else None
    fc = classify_flow(ex.host, ex.path, ex.method, websocket=websocket, extra_hosts=extra)
    if fc.is_model and fc.api in PARSED_APIS:
        return Route(fc.provider, fc.api, fc.endpoint)
    if ex.api in PARSED_APIS and (ex.method.upper() == "POST" or websocket):
        # recorded as model traffic (e.g. a user-added host): trust the recorder, read the endpoint from the path
        forced = classify_flow(
            ex.host, ex.path, ex.method, websocket=websocket, extra_hosts={ex.host: ex.provider}
        )
        api = ex.api if ex.api != "responses" or not websocket else "responses-websocket"
        return Route(ex.provider, api, forced.endpoint if forced.is_model else "generate")
    return None


def parse_exchanges(exchanges: Iterable[Exchange], memo: ParseMemo | None = None) -> Iterator[ModelCall]:
    """Parse exchanges in capture order, resolving Responses continuations across flows.

    With a `ParseMemo`, history resent by later requests is parsed only once.
    """
    chain = ResponsesChain()
    for ex in exchanges:
        yield from parse_exchange(ex, chain, memo)


def parse_exchange(ex: Exchange, chain: ResponsesChain | None = None, memo: ParseMemo | None = None) -> list[ModelCall]:
    """All model calls in one exchange ([] for non-model traffic)."""
    try:
        r = route(ex)
    except Exception:  # classification must never break a capture
        return []
    if r is None:
        return []
    chain = chain if chain is not None else ResponsesChain()
    if ex.kind == "websocket":
        if r.api != "responses-websocket":
            return []
        return _parse_websocket(ex, r, chain, memo)
    try:
        return [_parse_http(ex, r, chain, memo)]
    except Exception as exc:  # last-resort guard; the call is still reported
        return [_failed_call(ex, r, exc)]


# --- HTTP -------------------------------------------------------------------------


def _stream_key(ex: Exchange) -> str:
    """Requests of one conversation share a stream: their bodies extend each other."""
    session = ""
    for name in SESSION_HEADERS:
        value = ex.header(name)
        if value:
            session = value
            break
    return f"{ex.host}{ex.path.split('?', 1)[0]} {session}"


def _parse_http(ex: Exchange, r: Route, chain: ResponsesChain, memo: ParseMemo | None = None) -> ModelCall:
    raw = ex.request_body
    body, load_error = memo.load_body(_stream_key(ex), raw) if memo is not None else load_json(raw)
    previous, complete = None, True
    if body is None:
        draft = RequestDraft(status="error", error=f"request body: {load_error}")
    elif r.api == "messages":
        draft = anthropic.parse_request(body, memo)
    elif r.api == "chat-completions":
        draft = chat_completions.parse_request(body, memo)
    elif r.api == "gemini":
        draft = gemini.parse_request(body, ex.path, memo)
    else:
        previous = as_str(as_dict(body).get("previous_response_id"))
        inherited, complete = chain.resolve(previous)
        draft = openai_responses.parse_request(body, inherited, complete, memo)
    headers = list(ex.request_headers)
    identity = identify(headers, raw, draft.facts, ex.client, ex.client_version)
    request = _request(r, draft, identity, r.endpoint, complete, memo)
    response = _http_response(ex, r)
    purpose = _purpose(r, request, identity, headers_dict(headers), draft)
    if r.api == "responses":
        _remember(chain, response, previous, body, complete)
    return ModelCall(
        call_key=ex.flow_id,
        flow_id=ex.flow_id,
        provider=r.provider,
        api=r.api,  # type: ignore[arg-type]
        transport=_transport(ex),
        ts_start=ex.ts_start,
        ts_first_byte=ex.ts_first_byte,
        ts_end=ex.ts_end,
        http_status=ex.status,
        identity=identity,
        purpose=purpose,
        request=request,
        response=response,
        request_bytes=len(raw or b""),
    )


def _remember(chain: ResponsesChain, response: ParsedResponse, previous: str | None, body: Any,
              complete: bool) -> None:
    """Keep what a later `previous_response_id` continuation needs to rebuild its full input."""
    if response.response_id and body is not None:
        chain.record(response.response_id, previous, openai_responses.input_items(body),
                     response.output_items, complete)


def _transport(ex: Exchange) -> Transport:
    raw = ex.response_body
    if not raw:
        return "none"
    if looks_like_sse(ex.header("content-type", response=True), raw):
        return "sse"
    return "stream" if raw.lstrip()[:1] == b"[" else "json"


def _http_response(ex: Exchange, r: Route) -> ParsedResponse:
    if ex.status is None:
        message = ex.error or "no response recorded"
        return ParsedResponse(
            parse_status="not_applicable", parse_error=message, error=transport_error(message)
        )
    raw = ex.response_body
    if ex.status >= 400:
        body = parse_json_body(raw)
        error = classify_error(
            ex.status, body, ex.response_headers, now=ex.ts_end or ex.ts_start, rule_prefix="http:"
        )
        ok = body is not None or not raw
        return ParsedResponse(
            error=error,
            parse_status="ok" if ok else "partial",
            parse_error=None if ok else "error body is not JSON",
        )
    if ex.status < 200 or ex.status >= 300:
        return ParsedResponse(
            parse_status="not_applicable", parse_error=f"HTTP {ex.status}: no model response"
        )
    if not raw:
        message = ex.error or "empty response body"
        return ParsedResponse(
            parse_status="error", parse_error=message, error=protocol_error(message, "body.empty", ex.status)
        )
    sse = looks_like_sse(ex.header("content-type", response=True), raw)
    if r.api == "messages":
        response = anthropic.parse_response(raw, sse, r.endpoint)
    elif r.api == "chat-completions":
        response = chat_completions.parse_response(raw, sse)
    elif r.api == "gemini":
        response = gemini.parse_response(raw, sse, r.endpoint)
    else:
        response = openai_responses.parse_response(raw, sse)
    if ex.error and response.parse_status == "ok" and response.error is None:
        response.parse_status = "partial"
        response.parse_error = ex.error
        response.error = protocol_error(ex.error, "proxy.flow-error", ex.status)
    return response


# --- WebSocket ----------------------------------------------------------------------


def _parse_websocket(ex: Exchange, r: Route, chain: ResponsesChain, memo: ParseMemo | None = None) -> list[ModelCall]:
    groups: list[tuple[WsMessage, Any, list[WsMessage]]] = []
    for message in sorted(ex.ws_messages, key=lambda m: m.index):
        if message.from_client:
            obj = _frame_json(message)
            kind = obj.get("type") if isinstance(obj, dict) else None
            if kind in WS_REQUEST_TYPES:
                groups.append((message, obj, []))
            elif obj is None and b"response.create" in message.content[:4096]:
                groups.append((message, None, []))  # a request frame we cannot read
        elif groups:
            groups[-1][2].append(message)
    calls: list[ModelCall] = []
    last_response: str | None = None
    for message, obj, server in groups:
        try:
            call = _ws_call(ex, r, chain, message, obj, server, last_response, memo)
            last_response = call.response.response_id or last_response
        except Exception as exc:  # one bad frame must not hide the others
            call = _failed_call(ex, r, exc, message)
        calls.append(call)
    return calls


def _frame_json(message: WsMessage) -> Any:
    try:
        return loads(message.content)
    except (ValueError, UnicodeDecodeError):
        return None


def _ws_call(
    ex: Exchange,
    r: Route,
    chain: ResponsesChain,
    message: WsMessage,
    obj: Any,
    server: list[WsMessage],
    last_response: str | None,
    memo: ParseMemo | None = None,
) -> ModelCall:
    previous, complete = None, True
    if obj is None:
        body: dict | None = None
        draft = RequestDraft(status="error", error="request frame is not valid JSON")
    else:
        body = {k: v for k, v in obj.items() if k != "type"}
        previous = as_str(body.get("previous_response_id"))
        if obj.get("type") == "response.append" and previous is None:
            previous = last_response
        inherited, complete = chain.resolve(previous)
        draft = openai_responses.parse_request(body, inherited, complete, memo)
        draft.previous_response_id = previous
    headers = frame_headers(as_dict(draft.facts.get("client_metadata"))) + list(ex.request_headers)
    identity = identify(headers, message.content, draft.facts, ex.client, ex.client_version)
    endpoint = "warmup" if draft.facts.get("generate") is False else r.endpoint
    request = _request(r, draft, identity, endpoint, complete, memo)

    stream = openai_responses.ResponsesStream()
    for frame in server:
        parsed = _frame_json(frame)
        if parsed is None:
            stream.bad_events += 1
        else:
            stream.feed(parsed)
    response = stream.result()
    if not server and ex.error:
        response.parse_error = ex.error
    purpose = _purpose(r, request, identity, headers_dict(headers), draft)
    _remember(chain, response, previous, body, complete)
    return ModelCall(
        call_key=f"{ex.flow_id}#{message.index}",
        flow_id=ex.flow_id,
        ws_index=message.index,
        provider=r.provider,
        api="responses-websocket",
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


def _request(
    r: Route, draft: RequestDraft, identity: Identity, endpoint: str, complete: bool, memo: ParseMemo | None = None
) -> ParsedRequest:
    blocks = attribute(draft.blocks, identity.client, r.api, memo)
    return ParsedRequest(
        api=r.api,  # type: ignore[arg-type]
        endpoint=endpoint,
        model=draft.model,
        stream=draft.stream,
        max_output_tokens=draft.max_output_tokens,
        blocks=blocks,
        n_tools=len(draft.tool_names),
        tool_names=draft.tool_names,
        previous_response_id=draft.previous_response_id,
        effective_input_complete=complete,
        top_level_cache_control=draft.top_level_cache_control,
        parse_status=draft.status,
        parse_error=draft.error or ("; ".join(draft.warnings[:3]) if draft.warnings else None),
        warnings=draft.warnings,
    )


def _purpose(
    r: Route, request: ParsedRequest, identity: Identity, headers: dict[str, str], draft: RequestDraft
) -> PurposeInfo:
    facts = Facts(
        endpoint=request.endpoint,
        api=r.api,
        client=identity.client,
        headers=headers,
        turn_metadata=turn_metadata(headers),
        request=request,
        body_facts=draft.facts,
    )
    return classify_purpose(facts)


def _failed_call(ex: Exchange, r: Route, exc: BaseException, message: WsMessage | None = None) -> ModelCall:
    """A call whose parsing crashed: reported with the error instead of disappearing."""
    where = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    detail = f"internal parser error: {type(exc).__name__}: {str(exc)[:300]}"
    if where is not None:
        detail += f" ({where.filename.rsplit('/', 1)[-1]}:{where.lineno})"
    try:
        cc = classify_client(ex.request_headers)
        identity = Identity(client=cc.client, client_version=cc.version, client_rule=cc.rule)
    except Exception:
        identity = Identity()
    return ModelCall(
        call_key=f"{ex.flow_id}#{message.index}" if message else ex.flow_id,
        flow_id=ex.flow_id,
        ws_index=message.index if message else None,
        provider=r.provider,
        api=r.api,  # type: ignore[arg-type]
        transport="websocket" if message else "none",
        ts_start=message.ts if message else ex.ts_start,
        ts_end=ex.ts_end,
        http_status=ex.status,
        identity=identity,
        purpose=PurposeInfo(purpose="other", rule_id="parse.failed", evidence=[detail]),
        request=ParsedRequest(api=r.api, endpoint=r.endpoint, parse_status="error", parse_error=detail),  # type: ignore[arg-type]
        response=ParsedResponse(parse_status="error", parse_error=detail),
        request_bytes=len(message.content) if message else len(ex.request_body or b""),
    )
