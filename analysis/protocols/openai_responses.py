"""OpenAI Responses API over HTTP (JSON, SSE) and WebSocket, incl. `/responses/compact`.

Effective order is tools -> instructions -> input. Codex "code mode" sends its
tools as an `additional_tools` input item (paths `input[0].tools[k]`) and
freeform `custom` tools; continuations carry `previous_response_id` and only the
new items, so the caller passes the inherited items (from `ResponsesChain`) and
they are numbered as if the full input had been sent.

Streams: `response.output_item.done` items are preferred; if the stream is cut,
items are rebuilt from `output_item.added` plus text / arguments /
custom-tool-input / reasoning deltas. The terminal `response.completed |
incomplete | failed` event supplies usage and status.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from ctxtap.analysis.blocks.drafts import BlockDraft, json_text, structured_draft
from ctxtap.analysis.cache import cachediag
from ctxtap.analysis.parsing.canonical import canonical_json, loads
from ctxtap.analysis.parsing.errors import classify_error
from ctxtap.analysis.parsing.models import ParsedResponse, Role, ToolCall, Usage
from ctxtap.analysis.parsing.usage import get_path, inclusive, reported
from ctxtap.analysis.protocols.common import (
    CallNames,
    RequestDraft,
    as_bool,
    as_dict,
    as_int,
    as_list,
    as_str,
    each_item,
    frame_json,
    load_response_object,
    norm_role,
    parts_text,
    stream_outcome,
    text_kind,
)
from ctxtap.analysis.protocols.registry import Endpoint, Protocol, ReplayedCall, RequestContext, WsTurn
from ctxtap.analysis.protocols.responses_chain import ResponsesChain
from ctxtap.capture.exchange import WsMessage
from ctxtap.wire.sse import parse_sse

WS_REQUEST_TYPES = ("response.create", "response.append")

CALL_TYPES = frozenset(
    {
        "function_call",
        "custom_tool_call",
        "local_shell_call",
        "shell_call",
        "apply_patch_call",
        "computer_call",
        "mcp_call",
        "web_search_call",
        "file_search_call",
        "code_interpreter_call",
        "image_generation_call",
        "tool_search_call",
        "program",
    }
)
TEXT_PART_TYPES = frozenset(
    {"input_text", "output_text", "text", "refusal", "summary_text", "reasoning_text"}
)


def input_items(body: Any) -> list[Any]:
    """The body's own input as a list of items (a string input becomes one user message)."""
    raw = as_dict(body).get("input")
    if isinstance(raw, str):
        return [{"type": "message", "role": "user", "content": raw}]
    return list(raw) if isinstance(raw, list) else []


def parse_request(
    body: Any, inherited: Iterable[tuple[Any, str]] = (), complete: bool = True, memo: Any = None
) -> RequestDraft:
    """Blocks of a create request; `inherited` are (item, response id) pairs from the chain."""
    d = RequestDraft()
    if not isinstance(body, dict):
        d.status, d.error = "error", "request body is not a JSON object"
        return d
    d.model = as_str(body.get("model"))
    d.stream = as_bool(body.get("stream"))
    d.max_output_tokens = as_int(body.get("max_output_tokens"))
    d.previous_response_id = as_str(body.get("previous_response_id"))
    d.facts["generate"] = as_bool(body.get("generate"))
    d.facts["prompt_cache_key"] = as_str(body.get("prompt_cache_key"))
    d.facts["diagnostics_requested"], d.facts["diagnostics_baseline"] = cachediag.responses_request(body)
    d.facts["client_metadata"] = as_dict(body.get("client_metadata"))
    d.facts["metadata"] = as_dict(body.get("metadata"))
    d.facts["user"] = as_str(body.get("user")) or as_str(body.get("safety_identifier"))
    fmt = as_dict(as_dict(body.get("text")).get("format"))
    d.facts["json_schema_output"] = fmt.get("type") == "json_schema"

    tools = body.get("tools")
    if tools is not None and not isinstance(tools, list):
        d.warn("tools is not a list")
    each_item(memo, "responses.tools", as_list(tools), d,
              lambda tool, i: d.blocks.append(_tool_block(tool, f"tools[{i}]", "system", "tool", d.tool_names)))

    instructions = body.get("instructions")
    if isinstance(instructions, str) and instructions:
        d.blocks.append(
            BlockDraft(
                "instructions", "instruction_text", "system", instructions, instructions, "instructions"
            )
        )
    elif isinstance(instructions, list):  # instructions may also be an item list
        for j, item in enumerate(instructions):
            _item(item, f"instructions[{j}]", j, None, d, {})

    raw_input = body.get("input")
    if raw_input is not None and not isinstance(raw_input, str | list):
        d.warn("input is neither a string nor a list")
    call_names = CallNames()
    position = 0
    # inherited items keep the id of the response that carried them: group runs by origin
    run: list[Any] = []
    run_origin: str | None = None
    run_start = 0

    def flush() -> None:
        def one(item: Any, index: int, origin: str | None = run_origin) -> None:
            _item(item, f"input[{index}]", index, origin, d, call_names)

        each_item(memo, f"responses.input:{run_origin}", run, d, one, call_names, start=run_start)

    for item, origin in inherited:
        if run and origin != run_origin:
            flush()
            run, run_start = [], position
        run_origin = origin
        run.append(item)
        position += 1
    if run:
        flush()
    if isinstance(raw_input, str):
        if raw_input:
            d.blocks.append(BlockDraft("input", "message_text", "user", raw_input, raw_input, "message"))
    else:
        run, run_origin, run_start = as_list(raw_input), None, position
        flush()
        position += len(run)
    if not complete:
        d.warn(f"previous_response_id {d.previous_response_id} could not be fully resolved")
    return d


