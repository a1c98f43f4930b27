"""Rule engine for the six attributes of a context block.

Protocol role alone does not say where a block came from: Codex sends its
environment as a `user` message, Claude Code its environment as a `system`
message inside `messages`, Kimi its date as a `<system-reminder>` user message.
Each rule is a small named predicate with an id, declared by the client module
it describes (`analysis.clients.*`); the first rule that matches a block sets
its source, authority, scope, lifetime and content type, and its id is stored on
the block so a reader can see why. Client rules come first, the
client-independent rules of `analysis.clients.generic` give an unseen client a
sensible layout, and `generic.unknown` is used only when nothing can be
inferred. `disabled_clients` switches named clients' rules off for one run.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from analysis.blocks import BlockDraft, finalize
from analysis.clients import registry
from analysis.clients.rules import UNKNOWN, Context, Rule, is_text, leading_user_parts
from analysis.models import Block
from analysis.segment_attrs import with_segments

_tables: dict[tuple[int, frozenset[str]], list[Rule]] = {}


def rules(disabled_clients: Iterable[str] = ()) -> list[Rule]:
    """The rule table in evaluation order: by stage, then client order, then as each client lists them."""
    disabled = frozenset(disabled_clients)
    key = (registry.version(), disabled)
    table = _tables.get(key)
    if table is None:
        ranked = [
            (rule.stage, ci, ri, rule)
            for ci, client in enumerate(registry.clients(disabled))
            for ri, rule in enumerate(client.rules)
        ]
        table = _tables[key] = [entry[3] for entry in sorted(ranked, key=lambda e: e[:3])]
    return table


RULE_IDS: frozenset[str] = frozenset(r.id for r in rules())
# blocks providers drop before caching: they never break a cached prefix
CACHE_TRANSPARENT_RULES: frozenset[str] = frozenset(r.id for r in rules() if r.cache_transparent)
_FALLBACK = Rule("generic.unknown", "nothing could be inferred", lambda d, _: True, UNKNOWN)

_CWD_PATTERNS = [
    re.compile(r"<cwd>([^<\n]+)</cwd>"),
    re.compile(r"Primary working directory:\s*(\S+)"),
    re.compile(r"[Cc]urrent working directory(?: is)?:?\s*`?([^\s`]+)`?"),
    re.compile(r"Working directory:\s*(\S+)"),
    re.compile(r"I'm currently working in the directory:?\s*(\S+)"),
]


def draft_cwd(d: BlockDraft) -> str | None:
    """The working directory one draft states, if any."""
    if not is_text(d) or d.role == "assistant":
        return None
    for rx in _CWD_PATTERNS:
        m = rx.search(d.text)
        if m:
            return m.group(1).rstrip("/.,")
    return None


def find_cwd(drafts: list[BlockDraft], memo: Any = None) -> str | None:
    """The working directory the client told the model about, if any."""
    if memo is None:
        return next((cwd for d in drafts if (cwd := draft_cwd(d))), None)
    start, found = memo.cwd_prefix(drafts)
    if found is not None:
        return found
    for index in range(start, len(drafts)):
        cwd = memo.cwd_of(drafts[index], draft_cwd)
        if cwd:
            memo.remember_cwd(drafts, index, cwd)
            return cwd
    memo.remember_cwd(drafts, None, None)
    return None


def attribute(drafts: list[BlockDraft], client: str, api: str, memo: Any = None,
              disabled_clients: Iterable[str] = ()) -> list[Block]:
    """Run the rule table over drafts in order; return finished blocks.

    With a memo, a draft seen before at the same position and in the same
    context (client, cwd, whether a user task came earlier, rules switched off)
    reuses its block.
    """
    disabled = frozenset(disabled_clients)
    table = rules(disabled)
    ctx = Context(client=client, api=api, cwd=find_cwd(drafts, memo), leading_parts=leading_user_parts(drafts))
    blocks: list[Block] = []
    start = 0
    context = (client, api, ctx.cwd, disabled) if disabled else (client, api, ctx.cwd)
    if memo is not None:
        # Fast path: the leading drafts are the very objects of the previous call in this
        # context, so their blocks are too (history resent unchanged).
        start, blocks, ctx.user_task_seen = memo.attributed_prefix(context, drafts)
    seen_after: list[bool] = []
    for position in range(start, len(drafts)):
        draft = drafts[position]
        key = (id(draft), position, context, ctx.user_task_seen)
        if memo is not None:
            hit = memo.attributed(key, draft)
            if hit is not None:
                block, ctx.user_task_seen = hit
                blocks.append(block)
                seen_after.append(ctx.user_task_seen)
                continue
        for rule in table:
            if rule.applies(draft, ctx):
                attrs = rule.resolve(draft, ctx)
                break
        else:  # only when the generic rules are switched off: generic.unknown always matches
            rule, attrs = _FALLBACK, UNKNOWN
        block = with_segments(finalize(draft, position, attrs.as_dict(), rule.id))
        if draft.kind == "message_text" and (block.source == "user_task" or any(
                s.source == "user_task" for s in block.segments)):
            ctx.user_task_seen = True
        if memo is not None:
            memo.put_attributed(key, draft, (block, ctx.user_task_seen))
        blocks.append(block)
        seen_after.append(ctx.user_task_seen)
    if memo is not None:
        memo.remember_attributed(context, drafts, blocks, start, seen_after)
    return blocks
