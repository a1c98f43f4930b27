"""Small SVG building blocks: linear scales, nice ticks, axes, legends.

Charts are drawn on the server as plain SVG strings (no library, no script),
so they render from file://, print, and survive copy-paste into a write-up.
Every piece of text goes through `esc`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

from markupsafe import Markup

from ctxtap.reports.html.formatting import compact

FONT = 11


def esc(value: object) -> str:
    return escape(str(value), quote=True)


def f(x: float) -> str:
    """Coordinates with one decimal: enough on screen, half the bytes of repr()."""
    r = round(x, 1)
    return str(int(r)) if r == int(r) else str(r)


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round tick values (1, 2, 2.5, 5 x 10^k) covering [lo, hi]."""
    if hi <= lo:
        hi = lo + 1
    raw = (hi - lo) / max(count, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    start = math.floor(lo / step) * step
    ticks = []
    v = start
    while v <= hi + step * 1e-9:
        if v >= lo - step * 1e-9:
            ticks.append(round(v, 10))
        v += step
    return ticks


def nice_max(hi: float) -> float:
    if hi <= 0:
        return 1.0
    ticks = nice_ticks(0, hi)
    step = ticks[1] - ticks[0] if len(ticks) > 1 else hi
    top = ticks[-1]
    return top if top >= hi else top + step


@dataclass
class Scale:
    d0: float
    d1: float
    r0: float
    r1: float

    def __call__(self, v: float) -> float:
        if self.d1 == self.d0:
            return self.r0
        return self.r0 + (v - self.d0) * (self.r1 - self.r0) / (self.d1 - self.d0)


@dataclass
class Frame:
    """Plot area inside an SVG of width x height, with margins for axes."""

    width: int = 960
    height: int = 260
    left: int = 64
    right: int = 16
    top: int = 14
    bottom: int = 40

    @property
    def x0(self) -> float:
        return self.left

    @property
    def x1(self) -> float:
        return self.width - self.right

    @property
    def y0(self) -> float:
        return self.height - self.bottom

    @property
    def y1(self) -> float:
        return self.top


def open_svg(frame: Frame, label: str, cls: str = "chart") -> str:
    return (f'<svg class="{cls}" viewBox="0 0 {frame.width} {frame.height}" width="{frame.width}" '
            f'height="{frame.height}" role="img" aria-label="{esc(label)}">'
            f"<title>{esc(label)}</title>")


def y_axis(frame: Frame, scale: Scale, ticks: Sequence[float], title: str,
           fmt: Callable[[float], str] = compact, side: str = "left") -> str:
    out = []
    x = frame.x0 if side == "left" else frame.x1
    for t in ticks:
        y = scale(t)
        out.append(f'<line class="grid" x1="{f(frame.x0)}" x2="{f(frame.x1)}" y1="{f(y)}" y2="{f(y)}"/>')
        anchor, dx = ("end", -6) if side == "left" else ("start", 6)
        out.append(f'<text class="tick" x="{f(x + dx)}" y="{f(y + 4)}" text-anchor="{anchor}">{esc(fmt(t))}</text>')
    tx = 12 if side == "left" else frame.width - 4
    cy = (frame.y0 + frame.y1) / 2
    out.append(f'<text class="axis-title" transform="translate({f(tx)},{f(cy)}) rotate(-90)" '
               f'text-anchor="middle">{esc(title)}</text>')
    out.append(f'<line class="axis" x1="{f(x)}" x2="{f(x)}" y1="{f(frame.y0)}" y2="{f(frame.y1)}"/>')
    return "".join(out)


def x_axis(frame: Frame, scale: Scale, ticks: Sequence[float], title: str,
           fmt: Callable[[float], str] = compact) -> str:
    out = [f'<line class="axis" x1="{f(frame.x0)}" x2="{f(frame.x1)}" y1="{f(frame.y0)}" y2="{f(frame.y0)}"/>']
    for t in ticks:
        x = scale(t)
        out.append(f'<line class="axis" x1="{f(x)}" x2="{f(x)}" y1="{f(frame.y0)}" y2="{f(frame.y0 + 4)}"/>')
        out.append(f'<text class="tick" x="{f(x)}" y="{f(frame.y0 + 16)}" text-anchor="middle">{esc(fmt(t))}</text>')
    out.append(f'<text class="axis-title" x="{f((frame.x0 + frame.x1) / 2)}" y="{f(frame.height - 6)}" '
               f'text-anchor="middle">{esc(title)}</text>')
    return "".join(out)


def int_ticks(n: int, count: int = 8) -> list[float]:
    """Ticks for 1-based request numbers 1..n."""
    if n <= count:
        return list(range(1, n + 1))
    return [t for t in nice_ticks(1, n, count) if 1 <= t <= n and float(t).is_integer()] or [1, n]


def legend_html(items: Sequence[tuple[str, str, str]]) -> Markup:
    """HTML legend: (fill css, label, kind) where kind is 'box', 'line', 'dash' or 'dot'."""
    parts = ['<ul class="legend">']
    for fill, label, kind in items:
        if kind == "box":
            swatch = (f'<svg width="14" height="12" aria-hidden="true"><rect width="14" height="12" '
                      f'fill="{esc(fill)}" stroke="#0003"/></svg>')
        elif kind == "dot":
            swatch = f'<svg width="14" height="12" aria-hidden="true"><circle cx="7" cy="6" r="3.5" fill="{esc(fill)}"/></svg>'
        else:
            dash = ' stroke-dasharray="4 3"' if kind == "dash" else ""
            swatch = (f'<svg width="18" height="12" aria-hidden="true"><line x1="0" x2="18" y1="6" y2="6" '
                      f'stroke="{esc(fill)}" stroke-width="2"{dash}/></svg>')
        parts.append(f"<li>{swatch}{esc(label)}</li>")
    parts.append("</ul>")
    return Markup("".join(parts))


def polyline(points: Sequence[tuple[float, float]], cls: str, color: str, dash: bool = False) -> str:
    if not points:
        return ""
    d = " ".join(f"{f(x)},{f(y)}" for x, y in points)
    dash_attr = ' stroke-dasharray="5 4"' if dash else ""
    return f'<polyline class="{cls}" fill="none" stroke="{color}" stroke-width="1.8"{dash_attr} points="{d}"/>'
