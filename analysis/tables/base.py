"""What every table of the analysis dataset declares: its columns (with their docs) and its row builder.

A table's builder reads the parsed calls and the tables built before it (`BuildContext.tables`)
and returns one dict per row; `analysis.build` runs the registered tables in order and writes
each to Parquet with the declared schema.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa

if TYPE_CHECKING:
    from ctxtap.analysis.blocks.blockstore import BlockStore, RequestBlocks
    from ctxtap.analysis.cache.cachecheck import CacheRules
    from ctxtap.analysis.cache.prices import PriceTable
    from ctxtap.analysis.parsing.models import ModelCall
    from ctxtap.analysis.threads.sessions import Placement
    from ctxtap.capture.store import Capture

S, I64, F64, B = pa.string(), pa.int64(), pa.float64(), pa.bool_()

Columns = list[tuple[str, pa.DataType, str]]
Row = dict[str, Any]


@dataclass
class CallRec:
    """A parsed call without its block objects (those live once in the BlockStore)."""

    call: ModelCall
    placement: Placement
    blocks: RequestBlocks
    content_ids: array = field(default_factory=lambda: array("q"))
    request_id: str = ""
    transparent: list[int] = field(default_factory=list)  # positions of blocks outside the cache key


@dataclass
class BuildContext:
    """Everything a table builder may read; `tables` holds the rows of the tables built so far."""

    capture: Capture
    recs: list[CallRec]
    store: BlockStore
    content_tokens: list[int]
    prices: PriceTable
    rules: CacheRules
    redact_text: Callable[[str], str]
    tables: dict[str, list[Row]] = field(default_factory=dict)


@dataclass(frozen=True)
class Table:
    """One table of the dataset: `<capture>/analysis/<name>/capture_id=<id>/part-0.parquet`."""

    name: str
    doc: str
    columns: Columns
    build: Callable[[BuildContext], list[Row]]

    @property
    def schema(self) -> pa.Schema:
        return pa.schema([pa.field(n, t, metadata={"doc": d}) for n, t, d in self.columns])
