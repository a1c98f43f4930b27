"""Where a request's blocks of each kind, role, source and rule are, kept as history grows.

Request-level rules (purpose, session turns, compaction) look for particular
blocks: the first compaction prompt, the last user text, any user task. Scanning
every block of every request makes each request cost time in its history. A
`BlockScan` lists the positions per (kind, role, source, rule) key; a request
that shares its first k blocks with its predecessor starts from the predecessor's
scan cut at k (`upto`) and adds only its own new blocks (`extend`).
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from heapq import merge
from typing import NamedTuple

from ctxtap.analysis.parsing.models import Block


class BlockKey(NamedTuple):
    kind: str
    role: str
    source: str
    rule_id: str


Match = Callable[[BlockKey], bool]


def key_of(block: Block) -> BlockKey:
    return BlockKey(block.kind, block.role, block.source, block.rule_id)


class BlockScan:
    """Positions of a request's blocks by key, in position order (int arrays: copied with memcpy)."""

    __slots__ = ("n", "positions")

    def __init__(self, n: int = 0, positions: dict[BlockKey, array] | None = None) -> None:
        self.n = n
        self.positions: dict[BlockKey, array] = positions if positions is not None else {}

    @classmethod
    def of(cls, blocks: Sequence[Block]) -> BlockScan:
        scan = cls()
        scan.extend(blocks, 0)
        return scan

    def upto(self, k: int) -> BlockScan:
        """The scan of the first `k` blocks (a copy; this one is unchanged)."""
        if k >= self.n:
            return BlockScan(self.n, {key: ps[:] for key, ps in self.positions.items()})
        out: dict[BlockKey, array] = {}
        for key, ps in self.positions.items():
            cut = ps[:bisect_left(ps, k)]
            if cut:
                out[key] = cut
        return BlockScan(k, out)

    def replace(self, position: int, old: BlockKey, new: BlockKey) -> None:
        """Re-key one position whose block changed (in a scan the caller owns, e.g. from `upto`)."""
        if old == new:
            return
        found = self.positions[old]
        del found[bisect_left(found, position)]
        if not found:
            del self.positions[old]
        target = self.positions.get(new)
        if target is None:
            self.positions[new] = array("q", [position])
        else:
            target.insert(bisect_left(target, position), position)

    def extend(self, blocks: Sequence[Block], start: int) -> None:
        """Add `blocks[start:]`, the blocks past the ones already scanned (`start == self.n`)."""
        positions = self.positions
        for position in range(start, len(blocks)):
            key = key_of(blocks[position])
            found = positions.get(key)
            if found is None:
                positions[key] = array("q", [position])
            else:
                found.append(position)
        self.n = max(self.n, len(blocks))

    def first(self, match: Match) -> int | None:
        """Position of the first block whose key matches."""
        return min((ps[0] for key, ps in self.positions.items() if match(key)), default=None)

    def first_n(self, match: Match, count: int) -> list[int]:
        """Positions of the first `count` matching blocks, in order."""
        return sorted(p for key, ps in self.positions.items() if match(key) for p in ps[:count])[:count]

    def last(self, match: Match) -> int | None:
        """Position of the last block whose key matches."""
        return max((ps[-1] for key, ps in self.positions.items() if match(key)), default=None)

    def all(self, match: Match) -> list[int]:
        """Positions of every matching block, in order."""
        return sorted(p for key, ps in self.positions.items() if match(key) for p in ps)

    def backwards(self, match: Match) -> Iterator[int]:
        """Positions of the matching blocks, last first, produced lazily (a caller that stops
        after a few pays for those few)."""
        return merge(*(reversed(ps) for key, ps in self.positions.items() if match(key)), reverse=True)

    def any(self, match: Match) -> bool:
        return any(match(key) for key in self.positions)
