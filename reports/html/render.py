"""Render captures into one self-contained HTML file within a byte budget.

The page is rendered with placeholders where the block texts go; what remains
of the budget after everything else becomes the texts' budget, so the file never
exceeds it because of texts (each distinct text is embedded once, long ones
truncated head+tail with their exact size kept).

A report that cannot fit request by request (its page alone, or its texts even
at the smallest cap, would pass the budget) is rendered again under an
aggregated plan (`reports.html.budget`): fewer per-request elements, until the
page takes about PAGE_SHARE of the budget; the texts get the rest, and those
that do not fit are left out. The notes at the top say what was aggregated.
"""

from __future__ import annotations

import functools
import os
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import jinja2
from markupsafe import Markup, escape

from ctxtap import __version__
from ctxtap.reports.html import palette
from ctxtap.reports.html.budget import PAGE_SHARE, Detail, first_detail
from ctxtap.reports.html.context import LARGE_TABLE, Connections, ReportContext, build_context, plan_inputs
from ctxtap.reports.html.formatting import FILTERS, num, size
from ctxtap.reports.html.output import default_output, write_private

DEFAULT_MAX_BYTES = 5_000_000
MIN_TEXT_BUDGET = 50_000
SAFETY = 20_000  # bytes kept free for the notes added after measuring
PAGE_SLACK = 1.15  # an aggregated page may come out this much above its share
MAX_PLANS = 6


@dataclass
class RenderResult:
    path: Path
    bytes: int
    sessions: int
    requests: int
    texts: int
    truncated_texts: int
    seconds: float
    aggregated: bool = False  # the report could not show every request one by one
    left_out_texts: int = 0
    notes: list[str] = field(default_factory=list)
    plans: int = 1  # renderings it took to fit (see the module docstring)


def _static(name: str) -> str:
    return resources.files("ctxtap.reports.html").joinpath("static", name).read_text(encoding="utf-8")


