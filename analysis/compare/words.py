"""Figures and conditions in words, shared by the terminal (`ctxtap/cli/`) and the HTML pages.

Formatting values, not laying out a page or a screen: a page's table and the terminal's columns
show the same `fmt_value` of a metric, so the two never disagree about a number.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ctxtap.analysis.rules import conditions as cond

if TYPE_CHECKING:
    from ctxtap.analysis.compare.experiment import ExperimentReport
    from ctxtap.analysis.compare.rundiff import Metric


def fmt_value(value: float | None, unit: str) -> str:
    if value is None:
        return "n/a"
    if unit == "rate":
        return f"{value:.1%}"
    if unit == "usd":
        return f"${value:,.4f}" if abs(value) >= 0.01 else f"${value:,.6f}"
    if unit == "s":
        return f"{value:,.2f} s"
    if unit == "ms":
        return f"{value:,.0f} ms"
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.2f}"


def fmt_delta(metric: Metric) -> str:
    """B - A with its sign (`+12`, `-3.4 pp`, `0`), or `n/a` when a side has no value."""
    d = metric.delta
    if d is None:
        return "n/a"
    if d == 0:
        return "0"
    sign = "+" if d > 0 else "-"
    if metric.unit == "rate":
        text = f"{abs(d) * 100:.1f} pp"
    else:
        text = fmt_value(abs(d), metric.unit)
    if text.strip("$0.,") in ("", " pp", " ms", " s"):
        return "≈0"  # differs below the precision shown
    if metric.unit != "rate" and metric.a:
        text += f" ({sign}{abs(d) / abs(metric.a):.0%})"
    return sign + text


def verdict(metric: Metric) -> str:
    """`better` / `worse` for metrics with a direction, else empty (also when the delta shows as ≈0)."""
    d = metric.delta
    if not d or metric.lower_is_better is None or fmt_delta(metric) == "≈0":
        return ""
    return "better" if (d < 0) == metric.lower_is_better else "worse"


def fmt_amount(value: float | None, unit: str) -> str:
    """An experiment's figure: dollars to six places (a run costs fractions of a cent), else as measured."""
    if value is None:
        return "n/a"
    if unit == "usd":
        return f"{'-' if value < 0 else ''}${abs(value):,.6f}"
    if unit == "s":
        return f"{value:,.2f} s"
    if unit == "ms":
        return f"{value:,.0f} ms"
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}"


def gate_failure_words(failure: dict[str, Any]) -> str:
    """`--no-writes: README.md (modified)`, or `--no-writes: cannot judge (why)`."""
    if not failure.get("judged", True):
        return f"{failure['gate']}: cannot judge ({failure.get('how', '')})"
    what = list(failure.get("what") or [])
    more = int(failure.get("violations") or 0) - len(what)
    return f"{failure['gate']}: {', '.join(what)}" + (f" and {more} more" if more > 0 else "")


def condition_lines(rep: ExperimentReport) -> list[str]:
    """`conditions differ between variants A and B: approval mode never -> on-request`, and any spread within
    a variant; or the conditions every variant shares."""
    lines = []
    for d in rep.condition_differences:
        lines.append(f"conditions differ between variants {d['a_variant']} and {d['b_variant']}: "
                     f"{cond.difference_line(d)}")
    for s in rep.condition_spread:
        values = ", ".join(f"{value} ({n} run{'s' if n != 1 else ''})" for value, n in s["values"].items())
        lines.append(f"conditions differ between runs of variant {s['variant']}: {s['label']} {values}")
    if not lines and rep.variants and rep.variants[0].conditions:
        lines.append(f"conditions: same in every run ({cond.summary(rep.variants[0].conditions)})")
    return lines + ([""] if lines else [])
