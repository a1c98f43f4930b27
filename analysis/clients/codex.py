"""Codex CLI: OpenAI Responses over WebSocket or SSE, context as tagged developer/user messages.

Decisions worth knowing:
* the environment comes as an `<environment_context>` user message;
* `<permissions instructions>` is runtime environment (it describes the
  sandbox) but content type `instruction`, because it tells the model what to do;
* `content_item_kinds` metadata on an input item, when present, names the kind
  of each part; `x-codex-turn-metadata` names the request kind (turn, prewarm,
  compaction, memory, subagent) and carries session, thread and turn ids.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from ctxtap.analysis.blocks.drafts import BlockDraft
from ctxtap.analysis.clients.registry import Client
from ctxtap.analysis.clients.rules import (
    CLIENT_HEADERS,
    ENVIRONMENT,
    KIND_CLIENT,
    PERMISSIONS,
    PLATFORM,
    PLATFORM_SESSION,
    PLATFORM_TURN,
    PLUGINS,
    PROJECT,
    REMINDER,
    SUMMARY,
    TOOLS,
    TURN_KIND,
    UNKNOWN,
    USER_TASK,
    WARMUP,
    Attrs,
    Context,
    Facts,
    IdentityContext,
    IdentityStage,
    IdentityStep,
    PurposeRule,
    Rule,
    contains,
    info,
    project_attrs,
    starts,
    tools_evidence,
)
from ctxtap.analysis.parsing.canonical import loads
from ctxtap.analysis.parsing.models import PurposeInfo

IDS = frozenset({"codex"})

# --- attribution -----------------------------------------------------------------------------

_KIND_PREFIXES: list[tuple[str, Attrs]] = [
    ("model.", PLATFORM),
    ("host_skills.", PLUGINS),
    ("skills.", PLUGINS),
    ("plugins.", PLUGINS),
    ("apps.", PLUGINS),
    ("connectors.", PLUGINS),
    ("permissions.", PERMISSIONS),
    ("collaboration_mode.", PLATFORM_SESSION),
    ("multi_agent.", PLATFORM_SESSION),
    ("environments.", ENVIRONMENT),
    ("agents_md.", PROJECT),
    ("project_doc.", PROJECT),
    ("user.", USER_TASK),
]


def kind_attrs(kind: str) -> Attrs | None:
    for prefix, attrs in _KIND_PREFIXES:
        if kind.startswith(prefix):
            return attrs
    return None


def has_item_kind(d: BlockDraft, _: Context) -> bool:
    return bool(d.hints.get("codex_item_kind")) and kind_attrs(d.hints["codex_item_kind"]) is not None


RULES = (
    Rule("codex.additional-tools", "Codex code mode sends tools as an `additional_tools` input item",
         lambda d, _: d.kind == "tool_definition" and d.wire_type == "additional_tools", TOOLS, stage=KIND_CLIENT),
    Rule("codex.base-instructions", "Codex base instructions (developer message or `instructions`)",
         lambda d, c: (
             starts("You are Codex", roles=("system", "developer"))(d, c)
             or (c.client == "codex" and d.path == "instructions")
         ),
         PLATFORM),
    Rule("codex.skills", "`<skills_instructions>` skill catalogue", starts("<skills_instructions>", "<skill>"),
         PLUGINS),
    Rule("codex.plugins", "plugin / app catalogues and recommendations",
         starts("<plugins_instructions>", "<apps_instructions>", "<recommended_plugins>"), PLUGINS),
    Rule("codex.permissions", "`<permissions instructions>` sandbox policy", starts("<permissions instructions>"),
         PERMISSIONS),
    Rule("codex.collaboration-mode", "`<collaboration_mode>` / `<multi_agent_*>` harness modes",
         starts("<collaboration_mode>", "<multi_agent_role>", "<multi_agent_mode>", "<personality_spec>"),
         PLATFORM_SESSION),
    Rule("codex.agents-md", "`# AGENTS.md instructions for <dir>` / `<user_instructions>`",
         starts("# AGENTS.md instructions for", "<user_instructions>"), project_attrs),
    Rule("codex.environment-context", "`<environment_context>`: cwd, shell, date, timezone, filesystem",
         starts("<environment_context>"), ENVIRONMENT),
    Rule("codex.compaction-request", "inline compaction prompt",
         contains("You are performing a CONTEXT CHECKPOINT COMPACTION", head=400), PLATFORM_TURN,
         compaction_request=True),
    Rule("codex.compaction-summary", "handoff summary after compaction",
         starts("Another language model started to solve this problem"), SUMMARY),
    Rule("codex.harness-notice", "harness notices injected as user messages",
         starts("<turn_aborted>", "<subagent_notification>", "<user_shell_command>"), REMINDER),
    Rule("codex.item-kind", "Codex content_item_kinds metadata on the item", has_item_kind,
         lambda d, _: kind_attrs(d.hints["codex_item_kind"]) or UNKNOWN),
)

# --- turn metadata ---------------------------------------------------------------------------


@lru_cache(maxsize=256)
def _parse_turn_metadata(raw: str) -> dict[str, Any]:
    try:
        value = loads(raw)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def turn_metadata(headers: dict[str, str]) -> dict[str, Any]:
    """Parsed `x-codex-turn-metadata` JSON (empty when absent or malformed). Read-only: it is shared."""
    raw = headers.get("x-codex-turn-metadata")
    return _parse_turn_metadata(raw) if raw else {}


def frame_headers(facts: dict[str, Any]) -> list[tuple[str, str]]:
    """Header-like values Codex copies into a WebSocket frame's `client_metadata`."""
    client_metadata = facts.get("client_metadata")
    out: list[tuple[str, str]] = []
    for key, value in (client_metadata if isinstance(client_metadata, dict) else {}).items():
        if not isinstance(value, str):
            continue
        if key.startswith("ws_request_header_"):
            out.append((key.removeprefix("ws_request_header_").replace("_", "-"), value))
        elif key.startswith("x-"):
            out.append((key, value))
    return out


