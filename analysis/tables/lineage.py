"""Context lineage and delegation: where a thread's history was replaced, and what each subagent got.

* `context_generations`: one row per change of context generation in a thread — a request that no
  longer carries history its thread's previous request carried. The evidence is the block store's:
  the two requests' blocks are aligned (`align`, stepping over a few blocks changed in place, so a
  per-request hash or a moved timestamp is no new generation); the history blocks (messages, tool
  calls and results, not the tool list or the system prompt) of the previous request whose content
  the new one no longer holds are the replaced range. A summary block new in the request
  (`source = summary`, or a provider's `compaction` item), or the answer of the session's compaction
  request found in its new blocks, makes it a `compaction`; dropped history without one is `trimming`
  (history cut at its newest end alone is a `rewind`: an edited or abandoned last step). Requests
  whose input could not be read whole (a parse error, an unresolved continuation) give `unknown`.
* `delegations`: one row per subagent thread: the parent's delegation call and the request that made
  it, the child's task packet (its first user message), whether the child's first request carries the
  parent's conversation (inherited) or starts fresh, and the child's tool set against the parent's.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict

from ctxtap.analysis.blocks.sequences import align, common_prefix
from ctxtap.analysis.tables.base import F64, I64, B, BuildContext, CallRec, Columns, Row, S, Table

HISTORY_ROLES = frozenset({"user", "assistant", "tool"})
# the sources of a parent's conversation: a child that carries one of these blocks inherited context (a
# reminder, the environment or project instructions a client injects into every thread are not)
CONVERSATION_SOURCES = frozenset({"user_task", "assistant_output", "tool_call", "tool_result", "summary", "mixed"})
SUMMARY_KINDS = frozenset({"compaction"})  # a provider's own compaction item (Responses `compaction`)
COMPACTION_PURPOSES = frozenset({"compaction"})
RESTARTED = frozenset({"task-already-seen", "new-task"})  # thread rules of a chain that continues none
ANSWER_PROBE = 200  # characters of a compaction answer looked for in the new history (normalised)

GENERATION_COLUMNS: Columns = [
    ("session_id", S, "Session."),
    ("thread_id", S, "Thread whose history was replaced."),
    ("thread_kind", S, "Its kind (requests.thread_kind)."),
    ("placed_in_thread_id", S, "The thread the request was placed in when it is another: a request that keeps "
                               "less than the session assigner's share of its thread's blocks starts a thread of "
                               "its own (a `retry` or a new `main` chain), yet carries this thread's newer history "
                               "(a window) or its compaction's answer; null when it stayed in the thread."),
    ("generation", I64, "The context generation this request starts: the thread's first request starts 1, each "
                        "row the next."),
    ("kind", S, "`compaction` (a summary new in this request stands for the dropped history), `trimming` "
                "(history dropped without a summary: a sliding window, cleared tool results), `rewind` (only the "
                "newest history dropped: an edited or abandoned last step), `unknown` (one of the two requests' "
                "input could not be read whole, or a compaction request ran but its answer is not in the new "
                "history)."),
    ("kind_rule", S, "Why: `summary-block` (a block with source `summary` or kind `compaction` the previous "
                     "request did not hold), `compaction-answer-carried` (the compaction request's answer found in "
                     "a new block), `dropped-without-summary`, `dropped-newest-only`, `input-incomplete`, "
                     "`compaction-answer-not-found`."),
    ("request_id", S, "The first request of the new generation."),
    ("request_number", I64, "Its #N in the session (requests.request_number)."),
    ("previous_request_id", S, "The thread's previous request: the last of the replaced generation."),
    ("previous_request_number", I64, "Its #N in the session."),
    ("replaced_from_position", I64, "First position, in the previous request, of the history it no longer carries."),
    ("replaced_to_position", I64, "Last such position (inclusive)."),
    ("replaced_blocks", I64, "History blocks of the previous request whose content the new request no longer holds."),
    ("replaced_tokens", I64, "Their estimated tokens."),
    ("replaced_first_request_number", I64, "#N of the request where the earliest replaced block entered the "
                                           "thread's history."),
    ("replaced_last_request_number", I64, "#N of the request where the latest replaced block entered it."),
    ("dropped_where", S, "Where the replaced blocks were: `all` (no history block kept), `oldest` (one run with "
                         "newer history kept after it; a kept head such as the task may come before it: a window), "
                         "`newest` (one run at the end: nothing after it kept), `scattered` (several runs: cleared "
                         "tool results, say)."),
    ("kept_blocks", I64, "History blocks of the previous request the new one still carries."),
    ("kept_tokens", I64, "Their estimated tokens."),
    ("summary_blocks", I64, "Summary blocks new in this request (see kind_rule)."),
    ("summary_tokens", I64, "Their estimated tokens."),
    ("summary_ratio", F64, "summary_tokens / replaced_tokens: how far the summary compressed what it replaced "
                           "(null without a summary)."),
    ("tokens_before", I64, "Input of the previous request: reported when both requests report it, else both "
                           "estimated (tokens_basis)."),
    ("tokens_after", I64, "Input of this request, on the same basis."),
    ("tokens_basis", S, "`reported` or `estimated`."),
    ("ratio", F64, "tokens_after / tokens_before."),
    ("compaction_request_id", S, "The session's compaction request between the two (purpose `compaction` or "
                                 "endpoint `compact`), the one whose answer the new history carries first."),
    ("compaction_request_number", I64, "Its #N in the session."),
    ("compaction_purpose", S, "Its purpose label (requests.purpose)."),
    ("compaction_purpose_rule", S, "The rule that gave it (requests.purpose_rule)."),
    ("compaction_match", S, "`answer-carried` (its answer is in a block new in this request), `between` (it ran "
                            "between the two requests; its answer was not found in the new history, or cannot be "
                            "read there: an encrypted compaction item), null (none ran)."),
]

DELEGATION_COLUMNS: Columns = [
    ("session_id", S, "Session."),
    ("thread_id", S, "The child (subagent) thread."),
    ("thread_rule", S, "Why it is a subagent (requests.thread_rule: `delegation-call`, `client:<rule>`)."),
    ("first_request_id", S, "The child's first request."),
    ("first_request_number", I64, "Its #N in the session."),
    ("child_requests", I64, "Requests in the child thread."),
    ("child_input_tokens", I64, "Input over the child's requests (reported, else estimated)."),
    ("child_output_tokens", I64, "Output over the child's requests (reported)."),
    ("child_cost_usd", F64, "Cost of the child's requests (null when none is priced)."),
    ("parent_thread_id", S, "The delegating thread."),
    ("parent_call_id", S, "The delegation tool call (null when the client alone said subagent)."),
    ("parent_tool_name", S, "The tool that call named (`Task`, `Agent`, `spawn_agent`, ...)."),
    ("parent_request_id", S, "The parent's request at the delegation: the one whose response made the call, else "
                             "the parent's last request before the child started (parent_match)."),
    ("parent_request_number", I64, "Its #N in the session."),
    ("parent_match", S, "`delegation-call` or `latest-before`; null when no parent request is in the capture."),
    ("call_arguments_bytes", I64, "Size of the delegation call's arguments as the parent wrote them."),
    ("packet_blocks", I64, "Blocks of the child's first user message: its task packet."),
    ("packet_bytes", I64, "Their bytes."),
    ("packet_tokens", I64, "Their estimated tokens."),
    ("context", S, "`inherited` (the child's first request carries blocks of the parent's conversation: its "
                   "tasks, answers, tool calls and results, summaries), `fresh` (none), `unknown` (no parent "
                   "request, or either input incomplete)."),
    ("inherited_blocks", I64, "Blocks of the parent's conversation the child's first request carries."),
    ("inherited_tokens", I64, "Their estimated tokens."),
    ("parent_history_tokens", I64, "Estimated tokens of the parent request's conversation (what a full copy "
                                   "would have carried)."),
    ("shared_prefix_blocks", I64, "Leading blocks the child's first request shares with the parent's (tool list "
                                  "and system prompt included)."),
    ("shared_prefix_tokens", I64, "Their estimated tokens."),
    ("parent_tools", I64, "Tools the parent's request offered."),
    ("child_tools", I64, "Tools the child's first request offered."),
    ("tools_subset", B, "Every tool the child was offered was offered to the parent too (null without a parent "
                        "request)."),
    ("tools_added", S, "Tools offered to the child and not to the parent, `, `-separated (sorted)."),
    ("tools_removed", S, "Tools offered to the parent and not to the child, `, `-separated (sorted)."),
]


def _norm(text: str) -> str:
    return " ".join(text.split())


def _by_thread(recs: list[CallRec]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = defaultdict(list)
    for i in sorted(range(len(recs)), key=lambda i: (recs[i].call.ts_start, i)):
        out[recs[i].placement.thread_id].append(i)
    return out


def _complete(rec: CallRec) -> bool:
    req = rec.call.request
    return req.parse_status == "ok" and req.effective_input_complete


class _Req:
    """One request's blocks as the lineage reads them: content ids, tokens, roles, kinds, sources."""

    def __init__(self, ctx: BuildContext, rec: CallRec) -> None:
        store = ctx.store
        self.ids = rec.content_ids
        self.tokens = ctx.content_tokens
        self.role = store.column(rec.blocks, "role")
        self.kind = store.column(rec.blocks, "kind")
        self.source = store.column(rec.blocks, "source")

    def history(self) -> list[int]:
        kind, role = self.kind, self.role
        return [p for p in range(len(self.ids)) if role[p] in HISTORY_ROLES and kind[p] != "tool_definition"]

    def tok(self, positions) -> int:
        ids, tokens = self.ids, self.tokens
        return sum(tokens[ids[p]] for p in positions)


