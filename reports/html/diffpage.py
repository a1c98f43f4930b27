"""`ctxtap diff --html`: two runs side by side as one self-contained page in the report's style.

Reads the diff models of `analysis.rundiff` (themselves computed from the views) and formats
them into the dataclasses below; the template only reads them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from markupsafe import Markup

from ctxtap import __version__
from ctxtap.analysis.compare.diff import BlockChange
from ctxtap.analysis.compare.rundiff import Run, RunDiff
from ctxtap.analysis.compare.words import fmt_delta, fmt_value, verdict
from ctxtap.analysis.rules import conditions as cond
from ctxtap.reports.html import palette
from ctxtap.reports.html.output import write_private
from ctxtap.reports.html.render import _static, environment

OP_LABELS = {"same": "same", "changed": "changed", "moved": "moved", "only_a": "only in A", "only_b": "only in B"}
MAX_BLOCK_ROWS = 400


@dataclass
class DiffLine:
    kind: str  # "add", "del", "ctx", "hunk"
    text: str


@dataclass
class DiffBlockRow:
    position: int
    op: str
    op_label: str
    path: str
    source: str
    fill: str
    tokens: int
    volatile: bool
    is_first: bool
    lines: list[DiffLine] = field(default_factory=list)


@dataclass
class DiffSourceRow:
    source: str
    label: str
    fill: str
    a_first: int
    b_first: int
    d_first: int
    a_total: int
    b_total: int
    d_total: int
    a_width: float  # bar widths in percent of the largest total
    b_width: float


@dataclass
class DiffMetricRow:
    name: str
    a: str
    b: str
    delta: str
    verdict: str


@dataclass
class DiffMetricGroup:
    name: str
    rows: list[DiffMetricRow]


@dataclass
class DiffPage:
    title: str
    a_label: str
    b_label: str
    a_kind: str
    b_kind: str
    a_request: str
    b_request: str
    layout_heading: str  # which two requests the layout compares, in words
    first_divergence: str
    block_summary: str
    cache_line: str
    layout_note: str
    block_rows: list[DiffBlockRow]
    hidden_same: int
    source_rows: list[DiffSourceRow]
    metric_groups: list[DiffMetricGroup]
    miss_a: str
    miss_b: str
    generated: str
    version: str
    conditions: list[str] = field(default_factory=list)  # `conditions differ: ...` lines, or the shared conditions


def _lines(change: BlockChange) -> list[DiffLine]:
    out = []
    for line in change.text_diff or ():
        kind = {"+": "add", "-": "del", "@": "hunk"}.get(line[:1], "ctx")
        out.append(DiffLine(kind, line))
    return out


def _fill(source: str | None) -> str:
    return palette.SOURCES[palette.source_index(source)].fill


def _misses(causes: dict[str, int]) -> str:
    return ", ".join(f"{k.replace('_', ' ')} ×{v}" for k, v in causes.items()) or "none"


def _short(label: str) -> str:
    """The last two parts of a run's path (`runs/a/capture` -> `a/capture`)."""
    return "/".join(Path(label).parts[-2:])


def _shown(run: Run) -> str:
    """A run's name as typed, its capture by folder name when given as an absolute path: the page is
    shared, so it names no local path (a home directory, a user name)."""
    capture = Path(run.capture)
    if capture.is_absolute() and run.label.startswith(run.capture):
        return capture.name + run.label[len(run.capture):]
    return run.label


def _compared(run: Run, side: str) -> str:
    """The request of one side whose layout is compared: the one given, or the run's first main request."""
    if run.kind == "request":
        return f"request {run.first_main_request_id} ({side})"
    return f"the first main request of {side}, {run.first_main_request_id}"


def _layout_heading(a: Run, b: Run) -> str:
    """Says which requests are compared: "first main request" only when neither side named one."""
    if (a.kind != "request" and b.kind != "request") or not (a.first_main_request_id and b.first_main_request_id):
        return "Context layout of the first main request"
    return f"Context layout of {_compared(a, 'A')} vs {_compared(b, 'B')}"


