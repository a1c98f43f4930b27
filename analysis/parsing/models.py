"""Normalised structures the protocol parsers produce and the analyzer consumes.

These pydantic models are the boundary between the pure parsers (no I/O) and
everything downstream: the analyzer turns them into Parquet tables, the reports
and attachments read those tables. Vocabulary values are plain strings listed in
the ``Literal`` aliases below so that SQL and templates can use them directly.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

# --- vocabularies -----------------------------------------------------------

# A registered protocol's api name (`analysis.protocols.registry`): "messages", "responses",
# "responses-websocket", "chat-completions", "gemini", ... — open, so a new protocol needs no edit here.
Api = str
Transport = Literal["sse", "json", "websocket", "stream", "none"]

BlockKind = Literal[
    "tool_definition",  # one tool (or namespace of tools) offered to the model
    "instruction_text",  # system/developer text
    "message_text",  # user/assistant text
    "tool_call",  # a call the model made, replayed in history
    "tool_result",  # output of a tool returned to the model
    "reasoning",  # thinking / reasoning item, possibly encrypted
    "image",  # image or other binary media (placeholder, never the bytes)
    "document",  # document / file part
    "compaction",  # compaction / summary item produced by the provider
    "other",  # anything else, kept with its wire type in `wire_type`
]
Role = Literal["system", "developer", "user", "assistant", "tool"]
Source = Literal[
    "platform_rules",
    "tool_catalogue",
    "plugin_catalogue",  # plugin / skill / MCP catalogue
    "project_instructions",  # AGENTS.md, CLAUDE.md, ...
    "runtime_environment",  # cwd, date, OS, shell, permissions, git status
    "system_reminder",
    "user_task",
    "assistant_output",
    "tool_call",
    "tool_result",
    "summary",  # summary / compaction
    "unknown",
    "mixed",  # a block whose segments come from several sources (see Block.segments)
]
Authority = Literal["platform", "project", "user", "data", "mixed"]
Scope = Literal["global", "repository", "directory", "session", "turn", "mixed"]
Lifetime = Literal["client_version", "project", "session", "turn", "mixed"]
ContentType = Literal["instruction", "data", "mixed"]

Purpose = Literal[
    "main",
    "subagent",
    "title",
    "compaction",
    "probe",  # quota / connectivity / initialisation probe
    "count_tokens",
    "structured_side",  # routing, classifier, next-speaker, other structured side calls
    "warmup",
    "other",
]
ErrorLayer = Literal[
    "model_service",  # 5xx, overloaded, timeouts
    "auth",  # authentication / organisation / permission
    "quota",  # billing, insufficient quota, usage limits
    "rate_limit",
    "context_length",
    "validation",  # request validation (4xx invalid request)
    "protocol",  # stream cut, unparsable body, unexpected shape
]
CountStatus = Literal["reported", "estimated", "not_available"]
ParseStatus = Literal["ok", "partial", "error", "not_applicable"]


# --- request side -------------------------------------------------------------


class Segment(BaseModel):
    """A section inside a block's text with attributes of its own (an `# Environment` section, a
    `<system-reminder>`, a skills list...). A block's segments tile its text."""

    start: int  # UTF-8 byte offset in Block.text
    end: int
    source: Source
    authority: Authority
    scope: Scope
    lifetime: Lifetime
    content_type: ContentType
    rule_id: str
    label: str = ""  # the section heading or tag that starts it, if any


class Block(BaseModel):
    """One ordered unit of what the model received, with its provenance."""

    position: int  # 0-based order within the request's effective context
    path: str  # stable position path: "tools[3]", "system[1]", "messages[4].content[0]", "input[7]"
    kind: BlockKind
    wire_type: str = ""  # the protocol's own type, e.g. "tool_result", "function_call_output"
    role: Role
    source: Source
    authority: Authority
    scope: Scope
    lifetime: Lifetime
    content_type: ContentType
    rule_id: str  # the attribution rule that produced source..content_type, e.g. "claude.env-message"
    text: str  # canonical text used for tokenising and diffing (JSON for structured blocks)
    bytes: int  # UTF-8 size of `text`
    content_hash: str  # sha256 hex of the canonical content (cache_control excluded)
    cache_breakpoint: str | None = None  # None, "ephemeral", "5m" or "1h"
    tool_name: str | None = None  # tool definitions, calls and results (where known)
    call_id: str | None = None  # tool calls and results: the linking id
    is_error: bool | None = None  # tool results: the client flagged an error
    # Responses continuations: the response id whose chain supplied this block (None = sent in this body)
    inherited_from: str | None = None
    # sections with attributes of their own; empty: the block is one segment with the block's attributes
    segments: list[Segment] = Field(default_factory=list)

    def __eq__(self, other: object) -> bool:
        """Field equality, as pydantic's, without its generic checks (about 1.5 µs a call): the
        analyzer compares resent histories block by block (`analysis.blocks.sequences`)."""
        if other.__class__ is Block:
            return self.__dict__ == other.__dict__  # type: ignore[attr-defined]
        return super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]  # mutable, as before: defining __eq__ keeps it unhashable


