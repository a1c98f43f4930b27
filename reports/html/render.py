"""Render captures into one self-contained HTML file within a byte budget.

The page is rendered once with placeholders where the block texts go; what
remains of the budget after everything else becomes the texts' budget, so the
file never exceeds it because of texts (each distinct text is embedded once,
long ones truncated head+tail with their exact size kept).
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import jinja2
from markupsafe import Markup, escape

from ctxtap import __version__
from reports.html import palette
from reports.html.context import LARGE_TABLE, ReportContext, build_context
from reports.html.formatting import FILTERS, size
from reports.html.output import default_output

DEFAULT_MAX_BYTES = 5_000_000
MIN_TEXT_BUDGET = 50_000
SAFETY = 20_000  # bytes kept free for the notes added after measuring


@dataclass
class RenderResult:
    path: Path
    bytes: int
    sessions: int
    requests: int
    texts: int
    truncated_texts: int
    seconds: float


def _static(name: str) -> str:
    return resources.files("reports.html").joinpath("static", name).read_text(encoding="utf-8")


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("reports.html", "templates"),
        autoescape=True,  # every template, whatever its extension: block texts are untrusted
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(FILTERS)
    return env


def render_html(ctx: ReportContext, max_bytes: int = DEFAULT_MAX_BYTES) -> str:
    """The report as one HTML string, at most about `max_bytes` bytes (see the module docstring)."""
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
    budget = max(MIN_TEXT_BUDGET, max_bytes - rest - SAFETY)
    texts = ctx.blocks.texts_json(budget)
    notes = []
    if ctx.blocks.truncated:
        notes.append(
            f"{ctx.blocks.truncated} of {len(ctx.blocks.text_sizes)} distinct block texts are longer than "
            f"{size(ctx.blocks.cap_bytes)} and are embedded as head and tail only (each says its exact size); "
            "the capture holds them in full.")
    notes_html = "".join(f'<p class="note">{escape(n)}</p>' for n in notes)
    return skeleton.replace(texts_slot, texts, 1).replace(notes_slot, notes_html, 1)


def render_report(captures: Sequence[Path], out: Path, *, title: str | None = None,
                  max_bytes: int = DEFAULT_MAX_BYTES, analyse: bool = True) -> RenderResult:
    """Analyse the captures if needed, then write the report to `out` (atomically)."""
    from analysis.build import ensure_analysis

    start = time.perf_counter()
    paths = list(dict.fromkeys(Path(c).resolve() for c in captures))  # the same capture twice is one
    if analyse:
        for path in paths:
            ensure_analysis(path)
    ctx = build_context(paths, title)
    data = render_html(ctx, max_bytes).encode("utf-8", "replace")  # a lone surrogate in a table cell: "?"
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    tmp.replace(out)
    return RenderResult(path=out, bytes=len(data), sessions=len(ctx.sessions),
                        requests=sum(len(s.requests) for s in ctx.sessions), texts=len(ctx.blocks.text_sizes),
                        truncated_texts=ctx.blocks.truncated, seconds=time.perf_counter() - start)


def render_capture_report(captures: Sequence[Path], out: Path | None = None) -> Path:
    """Render with the defaults of `ctxtap report` and return the file's path (used by `ctxtap demo`)."""
    paths = [Path(c) for c in captures]
    return render_report(paths, out or default_output(paths)).path