# --- context_generations ----------------------------------------------------------------------------


def build_generations(ctx: BuildContext) -> list[Row]:
    recs, requests = ctx.recs, ctx.tables["requests"]
    compactions: dict[str, list[int]] = defaultdict(list)  # session -> its compaction requests, by start
    for i in sorted(range(len(recs)), key=lambda i: (recs[i].call.ts_start, i)):
        call = recs[i].call
        if call.purpose.purpose in COMPACTION_PURPOSES or call.request.endpoint == "compact":
            compactions[recs[i].placement.session_id].append(i)
    rows: list[Row] = []
    entered_in: dict[str, dict[int, int]] = {}
    generations: dict[str, int] = {}
    threads = _by_thread(recs)
    for thread, members in threads.items():
        if recs[members[0]].placement.thread_kind == "side":
            continue  # titles, probes and compaction requests themselves: no history of their own
        # content id -> request number where it entered the thread's history
        entered: dict[int, int] = entered_in.setdefault(thread, {})
        generation = 1
        prev_i = None
        for i in members:
            rec = recs[i]
            if not rec.content_ids:
                continue  # nothing read (a failed parse, a warm-up): no evidence either way
            number = requests[i]["seq_in_session"] + 1
            start, m, holes = 0, 0, []
            if prev_i is not None:
                prev = recs[prev_i]
                start = common_prefix(prev.content_ids, rec.content_ids)
                m, holes = align(prev.content_ids, rec.content_ids, shared=start)
                if m < len(prev.content_ids) or holes:
                    row = _generation(ctx, prev_i, i, m, holes, entered,
                                      compactions.get(rec.placement.session_id, []))
                    if row is not None:
                        generation += 1
                        row["generation"] = generation
                        rows.append(row)
            if prev_i is not None and m == len(recs[prev_i].content_ids):
                # only what changed in place and what follows is new (a per-request hash early on must not
                # make every request walk its whole history)
                fresh = [rec.content_ids[h] for h in holes] + list(rec.content_ids[m:])
            else:
                fresh = rec.content_ids[start:]
            for cid in fresh:
                entered.setdefault(cid, number)
            prev_i = i
        generations[thread] = generation
    rows.extend(_across_threads(ctx, threads, entered_in, generations, compactions))
    return rows


