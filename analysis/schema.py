"""The analysis dataset: Parquet tables written next to each capture, documented column by column.

Layout: `<capture>/analysis/<table>/capture_id=<id>/part-0.parquet` (hive-style,
so several captures' datasets can be read as one with DuckDB, Polars, pyarrow or
Spark). `capture_id` comes from the partition path, not from inside the files.

Blocks are content-addressed: `block_content` holds each distinct block once
(text and token estimate); `block_occurrences` holds each distinct placement
(path and attributes); `request_block_runs` maps a request's positions onto
ranges of occurrences, so a request that resends its predecessor's history
costs one run, not one row per block. The `blocks` view expands the runs.

Each table is declared, with its columns' docs and its row builder, by one module in
`analysis/tables/`; `docs/analysis-schema.md` is generated from them (`python -m ctxtap.analysis.schema`).
"""

from __future__ import annotations

from pathlib import Path

from ctxtap.analysis.tables import TABLES as _TABLES
from ctxtap.analysis.tables.base import Columns

TABLES: dict[str, Columns] = {t.name: t.columns for t in _TABLES}
SCHEMAS = {t.name: t.schema for t in _TABLES}


def render_doc(views_doc: str = "") -> str:
    lines = [
        "# Analysis dataset",
        "",
        (__doc__ or "").split("\n\n", 1)[1].rsplit("\n\n", 1)[0],
        "",
    ]
    for table in _TABLES:
        name, cols = table.name, table.columns
        lines += [f"## {name}", "", f"{table.doc[0].upper()}{table.doc[1:]} (`analysis/tables/{table.build.__module__.rsplit('.', 1)[-1]}.py`).", "",
                  "| column | type | meaning |", "|---|---|---|"]
        lines += [f"| `{c}` | {t} | {d} |" for c, t, d in cols]
        lines.append("")
    if views_doc:
        lines += [views_doc]
    return "\n".join(lines)


if __name__ == "__main__":
    from ctxtap.analysis.views import views_doc

    target = Path(__file__).resolve().parents[1] / "docs" / "analysis-schema.md"
    target.write_text(render_doc(views_doc()))
    print(f"wrote {target}")
