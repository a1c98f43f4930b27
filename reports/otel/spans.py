"""A capture as OpenTelemetry GenAI spans: `invoke_agent` per user turn, `chat` per model call,
`execute_tool` per tool call, following the GenAI semantic conventions.

Read from the analysis views only. Trace ids derive from the capture and session, span ids from
the request or call, so exporting the same capture twice gives the same ids (a consumer can
de-duplicate). Token counts follow the convention: `gen_ai.usage.input_tokens` includes cached
tokens, so where a provider reports cache reads and writes on top of its input count (Anthropic)
they are added in. Facts only ctxtap knows go under `ctxtap.*`. Message content is left out
unless asked for, and then passes the credential redactor and the personal-data pseudonymiser
again before it leaves (the capture is already credential-redacted; this makes sure).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ctxtap.wire.families import provider


def _provider_name(name: str | None) -> str | None:
    """The convention's gen_ai.provider.name (`ctxtap.wire.families`), else ctxtap's own name."""
    known = provider(name)
    return known.otel_name if known is not None else name


CONTENT_LIMIT = 64_000  # characters of content per span attribute; longer is cut and flagged
SERVICE_NAME = "ctxtap"


@dataclass
class Span:
    """One span, independent of the wire encoding (see reports.otel.otlp)."""

    trace_id: bytes
    span_id: bytes
    parent_id: bytes | None
    name: str
    start_ns: int
    end_ns: int
    kind: str  # internal, client
    attributes: dict[str, Any] = field(default_factory=dict)
    error: str | None = None  # a status message when the span failed


def _id(n: int, *parts: str) -> bytes:
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8", "surrogatepass")).digest()[:n]
    return digest if any(digest) else b"\x01" * n  # an all-zero id is invalid in OTLP


def _ns(ts: float | None) -> int:
    return int(round((ts or 0.0) * 1e9))


def _rows(con, query: str, *params) -> list[dict]:
    cur = con.execute(query, list(params))
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]


def _clean(attrs: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in attrs.items() if v is not None}


def input_tokens(row: dict) -> int | None:
    """The convention's input count: inclusive of cache reads and writes."""
    reported = row.get("input_tokens_reported")
    if reported is not None:
        return int(reported)  # requests.input_tokens_reported is uncached + cache read + cache write
    parts = [row.get("input_uncached_tokens"), row.get("cache_read_tokens"), row.get("cache_write_tokens")]
    return sum(int(p) for p in parts if p is not None) if any(p is not None for p in parts) else None


REQUESTS_SQL = """
SELECT r.*, p.cache_status, p.miss_cause, p.divergence_label
FROM requests r
LEFT JOIN prefix p ON p.capture_id = r.capture_id AND p.request_id = r.request_id
ORDER BY r.capture_id, r.session_id, r.seq_in_session
"""


