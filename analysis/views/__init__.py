"""Named DuckDB views over the analysis dataset: one SQL file per view, applied in name order.

A new analysis is one more `NN_name.sql` file here (plus a template block in reports/).
Base tables are registered as `t_<table>` by `analysis.db.connect`.
"""

from __future__ import annotations

from pathlib import Path

VIEW_DIR = Path(__file__).parent


def view_files() -> list[Path]:
    return sorted(VIEW_DIR.glob("*.sql"))


def views_doc() -> str:
    """Markdown listing each view with its leading comment."""
    lines = ["## Views", "", "Defined in `analysis/views/*.sql`:", ""]
    for path in view_files():
        comment = [ln[3:] for ln in path.read_text().splitlines() if ln.startswith("-- ")]
        name = path.stem.split("_", 1)[1]
        lines.append(f"- `{name}` — {' '.join(comment)}")
    return "\n".join(lines) + "\n"
