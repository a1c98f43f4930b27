"""Where a report goes by default (kept light: `ctxtap.cli.main` imports `ctxtap.cli.report` on every start)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

COMPARISON_DEFAULT = "ctxtap-comparison.html"


def default_output(captures: Sequence[Path]) -> Path:
    """One capture: CAPTURE/report.html. Several: ./ctxtap-comparison.html in the current directory."""
    if len(captures) == 1:
        return Path(captures[0]) / "report.html"
    return Path.cwd() / COMPARISON_DEFAULT


def write_private(path: Path, data: bytes) -> None:
    """Write a page readable by the user only (0600, whatever the umask): it shows the captures' prompts,
    code and tool output. (The capture layer's `tighten` is out of this package's reach by contract.)"""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # an existing file keeps its mode through O_CREAT
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