def build_spans(con, content: bool = False, redact: Callable[[str], str] | None = None) -> list[Span]:
    """Every span of the captures the connection covers."""
    if content and redact is None:
        raise ValueError("content export needs a redactor")
    requests = _rows(con, REQUESTS_SQL)
    sources: dict[tuple[str, str], dict[str, int]] = {}
    for r in _rows(con, "SELECT capture_id, request_id, source, tokens_estimated FROM tokens_by_source"):
        sources.setdefault((r["capture_id"], r["request_id"]), {})[r["source"]] = int(r["tokens_estimated"] or 0)
    calls = _rows(con, "SELECT * FROM tool_calls WHERE request_id IS NOT NULL")
    blocks: dict[tuple[str, str], list[dict]] = {}
    if content:
        for b in _rows(con, "SELECT b.capture_id, b.request_id, b.role, b.kind, c.text FROM blocks b "
                            "JOIN t_block_content c USING (capture_id, content_hash) ORDER BY b.position"):
            blocks.setdefault((b["capture_id"], b["request_id"]), []).append(b)
    spans: list[Span] = []
    turn_spans: dict[tuple[str, str, int], Span] = {}
    by_request: dict[tuple[str, str], dict] = {}
    proposed = {(r["capture_id"], r["request_id"]) for r in requests}
    # a subagent whose delegation call has a tool span gets its own invoke_agent span under that span
    delegated = {(c["capture_id"], c["call_id"]) for c in calls if (c["capture_id"], c["request_id"]) in proposed}
    children: dict[tuple[str, str], Span] = {}
    for r in requests:
        key = (r["capture_id"], r["session_id"], int(r["turn_index"] or 0))
        trace = _id(16, r["capture_id"], r["session_id"])
        start, end = _ns(r["ts_start"]), _ns(r["ts_end"] or r["ts_start"])
        if r["thread_kind"] == "subagent" and (r["capture_id"], r["parent_call_id"]) in delegated:
            turn = children.get((r["capture_id"], r["thread_id"]))
            if turn is None:
                turn = children[(r["capture_id"], r["thread_id"])] = _child_agent(r, trace, start, end)
                spans.append(turn)
        else:
            turn = turn_spans.get(key)
        if turn is None:
            turn = turn_spans[key] = Span(
                trace, _id(8, *map(str, key)), None, f"invoke_agent {r['client'] or 'agent'}", start, end, "internal",
                _clean({"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": r["client"],
                        "gen_ai.provider.name": _provider_name(r["provider"]),
                        "gen_ai.conversation.id": r["session_id"], "ctxtap.turn_index": key[2],
                        "ctxtap.client_version": r["client_version"], "ctxtap.capture_id": r["capture_id"]}))
            spans.append(turn)
        turn.start_ns, turn.end_ns = min(turn.start_ns, start), max(turn.end_ns, end)
        chat = Span(trace, _id(8, r["capture_id"], r["request_id"]), turn.span_id, f"chat {r['model'] or ''}".strip(),
                    start, end, "client", _chat_attributes(r, sources.get((r["capture_id"], r["request_id"]), {})),
                    error=r["error_layer"])
        if content:
            chat.attributes.update(_chat_content(r, blocks.get((r["capture_id"], r["request_id"]), []), redact))
        spans.append(chat)
        by_request[(r["capture_id"], r["request_id"])] = {"row": r, "turn": turn}
    for c in calls:
        proposer = by_request.get((c["capture_id"], c["request_id"]))
        if proposer is None:
            continue
        row, turn = proposer["row"], proposer["turn"]
        carrier = by_request.get((c["capture_id"], c["result_request_id"])) if c["result_request_id"] else None
        start = _ns(row["ts_end"] or row["ts_start"])
        end = _ns(carrier["row"]["ts_start"]) if carrier else start
        attrs = _clean({
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": c["name"], "gen_ai.tool.call.id": c["call_id"],
            "gen_ai.tool.type": "extension" if c["kind"] == "server" else "function",
            "gen_ai.conversation.id": c["session_id"],
            "ctxtap.timing": "call_to_result_gap" if carrier else "no_result",
            "ctxtap.result_status": c["result_status"], "ctxtap.status_rule": c["status_rule"],
            "ctxtap.exit_code": c["exit_code"], "ctxtap.truncated": c["truncated"],
            "ctxtap.result_bytes": c["result_bytes"], "ctxtap.result_tokens": c["result_tokens"],
            "ctxtap.parallel_group_size": c["parallel_group_size"], "ctxtap.repeat_of": c["repeat_of"],
            "ctxtap.attempt": c["attempt"], "ctxtap.carried_requests": c["carried_requests"],
        })
        if content:
            attrs["gen_ai.tool.call.arguments"] = _cut(redact(c["arguments"] or ""))[0]
        span = Span(turn.trace_id, _id(8, c["capture_id"], c["session_id"], "tool", c["call_id"]), turn.span_id,
                    f"execute_tool {c['name']}", start, max(end, start), "internal", attrs,
                    error=c["result_status"] if c["result_status"] in ("error", "denied") else None)
        turn.end_ns = max(turn.end_ns, span.end_ns)
        spans.append(span)
    _cover_children(spans, children.values())
    return spans


def _child_agent(r: dict, trace: bytes, start: int, end: int) -> Span:
    """A subagent's invoke_agent span, under the tool span of the call that delegated to it."""
    parent = _id(8, r["capture_id"], r["session_id"], "tool", r["parent_call_id"])
    return Span(trace, _id(8, r["capture_id"], r["session_id"], "agent", r["thread_id"]), parent,
                f"invoke_agent {r['client'] or 'agent'}", start, end, "internal",
                _clean({"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": r["client"],
                        "gen_ai.agent.id": r["thread_id"], "gen_ai.provider.name": _provider_name(r["provider"]),
                        "gen_ai.conversation.id": r["session_id"], "ctxtap.turn_index": r["turn_index"],
                        "ctxtap.thread_id": r["thread_id"], "ctxtap.thread_kind": r["thread_kind"],
                        "ctxtap.parent_thread_id": r["parent_thread_id"], "ctxtap.parent_call_id": r["parent_call_id"],
                        "ctxtap.client_version": r["client_version"], "ctxtap.capture_id": r["capture_id"]}))


