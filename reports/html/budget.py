"""How much of a report is shown request by request: the plan that keeps a report within --max-size.

A report that fits its byte budget is drawn request by request (`Detail.full()`).
One that does not — a session of many thousand requests — is aggregated instead
of overflowing: every per-request element of a section (table rows, chart
columns, ribbon rows) is held to that section's share of a report-wide item
limit, ribbons and their blocks to a share of a byte budget, and the block texts
get what is left. Whatever is aggregated or left out says so where it happens
and in the report's notes, with the `ctxtap sql` command that lists it all.
"""

from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

FULL_MIN_BYTES_PER_REQUEST = 800  # a full report costs at least this per request (a table row, hover titles)
ITEM_BYTES = 1_800  # about what one shown request costs in tables, charts and hover titles
PAGE_SHARE = 0.5  # an aggregated report's page (all but the block texts) aims at this share of the budget
RIBBON_SHARE = 0.2  # of the budget, for the ribbons' rows and the blocks they draw
FIXED_BYTES = 80_000  # style, script, overview and session headers
MIN_ITEMS = 10  # a section keeps at least its first and last few rows
MIN_LIMIT = 40  # the smallest report-wide item limit
MIN_RIBBON_BYTES = 20_000


@dataclass(frozen=True)
class Detail:
    """Limits of a report: `limit` per-request items across the report (None: every request is shown)."""

    limit: int | None = None
    ribbon_bytes: int | None = None
    total: int = 0  # requests in the report, to share the limits between sessions and threads
    max_bytes: int = 0

    @classmethod
    def full(cls, total: int = 0, max_bytes: int = 0) -> Detail:
        return cls(None, None, total, max_bytes)

    @classmethod
    def aggregated(cls, total: int, max_bytes: int) -> Detail:
        """The first aggregated plan for `total` requests within `max_bytes`."""
        items = (PAGE_SHARE - RIBBON_SHARE) * max_bytes - FIXED_BYTES
        return cls(max(MIN_LIMIT, int(items / ITEM_BYTES)), max(MIN_RIBBON_BYTES, int(RIBBON_SHARE * max_bytes)),
                   total, max_bytes)

    @property
    def is_full(self) -> bool:
        return self.limit is None

    def scaled(self, factor: float) -> Detail:
        """A smaller plan (after a page came out `1 / factor` times too large)."""
        assert self.limit is not None and self.ribbon_bytes is not None
        return replace(self, limit=max(MIN_LIMIT, int(self.limit * factor)),
                       ribbon_bytes=max(MIN_RIBBON_BYTES, int(self.ribbon_bytes * factor)))

    @property
    def smallest(self) -> bool:
        return self.limit is not None and self.limit <= MIN_LIMIT and (self.ribbon_bytes or 0) <= MIN_RIBBON_BYTES

    def share(self, n_requests: int) -> int | None:
        """Items a section about `n_requests` requests may show, or None: all of them."""
        if self.limit is None:
            return None
        return max(MIN_ITEMS, math.ceil(self.limit * n_requests / max(self.total, 1)))

    def ribbon_share(self, n_rows: int) -> int | None:
        """Bytes a ribbon of `n_rows` requests may take, or None: no bound."""
        if self.ribbon_bytes is None:
            return None
        return max(MIN_RIBBON_BYTES // 4, int(self.ribbon_bytes * n_rows / max(self.total, 1)))

    def bin_size(self, n: int) -> int:
        """Requests per chart column for a chart of `n` requests (1: one column each)."""
        share = self.share(n)
        return 1 if share is None or n <= share else math.ceil(n / share)


def first_detail(total: int, max_bytes: int, min_text_bytes: int = 0) -> Detail:
    """Full detail unless the report cannot fit request by request, its texts at their smallest cap
    included (then the first aggregated plan). The estimate is a floor: a report it lets through may
    still not fit, and is then rendered again, aggregated."""
    if total * FULL_MIN_BYTES_PER_REQUEST + min_text_bytes > max_bytes:
        return Detail.aggregated(total, max_bytes)
    return Detail.full(total, max_bytes)


def head_and_tail(rows: list[T], keep: int | None) -> tuple[list[T], list[T], list[T]]:
    """(first, left out, last) of `rows` keeping `keep` of them (all when keep is None or enough)."""
    if keep is None or len(rows) <= keep:
        return rows, [], []
    head = keep - keep // 2
    tail = keep // 2
    return rows[:head], rows[head:len(rows) - tail], rows[len(rows) - tail:] if tail else []


_SAFE_DQ = re.compile(r'([\\"$`])')


def ctxtap_sql(capture: Path) -> str:
    """`ctxtap sql CAPTURE`, the capture named by its folder and quoted for a POSIX shell: a report is
    shared, so it names no local path (a home directory, a user name); run it beside the capture."""
    return f"ctxtap sql {shlex.quote(Path(capture).name)}"


def sql_command(capture: Path, sql: str) -> str:
    """`ctxtap sql CAPTURE "SQL"`, quoted for a POSIX shell (SQL string literals use single quotes)."""
    quoted = _SAFE_DQ.sub(r"\\\1", sql)
    return f'{ctxtap_sql(capture)} "{quoted}"'


def sql_str(value: str) -> str:
    """A SQL string literal."""
    return "'" + str(value).replace("'", "''") + "'"
