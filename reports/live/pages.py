"""Server-rendered pages of the live view; templates read, they never compute.

The request page draws its ribbon and block viewer with the report's own code
(`reports.html.blockdata` and `static/report.js`): one implementation for both.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

import jinja2
from markupsafe import Markup

from ctxtap import __version__
from ctxtap.reports.html import palette
from ctxtap.reports.html.blockdata import BlockData, Ribbon, RibbonRow, json_for_script
from ctxtap.reports.html.formatting import FILTERS
from ctxtap.reports.live.sources import CaptureSource

TEXT_BUDGET = 4_000_000  # bytes of block text one request page embeds (longer texts: head and tail)


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.ChoiceLoader([jinja2.PackageLoader("ctxtap.reports.live", "templates"),
                                    jinja2.PackageLoader("ctxtap.reports.html", "templates")]),
        autoescape=True,  # captured text is untrusted everywhere
        undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
    )
    env.filters.update(FILTERS)
    env.globals.update(version=__version__, svg_defs=Markup(palette.svg_defs()), palette=palette.SOURCES,
                       palette_json=Markup(json_for_script(palette.js_palette())))
    return env


def static_file(name: str) -> bytes | None:
    """A file of the live view's or the report's static assets (report.js and report.css are shared)."""
    for package in ("ctxtap.reports.live", "ctxtap.reports.html"):
        path = resources.files(package).joinpath("static", name)
        if path.is_file():
            return path.read_bytes()
    return None


def request_ribbon(src: CaptureSource, r: dict[str, Any]) -> dict[str, Any]:
    """Ribbon data for a request and its thread predecessor, drawn by report.js."""
    capture_id = r["capture_id"]
    blocks = BlockData()
    blocks.compact = True  # embed only the two rows' occurrences and texts
    ids = [i for i in (r.get("previous_request_id"), r["request_id"]) if i]
    blocks.add_capture(src.cursor(), capture_id, f"ctxtap sql {src.sql_target}", request_ids=ids)  # not the whole capture
    blocks.load_positions(capture_id, ids)
    rows = []
    for rid in ids:
        label = f"#{r['num']} {r.get('purpose') or ''} (this request)" if rid == r["request_id"] else "predecessor"
        rows.append(RibbonRow(key=rid, capture_id=capture_id, label=label, thread=r.get("thread_id") or "",
                              marks="", num=r["num"], purpose=r.get("purpose") or ""))
    ribbon = Ribbon("req", rows)
    blocks.add_ribbon(ribbon)
    return {"rib": ribbon, "row": len(rows) - 1, "data_json": Markup(blocks.data_json()),
            "texts_json": Markup(blocks.texts_json(TEXT_BUDGET))}
