"""One sweep over a body that collects every finding, settled into non-overlapping spans.

Every detector of the registry (`redaction.registry`) registers its triggers with one
engine (`redaction.engine`), built once per process: a body is scanned once, and each
detector verifies only the places its triggers matched, called in the registry's order
with its own hits (`Detector.find`). Three steps recurse into the scan itself and so
stay special here: the decoders (`Detector.decode`: percent-encoded runs, base64 files)
hand what they decode back to `find_spans`, and JSON string literals whose escapes
could hide a rule are decoded and scanned again between the two (`redaction.json_escapes`:
it has no trigger of its own, it opens strings where any trigger's escape-tolerant form
matched and where the rule catalogue's multi-line rules would match).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace

from ctxtap.redaction import json_escapes, kingfisher, registry
from ctxtap.redaction.detector import Detector, FindDecoded
from ctxtap.redaction.engine import (
    HitList,
    HyperscanEngine,
    PythonEngine,
    Trigger,
    build_engine,
    uses_hyperscan,
)
from ctxtap.redaction.gitleaks import RuleSet, load_rules
from ctxtap.redaction.openers import UNMODELLED, opener
from ctxtap.redaction.placeholder import PLACEHOLDER_MARK, PLACEHOLDER_RE
from ctxtap.redaction.spans import PRIORITY_GITLEAKS, Span, merge_spans

_NO_HITS: tuple = ()  # a trigger that did not match (shared, never appended to)


class Scanner:
    """Every detector's triggers in one engine, and the dispatch of its hits."""

    def __init__(self, ruleset: RuleSet, backend: str | None = None) -> None:
        self.ruleset = ruleset
        self.detectors: tuple[Detector, ...] = registry.detectors_for(ruleset)
        # With Hyperscan, only the JSON string literals where a trigger's escape-tolerant form
        # matches are decoded and scanned again (`redaction.openers`): the rule catalogue's triggers
        # take that form themselves (their hits are only places to verify the rule's own regex),
        # the others get it as an opener of their own, numbered after every trigger. The
        # fallback opens every literal an escape could hide a rule in.
        self._narrow = uses_hyperscan(backend)
        # Triggers are numbered in registry order, the rule catalogue's after every other's.
        numbered = sorted(self.detectors, key=lambda d: d.numbered_last)
        position = {d.name: k for k, d in enumerate(self.detectors)}
        self._ranges: list[range] = []  # each detector's triggers, in the engine's order
        self._first = [0] * len(self.detectors)  # by registry position: the number of its first trigger
        self._size = [len(d.triggers) for d in self.detectors]
        self._owner: list[int] = []  # by trigger number: its detector's registry position (-1: an opener)
        triggers: list[Trigger] = []
        starts: set[int] = set()
        for d in numbered:
            own = list(d.triggers)
            if self._narrow and d.tolerant_triggers:
                own = [t if (form := opener(t.pattern)) is None else replace(t, pattern=form) for t in own]
            span = range(len(triggers), len(triggers) + len(own))
            self._first[position[d.name]] = span.start
            self._ranges.append(span)
            self._owner += [position[d.name]] * len(own)
            if d.python_starts:
                starts.update(span)
            triggers.extend(own)
        self._first_opener = len(triggers)
        # hits that never open a JSON string (their rules read escaped text themselves)
        self._not_opening = frozenset(i for i, t in enumerate(triggers) if not t.opens)
        if self._narrow:
            triggers += [
                Trigger(form, caseless=t.caseless)
                for d, span in zip(numbered, self._ranges, strict=True) if not d.tolerant_triggers
                for t in triggers[span.start : span.stop]
                if t.opens and (form := opener(t.pattern)) is not None
            ]
            triggers += [Trigger(escape) for escape in UNMODELLED]
            self._owner += [-1] * (len(triggers) - self._first_opener)
        # The name rules' triggers begin one byte before their keyword: their starts are found
        # in Python (start-of-match tracking would make up most of the Hyperscan database).
        self.engine: HyperscanEngine | PythonEngine = build_engine(triggers, backend, python_starts=frozenset(starts))
        self._finders = [(k, d.find) for k, d in enumerate(self.detectors) if d.find is not None]
        self._flat: list[tuple[int, FindDecoded]] = [
            (k, d.decode) for k, d in enumerate(self.detectors) if d.decode is not None and not d.nests]
        self._nesting: list[tuple[int, FindDecoded]] = [
            (k, d.decode) for k, d in enumerate(self.detectors) if d.decode is not None and d.nests]
        self._lines = [(k, d.lines_at) for k, d in enumerate(self.detectors) if d.lines_at is not None]
        self._opened = json_escapes.OpenedStrings()  # resent history: see `OpenedStrings`

    @property
    def backend(self) -> str:
        return self.engine.name

    def find_spans(self, data: bytes, *, decode: bool = True, depth: int = 0, apart: bool = True) -> list[Span]:
        """Secrets in `data`, sorted and disjoint. Existing placeholders are left alone.

        `decode` also opens percent-encoded runs and JSON strings whose escapes hide
        a rule's quotes (`depth` counts the JSON levels opened so far). `apart=False` leaves out
        the triggers Hyperscan scans apart (`Trigger.apart`): an opened JSON string holds the
        same runs of letters and digits the scan of its raw bytes already read.
        """
        hits = self.engine.scan(data, apart=apart)
        if not hits.by_trigger:
            # most headers, URLs and small values: no trigger, nothing to verify, no string to
            # open (but for the fallback, which opens every string holding an escaped quote)
            if not decode:
                return []
            found: list[Span] = []
            json_escapes.find_escaped_spans(
                data, found, self._unescaped_spans, depth, memory=self._opened, near=() if self._narrow else None
            )
            return [_whole_escapes(data, s) for s in merge_spans(found, self._protected(data))] if found else []
        # Each detector's hits, one list per own trigger (None: none of its triggers matched).
        owner, first, size = self._owner, self._first, self._size
        per: list[list[HitList | tuple] | None] = [None] * len(size)
        for i, matched in hits.by_trigger.items():
            k = owner[i]
            if k < 0:
                continue  # an opener
            own = per[k]
            if own is None:
                own = per[k] = [_NO_HITS] * size[k]
            own[i - first[k]] = matched
        spans: list[Span] = []
        for k, find in self._finders:
            own = per[k]
            if own is not None:
                find(data, own, spans)
        if decode:
            for k, decoder in self._flat:
                own = per[k]
                if own is not None:
                    decoder(data, own, spans, self._decoded_spans)
            near = None  # the fallback: every literal holding a hiding run
            if self._narrow:  # only a body with a backslash has a literal to open
                near = sorted(
                    e - 1 for i, found in hits.by_trigger.items() if i not in self._not_opening for _, e in found
                ) if b"\\" in data else ()
            lines = [pos for k, lines_at in self._lines if (own := per[k]) is not None for pos in lines_at(data, own)]
            json_escapes.find_escaped_spans(data, spans, self._unescaped_spans, depth, lines, self._opened, near)
            if depth < json_escapes.MAX_DEPTH:
                for k, decoder in self._nesting:
                    own = per[k]
                    if own is not None:  # a file attached as base64 (each level of nesting counted as a JSON level)
                        decoder(data, own, spans, lambda decoded: self.find_spans(decoded, depth=depth + 1))
        if not spans:
            return spans
        return [_whole_escapes(data, s) for s in merge_spans(spans, self._protected(data))]

    @staticmethod
    def _protected(data: bytes) -> list[tuple[int, int]]:
        """Existing placeholders: never redacted again."""
        if PLACEHOLDER_MARK in data:
            return [m.span() for m in PLACEHOLDER_RE.finditer(data)]
        return []

    def _decoded_spans(self, decoded: bytes) -> list[Span]:
        return self.find_spans(decoded, decode=False)

    def _unescaped_spans(self, decoded: bytes, depth: int) -> list[Span]:
        return self.find_spans(decoded, depth=depth, apart=False)

    def kind_of_value(self, value: bytes) -> str | None:
        """The kind of a value that is exactly one secret recognised by its format, else None.

        Used where a name already says "secret" (an Authorization header, an
        `api_key=` parameter) to give the placeholder a more specific kind.
        """
        spans = [s for s in self.find_spans(value, decode=False) if s.priority <= PRIORITY_GITLEAKS]
        if len(spans) == 1 and spans[0].start == 0 and spans[0].end == len(value):
            return spans[0].kind
        return None


