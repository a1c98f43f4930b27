"""Named DuckDB views over the analysis dataset: one SQL file per view, applied in name order.

A new analysis is one more `NN_name.sql` file here (plus a template block in reports/).
Base tables are registered as `t_<table>` by `analysis.db.connect`.
"""

from __future__ import annotations

import re
from pathlib import Path

VIEW_DIR = Path(__file__).parent
_CREATED = re.compile(r"^CREATE\s+(?:OR\s+REPLACE\s+)?(VIEW|MACRO)\s+(\w+)\s*(\([^)]*\))?", re.I | re.M)


def view_files() -> list[Path]:
    return sorted(VIEW_DIR.glob("*.sql"))


def view_names() -> list[str]:
    """Every view and table macro the files create, in file order, a macro with its parameters
    (`request_bins(k)`): read from the SQL itself, so a help text listing them never falls behind."""
    names = []
    for path in view_files():
        for kind, name, params in _CREATED.findall(path.read_text()):
            if not name.startswith("t_"):
                names.append(name + ("".join(params.split()) if kind.upper() == "MACRO" else ""))
    return names


def views_doc() -> str:
    """Markdown listing each view with its leading comment."""
    lines = ["## Views", "", "Defined in `analysis/views/*.sql`:", ""]
    for path in view_files():
        comment = [ln[3:] for ln in path.read_text().splitlines() if ln.startswith("-- ")]
        name = path.stem.split("_", 1)[1]
        lines.append(f"- `{name}` — {' '.join(comment)}")
    return "\n".join(lines) + "\n"
