"""Number formatting shared by templates (as jinja filters) and SVG charts.

One place decides how tokens, bytes, money, durations and ratios read, so the
same figure looks the same in a table, a tooltip and an axis label.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime

DASH = "–"


def num(value: float | int | None) -> str:
    """1234567 -> '1,234,567'; None -> '–'."""
    if value is None:
        return DASH
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.1f}"
    return f"{int(value):,}"


def compact(value: float | int | None) -> str:
    """Short axis labels: 950, 12k, 1.5M."""
    if value is None:
        return DASH
    v = float(value)
    a = abs(v)
    if a >= 1e9:
        return f"{v / 1e9:.3g}G"
    if a >= 1e6:
        return f"{v / 1e6:.3g}M"
    if a >= 1e3:
        return f"{v / 1e3:.3g}k"
    return f"{v:.3g}" if not v.is_integer() else f"{int(v)}"


def size(value: int | None) -> str:
    """Bytes as B, KB, MB (decimal, like `ls --si`), with the exact count for small sizes."""
    if value is None:
        return DASH
    if value < 1000:
        return f"{value} B"
    if value < 1e6:
        return f"{value / 1e3:.1f} KB"
    return f"{value / 1e6:.2f} MB"


def money(value: float | None) -> str:
    if value is None:
        return DASH
    if value and abs(value) < 0.01:
        return f"${value:.4f}"
    return f"${value:,.2f}"


def pct(value: float | None, digits: int = 0) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return DASH
    return f"{value * 100:.{digits}f}%"


def duration_ms(value: float | None) -> str:
    if value is None:
        return DASH
    if value < 1000:
        return f"{value:.0f} ms"
    return seconds(value / 1000)


def seconds(value: float | None) -> str:
    if value is None:
        return DASH
    if value < 60:
        return f"{value:.1f} s"
    if value < 3600:
        return f"{int(value // 60)} min {int(value % 60)} s"
    return f"{int(value // 3600)} h {int(value % 3600 // 60)} min"


def timestamp(value: float | None) -> str:
    if value is None:
        return DASH
    return datetime.fromtimestamp(value, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def short_id(value: str | None, keep: int = 12) -> str:
    if not value:
        return DASH
    return value if len(value) <= keep + 1 else value[:keep] + "…"


FILTERS = {
    "num": num, "compact": compact, "size": size, "money": money, "pct": pct, "ms": duration_ms,
    "seconds": seconds, "timestamp": timestamp, "short_id": short_id,
}
