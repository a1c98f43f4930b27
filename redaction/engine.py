"""One pass over a body for every rule at once: Hyperscan where its wheel is installed, else pure Python.

Every detector (ctxtap's own formats, the name rules, the vendored gitleaks
rules) registers `Trigger`s: a pattern that any secret of its kind must
contain. The engine reports where triggers match; the detectors then verify
only those places with their full Python rules. Hyperscan runs every trigger
in one scan of the raw bytes (no copy, no lower-casing), so the cost of a
clean body is one pass at memory-ish speed, whatever the number of rules.

Without Hyperscan the same triggers are found the way gitleaks prefilters:
each trigger names the literals (keywords, prefixes) it contains, a literal
is looked up with `bytes.find`, and the trigger's Python regex runs only in a
window around each occurrence. Same hits, slower.

`CTXTAP_REDACTION_ENGINE=python` forces the fallback (tests run both).
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
import time
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

try:  # pragma: no cover - depends on the platform's wheel
    import hyperscan as _hs
except ImportError:  # pragma: no cover
    _hs = None

_PY_FLAGS_RE = re.compile(rb"^\(\?([a-z]+)\)")


@dataclass(frozen=True)
class Trigger:
    """A pattern every finding of one detector contains.

    `pattern`: Hyperscan (PCRE-subset) syntax, also valid for Python's `re`
    unless `py_pattern` is given. `literals`: lower-case byte strings, at
    least one of which occurs in every match (the fallback's prefilter); empty
    means the fallback runs `py_pattern` over the whole body. `window`: how
    far from a literal a match may start or end (for the fallback).
    `som`: report where the match starts (Hyperscan's start-of-match mode;
    only for simple patterns). `caseless`: the pattern ignores case (and so
    does the literal lookup; literals are then lower-case). `opens`: a hit
    inside a JSON string gets that string decoded and scanned again (False
    for a rule that reads any level of escaping itself: it needs no opening).
    `apart`: Hyperscan scans it in a database of its own. A pattern of wide classes and no literal
    (`[^…][A-Za-z0-9]{20}`: any run of twenty letters and digits) costs 14 instructions a byte
    there; in the shared database it widened the automaton every byte passes through by 24.
    """

    pattern: bytes
    literals: tuple[bytes, ...] = ()
    window: int = 512
    som: bool = False
    caseless: bool = False
    py_pattern: bytes | None = None
    fold_literals: bool = False  # look literals up case-insensitively (gitleaks keywords)
    opens: bool = True
    apart: bool = False


class HitList:
    """The (start, end) matches of one trigger, kept as two arrays of integers.

    A body built to be slow (a keyword every four bytes) has hundreds of thousands of hits;
    as tuples they cost about 110 bytes each (180 MB for a megabyte of `key=`), here 16.
    Iterating yields (start, end) pairs, like the list it replaces.
    """

    __slots__ = ("starts", "ends")

    def __init__(self) -> None:
        self.starts = array("q")
        self.ends = array("q")

    def append(self, start: int, end: int) -> None:
        self.starts.append(start)
        self.ends.append(end)

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return zip(self.starts, self.ends, strict=True)

    def __len__(self) -> int:
        return len(self.ends)

    def __getitem__(self, index: int) -> tuple[int, int]:
        return self.starts[index], self.ends[index]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, HitList):
            return self.starts == other.starts and self.ends == other.ends
        return isinstance(other, list) and list(self) == other

    __hash__ = None  # type: ignore[assignment]  # mutable, like a list

    def __repr__(self) -> str:
        return f"HitList({list(self)!r})"


class Hits:
    """Matches of one scan: for trigger `i`, its (start, end) pairs in scan order.

    A start is -1 where the trigger does not report starts.
    """

    __slots__ = ("by_trigger", "som")

    def __init__(self, som: frozenset[int] = frozenset()) -> None:
        self.by_trigger: dict[int, HitList] = {}
        self.som = som  # triggers whose starts are real (Hyperscan reports 0 for the others)

    def add(self, trigger: int, start: int, end: int) -> None:
        found = self.by_trigger.get(trigger)
        if found is None:
            found = self.by_trigger[trigger] = HitList()
        found.append(start, end)

    def get(self, trigger: int) -> HitList | list[tuple[int, int]]:
        return self.by_trigger.get(trigger, [])


class PythonEngine:
    """The fallback: literal prefilter, then each trigger's regex in windows around the literals.

    The literals are found in one Aho-Corasick pass per case (`pyahocorasick`), not one
    `bytes.find` sweep per literal (some 300 sweeps of every body)."""

    name = "python"

    def __init__(self, triggers: Sequence[Trigger]) -> None:
        self._triggers = list(triggers)
        self._regexes = [re.compile(_python_source(t)) for t in self._triggers]
        # gitleaks' semi-generic rules: what follows their lazy name prefix, searched on its own
        self._rests = {i: rest for i, r in enumerate(self._regexes) if (rest := _rest_after_prefix(r)) is not None}
        # literal -> triggers containing it, so each literal is searched once per body.
        self._by_literal: dict[tuple[bytes, bool], list[int]] = {}
        self._unfiltered: list[int] = []
        for i, t in enumerate(self._triggers):
            if not t.literals:
                self._unfiltered.append(i)
            for lit in t.literals:
                self._by_literal.setdefault((lit, t.caseless or t.fold_literals), []).append(i)
        self._automata = _literal_automata(self._by_literal)

    def _occurrences(self, data: bytes) -> Iterator[tuple[int, bytes, list[int]]]:
        """(position, literal, trigger ids) of every occurrence of every literal, overlaps included."""
        for caseless, automaton in self._automata.items():
            hay = (data.lower() if caseless else data).decode("latin-1")  # a character per byte
            for end, (lit, ids) in automaton.iter(hay):
                yield end - len(lit) + 1, lit, ids

    def scan(self, data: bytes, apart: bool = True) -> Hits:
        """As Hyperscan's: `apart=False` leaves out the triggers marked `apart`."""
        hits = Hits()
        windows: dict[int, list[tuple[int, int]]] = {}
        n = len(data)
        for pos, lit, ids in self._occurrences(data):
            for i in ids:
                w = self._triggers[i].window
                windows.setdefault(i, []).append((max(0, pos - w), min(n, pos + len(lit) + w + 1)))
        for i, spans in windows.items():
            regex = self._regexes[i]
            seen: set[tuple[int, int]] = set()
            rest = self._rests.get(i)
            for lo, hi in _merge(spans, _MAX_SPAN):
                found = regex.finditer(data, lo, hi) if rest is None else _prefixed_finditer(regex, rest, data, lo, hi)
                for m in found:
                    if m.end() == hi and hi < n:
                        continue  # cut by the window, not by the text
                    if m.span() not in seen:
                        seen.add(m.span())
                        hits.add(i, m.start() if self._triggers[i].som else -1, m.end())
        for i in self._unfiltered:
            if not apart and self._triggers[i].apart:
                continue
            for m in self._regexes[i].finditer(data):
                hits.add(i, m.start() if self._triggers[i].som else -1, m.end())
        return hits


_LAZY_PREFIX = rb"(?i)[\w.-]{0,50}?"
_PREFIX_REACH = 50
_PREFIX_CHARS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")


def _rest_after_prefix(regex: re.Pattern[bytes]) -> re.Pattern[bytes] | None:
    r"""For a regex that is `(?i)[\w.-]{0,50}?` then R (R never empty), R compiled on its own."""
    if not regex.pattern.startswith(_LAZY_PREFIX):
        return None
    try:
        rest = re.compile(b"(?i)" + regex.pattern[len(_LAZY_PREFIX) :])
    except re.error:
        return None
    return rest if rest.groups == regex.groups and rest.fullmatch(b"") is None else None


def _prefixed_finditer(
    regex: re.Pattern[bytes], rest: re.Pattern[bytes], data: bytes, lo: int, hi: int
) -> Iterator[re.Match[bytes]]:
    r"""`regex.finditer(data, lo, hi)` for a regex that is `(?i)[\w.-]{0,50}?` then `rest`, without
    the lazy prefix tried at every byte (fifty steps per byte: most of the fallback's time).

    The leftmost place `rest` matches, `q`, is where the first match's `rest` part begins: it
    matches nowhere before. Its start is the first byte from which the prefix reaches `q`
    (word characters, at most fifty back, not before the search position); no earlier start
    can reach a place where `rest` matches. From there `regex` gives finditer's match.
    """
    pos = lo
    while pos <= hi:
        m = rest.search(data, pos, hi)
        if m is None:
            return
        start = m.start()
        floor = max(pos, start - _PREFIX_REACH)
        while start > floor and data[start - 1] in _PREFIX_CHARS:
            start -= 1
        full = regex.match(data, start, hi)
        if full is None:  # not expected (see above): search the rest of the window as finditer would
            yield from regex.finditer(data, pos, hi)
            return
        yield full
        pos = full.end()


def _literal_automata(by_literal: dict[tuple[bytes, bool], list[int]]) -> dict:
    """One Aho-Corasick automaton per case (keys: literals as Latin-1 text)."""
    import ahocorasick  # only the fallback needs it

    automata: dict[bool, object] = {}
    for (lit, caseless), ids in by_literal.items():
        automaton = automata.get(caseless)
        if automaton is None:
            automaton = automata[caseless] = ahocorasick.Automaton()
        automaton.add_word(lit.decode("latin-1"), (lit, ids))
    for automaton in automata.values():
        automaton.make_automaton()
    return automata


class HyperscanEngine:
    """Every trigger in one Hyperscan block-mode database; a scratch space per thread.

    Compiling ~300 patterns takes a few seconds of CPU, so the compiled database
    is kept in a cache directory (`CTXTAP_CACHE_DIR`, else `~/.cache/ctxtap`),
    keyed by the patterns, their flags and the Hyperscan version. It holds
    public patterns only; a missing, stale or unwritable cache just means
    compiling again.
    """

    name = "hyperscan"

    def __init__(
        self, triggers: Sequence[Trigger], cache: bool = True, python_starts: frozenset[int] = frozenset()
    ) -> None:
        """`python_starts`: triggers whose match always begins one byte before one of their
        literals, or at that literal (the name rules: a delimiter or name character, then the
        keyword). Hyperscan reports only their ends; the leftmost start is found in Python from
        the literals (`_leftmost_start`). Start-of-match tracking of such patterns, caseless and
        with bounded repeats, made up 8.5 MB of a 9.6 MB database (every writer holds it)."""
        assert _hs is not None
        self._python_starts = {
            i: (re.compile(_ending_at(_python_source(triggers[i]))), triggers[i].literals)
            for i in sorted(python_starts)
            if triggers[i].som and triggers[i].literals
        }
        flags = []
        for i, t in enumerate(triggers):
            f = 0
            if t.som and i not in self._python_starts:
                f |= _hs.HS_FLAG_SOM_LEFTMOST
            if t.caseless:
                f |= _hs.HS_FLAG_CASELESS
            flags.append(f)
        together = [i for i, t in enumerate(triggers) if not t.apart]
        apart = [i for i, t in enumerate(triggers) if t.apart]
        self._db = (compiled_database([triggers[i].pattern for i in together], [flags[i] for i in together], cache,
                                      ids=together) if together else None)  # (a detector's own engine, in tests)
        self._apart_db = (compiled_database([triggers[i].pattern for i in apart], [flags[i] for i in apart], cache,
                                            ids=apart) if apart else None)
        self._local = threading.local()
        self._som = frozenset(i for i, t in enumerate(triggers) if t.som)

    def scan(self, data: bytes, apart: bool = True) -> Hits:
        """Every trigger's hits in `data`; `apart=False` leaves out the triggers scanned apart."""
        hits = Hits(self._som)
        if not data:
            return hits
        scratch = getattr(self._local, "scratch", None)
        if scratch is None:
            scratch = self._local.scratch = _hs.Scratch(self._db) if self._db is not None else False
            if self._apart_db is not None:
                self._local.apart_scratch = _hs.Scratch(self._apart_db)
        if self._db is not None:
            self._db.scan(data, match_event_handler=_on_match, context=hits, scratch=scratch)
        if apart and self._apart_db is not None:
            self._apart_db.scan(data, match_event_handler=_on_match, context=hits, scratch=self._local.apart_scratch)
        if self._python_starts and not self._python_starts.keys().isdisjoint(hits.by_trigger):
            for i, (regex, literals) in self._python_starts.items():
                found = hits.by_trigger.get(i)
                if found:
                    hits.by_trigger[i] = _recover_starts(regex, literals, data, found)
        return hits


def _recover_starts(regex: re.Pattern[bytes], literals: tuple[bytes, ...], data: bytes, found: HitList) -> HitList:
    """`_leftmost_start` of each hit; a start depends only on the reach before its end, so a
    reach seen before in the body (a repeated line) is not searched again."""
    seen: dict[tuple[bool, bytes], int] = {}
    out = HitList()
    for end in found.ends:
        lo = max(0, end - _START_REACH)
        key = (lo == 0, data[lo:end])
        offset = seen.get(key)
        if offset is None:
            offset = seen[key] = _leftmost_start(regex, literals, data, end) - lo
        out.append(lo + offset, end)
    return out


# How far before its end a recovered match may start: a name, its separator and a value, with
# room to spare (the fallback engine looks no further than a trigger's window either side).
_START_REACH = 320


def _leftmost_start(regex: re.Pattern[bytes], literals: tuple[bytes, ...], data: bytes, end: int) -> int:
    """Where Hyperscan's leftmost start-of-match would be for a match of `regex` ending at `end`
    (`regex`: the trigger's pattern anchored at the end, `_ending_at`): the first place, from one
    byte before the first occurrence of a literal in reach, from which it matches exactly up to
    `end` (the literals are lower-case: only the reach before `end` is lowered, not the body).
    One search in C: trying the places one by one took a Python call per keyword occurrence in
    reach, quadratic on `key=key=key=...` (35 s for a megabyte)."""
    lo = max(0, end - _START_REACH)
    window = data[lo:end].lower()
    first = min((at for lit in literals if (at := window.find(lit)) >= 0), default=-1)
    if first < 0:
        return max(0, end - 1)  # not expected: a match holds a literal
    begin = max(0, lo + first - 1)
    m = regex.search(data, begin, end)
    return m.start() if m is not None else begin  # not expected: the first keyword place


def scoped(source: str) -> str:
    """A pattern with leading global flags as a group that can sit inside an alternation."""
    m = re.match(r"\(\?([a-z]+)\)", source)
    return f"(?{m.group(1)}:{source[m.end():]})" if m else f"(?:{source})"


def _ending_at(source: bytes) -> bytes:
    """`source` followed by the end of the searched range."""
    return scoped(source.decode("latin-1")).encode("latin-1") + rb"\Z"


def compiled_database(expressions: list[bytes], flags: list[int], cache: bool = True,
                      ids: list[int] | None = None):  # noqa: ANN201
    """A Hyperscan block-mode database of `expressions` (ids: `ids`, else their indexes), from the cache
    directory where it was compiled before (compiling takes up to seconds; loading, milliseconds).
    Raises `hyperscan.error` for a pattern Hyperscan does not take."""
    ids = list(range(len(expressions))) if ids is None else ids
    path = _cache_path(expressions, flags, ids) if cache else None
    db = _load(path)
    if db is None:
        db = _hs.Database(mode=_hs.HS_MODE_BLOCK)  # type: ignore[union-attr]
        db.compile(expressions=expressions, ids=ids, elements=len(expressions), flags=flags)
        _store(path, db)
    return db


def _cache_path(expressions: list[bytes], flags: list[int], ids: list[int]) -> Path | None:
    base = os.environ.get("CTXTAP_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "ctxtap")
    digest = hashlib.sha256(repr((getattr(_hs, "__version__", ""), expressions, flags, ids)).encode()).hexdigest()
    return Path(base) / f"redaction-hs-{digest[:24]}.db"


_UNUSED_FOR_S = 30 * 86400  # a cached database no process loaded for this long is removed


def _load(path: Path | None):  # noqa: ANN202 - a hyperscan.Database or None
    if path is None or not path.is_file():
        return None
    try:
        db = _hs.loadb(path.read_bytes(), _hs.HS_MODE_BLOCK)  # type: ignore[union-attr]
    except Exception:
        return None  # another Hyperscan build or a torn file: compile instead
    try:
        os.utime(path)  # in use: kept by `_store`'s pruning
    except OSError:
        pass
    return db


def _store(path: Path | None, db: object) -> None:
    """Keep the compiled database, and remove those of earlier rule sets or Hyperscan builds
    that nothing loaded for a month (each is a megabyte or more; versions side by side that
    are still in use keep theirs)."""
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(_hs.dumpb(db))  # type: ignore[union-attr]
        os.replace(tmp, path)
        cutoff = time.time() - _UNUSED_FOR_S
        for old in path.parent.glob("redaction-hs-*.db"):
            if old != path and old.stat().st_mtime < cutoff:
                old.unlink(missing_ok=True)
    except OSError:
        pass


def _on_match(trigger: int, start: int, end: int, flags: int, hits: Hits) -> None:
    # `Hits.add`, inlined: called once per hit (tens of thousands in a body of code)
    found = hits.by_trigger.get(trigger)
    if found is None:
        found = hits.by_trigger[trigger] = HitList()
    found.starts.append(start if trigger in hits.som else -1)
    found.ends.append(end)


def _python_source(t: Trigger) -> bytes:
    source = t.py_pattern if t.py_pattern is not None else t.pattern
    if t.caseless and not source.startswith(b"(?i)"):
        source = b"(?i)" + source
    return source


# How long windows merged into one search may grow: a regex with a lazy run (`curl.*?-H`) that
# fails takes a step per byte to its line's end from every start, so one search over a whole
# line of `curl -u ...` commands was quadratic (39 s for 230 KB).
_MAX_SPAN = 4096


def _merge(spans: list[tuple[int, int]], cap: int) -> list[tuple[int, int]]:
    """Overlapping windows as fewer searches, none longer than `cap` unless one window is (each
    window lies whole in one search; searches may overlap, their matches are deduplicated)."""
    spans.sort()
    out = [spans[0]]
    for lo, hi in spans[1:]:
        last_lo, last_hi = out[-1]
        if lo <= last_hi and max(hi, last_hi) - last_lo <= cap:
            if hi > last_hi:
                out[-1] = (last_lo, hi)
        elif hi > last_hi:
            out.append((lo, hi))
    return out


def hyperscan_available() -> bool:
    return _hs is not None


def hyperscan_module():  # noqa: ANN201 - the optional module itself
    """The `hyperscan` module, or None where its wheel is not installed."""
    return _hs


def uses_hyperscan(backend: str | None = None) -> bool:
    """Would `build_engine(..., backend)` build a Hyperscan engine?"""
    wanted = backend or os.environ.get("CTXTAP_REDACTION_ENGINE", "auto")
    return wanted != "python" and _hs is not None


def build_engine(
    triggers: Sequence[Trigger], backend: str | None = None, python_starts: frozenset[int] = frozenset()
) -> HyperscanEngine | PythonEngine:
    """The fastest engine available (or the one `backend` / `CTXTAP_REDACTION_ENGINE` asks for).

    `python_starts`: see `HyperscanEngine` (the fallback finds every start in Python anyway)."""
    if not uses_hyperscan(backend):
        return PythonEngine(triggers)
    return HyperscanEngine(triggers, python_starts=python_starts)