def diff_page(d: RunDiff) -> DiffPage:
    rows: list[DiffBlockRow] = []
    hidden = 0
    summary = cache = note = ""
    first_words = ""
    a_req = b_req = ""
    if d.layout is None:
        note = d.layout_note or ""
    else:
        lay = d.layout
        a_req, b_req = lay.a_request_id, lay.b_request_id
        first_words = lay.first_divergence_words
        counts = lay.counts()
        summary = ", ".join(f"{OP_LABELS[op]} {counts[op]} ({lay.tokens_by_op[op]:,} tokens)" for op in OP_LABELS)
        ra = "n/a" if lay.a_cache_read_tokens is None else f"{lay.a_cache_read_tokens:,}"
        rb = "n/a" if lay.b_cache_read_tokens is None else f"{lay.b_cache_read_tokens:,}"
        cache = f"cache reads: A {ra}, B {rb}"
        if lay.cache_break_position is not None:
            cache += f"; B's cached prefix ends before block {lay.cache_break_position}"
        for k, c in enumerate(lay.changes):
            if len(rows) >= MAX_BLOCK_ROWS:
                hidden += 1
                continue
            s = c.side
            rows.append(DiffBlockRow(s.position, c.op, OP_LABELS[c.op] + (" (volatile)" if c.volatile else ""),
                                     s.path, s.source or "unknown", _fill(s.source), c.tokens, c.volatile,
                                     k == lay.first_divergence, _lines(c)))
    biggest = max([1] + [max(s.a_total, s.b_total) for s in d.sources])
    sources = [DiffSourceRow(s.source, palette.SOURCES[palette.source_index(s.source)].label, _fill(s.source),
                             s.a_first, s.b_first, s.b_first - s.a_first, s.a_total, s.b_total,
                             s.b_total - s.a_total, round(100 * s.a_total / biggest, 1),
                             round(100 * s.b_total / biggest, 1)) for s in d.sources]
    groups: list[DiffMetricGroup] = []
    for m in d.metrics:
        if not groups or groups[-1].name != m.group:
            groups.append(DiffMetricGroup(m.group, []))
        groups[-1].rows.append(DiffMetricRow(m.name, fmt_value(m.a, m.unit), fmt_value(m.b, m.unit), fmt_delta(m),
                                             verdict(m)))
    a_label, b_label = _shown(d.a), _shown(d.b)
    return DiffPage(
        title=f"ctxtap diff: {_short(a_label)} vs {_short(b_label)}",
        a_label=a_label, b_label=b_label, a_kind=d.a.kind, b_kind=d.b.kind, a_request=a_req, b_request=b_req,
        layout_heading=_layout_heading(d.a, d.b), first_divergence=first_words, block_summary=summary,
        cache_line=cache, layout_note=note, block_rows=rows,
        hidden_same=hidden, source_rows=sources, metric_groups=groups, miss_a=_misses(d.a_miss_causes),
        miss_b=_misses(d.b_miss_causes), generated=time.strftime("%Y-%m-%d %H:%M:%S %Z"), version=__version__,
        conditions=_conditions(d))


def _conditions(d: RunDiff) -> list[str]:
    """The runs' conditions in words; a page may be shared, so a differing working directory is named, not shown."""
    if d.conditions is None:
        return []
    if not d.conditions.differences:
        return [f"Conditions: the same ({cond.summary(d.conditions.a)})."]
    return [f"Conditions differ: {cond.LABELS['working_dir']}" if x["field"] == "working_dir"
            else f"Conditions differ: {cond.difference_line(x)}" for x in d.conditions.differences]


def render_diff_page(d: RunDiff) -> str:
    template = environment().get_template("diff.html.j2")
    return template.render(page=diff_page(d), css=Markup(_static("report.css")))


def write_diff_page(d: RunDiff, out: Path) -> Path:
    write_private(out, render_diff_page(d).encode("utf-8"))
    return out
