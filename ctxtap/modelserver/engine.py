"""The fake model itself: request in, provider-shaped reply out, no sockets.

The engine decides each answer from the request content (which step of the
script is due, which tools are offered), simulates the provider's prompt cache
for realistic usage, applies injected faults and keeps a log of every model
call. The HTTP/WebSocket server is a thin shell around it, so tests and
benchmarks can also drive it directly.
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from . import converse, render
from .cache import OPENAI_CACHE_STEP_TOKENS, CacheResult, PromptCache
from .conversation import Conversation, read_conversation, session_key, shape_problem
from .diagnostics import Diagnoser, fingerprint
from .faults import INJECT_HEADER, Fault, error_body, error_headers, parse_inject, stream_error_event
from .prefix import build_prefix
from .reply import Answer, Event, RenderContext, Reply, ServedExchange, new_id, split_text
from .routes import Route, guess_family, match_route
from .script import BUILTIN_SCRIPTS, DEFAULT_SCRIPT, Script, Step
from .structured import example_for, requested_schema
from .tools import shape_call

HeadersLike = Mapping[str, str] | Iterable[tuple[str, str]]

SCRIPT_HEADER = "x-ctxtap-script"
DELAY_HEADER = "x-ctxtap-delay"
BIG_STREAM_HEADER = "x-ctxtap-big-stream"
USAGE_STYLE_HEADER = "x-ctxtap-usage-style"
MAX_STORED_RESPONSES = 512

_RENDERERS = {
    "anthropic": render.anthropic.render,
    "responses": render.responses.render,
    "chat": render.chat.render,
    "gemini": render.gemini.render,
}
_DEFAULT_MODELS = {"anthropic": "claude-sonnet-4-5", "responses": "gpt-5.1-codex", "chat": "kimi-for-coding",
                   "gemini": "gemini-2.5-pro"}
_FILLER = "The quick brown fox jumps over the lazy dog. "
_TITLE = "Explore the demo repository"
_TITLE_JSON = json.dumps({"title": _TITLE})
_ASKS_JSON = re.compile(r"(?<![.\w])json\b")  # "reply with JSON", not a file name like config.json
_SUMMARY_TEXT = (
    "<analysis>The user asked for a read-only look at the repository.</analysis>\n<summary>\n"
    "1. Primary request: list the working directory without modifying files.\n"
    "2. Completed: ran pwd and ls; no files were changed.\n3. Pending: nothing.\n</summary>"
)
_COMPACTION_MARKERS = ("detailed summary of the conversation", "context checkpoint compaction",
                       "compacts conversation context", "compact this conversation", "<state_snapshot>")
_TITLE_MARKERS = ("title", "naming a coding session", "name for this session")
_NEXT_SPEAKER_TEXT = '{"reasoning": "The model gave a complete answer.", "next_speaker": "user"}'


def lower_headers(headers: HeadersLike | None) -> dict[str, str]:
    """Case-insensitive view (lower-case keys; a repeated header keeps its first value)."""
    items = headers.items() if isinstance(headers, Mapping) else (headers or [])
    out: dict[str, str] = {}
    for key, value in items:
        out.setdefault(str(key).lower(), str(value))
    return out


def big_text(events: int, event_bytes: int) -> list[str]:
    """N deltas of M bytes each, for throughput benchmarks."""
    piece = (_FILLER * (event_bytes // len(_FILLER) + 1))[: max(1, event_bytes)]
    return [piece] * max(1, events)


def _parse_big(value: str | None) -> tuple[int, int] | None:
    if not value:
        return None
    for sep in ("x", ":", ","):
        if sep in value:
            n, _, m = value.partition(sep)
            try:
                return int(n), int(m)
            except ValueError:
                return None
    return None


class Engine:
    """Transport-free fake model provider. All public methods are thread-safe."""

    def __init__(
        self,
        script: Script | str | None = None,
        *,
        cache_ttl_s: float = 300.0,
        min_cache_tokens: int = 1024,
        bytes_per_token: float = 4.0,
        cache_block_tokens: int = 1,
        clock: Callable[[], float] = time.monotonic,
        chat_usage_style: str = "auto",
        delta_chars: int = 32,
        retry_after_s: float = 1.0,
        faults: Iterable[Fault] = (),
    ) -> None:
        self.script = Script.load(script or DEFAULT_SCRIPT) if not isinstance(script, Script) else script
        self.bytes_per_token = bytes_per_token
        self.chat_usage_style = chat_usage_style  # "openai" | "moonshot" | "auto" (by Host)
        self.delta_chars = delta_chars
        self.retry_after_s = retry_after_s
        self.clock_offset = 0.0
        self._clock = clock
        self._lock = threading.RLock()
        self._seq = 0
        self._faults: list[Fault] = list(faults)
        self._exchanges: list[ServedExchange] = []
        self._responses: OrderedDict[str, list[Any]] = OrderedDict()
        self.cache = PromptCache(ttl_s=cache_ttl_s, min_tokens=min_cache_tokens, bytes_per_token=bytes_per_token,
                                 block_tokens=cache_block_tokens, clock=self.now)
        self.diagnoser = Diagnoser(bytes_per_token)

    @property
    def forced_diagnostics(self) -> list[dict[str, Any] | None]:
        """Provider diagnostics objects to answer the next requests that ask with, verbatim (a fixture)."""
        return self.diagnoser.forced

    def _cache_step(self, family: str) -> int | None:
        """OpenAI families read their implicit cache in 128-token steps unless the server was given a step."""
        if self.cache.block_tokens == 1 and family in ("responses", "chat"):
            return OPENAI_CACHE_STEP_TOKENS
        return None

    # -- state ------------------------------------------------------------------------------

    def now(self) -> float:
        """The cache clock: the injected clock plus `clock_offset` (tests jump past the TTL)."""
        return self._clock() + self.clock_offset

    def inject(self, fault: Fault) -> None:
        with self._lock:
            self._faults.append(fault)

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    @property
    def exchanges(self) -> list[ServedExchange]:
        """Every model call so far, in arrival order (a snapshot copy)."""
        with self._lock:
            return list(self._exchanges)

    def reset(self) -> None:
        """Forget calls, faults, stored responses and the cache."""
        with self._lock:
            self._seq = 0
            self._faults.clear()
            self._exchanges.clear()
            self._responses.clear()
        self.cache.clear()

    def _next_seq(self) -> int:
        with self._lock:
            self._seq += 1
            return self._seq

    def _take_fault(self, seq: int, path: str, api: str, header_value: str | None) -> Fault | None:
        from_header = parse_inject(header_value)
        if from_header is not None:
            return from_header
        with self._lock:
            for fault in self._faults:
                if fault.matches(seq, path, api):
                    if fault.times is not None:
                        fault.times -= 1
                    return fault
        return None

    def _record(self, exchange: ServedExchange) -> None:
        with self._lock:
            self._exchanges.append(exchange)

    def _store_response(self, response_id: str, items: list[Any]) -> None:
        with self._lock:
            self._responses[response_id] = items
            while len(self._responses) > MAX_STORED_RESPONSES:
                self._responses.popitem(last=False)

    def _stored_response(self, response_id: str) -> list[Any] | None:
        with self._lock:
            return self._responses.get(response_id)

    # -- entry points -----------------------------------------------------------------------

    def respond(self, method: str, path: str, headers: HeadersLike | None, body: bytes | dict[str, Any] | None,
                client_host: str = "127.0.0.1", *, transport: str = "http", body_error: str | None = None) -> Reply:
        """Answer one HTTP request (body already decompressed; raw bytes or parsed JSON).

        `body_error` reports a body the transport could not decode (bad
        Content-Encoding); the client gets the provider's 400.
        """
        hdrs = lower_headers(headers)
        route = match_route(method, path)
        if route is None:
            family = guess_family(path)
            return self._error_reply(family, 404, hdrs, message=f"Unknown route {method} {path}")
        if route.api == "models":
            return self._models_reply()
        seq = self._next_seq()
        exchange = ServedExchange(seq=seq, api=route.api, transport=transport, path=path)
        data, problem = (None, body_error) if body_error else self._parse(body)
        if data is None:
            return self._fail(exchange, route.family, 400, hdrs, problem)
        exchange.request = data
        fault = self._take_fault(seq, path, route.api, hdrs.get(INJECT_HEADER))
        if fault is not None and fault.status:
            return self._fail(exchange, route.family, fault.status, hdrs, fault.message, fault)
        return self._answer(route, data, hdrs, client_host, exchange, fault)

    def respond_ws(self, text: str, headers: HeadersLike | None, client_host: str = "127.0.0.1",
                   path: str = "/v1/responses") -> Reply:
        """Answer one client text frame of the Responses WebSocket transport.

        Returns events to send as text frames (possibly none, for acks). Errors
        are wrapped the way Codex expects: {"type":"error","status":...}.
        """
        hdrs = lower_headers(headers)
        data, problem = self._parse(text.encode())
        if data is None:
            return self._ws_error(None, 400, hdrs, problem)
        kind = data.get("type")
        if kind in ("response.processed", "response.cancel"):
            return Reply(events=[])
        if kind != "response.create":
            return self._ws_error(None, 400, hdrs, f"Unsupported message type: {kind!r}")
        seq = self._next_seq()
        exchange = ServedExchange(seq=seq, api="responses", transport="ws", path=path, request=data, stream=True)
        meta = data.get("client_metadata") if isinstance(data.get("client_metadata"), dict) else {}
        fault = self._take_fault(seq, path, "responses", meta.get(INJECT_HEADER))
        if fault is not None and fault.status:
            return self._ws_error(exchange, fault.status, hdrs, fault.message, fault)
        body = {k: v for k, v in data.items() if k != "type"}
        return self._answer(Route("responses", "responses", stream=True), body, hdrs, client_host, exchange, fault)

    # -- generation -------------------------------------------------------------------------

    def _answer(self, route: Route, data: dict[str, Any], hdrs: dict[str, str], client_host: str,
                exchange: ServedExchange, fault: Fault | None) -> Reply:
        family = route.family
        inner = data.get("request") if route.wrapped and isinstance(data.get("request"), dict) else data
        assert isinstance(inner, dict)
        if route.converse:
            inner = converse.to_anthropic(inner)
        model = str(inner.get("model") or data.get("model") or route.model or _DEFAULT_MODELS[family])
        stream = route.stream if route.stream is not None else bool(data.get("stream"))
        exchange.stream = stream
        exchange.session_key = session_key(family, hdrs, data, client_host)
        previous = data.get("previous_response_id") if family == "responses" else None
        if previous:
            stored = self._stored_response(str(previous))
            if stored is None:
                msg = f"Previous response with id '{previous}' not found."
                if exchange.transport == "ws":
                    return self._ws_error(exchange, 400, hdrs, msg, code="previous_response_not_found")
                return self._fail(exchange, family, 400, hdrs, msg)
            items = inner.get("input")
            new_items = [{"type": "message", "role": "user", "content": items}] if isinstance(items, str) else list(items or [])
            inner = {**inner, "input": stored + new_items}

        problem = shape_problem(family, inner)
        if problem:
            if exchange.transport == "ws":
                return self._ws_error(exchange, 400, hdrs, problem)
            return self._fail(exchange, family, 400, hdrs, problem)
        prefix = build_prefix(family, inner)
        if route.api in ("count_tokens", "gemini_count"):
            count = self.cache.tokens(len(prefix.data))
            exchange.kind = "count"
            self._record(exchange)
            body = {"input_tokens": count} if family == "anthropic" else {"totalTokens": count}
            return self._finish(Reply(body=body), family, exchange)

        usage = self.cache.apply(exchange.session_key, prefix, explicit=family == "anthropic",
                                 block_tokens=self._cache_step(family))
        conv = read_conversation(family, inner)
        ctx = RenderContext(model=model, stream=stream, usage=usage, output_tokens=0, delta_chars=self.delta_chars,
                            wrapped=route.wrapped, request=inner,
                            response_id=new_id("msg_" if family == "anthropic" else "resp_"),
                            previous_response_id=str(previous) if previous else None)
        fp = self._diagnose(route, family, inner, model, usage, ctx)
        if route.api == "compact":
            ctx.output_tokens = 64
            exchange.kind = "compact"
            exchange.response_id = ctx.response_id
            body = render.responses.compact(ctx, list(inner.get("input") or []))
            self._log_usage(exchange, usage, ctx, render.responses.usage(ctx))
            return self._finish(Reply(body=body), family, exchange)

        answer = self._decide(family, conv, inner, hdrs)
        ctx.output_tokens, ctx.reasoning_tokens = self._output_tokens(answer, family)
        if family == "chat":
            ctx.include_usage = bool((inner.get("stream_options") or {}).get("include_usage"))
            ctx.moonshot = self._moonshot(hdrs)
        reply = _RENDERERS[family](answer, ctx)
        if route.converse:
            reply = converse.render(reply)
        reply.eventstream = route.eventstream
        exchange.kind, exchange.step = answer.kind, answer.step
        exchange.calls = [c.command for c in answer.calls]
        exchange.response_id = ctx.response_id if family == "responses" else None
        if family == "responses":
            items = inner.get("input")
            full = [{"type": "message", "role": "user", "content": items}] if isinstance(items, str) else list(items or [])
            self._store_response(ctx.response_id, full + (reply.output or []))
        self.diagnoser.remember(ctx.response_id, fp)
        self._log_usage(exchange, usage, ctx, self._provider_usage(family, ctx))
        if fault is not None:
            self._apply_stream_fault(reply, fault, family, ctx, exchange)
        return self._finish(reply, family, exchange, hdrs)

    def _diagnose(self, route: Route, family: str, body: dict[str, Any], model: str, usage: CacheResult,
                  ctx: RenderContext) -> Any:
        """The request's fingerprint; where it asks for cache diagnostics, the verdict goes on `ctx`.
        Anthropic answers on its own API only (the docs: not on Bedrock or Vertex AI)."""
        fp = fingerprint(family, body, model)
        if family == "anthropic" and route.model is None:
            asked, value = self.diagnoser.anthropic(body, fp)
            if asked:
                ctx.diagnostics = ("diagnostics", value)
        elif family == "responses":
            asked, value = self.diagnoser.responses(body, fp, usage)
            if asked:
                ctx.diagnostics = ("prompt_cache_diagnostics", value)
        return fp

    def _decide(self, family: str, conv: Conversation, body: dict[str, Any], hdrs: dict[str, str]) -> Answer:
        if family == "responses" and body.get("generate") is False:
            return Answer(kind="warmup")
        script = self._script_for(hdrs)
        big = _parse_big(hdrs.get(BIG_STREAM_HEADER))
        side = self._side_text(family, conv, body)
        if side is not None:
            return self._with_text(Answer(kind="side"), Step(text=side), big)
        index, step = script.step_for(conv.results_in_turn)
        if not conv.tools:  # never call a tool the client did not offer: answer with the script's final text
            final = next((s for s in reversed(script.steps) if s.is_final), Step(text=script.final_text))
            return self._with_text(Answer(kind="side"), final, big)
        calls = [shape_call(call, conv.tools) for call in step.calls]
        answer = Answer(kind="tools" if calls else "final", calls=calls, step=index + 1,
                        reasoning=family == "responses" and bool(body.get("reasoning")))
        return self._with_text(answer, step, big)

    def _with_text(self, answer: Answer, step: Step, big: tuple[int, int] | None) -> Answer:
        if big or step.events:
            n, m = big or (step.events or 1, step.event_bytes)
            answer.text_deltas = big_text(n, m)
            answer.text = "".join(answer.text_deltas)
        elif step.text:
            answer.text = step.text
            answer.text_deltas = split_text(step.text, self.delta_chars)
        return answer

    @staticmethod
    def _side_text(family: str, conv: Conversation, body: dict[str, Any]) -> str | None:
        """Canned answers for recognisable side requests (compaction, titles, JSON checks).

        Compaction prompts get a summary even when the client keeps its tools
        (Claude Code does); the others are recognised only without tools. A forced
        JSON schema (a router, a classifier) gets a value that satisfies it; a title
        is JSON only when the request asks for JSON (opencode wants the bare line).
        """
        asks = (conv.last_user_text + "\n" + conv.system_text).lower()
        if any(marker in asks for marker in _COMPACTION_MARKERS):
            return _SUMMARY_TEXT
        if conv.tools:
            return None
        schema = requested_schema(family, body)
        if schema is not None:
            return json.dumps(example_for(schema))
        if any(marker in asks for marker in _TITLE_MARKERS):
            return _TITLE_JSON if _ASKS_JSON.search(asks) else _TITLE
        config = body.get("generationConfig") if family == "gemini" else None
        if isinstance(config, dict) and config.get("responseMimeType") == "application/json":
            return _NEXT_SPEAKER_TEXT
        return None

    def _script_for(self, hdrs: dict[str, str]) -> Script:
        name = hdrs.get(SCRIPT_HEADER)
        if name and name in BUILTIN_SCRIPTS:
            return BUILTIN_SCRIPTS[name]
        return self.script

    def _output_tokens(self, answer: Answer, family: str) -> tuple[int, int]:
        if answer.kind == "warmup":
            return 0, 0
        size = len((answer.text or "").encode()) + sum(len(c.arguments_json) + len(c.input or "") for c in answer.calls)
        reasoning = 16 if answer.reasoning else 0
        return max(1, math.ceil(size / self.bytes_per_token)) + 4 * len(answer.calls) + reasoning, reasoning

    def _moonshot(self, hdrs: dict[str, str]) -> bool:
        style = hdrs.get(USAGE_STYLE_HEADER) or self.chat_usage_style
        if style == "auto":  # Moonshot's endpoints, or a Kimi client behind a proxy that rewrote Host
            host = hdrs.get("host", "")
            return "kimi" in host or "moonshot" in host or "x-msh-platform" in hdrs
        return style == "moonshot"

    @staticmethod
    def _provider_usage(family: str, ctx: RenderContext) -> dict[str, Any]:
        if family == "anthropic":
            return render.anthropic.usage(ctx, ctx.output_tokens)
        if family == "chat":
            return render.chat.usage(ctx)
        if family == "gemini":
            return render.gemini.usage(ctx)
        return render.responses.usage(ctx)

    def _log_usage(self, exchange: ServedExchange, usage: CacheResult, ctx: RenderContext, provider: dict[str, Any]) -> None:
        exchange.usage = {"input": usage.total, "cache_read": usage.read, "cache_write": usage.write,
                          "output": ctx.output_tokens}
        exchange.provider_usage = provider
        self._record(exchange)

    def _apply_stream_fault(self, reply: Reply, fault: Fault, family: str, ctx: RenderContext, exchange: ServedExchange) -> None:
        exchange.fault = fault.describe()
        if fault.cut_after is not None:
            reply.cut_after = fault.cut_after
        elif fault.linger_s is not None:
            reply.linger_s = fault.linger_s
        elif fault.stream_error_after is not None and reply.events is not None:
            keep = reply.events[: fault.stream_error_after]
            if family == "responses":
                keep.extend(render.responses.failed_events(ctx, len(keep)))
            else:
                keep.append(Event(stream_error_event(family), "error" if family == "anthropic" else None))
            reply.events = keep

    # -- replies ----------------------------------------------------------------------------

    @staticmethod
    def _parse(body: bytes | dict[str, Any] | None) -> tuple[dict[str, Any] | None, str]:
        if isinstance(body, dict):
            return body, ""
        try:
            data = json.loads(body or b"")
        except (ValueError, UnicodeDecodeError) as exc:
            return None, f"Request body is not valid JSON: {exc}"
        if not isinstance(data, dict):
            return None, "Request body must be a JSON object."
        return data, ""

    def _finish(self, reply: Reply, family: str, exchange: ServedExchange, hdrs: dict[str, str] | None = None) -> Reply:
        rid = new_id("req_")
        reply.headers.append(("x-request-id", rid))
        if family == "anthropic":
            reply.headers.append(("request-id", rid))
        reply.exchange = exchange
        delay = (hdrs or {}).get(DELAY_HEADER)
        if delay:
            try:
                reply.delay_s = float(delay)
            except ValueError:
                pass
        return reply

    def error_reply(self, family: str, status: int, message: str | None = None,
                    headers: HeadersLike | None = None) -> Reply:
        """A provider-shaped error body for `family` (used by transports for their own failures)."""
        return self._error_reply(family, status, lower_headers(headers), message)

    def _error_reply(self, family: str, status: int, hdrs: dict[str, str], message: str | None = None,
                     fault: Fault | None = None) -> Reply:
        retry = fault.retry_after_s if fault and fault.retry_after_s is not None else self.retry_after_s
        rid = new_id("req_")
        body = error_body(family, status, message=message, request_id=rid, retry_after_s=retry,
                          moonshot=family == "chat" and self._moonshot(hdrs))
        headers = [("x-request-id", rid), *error_headers(family, status, retry)]
        if family == "anthropic":
            headers.append(("request-id", rid))
        return Reply(status=status, headers=headers, body=body)

    def _fail(self, exchange: ServedExchange, family: str, status: int, hdrs: dict[str, str], message: str | None,
              fault: Fault | None = None) -> Reply:
        reply = self._error_reply(family, status, hdrs, message or None, fault)
        exchange.status, exchange.kind = status, "error"
        exchange.fault = fault.describe() if fault else None
        exchange.provider_usage = None
        self._record(exchange)
        reply.exchange = exchange
        return reply

    def _ws_error(self, exchange: ServedExchange | None, status: int, hdrs: dict[str, str], message: str | None,
                  fault: Fault | None = None, code: str | None = None) -> Reply:
        retry = fault.retry_after_s if fault and fault.retry_after_s is not None else self.retry_after_s
        err = error_body("responses", status, message=message, retry_after_s=retry)["error"]
        if code:
            err["code"] = code
        frame = {"type": "error", "status": status, "error": err,
                 "headers": dict(error_headers("responses", status, retry))}
        if exchange is not None:
            exchange.status, exchange.kind = status, "error"
            exchange.fault = fault.describe() if fault else None
            self._record(exchange)
        return Reply(events=[Event(frame, "error")], exchange=exchange)

    def _models_reply(self) -> Reply:
        models = sorted(set(_DEFAULT_MODELS.values()))
        data = [{"id": m, "object": "model", "type": "model", "created": 0, "owned_by": "ctxtap", "display_name": m}
                for m in models]
        return Reply(body={"object": "list", "data": data, "has_more": False})