def _tool_block(tool: Any, path: str, role: Role, wire_type: str, names: list[str]) -> BlockDraft:
    t = as_dict(tool)
    ttype = as_str(t.get("type")) or ""
    name = as_str(t.get("name")) or as_str(as_dict(t.get("function")).get("name")) or ttype or None
    if ttype == "namespace":
        for inner in as_list(t.get("tools")):
            inner_name = as_str(as_dict(inner).get("name"))
            if inner_name:
                names.append(inner_name)
    elif name:
        names.append(name)
    return structured_draft(path, "tool_definition", role, tool, wire_type, tool_name=name)


def _item(
    item: Any, path: str, index: int, origin: str | None, d: RequestDraft, call_names: CallNames | dict[str, str]
) -> None:
    """Blocks of one input item (a message becomes one block per content part)."""
    if not isinstance(item, dict):
        if isinstance(item, str):
            d.blocks.append(
                BlockDraft(
                    path,
                    "message_text",
                    "user",
                    item,
                    item,
                    "message",
                    item_index=index,
                    inherited_from=origin,
                )
            )
        else:
            d.warn(f"{path} is not an object")
        return
    itype = as_str(item.get("type")) or ("message" if "role" in item else "")
    common = {"item_index": index, "inherited_from": origin}
    if itype == "message":
        role = norm_role(item.get("role"))
        kinds = as_list(
            as_dict(item.get("internal_chat_message_metadata_passthrough")).get("content_item_kinds")
        )
        content = item.get("content")
        if isinstance(content, str):
            hints = {"codex_item_kind": kinds[0]} if kinds and isinstance(kinds[0], str) else {}
            if content:
                d.blocks.append(
                    BlockDraft(
                        f"{path}.content",
                        text_kind(role),
                        role,
                        content,
                        content,
                        "message",
                        hints=hints,
                        **common,
                    )
                )
            return
        for j, part in enumerate(as_list(content)):
            hints = {"codex_item_kind": kinds[j]} if j < len(kinds) and isinstance(kinds[j], str) else {}
            d.blocks.append(_content_part(part, f"{path}.content[{j}]", role, hints, common))
        return
    if itype == "additional_tools":
        role = norm_role(item.get("role"), "developer")
        for k, tool in enumerate(as_list(item.get("tools"))):
            d.blocks.append(_tool_block(tool, f"{path}.tools[{k}]", role, "additional_tools", d.tool_names))
            d.blocks[-1].item_index, d.blocks[-1].inherited_from = index, origin
        return
    if itype == "reasoning":
        texts = [as_str(as_dict(p).get("text")) or "" for p in as_list(item.get("summary"))]
        texts += [as_str(as_dict(p).get("text")) or "" for p in as_list(item.get("content"))]
        text = "\n".join(t for t in texts if t)
        if not text:
            text = f"[encrypted reasoning {len(str(item.get('encrypted_content') or ''))} bytes]"
        d.blocks.append(BlockDraft(path, "reasoning", "assistant", item, text, itype, **common))
        return
    if itype in CALL_TYPES:
        call_id = as_str(item.get("call_id")) or as_str(item.get("id"))
        name = as_str(item.get("name")) or itype.removesuffix("_call")
        if call_id:
            call_names[call_id] = name
        d.blocks.append(
            structured_draft(
                path, "tool_call", "assistant", item, itype, tool_name=name, call_id=call_id, **common
            )
        )
        return
    if itype.endswith("_output"):
        call_id = as_str(item.get("call_id")) or as_str(item.get("id"))
        output = item.get("output")
        text = parts_text(output) if output is not None else json_text(item)
        d.blocks.append(
            BlockDraft(
                path,
                "tool_result",
                "tool",
                item,
                text,
                itype,
                tool_name=call_names.get(call_id or ""),
                call_id=call_id,
                **common,
            )
        )
        return
    if itype in ("compaction", "compaction_summary"):
        text = f"[encrypted compaction {len(str(item.get('encrypted_content') or ''))} bytes]"
        d.blocks.append(BlockDraft(path, "compaction", "assistant", item, text, itype, **common))
        return
    if not itype:
        d.warn(f"{path} has no type")
    role = norm_role(item.get("role"), "user")
    d.blocks.append(structured_draft(path, "other", role, item, itype or "unknown", **common))


