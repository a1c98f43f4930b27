"""Generated docs are current, and the report's templates read only what its model documents."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import jinja2
from jinja2 import nodes

from ctxtap.analysis.db import connect
from ctxtap.analysis.schema import render_doc
from ctxtap.analysis.views import views_doc
from ctxtap.capture.schema_doc import render as render_capture_doc
from ctxtap.reports.html import blockdata, diffpage, experimentpage, model, palette
from ctxtap.reports.html.render import environment

ROOT = Path(__file__).resolve().parent.parent


def test_analysis_schema_doc_is_current() -> None:
    expected = render_doc(views_doc())
    assert (ROOT / "docs" / "analysis-schema.md").read_text() == expected, "run: python -m ctxtap.analysis.schema"


def test_capture_format_doc_is_current() -> None:
    expected = render_capture_doc()
    assert (ROOT / "docs" / "capture-format.md").read_text() == expected, "run: python -m ctxtap.capture.schema_doc"


JINJA_BUILTIN = {"items", "keys", "values", "get", "loop", "index", "index0", "first", "last", "length"}


def _template_attributes(env: jinja2.Environment) -> dict[str, set[str]]:
    """attribute or constant-key name -> the templates that read it."""
    seen: dict[str, set[str]] = {}
    for name in env.list_templates(extensions=["j2"]):  # not the folder's __init__.py nor its bytecode
        tree = env.parse(env.loader.get_source(env, name)[0])
        for node in tree.find_all((nodes.Getattr, nodes.Getitem)):
            key = node.attr if isinstance(node, nodes.Getattr) else getattr(node.arg, "value", None)
            if isinstance(key, str):
                seen.setdefault(key, set()).add(name)
    return seen


def _documented(capture: Path) -> set[str]:
    names: set[str] = set(model.ROW_EXTRAS)
    for module in (model, blockdata, palette, diffpage, experimentpage):
        for obj in vars(module).values():
            if dataclasses.is_dataclass(obj) and isinstance(obj, type):
                names |= {f.name for f in dataclasses.fields(obj)}
                names |= {n for n, v in vars(obj).items() if isinstance(v, property)}
    con = connect([capture])
    views = [r[0] for r in con.execute(
        "SELECT view_name FROM duckdb_views() WHERE NOT internal AND schema_name = 'main'").fetchall()]
    for view in views:
        names |= {r[0] for r in con.execute(f"DESCRIBE {view}").fetchall()}
    return names


def _undocumented(env: jinja2.Environment, documented: set[str]) -> dict[str, list[str]]:
    return {k: sorted(v) for k, v in _template_attributes(env).items() if k not in documented | JINJA_BUILTIN}


def test_templates_read_only_documented_fields(demo_capture: Path) -> None:
    from ctxtap.analysis.build import ensure_analysis

    ensure_analysis(demo_capture)
    undocumented = _undocumented(environment(), _documented(demo_capture))
    assert not undocumented, (
        "templates read names that no model dataclass, view column or ROW_EXTRAS entry documents: "
        f"{undocumented}")


def test_the_check_names_an_undocumented_field() -> None:
    env = jinja2.Environment(loader=jinja2.DictLoader({
        "t.j2": "{{ row.session_id }} {{ row['no_such_column'] }} {% for r in rows %}{{ r.ghost }}{% endfor %}"}))
    assert _undocumented(env, {"session_id"}) == {"no_such_column": ["t.j2"], "ghost": ["t.j2"]}
