"""Where a replayed run's requests differ from the recorded ones, in words.

Each request the new run sent is set against the recorded request it was matched to with the
same engine as `ctxtap diff` (`analysis.diff.diff_blocks`), with the volatile-field masker as its
normaliser: a block that differs only in dates, ids, temp paths or hashes is listed as volatile,
not as divergence. Requests that matched nothing, matched a recorded call that could not be
played back, or recorded calls the new run never made, are divergence too (the tool loop changed).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ctxtap.analysis.blocks.volatile import normalise, volatile_changes
from ctxtap.analysis.compare.diff import BlockChange, BlockSide, describe, diff_blocks, first_divergence
from ctxtap.replay.cassette import Block, Recorded
from ctxtap.replay.server import Served


@dataclass
class Comparison:
    served: Served
    recorded: Recorded | None
    divergence: str | None = None  # the first non-volatile difference in words; None when the same
    volatile: list[str] = field(default_factory=list)  # "block 2 (system[1]): date 2026-11-30 -> 2026-12-01"


@dataclass
class ReplayReport:
    comparisons: list[Comparison]
    never_asked: list[Recorded]

    @property
    def diverged(self) -> list[Comparison]:
        return [c for c in self.comparisons if c.divergence]

    @property
    def ok(self) -> bool:
        """No divergence beyond volatile fields (what `--strict` checks)."""
        return not self.diverged and not self.never_asked

    def lines(self) -> list[str]:
        out: list[str] = []
        same = sum(1 for c in self.comparisons if not c.divergence)
        out.append(f"replayed {len(self.comparisons)} model requests: {same} as recorded, "
                   f"{len(self.diverged)} diverged, {len(self.never_asked)} recorded requests never asked for")
        for c in self.diverged:
            out.append(f"  DIVERGED {c.served.describe()}: {c.divergence}")
        for r in self.never_asked:
            out.append(f"  NOT ASKED {r.describe()}: the new run did not send it")
        volatile = [(c, v) for c in self.comparisons for v in c.volatile]
        if volatile:
            out.append(f"volatile fields (differ from run to run; not counted as divergence): {len(volatile)}")
            for c, v in volatile[:20]:
                out.append(f"  {c.served.describe()}: {v}")
            if len(volatile) > 20:
                out.append(f"  ... {len(volatile) - 20} more")
        return out


def _side(block: Block) -> BlockSide:
    return BlockSide(position=block.position, path=block.path, role=block.role, kind=block.kind,
                     content_hash=block.content_hash, tokens_estimated=len(block.text) // 4, text=block.text)


def _parent(path: str) -> str:
    return path.rsplit("[", 1)[0] if path.endswith("]") else path


def _reordered_result(change: BlockChange) -> bool:
    """A tool result moved within its own message: parallel calls finish in any order, run to run."""
    return (change.op == "moved" and change.a is not None and change.b is not None
            and change.a.kind == change.b.kind == "tool_result"
            and _parent(change.a.path) == _parent(change.b.path) and change.a.path != change.b.path)


def compare_one(served: Served) -> Comparison:
    recorded = served.recorded
    if recorded is None or served.note:
        return Comparison(served, recorded, divergence=served.note or "matches no recorded request")
    changes = diff_blocks([_side(b) for b in recorded.blocks], [_side(b) for b in served.blocks], normalise=normalise)
    volatile = []
    for k, change in enumerate(changes):
        if _reordered_result(change):
            assert change.a is not None and change.b is not None
            volatile.append(f"block {change.b.position} ({change.b.path}): a parallel tool result in another order "
                            f"(was {change.a.path})")
            changes[k] = change.model_copy(update={"op": "same", "volatile": True})
    first = first_divergence(changes)
    for change in changes:
        if change.volatile and change.a and change.b and change.a.content_hash != change.b.content_hash:
            for item in volatile_changes(change.a.text or "", change.b.text or ""):
                volatile.append(f"block {change.b.position} ({change.b.path}): {item}")
    words = None
    if first is not None:
        words = f"vs {recorded.describe()}: {describe(changes[first])}"
    return Comparison(served, recorded, divergence=words, volatile=volatile)


def compare(served: list[Served], never_asked: list[Recorded]) -> ReplayReport:
    return ReplayReport([compare_one(s) for s in served], never_asked)