def _content_part(part: Any, path: str, role: Role, hints: dict[str, str], common: dict) -> BlockDraft:
    if isinstance(part, str):
        return BlockDraft(path, text_kind(role), role, part, part, "input_text", hints=hints, **common)
    p = as_dict(part)
    ptype = as_str(p.get("type")) or ""
    if ptype in TEXT_PART_TYPES or (not ptype and isinstance(p.get("text"), str)):
        text = as_str(p.get("text")) or as_str(p.get("refusal")) or ""
        return BlockDraft(path, text_kind(role), role, part, text, ptype or "text", hints=hints, **common)
    if ptype == "input_image":
        return BlockDraft(path, "image", role, part, parts_text([part]), ptype, hints=hints, **common)
    if ptype == "input_file":
        return BlockDraft(path, "document", role, part, parts_text([part]), ptype, hints=hints, **common)
    return structured_draft(path, "other", role, part, ptype or "unknown", hints=hints, **common)


# --- responses -------------------------------------------------------------------


class ResponsesStream:
    """Feed Responses events (SSE `data:` payloads or WebSocket frames); read the result."""

    def __init__(self) -> None:
        self.added: dict[int, dict] = {}
        self.done: dict[int, dict] = {}
        self.index_of: dict[str, int] = {}
        self.deltas: dict[str, list[str]] = {}
        self.final: dict | None = None
        self.response_id: str | None = None
        self.model: str | None = None
        self.error = None
        self.bad_events = 0
        self.events = 0
        self.diagnostics = None

    def feed(self, obj: Any, headers: dict | None = None) -> None:
        if not isinstance(obj, dict):
            self.bad_events += 1
            return
        self.events += 1
        etype = obj.get("type")
        response = as_dict(obj.get("response"))
        if response:
            self.response_id = as_str(response.get("id")) or self.response_id
            self.model = as_str(response.get("model")) or self.model
            self.diagnostics = cachediag.from_responses(response) or self.diagnostics
        out_index = as_int(obj.get("output_index"))
        if etype == "response.output_item.added" and out_index is not None:
            item = dict(as_dict(obj.get("item")))
            self.added[out_index] = item
            if as_str(item.get("id")):
                self.index_of[item["id"]] = out_index
        elif etype == "response.output_item.done" and out_index is not None:
            self.done[out_index] = as_dict(obj.get("item"))
        elif isinstance(etype, str) and etype.endswith(".delta"):
            key = as_str(obj.get("item_id")) or f"#{out_index}"
            kind = etype.removeprefix("response.").removesuffix(".delta")
            self.deltas.setdefault(f"{key}|{kind}", []).append(str(obj.get("delta") or ""))
        elif etype in ("response.completed", "response.incomplete", "response.failed", "response.done"):
            self.final = response
            if etype == "response.failed" or isinstance(response.get("error"), dict):
                err = response.get("error")
                if isinstance(err, dict):
                    self.error = classify_error(None, {"error": err}, rule_prefix="response.failed:")
                else:
                    self.error = classify_error(
                        None, {"error": {"code": "response_failed"}}, rule_prefix="response.failed:"
                    )
        elif etype == "error":
            status = as_int(obj.get("status")) or as_int(obj.get("status_code"))
            self.error = classify_error(
                status, obj, headers or as_dict(obj.get("headers")), rule_prefix="stream:"
            )

    def _assembled(self) -> list[dict]:
        items = []
        for index in sorted(set(self.added) | set(self.done)):
            if index in self.done:
                items.append(self.done[index])
                continue
            item = dict(self.added[index])
            key = as_str(item.get("id")) or f"#{index}"
            itype = as_str(item.get("type")) or ""
            if itype == "message":
                text = "".join(self.deltas.get(f"{key}|output_text", []))
                item["content"] = [{"type": "output_text", "text": text}]
            elif itype == "function_call":
                item["arguments"] = str(item.get("arguments") or "") + "".join(
                    self.deltas.get(f"{key}|function_call_arguments", [])
                )
            elif itype == "custom_tool_call":
                item["input"] = str(item.get("input") or "") + "".join(
                    self.deltas.get(f"{key}|custom_tool_call_input", [])
                )
            elif itype == "reasoning":
                text = "".join(self.deltas.get(f"{key}|reasoning_summary_text", []))
                item["summary"] = [{"type": "summary_text", "text": text}] if text else []
            items.append(item)
        return items

    def result(self, expect_terminal: bool = True) -> ParsedResponse:
        final = self.final or {}
        output = [o for o in as_list(final.get("output")) if isinstance(o, dict)]
        if not output:
            output = self._assembled()
        text, reasoning, calls = _summarise_output(output)
        status = as_str(final.get("status"))
        stop = status
        if status == "incomplete":
            stop = as_str(as_dict(final.get("incomplete_details")).get("reason")) or "incomplete"
        cut_off = self.final is None and expect_terminal
        parse_status, parse_error, error = stream_outcome(
            self.error,
            "stream ended before a terminal response event" if cut_off else None,
            bool(self.events),
            self.bad_events,
            "stream events",
        )
        return ParsedResponse(
            response_id=as_str(final.get("id")) or self.response_id,
            model=as_str(final.get("model")) or self.model,
            text=text,
            reasoning=reasoning,
            tool_calls=calls,
            output_items=output,
            stop_reason=stop,
            usage=responses_usage(final.get("usage")),
            error=error,
            parse_status=parse_status,
            parse_error=parse_error,
            cache_diagnostics=cachediag.from_responses(final) or self.diagnostics,
        )


