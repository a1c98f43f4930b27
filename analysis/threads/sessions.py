"""Group model calls into sessions and threads.

Sessions come from the clients' own identifiers where they send one (Claude
Code's session header, Codex's session-id, Kimi's prompt_cache_key, ...), and
otherwise from prefix continuity: a request that begins with a recent request's
blocks belongs to its session. Inside a session, the main loop, each subagent
and the side requests (titles, compaction, probes, warm-ups) are separate
threads, so side traffic never distorts main-thread growth.

Threads are told apart by structure, not by client: a new chain is a `subagent` only
when a delegation call of an earlier response carries its task (any tool whose arguments
hold the child's first user text: `Task`, `spawn_agent`, `delegate`...) or the client
says so (a parent-thread header); a chain that repeats a task already seen without its
history is a `retry`; one that carries another thread's history flattened into its text
is `flattened`; a chain with a task not seen before is a new `main` chain.

User turns are counted by position, never by text: a main-thread request starts a turn
when a user-typed message (a `user_task` block) comes after its last assistant message,
i.e. the user typed after the model's final or interrupted answer, or at the start of a
chain. Tool results, reminders and compaction summaries are no typed text, so they start
none; a retry that resends its predecessor's answers and typed text unchanged starts none
either. Requests before the first turn (start-up probes, warm-ups) have turn 0.
"Continue" typed four times is four turns.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

from ctxtap.analysis.blocks.blockscan import BlockKey, BlockScan
from ctxtap.analysis.blocks.sequences import align
from ctxtap.analysis.parsing.models import Block, ModelCall

SIDE_PURPOSES = {"title", "compaction", "probe", "count_tokens", "structured_side", "warmup", "other"}
AUTO_SESSION_GAP_S = 30 * 60
JOIN_FRACTION = 0.6
MIN_PACKET_CHARS = 20  # a delegation argument shorter than this cannot identify a child's task
FLATTENED_FRACTION = 0.5  # share of a thread's long texts a flattened request repeats inside its own text
LONG_TEXT = 40
SIDE_LEAD_S = 120  # how long before its main loop a client's opening side call may come


@dataclass
class Placement:
    session_id: str
    session_source: str
    thread_id: str
    thread_kind: str  # main | subagent | side | retry | flattened
    seq_in_session: int
    seq_in_thread: int
    previous_in_thread: int | None  # index into the calls list
    turn_index: int
    parent_thread_id: str | None = None  # subagents: the thread that delegated
    parent_call_id: str | None = None  # subagents: the delegation call whose arguments carry the task
    thread_rule: str = ""  # why the thread has its kind


@dataclass(frozen=True)
class TurnFacts:
    """Where a request's conversation stands, for turn counting: what the user typed after the
    last assistant message (content hashes, in order), and how many assistant blocks it carries."""

    typed_tail: tuple[str, ...]  # user-typed blocks after the last assistant block (empty: none)
    n_assistant: int  # assistant blocks (answers, tool calls, reasoning) in the request

    @classmethod
    def of(cls, blocks: Sequence[Block]) -> TurnFacts:
        """From the blocks themselves (the build uses the block store's scan instead: `from_scan`)."""
        last = max((i for i, b in enumerate(blocks) if b.role == "assistant"), default=-1)
        typed = tuple(b.content_hash for b in blocks[last + 1:] if is_typed(b))
        return cls(typed, sum(1 for b in blocks if b.role == "assistant"))

    @classmethod
    def from_scan(cls, scan: BlockScan, blocks: Sequence[Block]) -> TurnFacts:
        """The same from the block store's scan of the request: a few keys and the tail's blocks,
        not the whole history, so a long session's requests cost what they add."""
        last = scan.last(_is_assistant)
        floor = -1 if last is None else last
        typed = []
        for p in scan.backwards(_maybe_typed):
            if p <= floor:
                break
            if is_typed(blocks[p]):
                typed.append(blocks[p].content_hash)
        n_assistant = sum(len(ps) for key, ps in scan.positions.items() if key.role == "assistant")
        return cls(tuple(reversed(typed)), n_assistant)

    def starts_turn(self, previous: TurnFacts | None) -> bool:
        """The user typed after an answer this thread's previous request did not yet carry (or at the
        start of the thread, or after its history was rewritten: a compaction, a rewind). A request
        that resends its predecessor's answers and typed text unchanged is a retry, not a turn."""
        if not self.typed_tail:
            return False
        return previous is None or self != previous


def _is_assistant(key: BlockKey) -> bool:
    return key.role == "assistant"


def _maybe_typed(key: BlockKey) -> bool:
    return key.role == "user" and key.kind == "message_text" and key.source in ("user_task", "mixed")


def is_typed(block: Block) -> bool:
    """A block the user typed: a user task, or a user message whose sections include one."""
    if block.role != "user" or block.kind != "message_text":
        return False
    return block.source == "user_task" or (block.source == "mixed"
                                           and any(s.source == "user_task" for s in block.segments))


@dataclass
class _Thread:
    thread_id: str
    kind: str
    last: int  # index of the last call
    hashes: list[str]
    count: int = 0
    parent_thread_id: str | None = None
    parent_call_id: str | None = None
    rule: str = ""
    last_blocks: list = field(default_factory=list)  # the last request's blocks (read only to spot flattening)
    turn_facts: TurnFacts | None = None  # the last main request's (a retry resends them unchanged)


@dataclass
class _Delegation:
    """A tool call of an earlier response whose arguments could be a child's task."""

    thread_id: str
    call_id: str
    packets: list[str]


@dataclass
class _Session:
    session_id: str
    source: str
    client: str
    last_ts: float
    threads: list[_Thread] = field(default_factory=list)
    count: int = 0
    turns: int = 0
    tasks_seen: set[str] = field(default_factory=set)
    auto_hashes: list[str] = field(default_factory=list)  # last main request, for prefix continuity
    delegations: list[_Delegation] = field(default_factory=list)


def containment(previous: list, current: list) -> float:
    """Share of the previous request's blocks that the current one still carries.

    Robust to an early block changing in place (a timestamp, a per-request hash)
    and to insertions, unlike a strict common prefix.
    """
    if not previous:
        return 0.0
    if current[:len(previous)] == previous:  # the usual case, one C comparison: current extends previous
        return 1.0
    prev = set(previous)
    return len(prev & set(current)) / len(prev)


class Containment:
    """`containment`, in time for what changed, along chains of requests that extend each other.

    Each request's blocks are kept as counts of distinct values. The next request that lines
    up with them (`align`: equal but for a few changed positions, then new blocks) takes the
    counts over and adjusts them for what changed and what it adds; the blocks it no longer
    carries are the changed ones whose count fell to zero. Anything else is counted afresh.
    """

    LIMIT = 64  # requests whose counts are kept (the last of each recent thread, in practice)

    def __init__(self) -> None:
        # id(blocks) -> (blocks, their counts, the blocks the counts were taken over from, that score)
        self._counts: OrderedDict[int, tuple[Sequence, Counter, Sequence | None, float]] = OrderedDict()

    def __call__(self, previous: Sequence, current: Sequence) -> float:
        if not previous:
            return 0.0
        mine = self._counts.get(id(current))
        if mine is not None and mine[0] is current and mine[2] is previous:
            return mine[3]  # asked again (a session's and its thread's last request are one list)
        n = len(previous)
        hit = self._counts.get(id(previous))
        if hit is not None and hit[0] is previous and len(current) >= n:
            m, holes = align(previous, current)
            if m == n:
                del self._counts[id(previous)]  # its counts become the current request's
                counts, distinct, dropped = hit[1], len(hit[1]), []
                for h in holes:
                    value = previous[h]
                    counts[value] -= 1
                    if not counts[value]:
                        del counts[value]
                        dropped.append(value)
                for h in holes:
                    counts[current[h]] += 1
                for value in current[n:]:
                    counts[value] += 1
                score = (distinct - len({v for v in dropped if v not in counts})) / distinct
                self._keep(current, counts, previous, score)
                return score
        score = containment(previous, current)
        counts = mine[1] if mine is not None and mine[0] is current else Counter(current)  # once per request
        self._keep(current, counts, previous, score)
        return score

    def _keep(self, blocks: Sequence, counts: Counter, origin: Sequence, score: float) -> None:
        self._counts[id(blocks)] = (blocks, counts, origin, score)  # kept alive: their ids stay theirs
        self._counts.move_to_end(id(blocks))
        while len(self._counts) > self.LIMIT:
            self._counts.popitem(last=False)


def _explicit_session(call: ModelCall) -> tuple[str, str] | None:
    ident = call.identity
    for value, source in ((ident.session_id, "session_id"), (ident.thread_id, "thread_id"),
                          (ident.prompt_cache_key, "prompt_cache_key")):
        if value:
            evidence = next((k for k, v in ident.evidence.items() if v == value), source)
            return f"{call.identity.client}:{value}", evidence
    return None


class SessionAssigner:
    """Places calls, one at a time in capture order, into sessions and threads."""

    def __init__(self) -> None:
        self.sessions: dict[str, _Session] = {}
        self.auto_counter: dict[str, int] = {}
        self.index = 0
        self.containment = Containment()

    def place(self, call: ModelCall, hashes: Sequence[int], continues_after_compaction: bool = False,
              tasks: set[str] | None = None, turn: TurnFacts | None = None) -> Placement:
        """`hashes`: content keys of the request's conversation blocks (tool definitions left out).

        `continues_after_compaction`: the request starts from a summary of earlier history,
        so it continues the main thread even though it no longer carries that history.
        `tasks`: content hashes of its user-task blocks, and `turn` its `TurnFacts`, when the
        caller already knows them (the block store's scan), so the request's blocks are not
        walked again.
        """
        sessions, auto_counter, index = self.sessions, self.auto_counter, self.index
        self.index += 1
        side = call.purpose.purpose in SIDE_PURPOSES
        explicit = _explicit_session(call)
        if explicit:
            key, source = explicit
            session = sessions.get(key)
            if session is None:
                session = sessions[key] = _Session(key, source, call.identity.client, call.ts_start)
        else:
            session = _auto_session(sessions, call, hashes, side, self.containment)
            if session is None:
                n = auto_counter.get(call.identity.client, 0) + 1
                auto_counter[call.identity.client] = n
                key = f"{call.identity.client}:auto:{n}"
                session = sessions[key] = _Session(key, "prefix-continuity", call.identity.client, call.ts_start)
        if tasks is None:
            tasks = {b.content_hash for b in call.request.blocks if b.source == "user_task"}
        thread = _thread_for(session, call, hashes, side, continues_after_compaction, tasks, self.containment)
        previous = thread.last if thread.count else None
        if thread.kind == "main":
            # only the main loop takes typed input: a subagent's task packet, a side call's prompt
            # and a restarted chain (`retry`) are not the user typing
            if turn is None:
                turn = TurnFacts.of(call.request.blocks)
            if turn.starts_turn(thread.turn_facts):
                session.turns += 1
            thread.turn_facts = turn
            session.tasks_seen |= tasks
        if not side:
            thread.last_blocks = call.request.blocks  # kept as is: texts are normalised only if ever needed
            session.delegations.extend(_delegations(call, thread.thread_id))
        placement = Placement(
            session_id=session.session_id, session_source=session.source, thread_id=thread.thread_id,
            thread_kind=thread.kind, seq_in_session=session.count, seq_in_thread=thread.count,
            previous_in_thread=previous, turn_index=session.turns, parent_thread_id=thread.parent_thread_id,
            parent_call_id=thread.parent_call_id, thread_rule=thread.rule,
        )
        session.count += 1
        thread.count += 1
        thread.last = index
        thread.hashes = hashes
        session.last_ts = max(session.last_ts, call.ts_end or call.ts_start)
        if not side:
            session.auto_hashes = hashes

        return placement

def _auto_session(sessions: dict[str, _Session], call: ModelCall, hashes: list[str], side: bool,
                  share: Containment) -> _Session | None:
    """The session a call without identifiers continues, if any."""
    candidates = [s for s in sessions.values() if s.source == "prefix-continuity" and s.client == call.identity.client
                  and call.ts_start - s.last_ts <= AUTO_SESSION_GAP_S]
    if side:
        # a side request (a title, a summary) sent without the session id its main loop carries, or
        # through another SDK that names no client, belongs to the session just active
        lone = call.identity.client.startswith("unknown")
        near = [s for s in sessions.values() if (s.client == call.identity.client or lone)
                and call.ts_start - s.last_ts <= SIDE_LEAD_S]
        return max(candidates or near, key=lambda s: s.last_ts) if candidates or near else None
    if not candidates:
        return None
    best, best_score = None, 0.0
    for s in candidates:
        score = share(s.auto_hashes, hashes)
        if score > best_score and score >= JOIN_FRACTION:
            best, best_score = s, score
    if best is None:
        # a session that so far holds only side requests (a router or title call sent first)
        # is the one the main loop that follows it belongs to
        opening = [s for s in candidates if not s.auto_hashes and call.ts_start - s.last_ts <= SIDE_LEAD_S]
        if opening:
            best = max(opening, key=lambda s: s.last_ts)
    return best


def _norm(text: str) -> str:
    return " ".join(text.split())


def _strings(value, out: list[str]) -> None:
    if isinstance(value, str):
        if len(value) >= MIN_PACKET_CHARS:
            out.append(_norm(value))
    elif isinstance(value, dict):
        for v in value.values():
            _strings(v, out)
    elif isinstance(value, list):
        for v in value:
            _strings(v, out)


def _delegations(call: ModelCall, thread_id: str) -> list[_Delegation]:
    """Tool calls whose arguments carry text long enough to be a child's task."""
    import json

    out = []
    for tc in call.response.tool_calls:
        packets: list[str] = []
        try:
            _strings(json.loads(tc.arguments), packets)
        except ValueError:
            _strings(tc.arguments, packets)
        if packets:
            out.append(_Delegation(thread_id, tc.call_id, packets))
    return out


def _user_texts(call: ModelCall) -> list[str]:
    return [_norm(b.text) for b in call.request.blocks
            if b.role == "user" and b.kind == "message_text" and b.text.strip()]


def _long_texts(blocks: list) -> list[str]:
    return [_norm(b.text) for b in blocks if b.kind in ("message_text", "tool_result") and len(b.text) >= LONG_TEXT][-50:]


def _delegated_by(session: _Session, call: ModelCall) -> _Delegation | None:
    """The pending delegation call whose arguments hold this request's first user text, if any."""
    texts = _user_texts(call)
    if not texts:
        return None
    for d in session.delegations:
        for packet in d.packets:
            if any(packet in t or (len(t) >= MIN_PACKET_CHARS and t in packet) for t in texts):
                session.delegations.remove(d)  # one call starts one child
                return d
    return None


def _flattens(session: _Session, call: ModelCall) -> _Thread | None:
    """The thread whose history this request carries inside its own text, if any."""
    joined = "\n".join(_norm(b.text) for b in call.request.blocks if b.kind == "message_text")
    for t in session.threads:
        texts = _long_texts(t.last_blocks) if t.kind != "side" else []
        if not texts:
            continue
        carried = sum(1 for x in texts if x in joined)
        if carried >= max(2, FLATTENED_FRACTION * len(texts)):
            return t
    return None


def _new_thread(session: _Session, kind: str, rule: str, suffix: str | None = None) -> _Thread:
    n = sum(1 for t in session.threads if t.kind == kind)
    tid = f"{session.session_id}/{suffix}" if suffix else f"{session.session_id}/{kind}" + (f"-{n + 1}" if n else "")
    thread = _Thread(tid, kind, -1, [], rule=rule)
    session.threads.append(thread)
    return thread


def _thread_for(session: _Session, call: ModelCall, hashes: list[str], side: bool,
                compacted: bool = False, tasks: set[str] | None = None, share=containment) -> _Thread:
    if side:
        tid = f"{session.session_id}/side"
        for t in session.threads:
            if t.thread_id == tid:
                return t
        return _new_thread(session, "side", f"purpose:{call.purpose.purpose}", "side")
    ident = call.identity
    client_says_sub = call.purpose.purpose == "subagent" or bool(ident.parent_thread_id)
    if ident.thread_id:
        tid = f"{session.session_id}/{ident.thread_id}"
        for t in session.threads:
            if t.thread_id == tid:
                return t
    else:
        best, best_score = None, 0.0
        for t in session.threads:
            if t.kind == "side" or (client_says_sub and t.kind == "main"):
                continue
            score = share(t.hashes, hashes)
            if score > best_score and score >= JOIN_FRACTION:
                best, best_score = t, score
        if best is not None:
            return best
        mains = [t for t in session.threads if t.kind == "main"]
        if compacted and mains and not client_says_sub:
            return mains[-1]  # a new context generation of the main loop, not a new thread
    thread = _classify_new(session, call, client_says_sub, tasks or set())
    if ident.thread_id:
        thread.thread_id = f"{session.session_id}/{ident.thread_id}"
    return thread


def _classify_new(session: _Session, call: ModelCall, client_says_sub: bool, tasks: set[str]) -> _Thread:
    """A chain that continues no thread of the session: what started it."""
    delegation = _delegated_by(session, call)
    if delegation is not None:
        thread = _new_thread(session, "subagent", "delegation-call")
        thread.parent_thread_id, thread.parent_call_id = delegation.thread_id, delegation.call_id
        return thread
    if client_says_sub:
        thread = _new_thread(session, "subagent", "client:" + (call.purpose.rule_id or "parent-thread"))
        parent = call.identity.parent_thread_id
        if parent:
            thread.parent_thread_id = f"{session.session_id}/{parent}"
        return thread
    if not any(t.kind == "main" for t in session.threads):
        return _new_thread(session, "main", "first-chain")
    flattened = _flattens(session, call)
    if flattened is not None:
        thread = _new_thread(session, "flattened", "carries-thread-history")
        thread.parent_thread_id = flattened.thread_id
        return thread
    if tasks and tasks <= session.tasks_seen:
        return _new_thread(session, "retry", "task-already-seen")
    return _new_thread(session, "main", "new-task")
