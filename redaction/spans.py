"""A found secret: where it is, what it is, and how sure the finder was.

Detectors only report spans; the redactor decides what replaces them. Keeping
the two apart lets every detector run on the same bytes in one sweep and lets
overlapping findings be settled in one place.
"""

from __future__ import annotations

from typing import NamedTuple

# Lower wins when two findings overlap: a key recognised by its format says
# more than "the value of something called *_TOKEN". ctxtap's own format
# kinds come before gitleaks' (existing placeholders keep their kinds), and
# gitleaks' `name = value` rules after ctxtap's name rules.
PRIORITY_FORMAT = 0
PRIORITY_GITLEAKS = 1
PRIORITY_CONTEXT = 2
PRIORITY_ASSIGNMENT = 3
PRIORITY_GENERIC = 4


class Span(NamedTuple):
    start: int
    end: int
    kind: str
    priority: int
    encoded: bool = False  # found percent-decoded: hash the decoded form (equal secrets, equal hashes)


def merge_spans(spans: list[Span], protected: list[tuple[int, int]]) -> list[Span]:
    """Drop spans touching existing placeholders, then fuse overlapping spans.

    Fusing (rather than keeping one and dropping the other) guarantees no
    fragment of either secret survives; the fused span takes the kind of the
    more specific finding.
    """
    if protected:
        spans = [s for s in spans if not _overlaps_any(s, protected)]
    if len(spans) < 2:
        return spans
    spans.sort(key=lambda s: (s.start, s.priority, -s.end))
    merged = [spans[0]]
    for span in spans[1:]:
        last = merged[-1]
        if span.start < last.end:
            kind = last.kind if last.priority <= span.priority else span.kind
            priority = min(last.priority, span.priority)
            merged[-1] = Span(last.start, max(last.end, span.end), kind, priority, last.encoded or span.encoded)
        else:
            merged.append(span)
    return merged


def _overlaps_any(span: Span, protected: list[tuple[int, int]]) -> bool:
    for start, end in protected:
        if span.start < end and start < span.end:
            return True
    return False