def _summarise_output(output: list[dict]) -> tuple[str, str, list[ToolCall]]:
    text: list[str] = []
    reasoning: list[str] = []
    calls: list[ToolCall] = []
    for item in output:
        itype = as_str(item.get("type")) or ""
        if itype == "message":
            for part in as_list(item.get("content")):
                p = as_dict(part)
                if p.get("type") in ("output_text", "text"):
                    text.append(str(p.get("text") or ""))
        elif itype == "reasoning":
            for key in ("summary", "content"):
                for part in as_list(item.get(key)):
                    t = as_str(as_dict(part).get("text"))
                    if t:
                        reasoning.append(t)
        elif itype in CALL_TYPES:
            call_id = str(item.get("call_id") or item.get("id") or f"index-{len(calls)}")
            if itype == "function_call":
                kind, args = "function", str(item.get("arguments") or "")
            elif itype == "custom_tool_call":
                kind, args = "custom", str(item.get("input") or "")
            elif itype in (
                "web_search_call",
                "file_search_call",
                "code_interpreter_call",
                "image_generation_call",
            ):
                kind, args = "server", canonical_json(item.get("action") or {})
            else:
                kind, args = (
                    "other",
                    canonical_json(item.get("action") or item.get("arguments") or {}),
                )
            name = str(item.get("name") or itype.removesuffix("_call"))
            calls.append(ToolCall(call_id=call_id, name=name, arguments=args, kind=kind, index=len(calls)))
    return "".join(text), "\n".join(reasoning), calls


def parse_response(raw: bytes | None, sse: bool) -> ParsedResponse:
    """A 2xx HTTP response: SSE event stream or a JSON response / compaction object."""
    if sse:
        stream = ResponsesStream()
        parsed = parse_sse(raw)
        for ev in parsed.events:
            if ev.data.strip() == "[DONE]":
                continue
            try:
                stream.feed(loads(ev.data))
            except ValueError:
                stream.bad_events += 1
        return stream.result()
    obj, failure = load_response_object(raw)
    if obj is None:
        return failure
    if isinstance(obj.get("error"), dict) and not obj.get("output"):
        return ParsedResponse(
            response_id=as_str(obj.get("id")), error=classify_error(None, obj, rule_prefix="body:")
        )
    stream = ResponsesStream()
    stream.final = obj
    stream.events = 1
    return stream.result()


# --- usage -----------------------------------------------------------------------------