def _across_threads(ctx: BuildContext, threads: dict[str, list[int]], entered_in: dict[str, dict[int, int]],
                    generations: dict[str, int], compactions: dict[str, list[int]]) -> list[Row]:
    """A request that kept under the session assigner's share of its thread's blocks starts a thread of its
    own (a `retry`, or a `main` chain with a new task): when it carries the newer part of the latest
    main request before it (a window) or that request's compaction answer, it is that thread's next
    generation, placed in another thread."""
    recs = ctx.recs
    loops: dict[str, list[tuple[float, int]]] = defaultdict(list)  # session -> its main and retry requests
    for i, rec in enumerate(recs):
        if rec.placement.thread_kind in ("main", "retry") and rec.content_ids:
            loops[rec.placement.session_id].append((rec.call.ts_start, i))
    for starts in loops.values():
        starts.sort()
    rows = []
    for thread, members in threads.items():
        first = next((i for i in members if recs[i].content_ids), None)
        if first is None or recs[first].placement.thread_rule not in RESTARTED:
            continue
        rec = recs[first]
        starts = loops.get(rec.placement.session_id, [])
        k = bisect_left(starts, (rec.call.ts_start, -1))
        prev_i = next((j for _, j in reversed(starts[:k]) if recs[j].placement.thread_id != thread), None)
        if prev_i is None:
            continue
        prev = recs[prev_i]
        start = common_prefix(prev.content_ids, rec.content_ids)
        m, holes = align(prev.content_ids, rec.content_ids, shared=start)
        row = _generation(ctx, prev_i, first, m, holes, entered_in.get(prev.placement.thread_id, {}),
                          compactions.get(rec.placement.session_id, []))
        if row is None or not (row["kind"] == "compaction" or (
                row["kind"] == "trimming" and row["dropped_where"] in ("oldest", "scattered"))):
            continue  # a task started again without its history is a retry, not a new generation
        owner = prev.placement.thread_id
        generations[owner] = generations.get(owner, 1) + 1
        row["generation"] = generations[owner]
        rows.append(row)
    return rows


