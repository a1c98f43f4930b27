"""Google Gemini: public API and the Code Assist (`cloudcode-pa`) wrapped form, JSON and SSE.

Effective order is tools -> systemInstruction -> contents. Code Assist wraps the
request as `{"model", "project", "user_prompt_id", "request": {...}}` and each
response chunk as `{"response": {...}, "traceId"}`; both are unwrapped here.
Function calls carry an optional `id`; when it is missing, calls and responses
are linked by name and order (`<name>#<n>`), which is how Gemini pairs them.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from ctxtap.analysis.blocks.drafts import BlockDraft, json_text, structured_draft
from ctxtap.analysis.parsing.canonical import canonical_json, loads
from ctxtap.analysis.parsing.errors import classify_error, protocol_error
from ctxtap.analysis.parsing.models import ParsedResponse, Role, TokenCount, ToolCall, Usage
from ctxtap.analysis.parsing.usage import derived, inclusive, reported
from ctxtap.analysis.protocols.common import (
    Replay,
    RequestDraft,
    as_dict,
    as_int,
    as_list,
    as_str,
    each_item,
    media_placeholder,
    norm_role,
    stream_outcome,
    text_kind,
)
from ctxtap.analysis.protocols.registry import Endpoint, ErrorHints, Protocol, ReplayedCall, RequestContext
from ctxtap.wire.sse import parse_sse

_MODEL_IN_PATH = re.compile(r"models/([^/:?]+)")


def unwrap_request(body: dict) -> tuple[dict, str | None]:
    """(inner GenerateContentRequest, the wrapping key or None)."""
    for key in ("request", "generateContentRequest"):
        inner = body.get(key)
        if isinstance(inner, dict):
            return inner, key
    return body, None


def parse_request(body: Any, path: str = "", memo: Any = None) -> RequestDraft:
    d = RequestDraft()
    if not isinstance(body, dict):
        d.status, d.error = "error", "request body is not a JSON object"
        return d
    inner, wrapper = unwrap_request(body)
    d.facts["wrapped"] = wrapper is not None
    d.facts["user_prompt_id"] = as_str(body.get("user_prompt_id"))
    d.facts["session_id"] = as_str(inner.get("session_id")) or as_str(body.get("session_id"))
    model = as_str(body.get("model")) or as_str(inner.get("model"))
    if not model:
        m = _MODEL_IN_PATH.search(path)
        model = m.group(1) if m else None
    d.model = model.removeprefix("models/") if model else None
    d.stream = ":streamGenerateContent" in path
    config = as_dict(inner.get("generationConfig"))
    d.max_output_tokens = as_int(config.get("maxOutputTokens"))
    d.facts["json_schema_output"] = config.get("responseMimeType") == "application/json" or bool(
        config.get("responseJsonSchema") or config.get("responseSchema")
    )

    def tool_item(tool: Any, i: int) -> None:
        t = as_dict(tool)
        decls = t.get("functionDeclarations") or t.get("function_declarations")
        if isinstance(decls, list):
            for k, decl in enumerate(decls):
                name = as_str(as_dict(decl).get("name"))
                if name:
                    d.tool_names.append(name)
                d.blocks.append(
                    structured_draft(
                        f"tools[{i}].functionDeclarations[{k}]",
                        "tool_definition",
                        "system",
                        decl,
                        "functionDeclaration",
                        tool_name=name,
                    )
                )
        else:
            name = next(iter(t), None) if t else None
            if name:
                d.tool_names.append(name)
            d.blocks.append(
                structured_draft(
                    f"tools[{i}]", "tool_definition", "system", tool, name or "tool", tool_name=name
                )
            )

    each_item(memo, "gemini.tools", as_list(inner.get("tools")), d, tool_item)

    system = inner.get("systemInstruction") or inner.get("system_instruction")
    if isinstance(system, str):
        d.blocks.append(BlockDraft("systemInstruction", "instruction_text", "system", system, system, "text"))
    elif isinstance(system, dict):
        for j, part in enumerate(as_list(system.get("parts"))):
            d.blocks.append(_part(part, f"systemInstruction.parts[{j}]", "system", None, Counter()))
    elif system is not None:
        d.warn("systemInstruction has an unexpected type")

    contents = inner.get("contents")
    if not isinstance(contents, list):
        d.warn("contents is missing or not a list")
    counters: Counter[tuple[str, str]] = Counter()  # (call | response, name) -> seen so far

    def content_item(content: Any, i: int) -> None:
        if isinstance(content, str):
            d.blocks.append(
                BlockDraft(f"contents[{i}]", "message_text", "user", content, content, "text", item_index=i)
            )
            return
        c = as_dict(content)
        role = norm_role(c.get("role"), "user")
        parts = c.get("parts")
        if not isinstance(parts, list):
            d.warn(f"contents[{i}].parts is not a list")
        for j, part in enumerate(as_list(parts)):
            d.blocks.append(_part(part, f"contents[{i}].parts[{j}]", role, i, counters))

    each_item(memo, "gemini.contents", as_list(contents), d, content_item, _CallCounts(counters))
    d.calls_by_name = {name: n for (kind, name), n in counters.items() if kind == "call"}
    return d


def link_response_calls(draft: RequestDraft, response: ParsedResponse) -> ParsedResponse:
    """The response's id-less calls numbered on from the history's, as the next request will number them.

    Without ids, the k-th call of a tool in a request's history is `name#k`. A response's calls
    are numbered within the response (it does not see the history); `name#0` of every turn would
    otherwise name one call, and every turn's call would be linked to the first turn's result.
    """
    if not response.tool_calls or not draft.calls_by_name:
        return response
    local: Counter[str] = Counter()
    calls = []
    for tc in response.tool_calls:
        n = local[tc.name]
        local[tc.name] += 1
        if tc.call_id == f"{tc.name}#{n}":  # numbered by `parse_response`: the call had no id
            tc = tc.model_copy(update={"call_id": f"{tc.name}#{draft.calls_by_name.get(tc.name, 0) + n}"})
        calls.append(tc)
    return response.model_copy(update={"tool_calls": calls})


class _CallCounts(Replay):
    """Calls without ids are numbered per name: reused items re-count theirs (in one C-level update)."""

    _KINDS = {"tool_call": "call", "tool_result": "response"}

    def __init__(self, counters: Counter[tuple[str, str]]) -> None:
        self.counters = counters

    def facts(self, drafts: list) -> list[tuple[str, str]]:
        return [(self._KINDS[d.kind], d.tool_name) for d in drafts if d.kind in self._KINDS and d.tool_name]

    def apply(self, facts: list[tuple[str, str]]) -> None:
        self.counters.update(facts)


def _link_id(kind: str, name: str, given: Any, counters: Counter[tuple[str, str]]) -> str:
    n = counters[(kind, name)]
    counters[(kind, name)] = n + 1
    return given if isinstance(given, str) and given else f"{name}#{n}"


def _part(
    part: Any, path: str, role: Role, index: int | None, counters: Counter[tuple[str, str]]
) -> BlockDraft:
    if isinstance(part, str):
        return BlockDraft(path, text_kind(role), role, part, part, "text", item_index=index)
    p = as_dict(part)
    if isinstance(p.get("text"), str):
        if p.get("thought") is True:
            return BlockDraft(path, "reasoning", role, part, p["text"], "thought", item_index=index)
        return BlockDraft(path, text_kind(role), role, part, p["text"], "text", item_index=index)
    if isinstance(p.get("inlineData"), dict):
        inline = p["inlineData"]
        mime = as_str(inline.get("mimeType")) or "application/octet-stream"
        kind = "image" if mime.startswith("image/") else "document"
        return BlockDraft(
            path,
            kind,
            role,
            part,
            media_placeholder(kind, mime, inline.get("data")),
            "inlineData",
            item_index=index,
        )
    if isinstance(p.get("fileData"), dict):
        fd = p["fileData"]
        mime = as_str(fd.get("mimeType")) or ""
        kind = "image" if mime.startswith("image/") else "document"
        return BlockDraft(
            path, kind, role, part, f"[{kind} {mime} {fd.get('fileUri', '')}]", "fileData", item_index=index
        )
    if isinstance(p.get("functionCall"), dict):
        fc = p["functionCall"]
        name = as_str(fc.get("name")) or ""
        call_id = _link_id("call", name, fc.get("id"), counters)
        return BlockDraft(
            path,
            "tool_call",
            role,
            part,
            json_text(fc),
            "functionCall",
            tool_name=name,
            call_id=call_id,
            item_index=index,
        )
    if isinstance(p.get("functionResponse"), dict):
        fr = p["functionResponse"]
        name = as_str(fr.get("name")) or ""
        call_id = _link_id("response", name, fr.get("id"), counters)
        text = json_text(fr.get("response")) if fr.get("response") is not None else ""
        return BlockDraft(
            path,
            "tool_result",
            role,
            part,
            text,
            "functionResponse",
            tool_name=name,
            call_id=call_id,
            item_index=index,
        )
    if "executableCode" in p:
        return BlockDraft(
            path,
            "tool_call",
            role,
            part,
            json_text(p["executableCode"]),
            "executableCode",
            tool_name="code_execution",
            item_index=index,
        )
    if "codeExecutionResult" in p:
        return BlockDraft(
            path,
            "tool_result",
            role,
            part,
            json_text(p["codeExecutionResult"]),
            "codeExecutionResult",
            tool_name="code_execution",
            item_index=index,
        )
    return structured_draft(path, "other", role, part, next(iter(p), "unknown"), item_index=index)


# --- responses -------------------------------------------------------------------


class _Builder:
    def __init__(self) -> None:
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.calls: list[ToolCall] = []
        self.names: dict[str, int] = {}
        self.finish: str | None = None
        self.usage: dict | None = None
        self.response_id: str | None = None
        self.model: str | None = None
        self.error = None
        self.bad_events = 0
        self.chunks = 0

    def chunk(self, obj: Any, stream: bool) -> None:
        if not isinstance(obj, dict):
            self.bad_events += 1
            return
        if isinstance(obj.get("error"), dict):
            err = obj["error"]
            self.error = classify_error(
                as_int(err.get("code")), obj, rule_prefix="stream:" if stream else "body:"
            )
            return
        self.chunks += 1
        self.response_id = self.response_id or as_str(obj.get("traceId"))
        inner = obj.get("response") if isinstance(obj.get("response"), dict) else obj
        self.response_id = as_str(inner.get("responseId")) or self.response_id
        self.model = as_str(inner.get("modelVersion")) or self.model
        if isinstance(inner.get("usageMetadata"), dict):
            self.usage = inner["usageMetadata"]
        for cand in as_list(inner.get("candidates"))[:1]:
            c = as_dict(cand)
            if as_str(c.get("finishReason")):
                self.finish = c["finishReason"]
            for part in as_list(as_dict(c.get("content")).get("parts")):
                p = as_dict(part)
                if isinstance(p.get("text"), str):
                    (self.reasoning if p.get("thought") is True else self.text).append(p["text"])
                elif isinstance(p.get("functionCall"), dict):
                    fc = p["functionCall"]
                    name = as_str(fc.get("name")) or ""
                    n = self.names.get(name, 0)
                    self.names[name] = n + 1
                    call_id = as_str(fc.get("id")) or f"{name}#{n}"
                    self.calls.append(
                        ToolCall(
                            call_id=call_id,
                            name=name,
                            arguments=canonical_json(fc.get("args") or {}),
                            index=len(self.calls),
                        )
                    )

    def result(self, complete: bool) -> ParsedResponse:
        parse_status, parse_error, error = stream_outcome(
            self.error,
            None if complete else "stream ended before a finishReason",
            bool(self.chunks),
            self.bad_events,
            "chunks",
        )
        return ParsedResponse(
            response_id=self.response_id,
            model=self.model,
            text="".join(self.text),
            reasoning="".join(self.reasoning),
            tool_calls=self.calls,
            stop_reason=self.finish,
            usage=gemini_usage(self.usage),
            error=error,
            parse_status=parse_status,
            parse_error=parse_error,
        )


def parse_response(raw: bytes | None, sse: bool, endpoint: str) -> ParsedResponse:
    b = _Builder()
    if sse:
        stream = parse_sse(raw)
        for ev in stream.events:
            try:
                b.chunk(loads(ev.data), stream=True)
            except ValueError:
                b.bad_events += 1
        return b.result(b.finish is not None and stream.complete)
    try:
        obj = loads(raw or b"")
    except (ValueError, UnicodeDecodeError) as e:
        msg = f"response is not JSON: {str(e)[:200]}"
        return ParsedResponse(
            parse_status="error", parse_error=msg, error=protocol_error(msg, "body.unparsable")
        )
    if endpoint == "count_tokens" and isinstance(obj, dict) and "error" not in obj:
        count = as_int(obj.get("totalTokens"))
        return ParsedResponse(
            counted_input_tokens=count,
            parse_status="ok" if count is not None else "partial",
            parse_error=None if count is not None else "no totalTokens in countTokens response",
        )
    if isinstance(obj, list):  # streamGenerateContent without alt=sse: a JSON array of chunks
        for chunk in obj:
            b.chunk(chunk, stream=True)
        return b.result(b.finish is not None or b.error is not None)
    if not isinstance(obj, dict):
        msg = "response is not a JSON object"
        return ParsedResponse(
            parse_status="error", parse_error=msg, error=protocol_error(msg, "body.unexpected-shape")
        )
    b.chunk(obj, stream=False)
    return b.result(True)


# --- usage and errors ---------------------------------------------------------------------


def gemini_usage(u: Any) -> Usage:
    """Gemini usageMetadata: cached inside promptTokenCount; thoughts on top of candidates.

    Gemini omits zero counters, so a missing cachedContentTokenCount or
    thoughtsTokenCount next to a reported prompt count is an estimated zero.
    """
    if not isinstance(u, dict) or not u:
        return Usage()
    total = reported(u.get("promptTokenCount"))
    read = reported(u.get("cachedContentTokenCount"))
    if read.value is None and total.value is not None:
        read = TokenCount(value=0, status="estimated")
    candidates = reported(u.get("candidatesTokenCount"))
    thoughts = reported(u.get("thoughtsTokenCount"))
    if thoughts.value is None and candidates.value is not None:
        thoughts = TokenCount(value=0, status="estimated")
    output = derived(candidates, thoughts, assume_zero=True) if candidates.value is not None else thoughts
    return inclusive(
        total=total,
        read=read,
        write=TokenCount(),
        output=output,
        reasoning=thoughts,
        raw=u,
    )


_DELAY = re.compile(r"^([\d.]+)s$")


def _retry_delay(details: Any) -> float | None:
    """`google.rpc.RetryInfo.retryDelay` ("12s") among an error's details."""
    if isinstance(details, list):
        for d in details:
            if isinstance(d, dict) and str(d.get("@type", "")).endswith("RetryInfo"):
                m = _DELAY.match(str(d.get("retryDelay", "")))
                if m:
                    return float(m.group(1))
    return None