def responses_usage(u: Any) -> Usage:
    """OpenAI Responses: cached_tokens (and cache_write_tokens) are inside input_tokens."""
    if not isinstance(u, dict) or not u:
        return Usage()
    return inclusive(
        total=reported(u.get("input_tokens")),
        read=reported(get_path(u, "input_tokens_details", "cached_tokens")),
        write=reported(get_path(u, "input_tokens_details", "cache_write_tokens")),
        output=reported(u.get("output_tokens")),
        reasoning=reported(get_path(u, "output_tokens_details", "reasoning_tokens")),
        raw=u,
    )


# --- the protocol ------------------------------------------------------------------------


class OpenAIResponses(Protocol):
    """Responses over HTTP and WebSocket; continuations resolve through a per-capture `ResponsesChain`."""

    api = "responses"
    ws_api = "responses-websocket"
    title = "OpenAI Responses"
    order = 20
    endpoints = (
        Endpoint(re.compile(r"/responses/compact/?$"), "compact"),
        Endpoint(re.compile(r"/responses/?$"), "generate"),
    )
    history_arrays = ("input",)
    content_fields = frozenset({"tools", "instructions", "input"})
    tool_results = {
        "function_call_output": "function_call_output input items",
        "custom_tool_call_output": "custom_tool_call_output input items",
        "local_shell_call_output": "local_shell_call_output input items",
    }

    def new_state(self) -> ResponsesChain:
        return ResponsesChain()

    def parse_request(self, body: Any, ctx: RequestContext) -> RequestDraft:
        previous = as_str(as_dict(body).get("previous_response_id"))
        inherited, complete = _chain(ctx).resolve(previous)
        draft = parse_request(body, inherited, complete, ctx.memo)
        draft.complete = complete
        return draft

    def remember(self, state: ResponsesChain, body: Any, draft: RequestDraft, response: ParsedResponse) -> None:
        """Keep what a later `previous_response_id` continuation needs to rebuild its full input."""
        if response.response_id and body is not None:
            state.record(response.response_id, draft.previous_response_id, input_items(body),
                         response.output_items, draft.complete)

    def parse_response(self, raw: bytes, sse: bool, endpoint: str) -> ParsedResponse:
        return parse_response(raw, sse)

    def usage(self, raw_usage: Any) -> Usage:
        return responses_usage(raw_usage)

    def replayed_call(self, wire: dict[str, Any]) -> ReplayedCall | None:
        for key in ("input", "arguments"):  # custom tools carry free-form input, functions JSON arguments
            if key in wire:
                return ReplayedCall(as_str(wire.get("name")), wire[key])
        return None

    # --- WebSocket: `response.create` / `response.append` frames, events back --------------

    def ws_turns(self, messages: Sequence[WsMessage]) -> list[WsTurn]:
        turns: list[WsTurn] = []
        for message in sorted(messages, key=lambda m: m.index):
            if message.from_client:
                obj = frame_json(message.content)
                kind = obj.get("type") if isinstance(obj, dict) else None
                if kind in WS_REQUEST_TYPES:
                    turns.append(WsTurn(message, obj, []))
                elif obj is None and b"response.create" in message.content[:4096]:
                    turns.append(WsTurn(message, None, []))  # a request frame we cannot read
            elif turns:
                turns[-1].server.append(message)
        return turns

    def parse_ws_request(self, obj: Any, ctx: RequestContext, last_response_id: str | None) -> tuple[Any, RequestDraft]:
        if obj is None:
            return None, RequestDraft(status="error", error="request frame is not valid JSON")
        body = {k: v for k, v in obj.items() if k != "type"}
        previous = as_str(body.get("previous_response_id"))
        if obj.get("type") == "response.append" and previous is None:
            previous = last_response_id
        inherited, complete = _chain(ctx).resolve(previous)
        draft = parse_request(body, inherited, complete, ctx.memo)
        draft.previous_response_id = previous
        draft.complete = complete
        if draft.facts.get("generate") is False:
            draft.endpoint = "warmup"  # a prewarm: the client asks the server to load the context only
        return body, draft

    def parse_ws_response(self, frames: Sequence[WsMessage]) -> ParsedResponse:
        stream = ResponsesStream()
        for frame in frames:
            parsed = frame_json(frame.content)
            if parsed is None:
                stream.bad_events += 1
            else:
                stream.feed(parsed)
        return stream.result()


def _chain(ctx: RequestContext) -> ResponsesChain:
    """The capture's chain; a request parsed on its own gets an empty one (its continuation stays unresolved)."""
    return ctx.state if isinstance(ctx.state, ResponsesChain) else ResponsesChain()


PROTOCOL = OpenAIResponses()