def _where(history: list[int], dropped: list[int], kept: list[int]) -> str:
    """Where in the history the dropped blocks were (see dropped_where)."""
    if not kept:
        return "all"
    order = {p: k for k, p in enumerate(history)}
    first, last = order[dropped[0]], order[dropped[-1]]
    if last - first + 1 != len(dropped):
        return "scattered"
    return "oldest" if kept[-1] > dropped[-1] else "newest"


def _generation(ctx: BuildContext, prev_i: int, cur_i: int, m: int, holes: list[int], entered: dict[int, int],
                compactions: list[int]) -> Row | None:
    """The new generation `cur_i` starts, if it starts one: `m` and `holes` are the two requests' alignment."""
    recs, requests = ctx.recs, ctx.tables["requests"]
    prev, cur = recs[prev_i], recs[cur_i]
    before, after = _Req(ctx, prev), _Req(ctx, cur)
    tokens = ctx.content_tokens
    if m == len(prev.content_ids):
        # the whole previous request lines up: a block changed in place is an edit (a date, a hash), unless
        # it is history cut to under half its size (a tool result cleared, context editing)
        dropped = [h for h in holes if before.role[h] in HISTORY_ROLES and before.kind[h] != "tool_definition"
                   and tokens[cur.content_ids[h]] * 2 < tokens[prev.content_ids[h]]]
        if not dropped:
            return None
    now = set(cur.content_ids)
    history = before.history()
    if m < len(prev.content_ids):
        dropped = [p for p in history if prev.content_ids[p] not in now]
    if not dropped:
        return None  # blocks moved or the tool list changed: the history is all still there
    gone = set(dropped)
    kept = [p for p in history if p not in gone]
    was = set(prev.content_ids)
    new = [p for p in range(len(cur.content_ids)) if cur.content_ids[p] not in was]
    # the session's compaction request between the two; the one whose answer the new blocks carry first
    lo, hi = prev.call.ts_start, cur.call.ts_start
    between = [j for j in compactions if lo <= recs[j].call.ts_start <= hi]
    compaction, match, carrier = None, None, None
    for j in between:
        answer = _norm(recs[j].call.response.text)[:ANSWER_PROBE]
        if not answer:
            continue
        carrier = next((p for p in new if after.role[p] in HISTORY_ROLES
                        and answer in _norm(ctx.store.text_of(cur.content_ids[p]))), None)
        if carrier is not None:
            compaction, match = j, "answer-carried"
            break
    if compaction is None and between:
        compaction, match = between[-1], "between"
    where = _where(history, dropped, kept)
    labelled = [p for p in new if after.source[p] == "summary" or after.kind[p] in SUMMARY_KINDS]
    summaries = labelled + ([carrier] if carrier is not None and carrier not in labelled else [])
    if not (_complete(prev) and _complete(cur)):
        kind, rule = "unknown", "input-incomplete"
    elif labelled:
        kind, rule = "compaction", "summary-block"
    elif carrier is not None:
        kind, rule = "compaction", "compaction-answer-carried"
    elif match == "between":
        kind, rule = "unknown", "compaction-answer-not-found"
    elif where == "newest":
        kind, rule = "rewind", "dropped-newest-only"
    else:
        kind, rule = "trimming", "dropped-without-summary"
    replaced_tokens = before.tok(dropped)
    summary_tokens = after.tok(summaries)
    was_row, row = requests[prev_i], requests[cur_i]
    reported = was_row["input_tokens_reported"] is not None and row["input_tokens_reported"] is not None
    field = "input_tokens_reported" if reported else "input_tokens_estimated"
    t_before, t_after = was_row[field], row[field]
    entries = [entered[prev.content_ids[p]] for p in dropped if prev.content_ids[p] in entered]
    crow = requests[compaction] if compaction is not None else None
    return {
        "session_id": cur.placement.session_id, "thread_id": prev.placement.thread_id,
        "thread_kind": prev.placement.thread_kind,
        "placed_in_thread_id": cur.placement.thread_id if cur.placement.thread_id != prev.placement.thread_id
        else None, "generation": None, "kind": kind, "kind_rule": rule,
        "request_id": cur.request_id, "request_number": row["seq_in_session"] + 1,
        "previous_request_id": prev.request_id, "previous_request_number": was_row["seq_in_session"] + 1,
        "replaced_from_position": min(dropped), "replaced_to_position": max(dropped),
        "replaced_blocks": len(dropped), "replaced_tokens": replaced_tokens,
        "replaced_first_request_number": min(entries) if entries else None,
        "replaced_last_request_number": max(entries) if entries else None,
        "dropped_where": where, "kept_blocks": len(kept), "kept_tokens": before.tok(kept),
        "summary_blocks": len(summaries), "summary_tokens": summary_tokens if summaries else None,
        "summary_ratio": summary_tokens / replaced_tokens if summaries and replaced_tokens else None,
        "tokens_before": t_before, "tokens_after": t_after,
        "tokens_basis": "reported" if reported else "estimated",
        "ratio": t_after / t_before if t_before and t_after is not None else None,
        "compaction_request_id": crow["request_id"] if crow else None,
        "compaction_request_number": crow["seq_in_session"] + 1 if crow else None,
        "compaction_purpose": crow["purpose"] if crow else None,
        "compaction_purpose_rule": crow["purpose_rule"] if crow else None,
        "compaction_match": match,
    }


