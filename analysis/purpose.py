"""Why a request was sent: main turn, subagent, title, compaction, probe, warm-up, ...

Side requests must not be compared with main turns as one population (article
01). Rules run in order; the first that matches decides, and its id and the
facts it used are kept as evidence. Explicit signals (endpoint, `generate:false`,
client headers) come before text markers, text markers before shape heuristics.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from analysis.models import ParsedRequest, Purpose, PurposeInfo


@dataclass
class Facts:
    """Everything the rules may look at for one request."""

    endpoint: str
    api: str
    client: str
    headers: dict[str, str]  # lower-case names; frame metadata merged in for WebSocket frames
    turn_metadata: dict[str, Any]
    request: ParsedRequest
    body_facts: dict[str, Any]


PurposeRule = Callable[[Facts], PurposeInfo | None]

# text markers of side requests (wire-formats.md section 7)
TITLE_MARKERS = (
    "You are naming a coding session",
    "coming up with a title and a git branch name",
    "Generate a concise session title",
    "Generate a short kebab-case name",
    "Analyze if this message indicates a new conversation topic",
    "isNewTopic",
    "Generate a concise title",
    "generate a short title",
    "Generate a title for this conversation",
)
SIDE_MARKERS = (
    "You are a specialized Task Routing AI",
    "Analyze *only* the content and structure of your immediately preceding response",
    "determines whether a conversational AI assistant is stuck in an unproductive loop",
    "[SUGGESTION MODE:",
    "Write a short summary label describing what these tool calls accomplished",
    "The user stepped away and is coming back",
)
COMPACTION_RULES = frozenset(
    {
        "claude.compaction-request",
        "codex.compaction-request",
        "kimi.compaction-request",
        "gemini.compression-request",
    }
)


def _info(purpose: Purpose, rule_id: str, *evidence: str) -> PurposeInfo:
    return PurposeInfo(purpose=purpose, rule_id=rule_id, evidence=[e for e in evidence if e])


def count_tokens(f: Facts) -> PurposeInfo | None:
    if f.endpoint == "count_tokens":
        return _info("count_tokens", "endpoint.count-tokens", "endpoint=count_tokens")
    return None


def warmup(f: Facts) -> PurposeInfo | None:
    if f.body_facts.get("generate") is False:
        return _info("warmup", "codex.generate-false", "generate=false")
    if f.turn_metadata.get("request_kind") == "prewarm":
        return _info("warmup", "codex.turn-metadata-prewarm", "x-codex-turn-metadata.request_kind=prewarm")
    return None


def compact_endpoint(f: Facts) -> PurposeInfo | None:
    if f.endpoint == "compact":
        return _info("compaction", "endpoint.compact", "endpoint=/responses/compact")
    return None


def codex_subagent_header(f: Facts) -> PurposeInfo | None:
    value = f.headers.get("x-openai-subagent")
    if not value:
        return None
    evidence = f"x-openai-subagent={value}"
    if value == "compact":
        return _info("compaction", "codex.subagent-header", evidence)
    if value.startswith("memory"):
        return _info("structured_side", "codex.subagent-header", evidence)
    return _info("subagent", "codex.subagent-header", evidence)


def codex_turn_metadata(f: Facts) -> PurposeInfo | None:
    tm = f.turn_metadata
    if tm.get("compaction"):
        return _info("compaction", "codex.turn-metadata-compaction", "x-codex-turn-metadata.compaction")
    if tm.get("request_kind") == "memory":
        return _info(
            "structured_side", "codex.turn-metadata-memory", "x-codex-turn-metadata.request_kind=memory"
        )
    if tm.get("subagent_kind") or tm.get("parent_thread_id"):
        kind = tm.get("subagent_kind") or "parent_thread_id"
        return _info(
            "subagent", "codex.turn-metadata-subagent", f"x-codex-turn-metadata.subagent_kind={kind}"
        )
    if f.headers.get("x-codex-parent-thread-id"):
        return _info("subagent", "codex.parent-thread-header", "x-codex-parent-thread-id")
    return None


def compaction_text(f: Facts) -> PurposeInfo | None:
    for block in f.request.blocks:
        if block.rule_id in COMPACTION_RULES:
            return _info("compaction", "text.compaction", f"{block.path} matched {block.rule_id}")
    return None


def probe(f: Facts) -> PurposeInfo | None:
    for block in f.request.blocks:
        if block.rule_id == "claude.quota-probe":
            return _info(
                "probe", "claude.quota-probe", f"{block.path}={block.text.strip()!r}", _max_tokens(f)
            )
    if f.request.max_output_tokens == 1:
        return _info("probe", "generic.max-tokens-1", "max_tokens=1")
    return None


def title(f: Facts) -> PurposeInfo | None:
    for block in _instructions_and_last_user(f.request):
        if block.kind != "instruction_text" and f.request.n_tools:
            continue  # a user asking for a title in a tool-using turn is a main turn
        head = block.text[:600].lower()
        for marker in TITLE_MARKERS:
            if marker.lower() in head:
                return _info("title", "text.title", f"{block.path} contains {marker!r}", _tools(f))
    return None


def side_call(f: Facts) -> PurposeInfo | None:
    for block in _instructions_and_last_user(f.request):
        head = block.text[:600]
        for marker in SIDE_MARKERS:
            if marker in head:
                return _info("structured_side", "text.side-call", f"{block.path} contains {marker!r}")
    return None


def claude_request_class(f: Facts) -> PurposeInfo | None:
    for name in ("x-claude-1p-request-class", "x-claude-code-request-class"):
        value = f.headers.get(name)
        if not value:
            continue
        evidence = f"{name}={value}"
        v = value.lower()
        if v == "main":
            return _info("main", "claude.request-class", evidence, _tools(f))
        for needle, purpose in (
            ("title", "title"),
            ("compact", "compaction"),
            ("summar", "compaction"),
            ("quota", "probe"),
            ("probe", "probe"),
            ("agent", "subagent"),
        ):
            if needle in v:
                return _info(purpose, "claude.request-class", evidence)
        return _info("structured_side", "claude.request-class", evidence)
    return None


def structured_output(f: Facts) -> PurposeInfo | None:
    if f.body_facts.get("json_schema_output") and not f.request.n_tools:
        return _info("structured_side", "generic.json-schema-no-tools", "JSON schema output", "tools=0")
    return None


def codex_turn(f: Facts) -> PurposeInfo | None:
    if f.turn_metadata.get("request_kind") == "turn":
        return _info("main", "codex.turn-metadata-turn", "x-codex-turn-metadata.request_kind=turn", _tools(f))
    return None


def tools_present(f: Facts) -> PurposeInfo | None:
    if f.request.n_tools:
        return _info("main", "generic.tools-present", _tools(f), _max_tokens(f))
    return None


def user_task_no_tools(f: Facts) -> PurposeInfo | None:
    has_task = any(b.source == "user_task" for b in f.request.blocks)
    big = f.request.max_output_tokens is None or f.request.max_output_tokens > 1024
    if has_task and big:
        return _info("main", "generic.user-task-no-tools", "tools=0", "user task present", _max_tokens(f))
    return None


def fallback(f: Facts) -> PurposeInfo:
    return _info("other", "generic.other", _tools(f), _max_tokens(f))


RULES: list[PurposeRule] = [
    count_tokens,
    warmup,
    compact_endpoint,
    codex_subagent_header,
    codex_turn_metadata,
    compaction_text,
    probe,
    title,
    side_call,
    claude_request_class,
    structured_output,
    codex_turn,
    tools_present,
    user_task_no_tools,
]


def classify_purpose(f: Facts) -> PurposeInfo:
    for rule in RULES:
        info = rule(f)
        if info is not None:
            return info
    return fallback(f)


def _tools(f: Facts) -> str:
    return f"tools={f.request.n_tools}"


def _max_tokens(f: Facts) -> str:
    return f"max_tokens={f.request.max_output_tokens}" if f.request.max_output_tokens is not None else ""


def _instructions_and_last_user(request: ParsedRequest) -> list:
    blocks = [b for b in request.blocks if b.kind == "instruction_text"][:4]
    users = [b for b in request.blocks if b.kind == "message_text" and b.role == "user"]
    if users:
        blocks.append(users[-1])
    return blocks
