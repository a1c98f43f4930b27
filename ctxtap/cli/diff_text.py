"""`ctxtap diff`'s terminal form: a run diff laid out in columns (the figures in `compare.words`)."""

from __future__ import annotations

from collections.abc import Iterator

from ctxtap.analysis.compare.diff import RequestDiff
from ctxtap.analysis.compare.rundiff import ConditionsDiff, RunDiff
from ctxtap.analysis.compare.words import fmt_delta, fmt_value, verdict
from ctxtap.analysis.rules import conditions as cond


def _op_words(layout: RequestDiff) -> str:
    counts = layout.counts()
    words = {"same": "same", "changed": "changed", "moved": "moved", "only_a": "only in A", "only_b": "only in B"}
    volatile = sum(1 for c in layout.changes if c.volatile)
    parts = [f"{words[op]} {counts[op]} ({layout.tokens_by_op[op]:,} tok)" for op in words]
    if volatile:
        parts[0] += f", {volatile} of them volatile-only"
    return ", ".join(parts)


def condition_lines(c: ConditionsDiff) -> Iterator[str]:
    """`conditions differ: approval mode never -> on-request` per difference, or the shared conditions."""
    if not c.differences:
        yield f"conditions: same ({cond.summary(c.a)})"
        return
    for diff in c.differences:
        yield f"conditions differ: {cond.difference_line(diff)}"
        source = f"{diff['field']}_source"  # where the value was read, for the fields that say
        if c.a.get(source) or c.b.get(source):
            yield f"  A: {c.a.get(source) or 'no evidence'}"
            yield f"  B: {c.b.get(source) or 'no evidence'}"


def text_lines(d: RunDiff, *, max_blocks: int = 40, max_diff_lines: int = 12) -> Iterator[str]:
    """The terminal form of a run diff."""
    for tag, run in (("A", d.a), ("B", d.b)):
        what = run.kind + (f" #{run.request_number} of session" if run.request_number is not None else "")
        what += f" {run.session_id}" if run.session_id and run.kind != "capture" else ""
        yield f"{tag}  {run.label}  ({what})"
    yield ""
    if d.conditions is not None:
        yield from condition_lines(d.conditions)
        yield ""
    if d.layout is None:
        yield f"layout: {d.layout_note}"
    else:
        lay = d.layout
        yield (f"layout of the first main request  (A #{d.a.first_main_request_number} {lay.a_request_id}  vs  "
               f"B #{d.b.first_main_request_number} {lay.b_request_id})")
        yield f"  first divergence: {lay.first_divergence_words}"
        yield f"  blocks: {_op_words(lay)}"
        cache_a = "n/a" if lay.a_cache_read_tokens is None else f"{lay.a_cache_read_tokens:,}"
        cache_b = "n/a" if lay.b_cache_read_tokens is None else f"{lay.b_cache_read_tokens:,}"
        brk = "" if lay.cache_break_position is None else f"; B's cached prefix ends before block {lay.cache_break_position}"
        yield f"  cache reads: A {cache_a}, B {cache_b}{brk}"
        shown = [(k, c) for k, c in enumerate(lay.changes) if c.op != "same"]
        if shown:
            yield f"  {'pos':>4}  {'op':<9} {'path':<28} {'source':<22} {'tokens':>7}"
        for k, c in shown[:max_blocks]:
            s = c.side
            yield f"  {s.position:>4}  {c.op:<9} {s.path[:28]:<28} {(s.source or '')[:22]:<22} {c.tokens:>7,}"
            if k == lay.first_divergence and c.text_diff:
                for line in c.text_diff[:max_diff_lines]:
                    yield f"        {line[:140]}"
                if len(c.text_diff) > max_diff_lines:
                    yield f"        … {len(c.text_diff) - max_diff_lines} more diff lines (--json has them all)"
        if len(shown) > max_blocks:
            yield f"  … {len(shown) - max_blocks} more changed blocks (--json has them all)"
    yield ""
    yield f"{'tokens by source (estimated)':<30} {'A first':>9} {'B first':>9} {'delta':>9}   {'A all':>10} {'B all':>10} {'delta':>10}"
    for s in d.sources:
        yield (f"  {s.source:<28} {s.a_first:>9,} {s.b_first:>9,} {s.b_first - s.a_first:>+9,}   "
               f"{s.a_total:>10,} {s.b_total:>10,} {s.b_total - s.a_total:>+10,}")
    group = None
    for m in d.metrics:
        if m.group != group:
            group = m.group
            yield ""
            yield f"{group:<36} {'A':>14} {'B':>14}  delta (B - A)"
        yield (f"  {m.name:<34} {fmt_value(m.a, m.unit):>14} {fmt_value(m.b, m.unit):>14}  {fmt_delta(m)}"
               + (f"  {verdict(m)}" if verdict(m) else ""))
    yield ""
    for tag, causes in (("A", d.a_miss_causes), ("B", d.b_miss_causes)):
        words = ", ".join(f"{k.replace('_', ' ')} ×{v}" for k, v in causes.items()) or "none"
        yield f"cache miss causes {tag}: {words}"