# --- purpose -----------------------------------------------------------------------------------


def warmup(f: Facts) -> PurposeInfo | None:
    if f.body_facts.get("generate") is False:
        return info("warmup", "codex.generate-false", "generate=false")
    if turn_metadata(f.headers).get("request_kind") == "prewarm":
        return info("warmup", "codex.turn-metadata-prewarm", "x-codex-turn-metadata.request_kind=prewarm")
    return None


def subagent_header(f: Facts) -> PurposeInfo | None:
    value = f.headers.get("x-openai-subagent")
    if not value:
        return None
    evidence = f"x-openai-subagent={value}"
    if value == "compact":
        return info("compaction", "codex.subagent-header", evidence)
    if value.startswith("memory"):
        return info("structured_side", "codex.subagent-header", evidence)
    return info("subagent", "codex.subagent-header", evidence)


def turn_metadata_kind(f: Facts) -> PurposeInfo | None:
    tm = turn_metadata(f.headers)
    if tm.get("compaction"):
        return info("compaction", "codex.turn-metadata-compaction", "x-codex-turn-metadata.compaction")
    if tm.get("request_kind") == "memory":
        return info("structured_side", "codex.turn-metadata-memory", "x-codex-turn-metadata.request_kind=memory")
    if tm.get("subagent_kind") or tm.get("parent_thread_id"):
        kind = tm.get("subagent_kind") or "parent_thread_id"
        return info("subagent", "codex.turn-metadata-subagent", f"x-codex-turn-metadata.subagent_kind={kind}")
    if f.headers.get("x-codex-parent-thread-id"):
        return info("subagent", "codex.parent-thread-header", "x-codex-parent-thread-id")
    return None


def turn(f: Facts) -> PurposeInfo | None:
    if turn_metadata(f.headers).get("request_kind") == "turn":
        return info("main", "codex.turn-metadata-turn", "x-codex-turn-metadata.request_kind=turn", tools_evidence(f))
    return None


# --- identity ----------------------------------------------------------------------------------


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _client_metadata(c: IdentityContext) -> dict[str, Any]:
    value = c.facts.get("client_metadata")
    return value if isinstance(value, dict) else {}


def sessions(c: IdentityContext) -> None:
    for name in ("session-id", "session_id", "conversation_id"):
        c.put("session_id", c.headers.get(name), f"header.{name}")
    c.put("session_id", _str(turn_metadata(c.headers).get("session_id")), "x-codex-turn-metadata.session_id")
    c.put("session_id", _str(_client_metadata(c).get("session_id")), "client_metadata.session_id")


def threads(c: IdentityContext) -> None:
    c.put("thread_id", _str(turn_metadata(c.headers).get("thread_id")), "x-codex-turn-metadata.thread_id")
    c.put("thread_id", _str(_client_metadata(c).get("thread_id")), "client_metadata.thread_id")


def parent_thread(c: IdentityContext) -> None:
    c.put("parent_thread_id", c.headers.get("x-codex-parent-thread-id"), "header.x-codex-parent-thread-id")
    c.put("parent_thread_id", _str(turn_metadata(c.headers).get("parent_thread_id")),
          "x-codex-turn-metadata.parent_thread_id")


def turns(c: IdentityContext) -> None:
    c.put("turn_id", _str(turn_metadata(c.headers).get("turn_id")), "x-codex-turn-metadata.turn_id")
    c.put("turn_id", _str(_client_metadata(c).get("turn_id")), "client_metadata.turn_id")


CLIENT = Client(
    name="codex",
    ids=IDS,
    order=20,
    rules=RULES,
    purposes=(
        PurposeRule(WARMUP, warmup),
        PurposeRule(CLIENT_HEADERS, subagent_header),
        PurposeRule(CLIENT_HEADERS, turn_metadata_kind),
        PurposeRule(TURN_KIND, turn),
    ),
    identity=(
        IdentityStep(IdentityStage.SESSION_CLIENT, sessions),
        IdentityStep(IdentityStage.THREAD_CLIENT, threads),
        IdentityStep(IdentityStage.PARENT_THREAD, parent_thread),
        IdentityStep(IdentityStage.TURN_CLIENT, turns),
    ),
    request_headers=frame_headers,
)
