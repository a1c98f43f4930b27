"""Kimi Code / Kimi CLI: Chat Completions (Moonshot), one system prompt, reminders as user messages.

Decisions worth knowing:
* date-only reminders ("Today's date is ...") are runtime environment with
  session lifetime: they are re-sent only when the date changes;
* the single system prompt also carries environment and AGENTS.md sections; it
  is platform rules as a whole: attribution is per wire block, not per paragraph;
* `prompt_cache_key` is the CLI's session id (`session_...`).
"""

from __future__ import annotations

from ctxtap.analysis.clients.registry import Client
from ctxtap.analysis.clients.rules import (
    ENVIRONMENT,
    PLATFORM,
    PLATFORM_TURN,
    REMINDER,
    SUMMARY,
    IdentityContext,
    IdentityStage,
    IdentityStep,
    Rule,
    contains,
    is_date_reminder,
    is_reminder,
    starts,
)

IDS = frozenset({"kimi-code", "kimi-cli"})

RULES = (
    Rule("kimi.system-prompt", "Kimi Code / Kimi CLI system prompt", starts("You are Kimi", roles=("system",)),
         PLATFORM),
    Rule("kimi.compaction-request", "Kimi compaction prompt",
         contains("You are a helpful assistant that compacts conversation context",
                  "You are now given a task to compact", head=4000),
         PLATFORM_TURN, compaction_request=True),
    Rule("kimi.compaction-summary", "summary after Kimi compaction",
         contains("Previous context has been compacted", head=300), SUMMARY),
    Rule("kimi.date-reminder", "date-only `<system-reminder>`", is_date_reminder, ENVIRONMENT, IDS),
    Rule("kimi.system-reminder", "`<system-reminder>` user message", is_reminder, REMINDER, IDS),
)


def session_from_cache_key(c: IdentityContext) -> None:
    key = c.ident.prompt_cache_key or ""
    if key.startswith("session_"):  # the prompt_cache_key is the CLI session id
        c.put("session_id", key, "body.prompt_cache_key")


def device_id(c: IdentityContext) -> None:
    c.put("user_id", c.headers.get("x-msh-device-id"), "header.x-msh-device-id")


CLIENT = Client(
    name="kimi",
    ids=IDS,
    order=30,
    rules=RULES,
    identity=(
        IdentityStep(IdentityStage.SESSION_FROM_CACHE_KEY, session_from_cache_key),
        IdentityStep(IdentityStage.USER_DEVICE, device_id),
    ),
    title_markers=("Generate a concise session title",),  # the web UI's session titles
)
