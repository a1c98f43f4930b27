"""The tables of the analysis dataset, one module per analysis, built in this order.

A new analysis is one module here declaring a `Table` (columns with their docs and a row
builder that may read the tables before it), one entry in `TABLES`, one view in
`analysis/views/`, and a template block in `reports/html/templates/` if the report shows it.
"""

from __future__ import annotations

from ctxtap.analysis.tables import (
    blocks,
    cache,
    call_effects,
    captures,
    effects,
    events,
    exposures,
    layout,
    lineage,
    network,
    prefix,
    requests,
    retries,
    run_conditions,
    threads,
    tool_calls,
)
from ctxtap.analysis.tables.base import BuildContext, CallRec, Columns, Table

TABLES: list[Table] = [
    captures.TABLE,
    requests.TABLE,
    *blocks.TABLES,
    tool_calls.TABLE,
    exposures.TABLE,
    network.TABLE,
    *effects.TABLES,
    *call_effects.TABLES,
    retries.TABLE,
    prefix.TABLE,
    *cache.TABLES,
    threads.TABLE,
    layout.TABLE,
    events.TABLE,
    *lineage.TABLES,
    run_conditions.TABLE,
]


def by_name() -> dict[str, Table]:
    return {t.name: t for t in TABLES}


__all__ = ["TABLES", "BuildContext", "CallRec", "Columns", "Table", "by_name"]
