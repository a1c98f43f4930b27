"""Gemini CLI: Gemini `generateContent` (public API or Code Assist), side calls as JSON-schema requests."""

from __future__ import annotations

from ctxtap.analysis.clients.registry import Client
from ctxtap.analysis.clients.rules import (
    ENVIRONMENT,
    PLATFORM,
    PLATFORM_TURN,
    SUMMARY,
    IdentityContext,
    IdentityStage,
    IdentityStep,
    Rule,
    contains,
    starts,
)

IDS = frozenset({"gemini-cli"})

RULES = (
    Rule("gemini.system-prompt", "Gemini CLI system instruction",
         starts("You are Gemini CLI", "You are an interactive CLI agent", roles=("system",)), PLATFORM),
    Rule("gemini.session-context", "Gemini CLI's first user message with date, OS and directory",
         starts("This is the Gemini CLI. We are setting up the context"), ENVIRONMENT),
    Rule("gemini.compression-request", "Gemini chat compression prompt",
         contains("Generate a new <state_snapshot>", head=2000), PLATFORM_TURN, compaction_request=True),
    Rule("gemini.state-snapshot", "Gemini `<state_snapshot>` summary", starts("<state_snapshot>"), SUMMARY),
)


def client_from_prompt_id(c: IdentityContext) -> None:
    """A `user_prompt_id` in the body is Gemini CLI's, even behind a generic user agent."""
    if c.ident.client == "unknown" and c.facts.get("user_prompt_id"):
        c.ident.client, c.ident.client_rule = "gemini-cli", "body:user_prompt_id"


def body_session(c: IdentityContext) -> None:
    c.put("session_id", c.facts.get("session_id"), "body.session_id")


def prompt_id(c: IdentityContext) -> None:
    c.put("turn_id", c.facts.get("user_prompt_id"), "body.user_prompt_id")


CLIENT = Client(
    name="gemini_cli",
    ids=IDS,
    order=50,
    rules=RULES,
    identity=(
        IdentityStep(IdentityStage.BODY_CLIENT, client_from_prompt_id),
        IdentityStep(IdentityStage.SESSION_BODY, body_session),
        IdentityStep(IdentityStage.TURN_BODY, prompt_id),
    ),
    side_markers=(
        "You are a specialized Task Routing AI",  # model routing classifier
        "Analyze *only* the content and structure of your immediately preceding response",  # next speaker
        "determines whether a conversational AI assistant is stuck in an unproductive loop",  # loop detection
    ),
)
