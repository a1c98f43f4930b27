"""`ctxtap experiment report --html`: an experiment's variants side by side, one self-contained page.

Reads the report model of `analysis.experiment` (computed from the runs' views) and formats it
into the dataclasses below: per variant the counts and pass@k, and per measure a strip chart
(one dot per executed run, a tick at p50 and p95) with the variants one above the other.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from markupsafe import Markup, escape

from ctxtap import __version__
from ctxtap.analysis.compare.experiment import ExperimentReport
from ctxtap.analysis.compare.words import condition_lines, gate_failure_words
from ctxtap.analysis.compare.words import fmt_amount as _fmt
from ctxtap.reports.html import palette
from ctxtap.reports.html.output import write_private
from ctxtap.reports.html.render import _static, environment

SERIES = (palette.BLUE, palette.ORANGE, palette.GREEN, palette.PURPLE, palette.VERMILLION, palette.SKY)
WIDTH, ROW, PAD = 560, 22, 120


@dataclass
class ExpVariantRow:
    name: str
    colour: str
    n_planned: int
    n_runs: int
    n_executed: int
    n_not_executed: int
    n_timed_out: int
    n_failed_to_start: int
    n_missing: int
    passes: int
    pass_k: str


@dataclass
class ExpChart:
    name: str
    svg: Markup
    summary: str


@dataclass
class ExpHeadline:
    name: str
    median_diff: str
    interval: str
    hint: str


@dataclass
class ExperimentPage:
    title: str
    directory: str  # the experiment's folder name: the page is shared, so it names no local path
    status: str
    variant_rows: list[ExpVariantRow]
    charts: list[ExpChart]
    headline: list[ExpHeadline]
    headline_pair: str
    layout_pair: str
    layout_words: str
    layout_counts: str
    notes: list[str]
    generated: str
    version: str


def _axis(values: list[float]) -> tuple[float, float]:
    """The axis fitted to the runs with 5 % room each side: from 0, runs that differ by a few percent
    would all sit at the right edge. One value (or all equal) gets 5 % of itself each side."""
    if not values:
        return 0.0, 1.0
    lo, hi = min(values), max(values)
    pad = (hi - lo) * 0.05 or abs(hi) * 0.05 or 1.0
    return lo - pad, hi + pad


def _strip(rep: ExperimentReport, name: str) -> tuple[Markup, str]:
    """A strip chart of one measure: a row per variant, a dot per run, ticks at p50 and p95."""
    dists = [(v.name, next(d for d in v.distributions if d.name == name)) for v in rep.variants]
    lo, hi = _axis([x for _, d in dists for x in d.values])
    span = hi - lo
    height = ROW * len(dists) + 24
    parts = [f'<svg role="img" width="{WIDTH + PAD + 12}" height="{height}" viewBox="0 0 {WIDTH + PAD + 12} {height}">']
    summary = []
    unit = dists[0][1].unit if dists else ""
    for i, (vname, d) in enumerate(dists):
        y = ROW * i + ROW / 2
        colour = SERIES[i % len(SERIES)]
        parts.append(f'<text x="0" y="{y + 4:.1f}" font-size="12">{escape(vname)}</text>')
        parts.append(f'<line x1="{PAD}" x2="{PAD + WIDTH}" y1="{y:.1f}" y2="{y:.1f}" stroke="#d9dce1"/>')
        for x in d.values:
            cx = PAD + WIDTH * (x - lo) / span
            parts.append(f'<circle cx="{cx:.1f}" cy="{y:.1f}" r="4" fill="{colour}" fill-opacity="0.7">'
                         f'<title>{escape(_fmt(x, unit))}</title></circle>')
        for q, mark in ((d.p50, 9), (d.p95, 5)):
            if q is not None:
                cx = PAD + WIDTH * (q - lo) / span
                parts.append(f'<line x1="{cx:.1f}" x2="{cx:.1f}" y1="{y - mark:.1f}" y2="{y + mark:.1f}" '
                             f'stroke="{palette.BLACK}" stroke-width="2"/>')
        summary.append(f"{vname}: n {d.n}, p50 {_fmt(d.p50, unit)}, p95 {_fmt(d.p95, unit)}, max {_fmt(d.max, unit)}")
    axis_y = ROW * len(dists) + 14
    parts.append(f'<text x="{PAD}" y="{axis_y}" font-size="11" fill="#5f6368">{escape(_fmt(lo, unit))}</text>')
    parts.append(f'<text x="{PAD + WIDTH}" y="{axis_y}" font-size="11" fill="#5f6368" text-anchor="end">'
                 f'{escape(_fmt(hi, unit))}</text>')
    parts.append("</svg>")
    return Markup("".join(parts)), "; ".join(summary)


def experiment_page(rep: ExperimentReport) -> ExperimentPage:
    rows = [ExpVariantRow(v.name, SERIES[i % len(SERIES)], v.n_planned, v.n_runs, v.n_executed, v.n_not_executed,
                          v.n_timed_out, v.n_failed_to_start, v.n_missing, v.passes,
                          ", ".join(f"pass@{p.k} {p.pass_at_k:.2f} / pass^{p.k} {p.pass_hat_k:.2f}" for p in v.pass_k)
                          or "n/a (no executed runs)")
            for i, v in enumerate(rep.variants)]
    names = [d.name for d in rep.variants[0].distributions] if rep.variants else []
    charts = [ExpChart(n, *_strip(rep, n)) for n in names]
    headline = [ExpHeadline(h.name, _fmt(h.median_diff, h.unit),
                            "" if h.ci_low is None else f"[{_fmt(h.ci_low, h.unit)}, {_fmt(h.ci_high, h.unit)}]", h.hint)
                for h in rep.headline]
    pair = f"{rep.headline[0].b} - {rep.headline[0].a}" if rep.headline else ""
    layout_pair = layout_words = layout_counts = ""
    if rep.layout is not None and rep.layout_variants:
        a, b = rep.layout_variants
        layout_pair = f"{a} vs {b}"
        layout_words = rep.layout.first_divergence_words
        words = {"only_a": f"only in {a}", "only_b": f"only in {b}"}
        layout_counts = ", ".join(f"{words.get(op, op)} {n}" for op, n in rep.layout.counts().items())
    return ExperimentPage(title=f"ctxtap experiment: {rep.name}", directory=Path(rep.directory).name,
                          status=rep.status, variant_rows=rows, charts=charts, headline=headline, headline_pair=pair,
                          layout_pair=layout_pair, layout_words=layout_words, layout_counts=layout_counts,
                          notes=_gate_and_condition_notes(rep) + list(rep.notes), generated=time.strftime("%Y-%m-%d %H:%M:%S %Z"), version=__version__)


def write_experiment_page(rep: ExperimentReport, out: Path) -> Path:
    html = environment().get_template("experiment.html.j2").render(page=experiment_page(rep),
                                                                     css=Markup(_static("report.css")))
    write_private(out, html.encode("utf-8"))
    return out


def _gate_and_condition_notes(rep: ExperimentReport) -> list[str]:
    """The gates and the runs that broke one; the conditions that differ (or those every run shares)."""
    out = []
    if rep.gates:
        out.append(f"Gates: {' '.join(rep.gates)}; zero tolerance: a run that broke one failed, whatever its check said.")
    for r in rep.runs:
        if r.get("gates_passed") is False:
            check = {True: "its check passed", False: "its check failed"}.get(r.get("answer_passed"), "no check verdict")
            out.append(f"Run {r['run_id']} failed ({check}): broke "
                       + "; ".join(gate_failure_words(f) for f in r.get("gate_failures") or []) + ".")
    return out + [line for line in condition_lines(rep) if line]

