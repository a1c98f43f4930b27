"""opencode: its own system prompt and an `<env>` block."""

from __future__ import annotations

from ctxtap.analysis.clients.registry import Client
from ctxtap.analysis.clients.rules import ENVIRONMENT, PLATFORM, Rule, contains, starts

IDS = frozenset({"opencode"})

RULES = (
    Rule("opencode.system-prompt", "opencode system prompt", starts("You are opencode", roles=("system",)),
         PLATFORM),
    Rule("opencode.env", "opencode `<env>` block", contains("<env>", head=200), ENVIRONMENT),
)

CLIENT = Client(name="opencode", ids=IDS, order=60, rules=RULES)