def _whole_escapes(data: bytes, span: Span) -> Span:
    """A span never ends between a backslash and what it escapes (`\\"` in JSON): the document stays valid."""
    end = span.end
    while end > span.start and data[end - 1] == 0x5C:
        end -= 1
    return span if end == span.end else span._replace(end=end)


_lock = threading.Lock()
_scanners: dict[str, Scanner] = {}


def get_scanner(backend: str | None = None) -> Scanner:
    """The process-wide scanner (built on first use: compiling every rule takes about a second)."""
    key = backend or "default"
    scanner = _scanners.get(key)
    if scanner is None:
        with _lock:
            scanner = _scanners.get(key)
            if scanner is None:
                scanner = _scanners[key] = Scanner(kingfisher.add_rules(load_rules()), backend)
    return scanner


def clear_caches() -> None:
    """Forget remembered verdicts (benchmarks measure cold bodies)."""
    from ctxtap.redaction import entropy, false_positives, gitleaks_match, token_shapes

    false_positives.REJECTED.clear()
    token_shapes.glued_key.cache_clear()
    token_shapes.carries_key.cache_clear()
    gitleaks_match._VERDICTS.clear()
    entropy.clear_cache()
    for scanner in list(_scanners.values()):
        scanner._opened.clear()


def find_spans(data: bytes) -> list[Span]:
    """Secrets in `data`, sorted and disjoint. Existing placeholders are left alone."""
    return get_scanner().find_spans(data)


def kind_of_value(value: bytes) -> str | None:
    """See `Scanner.kind_of_value`."""
    return get_scanner().kind_of_value(value)


SpanFinder = Callable[[bytes], list[Span]]
