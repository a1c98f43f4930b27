"""Does any of several regexes match somewhere in a text? gitleaks' allowlists ask it of every finding.

Python's backtracking `re` answers some of them in quadratic time: the generic rule's
`match` allowlist (fifty alternatives, `[a-z0-9-]*?api[a-z0-9-]*?:jar:` among them) took
0.15 ms on a typical finding and 0.5 ms on a 200-byte one, an eighth of the cold scan of
agent bodies. Hyperscan answers in one linear pass. A regex Hyperscan does not compile, or
one whose meaning there could differ from Python's (lookarounds, back references, `{,n}`,
escapes the two read differently), stays with `re`; so does everything without Hyperscan
(`CTXTAP_REDACTION_ENGINE=python`). Only whether some regex matches is asked, which a
match's leftmost or longest form does not change.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence

from ctxtap.redaction.engine import compiled_database, hyperscan_module, scoped, uses_hyperscan

_hs = hyperscan_module()

# Escapes both engines read alike in a bytes pattern (`\Z` is rewritten to Hyperscan's `\z`).
_SAME_ESCAPES = frozenset("dDsSwWbntrfax0")
_PYTHON_ONLY = re.compile(r"\(\?(?:[=!#P]|<[=!]|[a-zA-Z]*x)|\{,")


def hyperscan_form(source: str) -> str | None:
    """`source` (Python syntax) as Hyperscan reads it the same way, or None where it may not."""
    if _PYTHON_ONLY.search(source):
        return None
    out: list[str] = []
    i = 0
    while i < len(source):
        if source[i] != "\\":
            out.append(source[i])
            i += 1
            continue
        pair = source[i : i + 2]
        escaped = pair[1:]
        if escaped == "Z":
            out.append(r"\z")  # Python's `\Z` is the very end, as Hyperscan's `\z`
        elif escaped.isalnum() and escaped not in _SAME_ESCAPES:
            return None  # back references, `\A`, `\v` (a class in Hyperscan), `\h`, ...
        else:
            out.append(pair)
        i += 2
    return "".join(out)


class AnyMatch:
    """A set of regexes (Python syntax) asked whether any matches somewhere in a text."""

    def __init__(self, sources: Sequence[str]) -> None:
        self.sources = tuple(sources)
        self.python = re.compile("|".join(scoped(s) for s in self.sources).encode()) if self.sources else None
        self._lock = threading.Lock()
        self._built = False
        self._db = None  # Hyperscan database of the sources it takes
        self._rest: re.Pattern[bytes] | None = self.python  # the others, with `re`
        self._local = threading.local()

    @classmethod
    def words(cls, words: Sequence[bytes]) -> AnyMatch:
        """Literal words (bytes), matched as they are."""
        return cls([re.escape(w.decode("latin-1")) for w in words])

    def search(self, text: bytes) -> bool:
        if not self._built:
            self._build()
        if self._db is not None:
            scratch = getattr(self._local, "scratch", None)
            if scratch is None:
                scratch = self._local.scratch = _hs.Scratch(self._db)  # type: ignore[union-attr]
            try:
                self._db.scan(text, match_event_handler=_stop, scratch=scratch)
            except _hs.ScanTerminated:  # type: ignore[union-attr]
                return True
        return self._rest is not None and self._rest.search(text) is not None

    def uses_hyperscan(self) -> bool:
        """Do some of the sources go through Hyperscan? (Tests.)"""
        if not self._built:
            self._build()
        return self._db is not None

    def _build(self) -> None:
        with self._lock:
            if self._built:
                return
            if self.sources and uses_hyperscan():
                self._split()
            self._built = True

    def _split(self) -> None:
        forms = {i: f for i, s in enumerate(self.sources) if (f := hyperscan_form(s)) is not None}
        db = _compile(list(forms.values()))
        if db is None and len(forms) > 1:  # one pattern spoils the set: find those Hyperscan takes
            forms = {i: f for i, f in forms.items() if _compile([f]) is not None}
            db = _compile(list(forms.values()))
        if db is None:
            return
        rest = [s for i, s in enumerate(self.sources) if i not in forms]
        self._rest = re.compile("|".join(scoped(s) for s in rest).encode()) if rest else None
        self._db = db


def _compile(forms: list[str]):  # noqa: ANN202 - a hyperscan.Database or None
    if not forms:
        return None
    try:  # kept in the engine's cache directory: the generic rule's takes 0.3 s to compile
        return compiled_database(
            [f.encode("latin-1") for f in forms], [_hs.HS_FLAG_SINGLEMATCH] * len(forms)  # type: ignore[union-attr]
        )
    except Exception:  # hyperscan.error: an unsupported construct, or a pattern matching the empty text
        return None


def _stop(*_: object) -> bool:
    return True  # one match answers the question