@functools.cache
def environment() -> jinja2.Environment:
    """One environment per process: its templates are compiled once, not on every render."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("ctxtap.reports.html", "templates"),
        autoescape=True,  # every template, whatever its extension: block texts are untrusted
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(FILTERS)
    return env


def render_html(ctx: ReportContext, max_bytes: int = DEFAULT_MAX_BYTES) -> str:
    """The report as one HTML string, at most about `max_bytes` bytes (see the module docstring)."""
    return _render(ctx, max_bytes)[0]


def _render(ctx: ReportContext, max_bytes: int, extra_notes: Sequence[str] = ()) -> tuple[str, int, list[str]]:
    """(the HTML, the bytes of everything but the block texts, the notes it shows)."""
    template = environment().get_template("report.html.j2")
    # Slots filled after measuring the rest of the page; random, so no captured text can imitate them.
    token = secrets.token_hex(16)
    texts_slot, notes_slot = f"@@texts-{token}@@", f"@@notes-{token}@@"
    skeleton = template.render(
        ctx=ctx, css=Markup(_static("report.css")), js=Markup(_static("report.js")),
        svg_defs=Markup(palette.svg_defs()), palette=palette.SOURCES, data_json=Markup(ctx.blocks.data_json()),
        texts_json=Markup(texts_slot), notes_slot=Markup(notes_slot), generated=time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        version=__version__, large=LARGE_TABLE,
    )
    rest = len(skeleton.encode("utf-8", "replace")) - len(texts_slot)
    if ctx.detail.is_full:
        texts = ctx.blocks.texts_json(max(MIN_TEXT_BUDGET, max_bytes - rest - SAFETY))
    else:
        texts = ctx.blocks.texts_json(max(0, max_bytes - rest - SAFETY))
    notes = [*extra_notes, *ctx.notes, *_text_notes(ctx)]
    notes_html = "".join(f'<p class="note">{escape(n)}</p>' for n in notes)
    return skeleton.replace(texts_slot, texts, 1).replace(notes_slot, notes_html, 1), rest, notes


def _text_notes(ctx: ReportContext) -> list[str]:
    b = ctx.blocks
    if ctx.detail.is_full:
        if not b.truncated:
            return []
        return [f"{b.truncated} of {len(b.text_sizes)} distinct block texts are longer than "
                f"{size(b.cap_bytes)} and are embedded as head and tail only (each says its exact size); "
                "the capture holds them in full."]
    drawn = b.embedded_texts + b.left_out_texts
    words = (f"Block texts: the rows drawn carry {num(drawn)} of the report's {num(len(b.text_sizes))} distinct "
             f"block texts; {num(b.embedded_texts)} are embedded")
    if b.truncated:
        words += f" ({num(b.truncated)} of them longer than {size(b.cap_bytes)}, as head and tail with their exact size)"
    if b.left_out_texts:
        words += (f" and {num(b.left_out_texts)} are left out to stay within {size(ctx.detail.max_bytes)} (first "
                  "those of the fewest requests, counting each drawn row as the requests it stands for); the block "
                  "viewer says so for each and gives the ctxtap sql query that reads it")
    return [words + "."]


def render_report(captures: Sequence[Path], out: Path, *, title: str | None = None,
                  max_bytes: int = DEFAULT_MAX_BYTES, analyse: bool = True,
                  connections: Connections | None = None) -> RenderResult:
    """Analyse the captures if needed, then write the report to `out` (atomically). `connections`: how
    the captures are opened when they are not local folders (a store read in place; no analysis then)."""
    from ctxtap.analysis.build import ensure_analysis

    start = time.perf_counter()
    if connections is not None:
        paths, analyse = list(dict.fromkeys(Path(c) for c in captures)), False
    else:
        paths = list(dict.fromkeys(Path(c).resolve() for c in captures))  # the same capture twice is one
    if analyse:
        for path in paths:
            ensure_analysis(path)
    cons = connections or Connections()
    total, min_text_bytes = plan_inputs(paths, cons)
    detail = first_detail(total, max_bytes, min_text_bytes)
    previous_page = None
    for plans in range(1, MAX_PLANS + 1):  # noqa: B007 (the count is reported)
        ctx = build_context(paths, title, detail, cons)
        html, page, notes = _render(ctx, max_bytes)
        size_ = len(html.encode("utf-8", "replace"))
        target = PAGE_SHARE * max_bytes
        if detail.is_full:
            if size_ <= max_bytes:
                break
            detail = Detail.aggregated(total, max_bytes)
            continue
        if detail.smallest or (size_ <= max_bytes and page <= target * PAGE_SLACK):
            break
        if previous_page is not None and page > previous_page * 0.9:
            break  # a smaller plan no longer shrinks the page: what is left does not depend on it
        previous_page = page
        detail = detail.scaled(min(target / page * 0.95, 0.9))
    if size_ > max_bytes:  # even the smallest plan: what does not shrink with it (many sessions) is too much
        html, page, notes = _render(ctx, max_bytes, [
            f"This report is {size(size_)}, over its bound of {size(max_bytes)} even with every session "
            f"aggregated: its {num(len(ctx.sessions))} sessions' headers, cards and charts take room whatever the "
            "plan. Report fewer captures at once, or raise --max-size."])
    cons.close()
    data = html.encode("utf-8", "replace")  # a lone surrogate in a table cell: "?"
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    write_private(tmp, data)
    tmp.replace(out)
    return RenderResult(path=out, bytes=len(data), sessions=len(ctx.sessions),
                        requests=sum(len(s.requests) for s in ctx.sessions), texts=len(ctx.blocks.text_sizes),
                        truncated_texts=ctx.blocks.truncated, seconds=time.perf_counter() - start,
                        aggregated=not ctx.detail.is_full, left_out_texts=ctx.blocks.left_out_texts,
                        notes=notes, plans=plans)


def render_capture_report(captures: Sequence[Path], out: Path | None = None) -> Path:
    """Render with the defaults of `ctxtap report` and return the file's path (used by `ctxtap demo`)."""
    paths = [Path(c) for c in captures]
    return render_report(paths, out or default_output(paths)).path
