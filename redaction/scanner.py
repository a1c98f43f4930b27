"""One sweep over a body that collects every finding, settled into non-overlapping spans."""

from __future__ import annotations

from redaction.assignments import find_assignment_spans
from redaction.detectors import find_context_spans, find_token_spans
from redaction.placeholder import PLACEHOLDER_MARK, PLACEHOLDER_RE
from redaction.spans import Span, merge_spans


def find_spans(data: bytes) -> list[Span]:
    """Secrets in `data`, sorted and disjoint. Existing placeholders are left alone."""
    spans: list[Span] = []
    find_token_spans(data, spans)
    find_context_spans(data, spans)
    find_assignment_spans(data, spans, [s.start for s in spans])
    if not spans:
        return spans
    protected: list[tuple[int, int]] = []
    if PLACEHOLDER_MARK in data:
        protected = [m.span() for m in PLACEHOLDER_RE.finditer(data)]
    return merge_spans(spans, protected)


def kind_of_value(value: bytes) -> str | None:
    """The kind of a value that is exactly one secret recognised by its format, else None.

    Used where a name already says "secret" (an Authorization header, an
    `api_key=` parameter) to give the placeholder a more specific kind.
    """
    spans: list[Span] = []
    find_token_spans(value, spans)
    find_context_spans(value, spans)
    if len(spans) == 1 and spans[0].start == 0 and spans[0].end == len(value):
        return spans[0].kind
    return None
