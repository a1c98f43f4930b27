"""One sweep over a body that collects every finding, settled into non-overlapping spans.

All detectors register their triggers with one engine (`redaction.engine`),
built once per process: a body is scanned once, and each detector verifies
only the places its triggers matched.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace

from ctxtap.redaction import (
    base64_runs,
    cli_flags,
    comparisons,
    config_fields,
    encodings,
    json_escapes,
    kingfisher,
    prose,
    vendor_tokens,
)
from ctxtap.redaction.assignments import ASSIGNMENT_TRIGGERS, find_assignment_spans
from ctxtap.redaction.detectors import (
    CONTEXT_TRIGGERS,
    find_context_spans,
    find_token_spans,
    token_starts,
    token_triggers,
)
from ctxtap.redaction.engine import HyperscanEngine, PythonEngine, Trigger, build_engine, uses_hyperscan
from ctxtap.redaction.gitleaks import RuleSet, load_rules
from ctxtap.redaction.gitleaks_match import GitleaksDetector
from ctxtap.redaction.openers import UNMODELLED, opener
from ctxtap.redaction.placeholder import PLACEHOLDER_MARK, PLACEHOLDER_RE
from ctxtap.redaction.spans import PRIORITY_GITLEAKS, Span, merge_spans

_NO_HITS: tuple = ()  # a trigger that did not match (shared, never appended to)


class Scanner:
    """Every detector's triggers in one engine, and the dispatch of its hits."""

    def __init__(self, ruleset: RuleSet, backend: str | None = None) -> None:
        self.ruleset = ruleset
        self.gitleaks = GitleaksDetector(ruleset)
        # With Hyperscan, only the JSON string literals where a trigger's escape-tolerant form
        # matches are decoded and scanned again (`redaction.openers`): gitleaks' triggers take
        # that form themselves (their hits are only places to verify the rule's own regex),
        # the others get it as an opener of their own, numbered after every trigger. The
        # fallback opens every literal an escape could hide a rule in.
        self._narrow = uses_hyperscan(backend)
        rules = self.gitleaks.triggers
        if self._narrow:
            rules = [t if (form := opener(t.pattern)) is None else replace(t, pattern=form) for t in rules]
        groups: list[list[Trigger]] = [
            token_triggers(),
            list(CONTEXT_TRIGGERS),
            list(ASSIGNMENT_TRIGGERS),
            list(cli_flags.TRIGGERS),
            list(encodings.TRIGGERS),
            list(comparisons.TRIGGERS),
            list(base64_runs.TRIGGERS),
            list(config_fields.TRIGGERS),
            list(prose.TRIGGERS),
            list(vendor_tokens.TRIGGERS),
            rules,  # gitleaks' rules, last: its hits are numbered from its first trigger
        ]
        self._ranges: list[range] = []
        triggers: list[Trigger] = []
        for group in groups:
            self._ranges.append(range(len(triggers), len(triggers) + len(group)))
            triggers.extend(group)
        self._first_opener = len(triggers)
        # hits that never open a JSON string (their rules read escaped text themselves)
        self._not_opening = frozenset(i for i, t in enumerate(triggers) if not t.opens)
        if self._narrow:
            triggers += [
                Trigger(form, caseless=t.caseless)
                for t in triggers[: self._ranges[-1].start]
                if t.opens and (form := opener(t.pattern)) is not None
            ]
            triggers += [Trigger(escape) for escape in UNMODELLED]
        # The name rules' triggers begin one byte before their keyword: their starts are found
        # in Python (start-of-match tracking would make up most of the Hyperscan database).
        self.engine: HyperscanEngine | PythonEngine = build_engine(
            triggers, backend, python_starts=frozenset(self._ranges[2])
        )
        self._opened = json_escapes.OpenedStrings()  # resent history: see `OpenedStrings`

    @property
    def backend(self) -> str:
        return self.engine.name

    def find_spans(self, data: bytes, *, decode: bool = True, depth: int = 0) -> list[Span]:
        """Secrets in `data`, sorted and disjoint. Existing placeholders are left alone.

        `decode` also opens percent-encoded runs and JSON strings whose escapes hide
        a rule's quotes (`depth` counts the JSON levels opened so far).
        """
        hits = self.engine.scan(data)
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
        get = hits.by_trigger.get
        tokens, context, assign, cli, enc, compared, carriers, config, sentences, vendor = (
            [get(i, _NO_HITS) for i in r] for r in self._ranges[:-1]
        )
        first_rule, end = self._ranges[-1].start, self._first_opener  # gitleaks' rules: those that matched
        gl = sorted((i - first_rule, found) for i, found in hits.by_trigger.items() if first_rule <= i < end)
        spans: list[Span] = []
        find_token_spans(data, token_starts(data, tokens), spans)
        find_context_spans(data, context, spans)
        self.gitleaks.find(data, gl, spans)
        find_assignment_spans(data, assign, spans, [s.start for s in spans if s.priority <= PRIORITY_GITLEAKS])
        cli_flags.find_cli_spans(data, cli, spans)
        comparisons.find_comparison_spans(data, compared, spans)
        config_fields.find_config_spans(data, config, spans)
        prose.find_prose_spans(data, sentences, spans)
        if vendor[0]:
            vendor_tokens.find_vendor_token_spans(data, vendor, spans)
        if decode:
            encodings.find_encoded_spans(data, enc, spans, self._decoded_spans)
            near = None  # the fallback: every literal holding a hiding run
            if self._narrow:  # only a body with a backslash has a literal to open
                near = sorted(
                    e - 1 for i, found in hits.by_trigger.items() if i not in self._not_opening for _, e in found
                ) if b"\\" in data else ()
            json_escapes.find_escaped_spans(
                data, spans, self._unescaped_spans, depth, self.gitleaks.lines_at(data, gl), self._opened, near
            )
            if depth < json_escapes.MAX_DEPTH and any(carriers):
                # a file attached as base64 (each level of nesting counted as a JSON level)
                base64_runs.find_base64_spans(data, spans, lambda decoded: self.find_spans(decoded, depth=depth + 1))
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
        return self.find_spans(decoded, depth=depth)

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
    from ctxtap.redaction import entropy, false_positives, gitleaks_match

    false_positives.REJECTED.clear()
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
