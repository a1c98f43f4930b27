"""Where a report goes by default (kept light: `ctxtap.cli.main` imports `ctxtap.cli.report` on every start)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

COMPARISON_DEFAULT = "ctxtap-comparison.html"


def default_output(captures: Sequence[Path]) -> Path:
    """One capture: CAPTURE/report.html. Several: ./ctxtap-comparison.html in the current directory."""
    if len(captures) == 1:
        return Path(captures[0]) / "report.html"
    return Path.cwd() / COMPARISON_DEFAULT
