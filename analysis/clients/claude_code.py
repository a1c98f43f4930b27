"""Claude Code (and the Agent SDK): Anthropic Messages with `system[]` blocks and `<system-reminder>`s.

Decisions worth knowing:
* the `x-anthropic-billing-header` attribution line is platform data with session
  lifetime: its hash changes per conversation; Anthropic strips it before
  caching, so it never breaks a cached prefix (`cache_transparent`);
* the environment arrives as a `# Environment` message, CLAUDE.md and git
  status as `<system-reminder>`s, the date as `# currentDate`.
"""

from __future__ import annotations

import re
from typing import Any

from ctxtap.analysis.blocks.drafts import BlockDraft
from ctxtap.analysis.clients.registry import Client
from ctxtap.analysis.clients.rules import (
    BILLING,
    ENVIRONMENT,
    PLATFORM,
    PLATFORM_TURN,
    PROBE,
    REMINDER,
    REQUEST_CLASS,
    SUMMARY,
    Context,
    Facts,
    IdentityContext,
    IdentityStage,
    IdentityStep,
    PurposeRule,
    Rule,
    contains,
    info,
    is_reminder,
    is_text,
    max_tokens_evidence,
    mentions_project_file,
    project_attrs,
    starts,
    tools_evidence,
)
from ctxtap.analysis.parsing.canonical import loads
from ctxtap.analysis.parsing.models import PurposeInfo

IDS = frozenset({"claude-code"})

# --- attribution -----------------------------------------------------------------------------


def system_array(d: BlockDraft, _: Context) -> bool:
    return is_text(d) and d.path.startswith("system")


def quota_probe(d: BlockDraft, _: Context) -> bool:
    return d.kind == "message_text" and d.role == "user" and d.text.strip().lower() in ("quota", "test")


RULES = (
    Rule("claude.billing-header", "x-anthropic-billing-header attribution line (per-conversation hash)",
         starts("x-anthropic-billing-header:"), BILLING, cache_transparent=True),
    Rule("claude.identity", "Claude Code / Agent SDK identity line",
         starts("You are Claude Code", "You are a Claude agent", roles=("system",)), PLATFORM),
    Rule("claude.env-message",
         "Claude Code `# Environment` message (cwd, platform, shell, OS, date, deferred tools)",
         lambda d, c: (
             starts("# Environment", roles=("system", "user"))(d, c)
             or contains("You have been invoked in the following environment", head=400)(d, c)
         ),
         ENVIRONMENT),
    Rule("claude.claude-md", "`# claudeMd` reminder carrying CLAUDE.md contents",
         lambda d, c: is_reminder(d, c) and ("# claudeMd" in d.text[:1000] or mentions_project_file(d, c)),
         project_attrs),
    Rule("claude.git-status", "`# gitStatus` reminder: git branch, status and recent commits",
         lambda d, c: is_reminder(d, c) and "# gitStatus" in d.text[:1000], ENVIRONMENT),
    Rule("claude.date-reminder", "`# currentDate` reminder", contains("# currentDate", head=400), ENVIRONMENT,
         IDS),
    Rule("claude.compaction-request", "Claude Code's compaction instruction (final user text)",
         contains("Your task is to create a detailed summary of the", "CRITICAL: Respond with TEXT ONLY", head=600),
         PLATFORM_TURN, compaction_request=True),
    Rule("claude.compact-summary", "summary of an earlier conversation after compaction",
         starts("This session is being continued from a previous conversation"), SUMMARY),
    Rule("claude.quota-probe", "startup quota probe (`quota` as the only text)", quota_probe, PLATFORM_TURN, IDS),
    Rule("claude.system-reminder", "`<system-reminder>` injected by Claude Code", is_reminder, REMINDER, IDS),
    Rule("claude.system-prompt", "Claude Code system[] blocks", system_array, PLATFORM, IDS),
)

# --- purpose -----------------------------------------------------------------------------------


def probe(f: Facts) -> PurposeInfo | None:
    block = f.block(lambda k: k.rule_id == "claude.quota-probe")
    if block is not None:
        return info("probe", "claude.quota-probe", f"{block.path}={block.text.strip()!r}", max_tokens_evidence(f))
    return None


def request_class(f: Facts) -> PurposeInfo | None:
    for name in ("x-claude-1p-request-class", "x-claude-code-request-class"):
        value = f.headers.get(name)
        if not value:
            continue
        evidence = f"{name}={value}"
        v = value.lower()
        if v == "main":
            return info("main", "claude.request-class", evidence, tools_evidence(f))
        for needle, purpose in (
            ("title", "title"),
            ("compact", "compaction"),
            ("summar", "compaction"),
            ("quota", "probe"),
            ("probe", "probe"),
            ("agent", "subagent"),
        ):
            if needle in v:
                return info(purpose, "claude.request-class", evidence)  # type: ignore[arg-type]
        return info("structured_side", "claude.request-class", evidence)
    return None


# --- identity ----------------------------------------------------------------------------------

_CC_VERSION = re.compile(rb"cc_version=(\d+\.\d+\.\d+)")
_LEGACY_SESSION = re.compile(r"_session_([0-9a-fA-F-]{8,})$")


def version_in_body(c: IdentityContext) -> None:
    """The billing header line names the Claude Code version even when the user agent does not."""
    if c.ident.client_version is None and c.raw_body:
        m = _CC_VERSION.search(c.raw_body[:200_000])
        if m:
            c.ident.client_version = m.group(1).decode()
            c.ident.evidence["body.cc_version"] = c.ident.client_version


def session_header(c: IdentityContext) -> None:
    c.put("session_id", c.headers.get("x-claude-code-session-id"), "header.x-claude-code-session-id")


def user_id(c: IdentityContext) -> None:
    """`metadata.user_id`: JSON with session_id (v2.1.78+) or legacy `..._session_<uuid>`."""
    raw: Any = c.facts.get("metadata_user_id")
    if not isinstance(raw, str) or not raw:
        return
    c.ident.user_id = c.ident.user_id or raw
    try:
        value = loads(raw)
    except ValueError:
        value = None
    if isinstance(value, dict):
        session = value.get("session_id")
        c.put("session_id", session if isinstance(session, str) else None, "body.metadata.user_id.session_id")
        return
    m = _LEGACY_SESSION.search(raw)
    if m:
        c.put("session_id", m.group(1), "body.metadata.user_id._session_")


def prompt_id(c: IdentityContext) -> None:
    c.put("turn_id", c.headers.get("x-claude-code-prompt-id"), "header.x-claude-code-prompt-id")


CLIENT = Client(
    name="claude_code",
    ids=IDS,
    order=10,
    rules=RULES,
    purposes=(PurposeRule(PROBE, probe), PurposeRule(REQUEST_CLASS, request_class)),
    identity=(
        IdentityStep(IdentityStage.VERSION, version_in_body),
        IdentityStep(IdentityStage.SESSION_HEADER, session_header),
        IdentityStep(IdentityStage.SESSION_USER_ID, user_id),
        IdentityStep(IdentityStage.TURN_PROMPT, prompt_id),
    ),
    title_markers=(
        "You are naming a coding session",
        "coming up with a title and a git branch name",
        "Generate a short kebab-case name",
        "Analyze if this message indicates a new conversation topic",  # older releases' topic detection
        "isNewTopic",
    ),
    side_markers=(
        "[SUGGESTION MODE:",
        "Write a short summary label describing what these tool calls accomplished",
        "The user stepped away and is coming back",
    ),
)
