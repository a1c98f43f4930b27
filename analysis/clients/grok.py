"""Grok CLI: Chat Completions (xAI); the conversation id header names both thread and session."""

from __future__ import annotations

from ctxtap.analysis.clients.registry import Client
from ctxtap.analysis.clients.rules import PLATFORM, IdentityContext, IdentityStage, IdentityStep, Rule, starts

IDS = frozenset({"grok-cli"})

RULES = (
    Rule("grok.system-prompt", "Grok CLI system prompt", starts("You are Grok", roles=("system", "developer")),
         PLATFORM),
)


def conversation_thread(c: IdentityContext) -> None:
    c.put("thread_id", c.headers.get("x-grok-conv-id"), "header.x-grok-conv-id")


def conversation_session(c: IdentityContext) -> None:
    c.put("session_id", c.headers.get("x-grok-conv-id"), "header.x-grok-conv-id")


CLIENT = Client(
    name="grok",
    ids=IDS,
    order=40,
    rules=RULES,
    identity=(
        IdentityStep(IdentityStage.THREAD_CONVERSATION, conversation_thread),
        IdentityStep(IdentityStage.SESSION_FROM_CONVERSATION, conversation_session),
    ),
)