# --- delegations -----------------------------------------------------------------------------------


def _packet(req: _Req, ctx: BuildContext, rec: CallRec) -> list[int]:
    """Positions of the first user message (the blocks sharing its path's first step, `messages[0]`)."""
    paths = ctx.store.column(rec.blocks, "path")
    first = next((p for p in range(len(req.ids)) if req.role[p] == "user" and req.kind[p] == "message_text"), None)
    if first is None:
        return []
    head = paths[first].split(".", 1)[0]
    out = []
    for p in range(first, len(req.ids)):
        if paths[p].split(".", 1)[0] != head:
            break
        if req.role[p] == "user":
            out.append(p)
    return out


def _tools(rec: CallRec) -> set[str]:
    return set(rec.call.request.tool_names)


def build_delegations(ctx: BuildContext) -> list[Row]:
    recs, requests = ctx.recs, ctx.tables["requests"]
    by_thread = _by_thread(recs)
    rows: list[Row] = []
    for thread, members in by_thread.items():
        child = recs[members[0]]
        pl = child.placement
        if pl.thread_kind != "subagent":
            continue
        parents = by_thread.get(pl.parent_thread_id or "", [])
        parent_i, tool_call = None, None
        for j in parents:
            tool_call = next((c for c in recs[j].call.response.tool_calls
                              if pl.parent_call_id and c.call_id == pl.parent_call_id), None)
            if tool_call is not None:
                parent_i = j
                break
        match = "delegation-call" if parent_i is not None else None
        if parent_i is None:
            before = [j for j in parents if recs[j].call.ts_start < child.call.ts_start]
            if before:
                parent_i, match = before[-1], "latest-before"
        mine = _Req(ctx, child)
        packet = _packet(mine, ctx, child)
        child_rows = [requests[i] for i in members]
        costs = [r["cost_usd"] for r in child_rows if r["cost_usd"] is not None]
        row: Row = {
            "session_id": pl.session_id, "thread_id": thread, "thread_rule": pl.thread_rule,
            "first_request_id": child.request_id, "first_request_number": requests[members[0]]["seq_in_session"] + 1,
            "child_requests": len(members),
            "child_input_tokens": sum(r["input_tokens_reported"] if r["input_tokens_reported"] is not None
                                      else r["input_tokens_estimated"] or 0 for r in child_rows),
            "child_output_tokens": sum(r["output_tokens"] or 0 for r in child_rows),
            "child_cost_usd": sum(costs) if costs else None,
            "parent_thread_id": pl.parent_thread_id, "parent_call_id": pl.parent_call_id,
            "parent_tool_name": tool_call.name if tool_call is not None else None,
            "parent_request_id": None, "parent_request_number": None, "parent_match": match,
            "call_arguments_bytes": len(tool_call.arguments.encode("utf-8", "surrogatepass"))
            if tool_call is not None else None,
            "packet_blocks": len(packet), "packet_bytes": sum(ctx.store.content_bytes[mine.ids[p]] for p in packet),
            "packet_tokens": mine.tok(packet),
            "context": "unknown", "inherited_blocks": None, "inherited_tokens": None, "parent_history_tokens": None,
            "shared_prefix_blocks": None, "shared_prefix_tokens": None,
            "parent_tools": None, "child_tools": len(_tools(child)), "tools_subset": None,
            "tools_added": None, "tools_removed": None,
        }
        if parent_i is not None:
            parent = recs[parent_i]
            theirs = _Req(ctx, parent)
            conversation = {parent.content_ids[p] for p in theirs.history()
                            if theirs.source[p] in CONVERSATION_SOURCES}
            carried = [p for p in mine.history() if child.content_ids[p] in conversation]
            common = common_prefix(parent.content_ids, child.content_ids)
            mine_tools, their_tools = _tools(child), _tools(parent)
            row.update({
                "parent_request_id": parent.request_id,
                "parent_request_number": requests[parent_i]["seq_in_session"] + 1,
                "inherited_blocks": len(carried), "inherited_tokens": mine.tok(carried),
                "parent_history_tokens": theirs.tok(p for p in theirs.history()
                                                    if theirs.source[p] in CONVERSATION_SOURCES),
                "shared_prefix_blocks": common,
                "shared_prefix_tokens": ctx.store.token_prefix(child.blocks).upto(common),
                "parent_tools": len(their_tools), "tools_subset": mine_tools <= their_tools,
                "tools_added": ", ".join(sorted(mine_tools - their_tools)) or None,
                "tools_removed": ", ".join(sorted(their_tools - mine_tools)) or None,
            })
            if _complete(parent) and _complete(child):
                row["context"] = "inherited" if carried else "fresh"
        rows.append(row)
    return rows


TABLES = [
    Table("context_generations", "each compaction, trimming or rewind of a thread's history: the range it replaced, "
          "tokens before and after, and the summary request", GENERATION_COLUMNS, build_generations),
    Table("delegations", "each subagent: the parent's delegation call, the task packet, inherited or fresh "
          "context, and its tool set against the parent's", DELEGATION_COLUMNS, build_delegations),
]