def _cover_children(spans: list[Span], children) -> None:
    """The agent spans above a subagent's hold its time (a delegation's tool span is left as measured)."""
    by_id = {s.span_id: s for s in spans}
    for child in children:
        up = by_id.get(child.parent_id) if child.parent_id else None
        while up is not None:
            if up.attributes.get("gen_ai.operation.name") == "invoke_agent":
                up.start_ns, up.end_ns = min(up.start_ns, child.start_ns), max(up.end_ns, child.end_ns)
            up = by_id.get(up.parent_id) if up.parent_id else None


def _chat_attributes(r: dict, by_source: dict[str, int]) -> dict[str, Any]:
    attrs = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": _provider_name(r["provider"]),
        "gen_ai.request.model": r["model"], "gen_ai.response.model": r["model"],
        "gen_ai.response.id": r["response_id"], "gen_ai.conversation.id": r["session_id"],
        "gen_ai.response.finish_reasons": [r["stop_reason"]] if r["stop_reason"] else None,
        "gen_ai.usage.input_tokens": input_tokens(r), "gen_ai.usage.output_tokens": r["output_tokens"],
        "gen_ai.usage.cache_read.input_tokens": r["cache_read_tokens"],
        # the conventions renamed cache_creation to cache_write; consumers still reading the old name get both
        "gen_ai.usage.cache_write.input_tokens": r["cache_write_tokens"],
        "gen_ai.usage.cache_creation.input_tokens": r["cache_write_tokens"],
        "error.type": r["error_code"] or r["error_layer"] if r["error_layer"] else None,
        "http.response.status_code": r["status"],
        "ctxtap.request_id": r["request_id"], "ctxtap.session_source": r["session_source"],
        "ctxtap.thread_id": r["thread_id"], "ctxtap.thread_kind": r["thread_kind"], "ctxtap.purpose": r["purpose"],
        "ctxtap.seq_in_session": r["seq_in_session"], "ctxtap.turn_index": r["turn_index"],
        "ctxtap.api": r["api"], "ctxtap.transport": r["transport"], "ctxtap.ttfb_ms": r["ttfb_ms"],
        "ctxtap.cache_semantics": r["cache_semantics"], "ctxtap.cache_status": r["cache_status"],
        "ctxtap.miss_cause": r["miss_cause"], "ctxtap.divergence": r["divergence_label"],
        "ctxtap.input_tokens_estimated": r["input_tokens_estimated"], "ctxtap.cost_usd": r["cost_usd"],
        "ctxtap.n_tool_calls": r["n_tool_calls"],
    }
    for source, tokens in sorted(by_source.items()):
        attrs[f"ctxtap.source_tokens.{source}"] = tokens
    return _clean(attrs)


def _cut(text: str) -> tuple[str, bool]:
    return (text, False) if len(text) <= CONTENT_LIMIT else (text[:CONTENT_LIMIT], True)


def _chat_content(r: dict, blocks: list[dict], redact: Callable[[str], str]) -> dict[str, Any]:
    """gen_ai.system_instructions, gen_ai.input.messages, gen_ai.output.messages and gen_ai.tool.definitions,
    redacted, as JSON text (tool definitions as the provider's own JSON, one string each)."""
    system = [{"type": "text", "content": redact(b["text"] or "")} for b in blocks
              if b["role"] in ("system", "developer") and b["kind"] != "tool_definition"]
    tools = [redact(b["text"] or "") for b in blocks if b["kind"] == "tool_definition"]
    messages: list[dict] = []
    for b in blocks:
        if b["role"] in ("system", "developer") or b["kind"] == "tool_definition":
            continue
        part = {"type": b["kind"], "content": redact(b["text"] or "")}
        if messages and messages[-1]["role"] == b["role"]:
            messages[-1]["parts"].append(part)
        else:
            messages.append({"role": b["role"], "parts": [part]})
    output = [{"role": "assistant", "parts": [{"type": "text", "content": redact(r["response_text"] or "")}],
               "finish_reason": r["stop_reason"]}]
    attrs: dict[str, Any] = {}
    cut_any = False
    for name, value in (("gen_ai.system_instructions", system), ("gen_ai.input.messages", messages),
                        ("gen_ai.output.messages", output), ("gen_ai.tool.definitions", tools)):
        text, cut = _cut(json.dumps(value, ensure_ascii=False))
        attrs[name] = text
        cut_any = cut_any or cut
    attrs["ctxtap.content_truncated"] = cut_any
    return attrs
