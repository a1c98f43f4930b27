"""Progress for commands that can run longer than a few seconds (import, analyze, publish, report).

rich draws the bar or spinner on the terminal's standard error and removes it when the work is
done; where standard error is not a terminal (a pipe, CI, a test) nothing is drawn, so logs and
scripted output stay as they were.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

T = TypeVar("T")


class Steps:
    """One command's progress: counted loops (`track`) and named phases (`phase`)."""

    def __init__(self, progress: Progress | None) -> None:
        self._progress = progress
        self._task = progress.add_task("", total=None) if progress is not None else None

    @property
    def shown(self) -> bool:
        return self._progress is not None

    def phase(self, description: str) -> None:
        """A step whose length is unknown: a spinner and its name."""
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, description=description, total=None, completed=0)
            self._progress.refresh()  # each step shows at once, however short

    def track(self, items: Iterable[T], total: int | None, description: str) -> Iterator[T]:
        """Yield `items`, counting them against `total` (a spinner and a count where it is unknown)."""
        if self._progress is None or self._task is None:
            yield from items
            return
        self._progress.update(self._task, description=description, total=total, completed=0)
        self._progress.refresh()
        for item in items:
            yield item
            self._progress.advance(self._task)


def enabled(quiet: bool = False) -> bool:
    return not quiet and sys.stderr.isatty()


@contextmanager
def steps(quiet: bool = False) -> Iterator[Steps]:
    """Progress on standard error while the block runs, if it is a terminal and not `quiet`."""
    if not enabled(quiet):
        yield Steps(None)
        return
    progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=Console(file=sys.stderr), transient=True)
    with progress:
        yield Steps(progress)
