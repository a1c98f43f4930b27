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

from ctxtap.analysis.blocks.blockscan import BlockScan, key_of
from ctxtap.analysis.blocks.drafts import BlockDraft, finalize
from ctxtap.analysis.blocks.segment_attrs import with_segments
from ctxtap.analysis.clients import registry
from ctxtap.analysis.clients.rules import UNKNOWN, Context, Rule, is_text, leading_user_parts
from ctxtap.analysis.parsing.models import Block
from ctxtap.analysis.threads import runfacts

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
    """The working directory the client told the model about (the first draft stating one), if any.

    With a memo, drafts the previous call had at the same positions are not looked at again:
    below the alignment's end only its changed positions (holes) are, and where that call
    found its directory. The answer is the plain search's.
    """
    if memo is None:
        return next((cwd for d in drafts if (cwd := draft_cwd(d))), None)
    m, holes, hit, found = memo.cwd_alignment(drafts)
    scan_from = m  # below m, shared drafts state what the previous call's did
    for p in holes:
        if hit is not None and hit < p:
            break
        cwd = memo.cwd_of(drafts[p], draft_cwd)
        if cwd:
            return memo.remember_cwd(drafts, p, cwd)
    if hit is not None and hit < m:
        if hit not in holes:
            return memo.remember_cwd(drafts, hit, found)
        scan_from = hit + 1  # the previous call's directory was in a changed draft: search on from there
    for index in range(scan_from, len(drafts)):
        cwd = memo.cwd_of(drafts[index], draft_cwd)
        if cwd:
            return memo.remember_cwd(drafts, index, cwd)
    return memo.remember_cwd(drafts, None, None)


class _LeadingParts:
    """`leading_user_parts(drafts)`, computed on first use: only user texts before the task ask,
    so a long session's requests (past their task) never walk their drafts for it."""

    __slots__ = ("_drafts", "_ids")

    def __init__(self, drafts: list[BlockDraft]) -> None:
        self._drafts = drafts
        self._ids: frozenset[int] | None = None

    def __contains__(self, draft_id: object) -> bool:
        if self._ids is None:
            self._ids = leading_user_parts(self._drafts)
        return draft_id in self._ids


TASK_SEARCH_DRAFTS = 200


def _task_part(drafts: list[BlockDraft], known: tuple[str, ...]) -> int | None:
    """The id of the first user text that holds a known task prompt (runfacts.tasks), or None. Only
    what comes before the first tool call is looked at (the task is given before the model acts; a
    client's canned example exchange may come first), so a long session's requests cost no more
    than its first."""
    for n, d in enumerate(drafts):
        if d.kind in ("tool_call", "tool_result") or n >= TASK_SEARCH_DRAFTS:
            return None
        if d.kind == "message_text" and d.role == "user" and runfacts.find_task(d.text, known) is not None:
            return id(d)
    return None


def _answered_before(drafts: list[BlockDraft], task_part: int | None) -> frozenset[int]:
    """Ids of the user texts before the known task that an assistant text answers before it: with the
    model yet to answer, the client wrote both turns (a canned example exchange)."""
    if task_part is None:
        return frozenset()
    answered: set[int] = set()
    pending: list[int] = []
    for d in drafts:
        if id(d) == task_part or d.kind in ("tool_call", "tool_result"):
            break
        if d.kind != "message_text":
            continue
        if d.role == "user":
            pending.append(id(d))
        elif d.role == "assistant":
            answered.update(pending)
            pending.clear()
    return frozenset(answered)


def _attribute_one(draft: BlockDraft, position: int, ctx: Context, context: tuple, table: list[Rule],
                   memo: Any) -> Block:
    """One draft's block (the first matching rule decides); updates whether a user task was seen."""
    key = (id(draft), position, context, ctx.user_task_seen)
    if memo is not None:
        hit = memo.attributed(key, draft)
        if hit is not None:
            block, ctx.user_task_seen = hit
            return block
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
    return block


def attribute(drafts: list[BlockDraft], client: str, api: str, memo: Any = None,
              disabled_clients: Iterable[str] = ()) -> list[Block]:
    """Run the rule table over drafts in order; return finished blocks."""
    return attribute_scanned(drafts, client, api, memo, disabled_clients)[0]


def attribute_scanned(drafts: list[BlockDraft], client: str, api: str, memo: Any = None,
                      disabled_clients: Iterable[str] = ()) -> tuple[list[Block], BlockScan]:
    """Finished blocks and their `BlockScan` (where each kind / source / rule is).

    With a memo, a draft seen before at the same position and in the same context
    (client, cwd, whether a user task came earlier, rules switched off) reuses its
    block. Drafts that are the very objects of the previous call's at the same
    positions (history resent, a few blocks changed) take over its blocks and scan in
    slices; the changed ones are attributed again, and if one of them changes whether
    a user task came earlier, everything after it is too.
    """
    disabled = frozenset(disabled_clients)
    table = rules(disabled)
    known = runfacts.tasks()
    task_part = _task_part(drafts, known) if known else None
    ctx = Context(client=client, api=api, cwd=find_cwd(drafts, memo),
                  leading_parts=_LeadingParts(drafts),  # type: ignore[arg-type]
                  task_part=task_part, canned_users=_answered_before(drafts, task_part))
    context = (client, api, ctx.cwd, disabled) if disabled else (client, api, ctx.cwd)
    if known:
        context = (*context, known)
    blocks: list[Block] = []
    seen: list[bool] = []  # after each position: whether a user task came so far
    scan, start = BlockScan(), 0
    last = memo.attributed_alignment(context, drafts) if memo is not None else None
    if last is not None:
        m, holes, prev_blocks, prev_seen, prev_scan = last
        blocks, seen, scan, start = prev_blocks[:m], prev_seen[:m], prev_scan.upto(m), m
        for p in holes:
            ctx.user_task_seen = seen[p - 1] if p else False
            block = _attribute_one(drafts[p], p, ctx, context, table, memo)
            if ctx.user_task_seen != seen[p]:  # the context of everything after p changed
                del blocks[p:], seen[p:]
                scan, start = scan.upto(p), p
                break
            scan.replace(p, key_of(blocks[p]), key_of(block))
            blocks[p] = block
    ctx.user_task_seen = seen[start - 1] if start else False
    for position in range(start, len(drafts)):
        blocks.append(_attribute_one(drafts[position], position, ctx, context, table, memo))
        seen.append(ctx.user_task_seen)
    scan.extend(blocks, start)
    if memo is not None:
        memo.remember_attributed(context, drafts, blocks, seen, scan)
    return blocks, scan
