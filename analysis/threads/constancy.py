"""Constancy across runs: what every session of one client version sends is the client's own.

A client's rules and catalogue are the same text in every run of one version; the environment
(date, directory, branch) and the task change from run to run. With several sessions of one
client version — in one capture, or over captures a user names (`ctxtap analyze A B C
--across-runs`) — a line of the first main request that every session sends is constant, and a
line that only some send varies. That is evidence the segment reader can use where no detector
recognises a line: a short run of varying lines in the system text is the run's environment, and
in the first user text (no task known from the command line) the constant lines are the client's
template around a task that varies.

Identical runs say nothing (everything is constant, the environment too), so a set of sessions
gives verdicts only where something varies; only line fingerprints are kept, never text.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from pydantic import BaseModel, Field

from ctxtap.capture.file_lines import line_hash

CONSTANT, VARIES = "constant", "varies"
SYSTEM_ROLES = frozenset({"system", "developer"})
TEXT_KINDS = frozenset({"instruction_text", "message_text"})
SHARED = 0.5  # a session joins a group when at least half its opening's lines are the group's constant lines
MIN_LINES = 3  # an opening shorter than this compares nothing


class Opening(BaseModel):
    """The fingerprints of a session's first main request: the lines of its system and user text, and
    each whole user or assistant turn (an assistant turn there is one the client wrote)."""

    client: str
    version: str | None = None
    system: list[str] = Field(default_factory=list)
    user: list[str] = Field(default_factory=list)
    turns: list[str] = Field(default_factory=list)  # whole user and assistant turns ("Ok." has no line long enough)


class States(BaseModel):
    """Fingerprint -> `constant` or `varies`: lines of system text, lines of user text, whole turns."""

    system: dict[str, str] = Field(default_factory=dict)
    user: dict[str, str] = Field(default_factory=dict)
    turns: dict[str, str] = Field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.system or self.user or self.turns)

    def digest(self) -> str:
        body = self.model_dump_json().encode()
        return hashlib.blake2b(body, digest_size=8).hexdigest()


_STATES: ContextVar[tuple[States, str]] = ContextVar("ctxtap_constancy", default=(States(), ""))


def _hashes(texts: Iterable[str]) -> list[str]:
    return sorted({h for text in texts for h in map(line_hash, text.splitlines()) if h})


def opening_of(client: str, version: str | None, blocks) -> Opening:
    """A session's opening from its first main request's blocks (objects with role, kind, text): the
    lines of its system and user text (the task included), and every user and assistant turn whole
    (no model has answered yet: an assistant turn is the client's)."""
    system, user, turns = [], [], set()
    for b in blocks:
        if b.kind not in TEXT_KINDS:
            continue
        if b.role in SYSTEM_ROLES:
            system.append(b.text)
            continue
        if b.role == "user":
            user.append(b.text)
        if b.text.strip():
            turns.add(turn_hash(b.text))
    return Opening(client=client, version=version, system=_hashes(system), user=_hashes(user), turns=sorted(turns))


def turn_hash(text: str) -> str:
    """The fingerprint of a whole turn (stripped)."""
    return hashlib.blake2b(text.strip().encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def turn_state(text: str) -> str | None:
    """`constant` when every compared run sends this turn, whole; `varies`; or None (not compared)."""
    return current().turns.get(turn_hash(text))


def _groups(openings: list[Opening]) -> list[list[Opening]]:
    """Sessions of one client version whose openings are mostly the same lines (a subagent's or a
    side request's prompt is another text and groups apart)."""
    groups: list[list[Opening]] = []
    cores: list[set[str]] = []
    for o in openings:
        lines = {f"s{h}" for h in o.system} | {f"u{h}" for h in o.user} | {f"t{h}" for h in o.turns}
        if len(lines) < MIN_LINES:
            continue
        for k, group in enumerate(groups):
            first = group[0]
            core = cores[k] & lines
            if (first.client, first.version) == (o.client, o.version) and len(core) >= SHARED * len(lines) \
                    and len(core) >= SHARED * len(cores[k]):
                group.append(o)
                cores[k] = core
                break
        else:
            groups.append([o])
            cores.append(lines)
    return [g for g in groups if len(g) >= 2]


def _verdicts(sets: list[set[str]]) -> dict[str, str]:
    """Constant where every set has the line, varies where some do not."""
    core = set.intersection(*sets)
    return {h: CONSTANT if h in core else VARIES for h in set.union(*sets)}


def states_of(openings: list[Opening]) -> States:
    """The verdicts of every group of comparable sessions; a line that varies in one group varies."""
    out = States()
    for group in _groups(openings):
        everything = [set(o.system) | set(o.user) | set(o.turns) for o in group]
        if VARIES not in _verdicts(everything).values():
            continue  # identical runs: nothing tells the client's text from the run's
        for name in ("system", "user", "turns"):
            found = _verdicts([set(getattr(o, name)) for o in group])
            mine = getattr(out, name)
            for h, verdict in found.items():
                mine[h] = VARIES if mine.get(h) == VARIES else verdict
    return out


@contextmanager
def using(states: States | None) -> Iterator[States]:
    """Read a capture with the verdicts of its sessions (and its named peers) in force."""
    states = states or States()
    token = _STATES.set((states, states.digest() if states else ""))
    try:
        yield states
    finally:
        _STATES.reset(token)


def current() -> States:
    return _STATES.get()[0]


def digest() -> str:
    """A short digest of the verdicts in force ("" when none): part of a cached reading's key."""
    return _STATES.get()[1]


def line_states(text: str, role: str) -> list[tuple[int, int, str | None]]:
    """(start, end, verdict) of each line of a system or user `text` (character offsets, ends including
    the newline), the verdict None where the line is too short to fingerprint or was not compared."""
    states = current()
    table = states.system if role in SYSTEM_ROLES else states.user
    out, pos = [], 0
    for line in text.splitlines(keepends=True):
        h = line_hash(line)
        out.append((pos, pos + len(line), table.get(h) if h else None))
        pos += len(line)
    return out


def digest_of(openings: list[Opening]) -> str:
    """A short digest of a run's openings: a capture read across it is rebuilt when they change."""
    body = "\n".join(o.model_dump_json() for o in openings).encode()
    return hashlib.blake2b(body, digest_size=8).hexdigest()
