"""What kind of evidence a segment's label rests on, read from the id of the rule that set it.

A reader of `ctxtap layout --explain` (and the `segments` view) needs to know how far to trust a
label: a client's own rule was written from its recordings, a pattern detector read the text
without knowing the client, a structural rule read the wire's shape, and `unattributed` says
nothing could be inferred.
"""

from __future__ import annotations

from typing import Literal

Evidence = Literal["client-rule", "recorded-fact", "argv", "cross-session", "pattern", "structure", "position",
                   "unattributed"]

# generic rules that read the wire's structure (a block's kind), not its words
_STRUCTURE = frozenset({
    "generic.mcp-tool", "generic.tool-definition", "generic.tool-call", "generic.tool-result", "generic.reasoning",
    "generic.compaction-item", "generic.user-media", "generic.assistant-text",
})
_UNATTRIBUTED = frozenset({"generic.unknown", "generic.user-context-part", "argv.not-the-task"})


def evidence_kind(rule_id: str | None) -> Evidence:
    """`client-rule`, `recorded-fact` (a line states a fact `record` kept), `argv` (the task the run was
    given, found verbatim), `cross-session` (constant over sessions of one client version), `pattern` (a detector or a generic text pattern), `structure` (the block's
    kind on the wire), `position` (where the text sits: system text, the first user text) or
    `unattributed`."""
    if not rule_id or rule_id in _UNATTRIBUTED:
        return "unattributed"
    if rule_id in ("detect.recorded-fact", "detect.recorded-file"):
        return "recorded-fact"
    family = rule_id.split(".", 1)[0]
    if family in ("argv", "cross-session"):
        return family  # the task the run was given; text constant over sessions of one client version
    if family == "detect":
        return "pattern"
    if family != "generic":
        return "client-rule"
    if rule_id in _STRUCTURE:
        return "structure"
    if rule_id in ("generic.system-text", "generic.first-user-text-task", "generic.user-text-task"):
        return "position"
    return "pattern"
