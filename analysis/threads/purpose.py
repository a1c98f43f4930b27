"""Why a request was sent: main turn, subagent, title, compaction, probe, warm-up, ...

Side requests must not be compared with main turns as one population. Each
client module (`analysis.clients.*`) declares its purpose rules; they run in
stage order and the first that matches decides, its id and the facts it used
kept as evidence. Explicit signals (endpoint, `generate:false`, client headers)
come before text markers, text markers before shape heuristics. The engine hands
the rules what they share across clients: the title and side-call text markers
and the attribution rules that mark a compaction request.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from ctxtap.analysis.clients import registry
from ctxtap.analysis.clients.rules import Facts, PurposeRule, info, max_tokens_evidence, tools_evidence
from ctxtap.analysis.parsing.models import PurposeInfo
from ctxtap.analysis.rules.attribution import rules as attribution_rules

__all__ = ["Facts", "classify_purpose"]

_tables: dict[tuple[int, frozenset[str]], tuple[list[PurposeRule], dict]] = {}


def _table(disabled: frozenset[str]) -> tuple[list[PurposeRule], dict]:
    key = (registry.version(), disabled)
    found = _tables.get(key)
    if found is None:
        enabled = registry.clients(disabled)
        ranked = [(rule.stage, ci, ri, rule) for ci, c in enumerate(enabled) for ri, rule in enumerate(c.purposes)]
        shared = {
            "compaction_rules": frozenset(r.id for r in attribution_rules(disabled) if r.compaction_request),
            "title_markers": tuple(m for c in enabled for m in c.title_markers),
            "side_markers": tuple(m for c in enabled for m in c.side_markers),
        }
        found = _tables[key] = ([e[3] for e in sorted(ranked, key=lambda e: e[:3])], shared)
    return found


def classify_purpose(f: Facts, disabled_clients: Iterable[str] = ()) -> PurposeInfo:
    table, shared = _table(frozenset(disabled_clients))
    f = dataclasses.replace(f, **shared)
    for rule in table:
        found = rule.decide(f)
        if found is not None:
            return found
    return info("other", "generic.other", tools_evidence(f), max_tokens_evidence(f))