def _daily_quota(details: Any) -> bool:
    """A `google.rpc.QuotaFailure` on a per-day quota: the allowance is gone until tomorrow."""
    if not isinstance(details, list):
        return False
    for d in details:
        if isinstance(d, dict) and str(d.get("@type", "")).endswith("QuotaFailure"):
            for v in d.get("violations") or []:
                if isinstance(v, dict) and "PerDay" in str(v.get("quotaId", "")):
                    return True
    return False


# --- the protocol ------------------------------------------------------------------------


class Gemini(Protocol):
    """generateContent / streamGenerateContent / countTokens, public and Code Assist (wrapped) forms."""

    api = "gemini"
    title = "Gemini"
    order = 40
    endpoints = (
        Endpoint(re.compile(r":countTokens$"), "count_tokens"),
        Endpoint(re.compile(r":(stream)?[gG]enerateContent$"), "generate"),
    )
    history_arrays = ("contents",)
    content_fields = frozenset({"contents", "tools", "systemInstruction", "system_instruction"})
    tool_results = {"functionResponse": "functionResponse parts in user contents"}

    def parse_request(self, body: Any, ctx: RequestContext) -> RequestDraft:
        return parse_request(body, ctx.path, ctx.memo)

    def parse_response(self, raw: bytes, sse: bool, endpoint: str) -> ParsedResponse:
        return parse_response(raw, sse, endpoint)

    def link_response(self, draft: RequestDraft, response: ParsedResponse) -> ParsedResponse:
        return link_response_calls(draft, response)

    def usage(self, raw_usage: Any) -> Usage:
        return gemini_usage(raw_usage)

    def error_hints(self, error: dict[str, Any], headers: dict[str, str]) -> ErrorHints | None:
        details = error.get("details")
        retry, daily = _retry_delay(details), _daily_quota(details)
        if retry is None and not daily:
            return None
        return ErrorHints(retry_after_s=retry, quota_exhausted=daily)

    def replayed_call(self, wire: dict[str, Any]) -> ReplayedCall | None:
        if isinstance(wire.get("functionCall"), dict):
            wire = wire["functionCall"]
        if "args" in wire:
            return ReplayedCall(as_str(wire.get("name")), wire["args"])
        return None

    def wire_path(self, body: Any, path: str) -> list[str | int]:
        """Block paths name the inner request; Code Assist wraps it, and snake_case keys are accepted."""
        steps = super().wire_path(body, path)
        inner, wrapper = unwrap_request(body) if isinstance(body, dict) else (body, None)
        prefix: list[str | int] = [wrapper] if wrapper else []
        value: Any = inner
        for i, step in enumerate(steps):
            if isinstance(step, str) and isinstance(value, dict) and step not in value:
                snake = re.sub(r"(?<!^)([A-Z])", r"_\1", step).lower()  # systemInstruction -> system_instruction
                if snake in value:
                    steps[i] = step = snake
            value = _child(value, step)
        return prefix + steps


def _child(value: Any, step: str | int) -> Any:
    if isinstance(step, str):
        return value.get(step) if isinstance(value, dict) else None
    return value[step] if isinstance(value, list) and 0 <= step < len(value) else None


PROTOCOL = Gemini()