class CallIdentity(BaseModel):
    """Who sent a request and which session/thread it belongs to."""

    client: str = "unknown"  # claude-code, codex, kimi-code, kimi-cli, grok-cli, gemini-cli, opencode, ...
    client_version: str | None = None
    client_rule: str = "none"  # rule id that identified the client
    session_id: str | None = None
    thread_id: str | None = None
    parent_thread_id: str | None = None
    turn_id: str | None = None
    prompt_cache_key: str | None = None
    user_id: str | None = None  # e.g. Claude metadata.user_id (device/account), as given
    evidence: dict[str, str] = Field(default_factory=dict)  # header/body field -> value used


class PurposeInfo(BaseModel):
    purpose: Purpose
    rule_id: str
    evidence: list[str] = Field(default_factory=list)  # human-readable facts, e.g. "max_tokens=1"


class ParsedRequest(BaseModel):
    api: Api
    endpoint: str  # "generate", "count_tokens", "compact", "warmup", "other"
    model: str | None = None
    stream: bool | None = None
    max_output_tokens: int | None = None
    blocks: list[Block] = Field(default_factory=list)
    n_tools: int = 0
    tool_names: list[str] = Field(default_factory=list)
    previous_response_id: str | None = None  # Responses continuation
    effective_input_complete: bool = True  # False when a continuation could not be resolved
    top_level_cache_control: str | None = None  # Anthropic automatic caching
    # the request asked the provider for cache diagnostics (Anthropic `diagnostics`, Responses
    # `prompt_cache_options.comparison_response_id`), comparing with this response id (None: first turn)
    diagnostics_requested: bool = False
    diagnostics_baseline: str | None = None
    parse_status: ParseStatus = "ok"
    parse_error: str | None = None
    warnings: list[str] = Field(default_factory=list)


# --- response side --------------------------------------------------------------


class TokenCount(BaseModel):
    value: int | None = None
    status: CountStatus = "not_available"


class Usage(BaseModel):
    """Token usage normalised across providers; never a silent zero."""

    input_total: TokenCount = Field(default_factory=TokenCount)  # everything the model read
    input_uncached: TokenCount = Field(default_factory=TokenCount)
    cache_read: TokenCount = Field(default_factory=TokenCount)
    cache_write: TokenCount = Field(default_factory=TokenCount)
    cache_write_5m: TokenCount = Field(default_factory=TokenCount)
    cache_write_1h: TokenCount = Field(default_factory=TokenCount)
    output: TokenCount = Field(default_factory=TokenCount)
    reasoning: TokenCount = Field(default_factory=TokenCount)
    # "additive": cache counters are on top of the input count (Anthropic);
    # "inclusive": cache counters are inside the input count (OpenAI, Chat, Gemini);
    # "unknown": no usage reported.
    cache_semantics: Literal["additive", "inclusive", "unknown"] = "unknown"
    raw: dict = Field(default_factory=dict)  # the provider's usage object as reported


class ToolCall(BaseModel):
    call_id: str
    name: str
    arguments: str  # JSON text for function tools, free-form input for custom tools
    kind: Literal["function", "custom", "server", "other"] = "function"
    index: int = 0  # position among the response's tool calls


class ErrorInfo(BaseModel):
    layer: ErrorLayer
    code: str | None = None  # provider error type/code, e.g. "rate_limit_error"
    message: str | None = None
    http_status: int | None = None
    retryable: bool = False
    retry_after_s: float | None = None
    rule_id: str = ""


class CacheDiagnostics(BaseModel):
    """The provider's own verdict on this request's prompt-cache reuse, as it answered a request that
    asked for one (`analysis.cachediag`): one of the three witnesses of a miss, beside the bytes and
    the client's claim."""

    # miss | hit | no_divergence (asked with a baseline, nothing diverged) | pending (still comparing)
    # | baseline_not_found | unavailable | other (a type this build does not know)
    outcome: str
    reason: str | None = None  # the provider's own word: `tools_changed`, `input_changed`, ...
    missed_tokens: int | None = None  # tokens the provider says missed after the divergence
    reusable_tokens: int | None = None  # OpenAI: the compared response's reusable prefix
    raw: str = ""  # the provider's object as JSON text


class ParsedResponse(BaseModel):
    response_id: str | None = None
    model: str | None = None
    text: str = ""
    reasoning: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    output_items: list[dict] = Field(default_factory=list)  # Responses output items, for chaining
    stop_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)
    error: ErrorInfo | None = None
    parse_status: ParseStatus = "ok"
    parse_error: str | None = None
    counted_input_tokens: int | None = None  # count_tokens endpoints: the count (not a usage)
    cache_diagnostics: CacheDiagnostics | None = None  # where the response carries the provider's verdict


class ModelCall(BaseModel):
    """One model request and its response, fully normalised."""

    call_key: str  # flow_id for HTTP, "<flow_id>#<message index>" for a WebSocket request frame
    flow_id: str
    ws_index: int | None = None
    provider: str
    api: Api
    transport: Transport
    ts_start: float
    ts_first_byte: float | None = None
    ts_response_headers: float | None = None  # HTTP: when the response headers arrived
    ts_end: float | None = None
    http_status: int | None = None
    identity: CallIdentity
    purpose: PurposeInfo
    request: ParsedRequest
    response: ParsedResponse
    request_bytes: int = 0
