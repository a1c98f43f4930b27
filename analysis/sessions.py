"""Group model calls into sessions and threads.

Sessions come from the clients' own identifiers where they send one (Claude
Code's session header, Codex's session-id, Kimi's prompt_cache_key, ...), and
otherwise from prefix continuity: a request that begins with a recent request's
blocks belongs to its session. Inside a session, the main loop, each subagent
and the side requests (titles, compaction, probes, warm-ups) are separate
threads, so side traffic never distorts main-thread growth.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from analysis.models import ModelCall

SIDE_PURPOSES = {"title", "compaction", "probe", "count_tokens", "structured_side", "warmup", "other"}
AUTO_SESSION_GAP_S = 30 * 60
JOIN_FRACTION = 0.6


@dataclass
class Placement:
    session_id: str
    session_source: str
    thread_id: str
    thread_kind: str  # main | subagent | side
    seq_in_session: int
    seq_in_thread: int
    previous_in_thread: int | None  # index into the calls list
    turn_index: int


@dataclass
class _Thread:
    thread_id: str
    kind: str
    last: int  # index of the last call
    hashes: list[str]
    count: int = 0


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


def containment(previous: list, current: list) -> float:
    """Share of the previous request's blocks that the current one still carries.

    Robust to an early block changing in place (a timestamp, a per-request hash)
    and to insertions, unlike a strict common prefix.
    """
    if not previous:
        return 0.0
    prev = set(previous)
    return len(prev & set(current)) / len(prev)


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

    def place(self, call: ModelCall, hashes: list, continues_after_compaction: bool = False) -> Placement:
        """`hashes`: content keys of the request's conversation blocks (tool definitions left out).

        `continues_after_compaction`: the request starts from a summary of earlier history,
        so it continues the main thread even though it no longer carries that history.
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
            session = _auto_session(sessions, call, hashes, side)
            if session is None:
                n = auto_counter.get(call.identity.client, 0) + 1
                auto_counter[call.identity.client] = n
                key = f"{call.identity.client}:auto:{n}"
                session = sessions[key] = _Session(key, "prefix-continuity", call.identity.client, call.ts_start)
        thread = _thread_for(session, call, hashes, side, continues_after_compaction)
        previous = thread.last if thread.count else None
        tasks = {b.content_hash for b in call.request.blocks if b.source == "user_task"}
        if not side and tasks - session.tasks_seen:
            session.turns += 1
        if not side:
            session.tasks_seen |= tasks
        placement = Placement(
            session_id=session.session_id, session_source=session.source, thread_id=thread.thread_id,
            thread_kind=thread.kind, seq_in_session=session.count, seq_in_thread=thread.count,
            previous_in_thread=previous, turn_index=session.turns,
        )
        session.count += 1
        thread.count += 1
        thread.last = index
        thread.hashes = hashes
        session.last_ts = max(session.last_ts, call.ts_end or call.ts_start)
        if not side:
            session.auto_hashes = hashes

        return placement

def _auto_session(sessions: dict[str, _Session], call: ModelCall, hashes: list[str], side: bool) -> _Session | None:
    """The session a call without identifiers continues, if any."""
    candidates = [s for s in sessions.values() if s.source == "prefix-continuity" and s.client == call.identity.client
                  and call.ts_start - s.last_ts <= AUTO_SESSION_GAP_S]
    if not candidates:
        return None
    if side:
        return max(candidates, key=lambda s: s.last_ts)
    best, best_score = None, 0.0
    for s in candidates:
        score = containment(s.auto_hashes, hashes)
        if score > best_score and score >= JOIN_FRACTION:
            best, best_score = s, score
    return best


def _thread_for(session: _Session, call: ModelCall, hashes: list[str], side: bool,
                compacted: bool = False) -> _Thread:
    if side:
        tid = f"{session.session_id}/side"
        for t in session.threads:
            if t.thread_id == tid:
                return t
        thread = _Thread(tid, "side", -1, [])
        session.threads.append(thread)
        return thread
    ident = call.identity
    want_sub = call.purpose.purpose == "subagent" or bool(ident.parent_thread_id)
    if ident.thread_id:
        tid = f"{session.session_id}/{ident.thread_id}"
        for t in session.threads:
            if t.thread_id == tid:
                return t
        kind = "subagent" if want_sub or any(t.kind == "main" for t in session.threads) else "main"
        thread = _Thread(tid, kind, -1, [])
        session.threads.append(thread)
        return thread
    best, best_score = None, 0.0
    for t in session.threads:
        if t.kind == "side" or (want_sub and t.kind == "main"):
            continue
        score = containment(t.hashes, hashes)
        if score > best_score and score >= JOIN_FRACTION:
            best, best_score = t, score
    if best is not None:
        return best
    mains = [t for t in session.threads if t.kind == "main"]
    if compacted and mains and not want_sub:
        return mains[-1]  # a new context generation of the main loop, not a new thread
    has_main = bool(mains)
    kind = "subagent" if want_sub or has_main else "main"
    n = sum(1 for t in session.threads if t.kind == kind)
    thread = _Thread(f"{session.session_id}/{kind}" + (f"-{n + 1}" if n else ""), kind, -1, [])
    session.threads.append(thread)
    return thread
