"""Content-addressed blocks: each distinct text stored and tokenised once.

Requests reference blocks through occurrences (a distinct path + content +
attributes) and runs (consecutive positions mapping to consecutive occurrence
ids). A request that resends its predecessor's history shares its occurrences,
so storage and tokenising follow the unique content, not the resent bytes.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from itertools import accumulate

from analysis import tokens
from analysis.blockscan import BlockScan, key_of
from analysis.models import Block
from analysis.sequences import align

OCCURRENCE_FIELDS = (
    "path", "kind", "wire_type", "role", "source", "authority", "scope", "lifetime", "content_type",
    "rule_id", "tool_name", "call_id", "is_error",
)
# cache_breakpoint is per request, not per occurrence: clients move the breakpoint to the
# newest message on every call, and making it part of an occurrence would fragment runs.


@dataclass
class RequestBlocks:
    """One request's view of its blocks: occurrence and content ids in position order."""

    occurrences: array
    runs: list[tuple[int, int, int]]  # (position_start, n, occurrence_start)
    breakpoints: list[tuple[int, str]]  # (position, "ephemeral" | "5m" | "1h")
    content_ids: array  # dense content id per position (equal ids = identical content)
    conversation: array  # content ids of the blocks that are not tool definitions
    context_bytes: int


@dataclass
class BlockStore:
    content: dict[str, dict] = field(default_factory=dict)  # content_hash -> row (text, kind, bytes)
    content_index: dict[str, int] = field(default_factory=dict)  # content_hash -> dense content id
    content_bytes: list[int] = field(default_factory=list)  # by content id
    occurrences: list[dict] = field(default_factory=list)  # index = occurrence_id
    _occ_index: dict[tuple, int] = field(default_factory=dict)
    tokens_by_hash: dict[str, int] = field(default_factory=dict)
    tool_call_ids: set[str] = field(default_factory=set)  # call ids seen in tool_call blocks (history)
    segments: list[dict] = field(default_factory=list)  # every occurrence's segments (one row at least)
    bytes_tokenised: int = 0
    _hashes: list[str] = field(default_factory=list)  # by content id
    _occ_cum: array = field(default_factory=lambda: array("q"))  # tokens of occurrences before each id
    _seen: dict[int, tuple] = field(default_factory=dict)  # id(block) -> (block, occ, cid, tool def?)
    _last: tuple | None = None  # the previous request's blocks and ids, for the fast path
    reuse_prefix: bool = True  # False: every request from scratch (the reference for the fast path)
    scan: BlockScan = field(default_factory=BlockScan)  # of the request added last

    def add_request(self, request_id: str, blocks: list[Block]) -> RequestBlocks:
        # Fast path: blocks equal to the previous request's at the same position (usually the very
        # objects) take its ids, counts, runs, breakpoints and scan wholesale (slices), stepping over
        # a few changed ones (`align`), so resent history costs no per-block work. Equal blocks have
        # equal ids, so this changes no result.
        ids, cids, conversation, conv_cum, total, breakpoints, runs, scan, start = self._take_over(request_id, blocks)
        for position in range(start, len(blocks)):
            block = blocks[position]
            if block.cache_breakpoint:
                breakpoints.append((position, block.cache_breakpoint))
            occ, cid, is_tool = self._ids(request_id, block)
            ids.append(occ)
            cids.append(cid)
            if not is_tool:
                conversation.append(cid)
            conv_cum.append(len(conversation))
            total += self.content_bytes[cid]
        extend_runs(runs, ids, start)
        scan.extend(blocks, start)
        self.scan = scan
        self._last = (blocks, ids, cids, conversation, conv_cum, total, breakpoints, runs, scan)
        return RequestBlocks(ids, runs, list(breakpoints), cids, conversation, total)

    def _ids(self, request_id: str, block: Block) -> tuple[int, int, bool]:
        """(occurrence id, content id, tool definition?) of one block."""
        hit = self._seen.get(id(block))
        if hit is not None and hit[0] is block:  # the same block object as in an earlier request
            return hit[1], hit[2], hit[3]
        occ, cid = self._register(request_id, block)
        is_tool = block.kind == "tool_definition"
        self._seen[id(block)] = (block, occ, cid, is_tool)
        return occ, cid, is_tool

    def _take_over(self, request_id: str, blocks: list[Block]) -> tuple:
        """The state of the positions this request shares with the previous one, and where to go on."""
        last = self._last
        if last is None or not self.reuse_prefix:
            return array("q"), array("q"), array("q"), array("q", [0]), 0, [], [], BlockScan(), 0
        prev_blocks, prev_ids, prev_cids, prev_conv, prev_conv_cum, prev_total, prev_bps, prev_runs, prev_scan = last
        m, holes = align(prev_blocks, blocks)
        content_bytes = self.content_bytes
        total = prev_total - sum(content_bytes[c] for c in prev_cids[m:])  # what the previous one had past m
        ids, cids, conv_cum = prev_ids[:m], prev_cids[:m], prev_conv_cum[:m + 1]
        conversation = prev_conv[:prev_conv_cum[m]]
        bps = prev_bps[:bisect_left(prev_bps, (m,))]  # breakpoints are in position order
        runs, scan = runs_upto(prev_runs, m), prev_scan.upto(m)
        for p in holes:  # a changed block where the rest is shared: ids at p only
            occ, cid, is_tool = self._ids(request_id, blocks[p])
            if is_tool != (prev_conv_cum[p + 1] == prev_conv_cum[p]):
                # conversation indexes after p would shift: keep what lies before p, go on from p
                total = sum(content_bytes[c] for c in cids[:p])
                bps = [bp for bp in bps if bp[0] < p and bp[0] not in holes] + [
                    (q, blocks[q].cache_breakpoint) for q in holes if q < p and blocks[q].cache_breakpoint]
                return (ids[:p], cids[:p], conversation[:conv_cum[p]], conv_cum[:p + 1], total, sorted(bps),
                        runs_upto(runs, p), scan.upto(p), p)
            total += content_bytes[cid] - content_bytes[cids[p]]
            if not is_tool:
                conversation[conv_cum[p]] = cid
            ids[p], cids[p] = occ, cid
            patch_runs(runs, p, occ)
            scan.replace(p, key_of(prev_blocks[p]), key_of(blocks[p]))
        if holes:
            bps = sorted([bp for bp in bps if bp[0] not in holes] + [
                (p, blocks[p].cache_breakpoint) for p in holes if blocks[p].cache_breakpoint])
        return ids, cids, conversation, conv_cum, total, bps, runs, scan, m

    def _register(self, request_id: str, block: Block) -> tuple[int, int]:
        """Store a block seen for the first time: its content once, its occurrence once."""
        if block.content_hash not in self.content:
            self.content[block.content_hash] = {
                "content_hash": block.content_hash, "kind": block.kind, "bytes": block.bytes,
                "text": block.text,
            }
            self.content_index[block.content_hash] = len(self._hashes)
            self._hashes.append(block.content_hash)
            self.content_bytes.append(block.bytes)
        if block.kind == "tool_call" and block.call_id:
            self.tool_call_ids.add(block.call_id)
        layout = tuple((g.start, g.end, g.source, g.rule_id) for g in block.segments)
        key = (block.content_hash, *(getattr(block, f) for f in OCCURRENCE_FIELDS), layout)
        occ = self._occ_index.get(key)
        if occ is None:
            occ = len(self.occurrences)
            self._occ_index[key] = occ
            row = {f: getattr(block, f) for f in OCCURRENCE_FIELDS}
            row.update(occurrence_id=occ, content_hash=block.content_hash, first_request_id=request_id)
            self.occurrences.append(row)
            self._add_segments(occ, block)
        return occ, self.content_index[block.content_hash]

    def _add_segments(self, occ: int, block: Block) -> None:
        """One row per segment of the occurrence; a block without segments is one segment."""
        parts = block.segments or [None]
        for i, g in enumerate(parts):
            src = g if g is not None else block
            self.segments.append({
                "occurrence_id": occ, "segment_index": i, "content_hash": block.content_hash,
                "byte_start": g.start if g else 0, "byte_end": g.end if g else block.bytes,
                "source": src.source, "authority": src.authority, "scope": src.scope, "lifetime": src.lifetime,
                "content_type": src.content_type, "rule_id": src.rule_id, "label": g.label if g else "",
            })

    def segment_tokens(self) -> list[int]:
        """Token estimate of every segment row: its block's tokens shared out by bytes (after
        `tokenise`); a block's segments add up to the block's estimate exactly."""
        out: list[int] = []
        for row in self.segments:
            h = row["content_hash"]
            total, size = self.tokens_by_hash.get(h, 0), self.content[h]["bytes"]
            if size <= 0:
                out.append(total if row["segment_index"] == 0 else 0)
                continue
            before = total * row["byte_start"] // size
            out.append(total * row["byte_end"] // size - before)
        return out

    def tokenise(self, encoding: str = tokens.DEFAULT_ENCODING) -> None:
        """Estimate tokens of every distinct content not yet counted (each exactly once)."""
        todo = [h for h in self.content if h not in self.tokens_by_hash]
        texts = [self.content[h]["text"] for h in todo]
        for h, n in zip(todo, tokens.count(texts, encoding), strict=True):
            self.tokens_by_hash[h] = n
            self.content[h]["tokens_estimated"] = n
        self.bytes_tokenised += sum(len(t.encode("utf-8", "surrogatepass")) for t in texts)

    def content_tokens(self) -> list[int]:
        """Token estimate by content id (after `tokenise`)."""
        return [self.tokens_by_hash[h] for h in self._hashes]

    def token_prefix(self, rb: RequestBlocks) -> TokenPrefix:
        """Estimated tokens of a request's leading blocks (after `tokenise`), from its runs."""
        if len(self._occ_cum) != len(self.occurrences) + 1:
            tokens_by_hash = self.tokens_by_hash
            self._occ_cum = array("q", accumulate(
                (tokens_by_hash[o["content_hash"]] for o in self.occurrences), initial=0))
        return TokenPrefix(rb.runs, self._occ_cum)

    def column(self, rb: RequestBlocks, name: str) -> OccurrenceColumn:
        """One occurrence field (path, kind, source, ...) of a request's blocks, by position."""
        return OccurrenceColumn(self.occurrences, rb.occurrences, name)

    def text_of(self, content_id: int) -> str:
        return self.content[self._hashes[content_id]]["text"]


class TokenPrefix:
    """Estimated tokens of a request's first p blocks in O(log runs): a run's positions map to
    consecutive occurrence ids, whose cumulative token counts the store keeps once."""

    __slots__ = ("_before", "_occ_cum", "_runs", "_starts", "total")

    def __init__(self, runs: list[tuple[int, int, int]], occ_cum: array) -> None:
        self._runs, self._occ_cum = runs, occ_cum
        self._starts = [start for start, _, _ in runs]
        self._before = list(accumulate((occ_cum[occ + n] - occ_cum[occ] for _, n, occ in runs), initial=0))
        self.total = self._before.pop()

    def upto(self, p: int) -> int:
        """Tokens of positions [0, p)."""
        if p <= 0 or not self._runs:
            return 0
        i = bisect_right(self._starts, p - 1) - 1  # the run holding position p - 1
        start, n, occ = self._runs[i]
        return self._before[i] + self._occ_cum[occ + min(p - start, n)] - self._occ_cum[occ]


class OccurrenceColumn:
    """A read-only sequence: one field of the occurrence at each position of a request."""

    __slots__ = ("_ids", "_name", "_rows")

    def __init__(self, rows: list[dict], ids: array, name: str) -> None:
        self._rows, self._ids, self._name = rows, ids, name

    def __len__(self) -> int:
        return len(self._ids)

    def __getitem__(self, position: int):
        return self._rows[self._ids[position]][self._name]


def to_runs(ids: list[int]) -> list[tuple[int, int, int]]:
    """Compress occurrence ids into runs of consecutive ids."""
    runs: list[tuple[int, int, int]] = []
    extend_runs(runs, ids, 0)
    return runs


def runs_upto(runs: list[tuple[int, int, int]], k: int) -> list[tuple[int, int, int]]:
    """The runs of the first `k` positions (a new list)."""
    cut = runs[:bisect_left(runs, (k,))]  # runs starting before k
    if cut:
        start, n, occ = cut[-1]
        if start + n > k:
            cut[-1] = (start, k - start, occ)
    return cut


def patch_runs(runs: list[tuple[int, int, int]], p: int, occ: int) -> None:
    """Change the occurrence at position p (inside the runs) in place, keeping runs maximal."""
    i = bisect_right(runs, (p, float("inf"))) - 1  # the run holding p
    start, n, first = runs[i]
    if first + (p - start) == occ:
        return
    pieces = [(start, p - start, first)] if p > start else []
    pieces.append((p, 1, occ))
    if start + n > p + 1:
        pieces.append((p + 1, start + n - p - 1, first + p + 1 - start))
    runs[i:i + 1] = pieces
    j = i + len(pieces) - (2 if start + n > p + 1 else 1)  # index of the (p, 1, occ) run
    if j + 1 < len(runs) and runs[j + 1][0] == p + 1 and runs[j + 1][2] == occ + 1:  # joins the next run
        nxt = runs.pop(j + 1)
        runs[j] = (p, 1 + nxt[1], occ)
    if j > 0 and runs[j - 1][0] + runs[j - 1][1] == p and runs[j - 1][2] + runs[j - 1][1] == occ:  # and the previous
        prv = runs[j - 1]
        runs[j - 1:j + 1] = [(prv[0], prv[1] + runs[j][1], prv[2])]


def extend_runs(runs: list[tuple[int, int, int]], ids, start: int) -> None:
    """Extend `runs` (the runs of `ids[:start]`) to all of `ids`, as `to_runs(ids)` would give."""
    n = len(ids)
    if start >= n:
        return
    i = start
    if runs:
        s0, n0, o0 = runs[-1]
        if s0 + n0 == start and ids[start] == o0 + n0:  # the first new id continues the last run
            runs.pop()
            i = s0
    run_start = i
    for j in range(max(i, start) + 1, n + 1):
        if j == n or ids[j] != ids[j - 1] + 1:
            runs.append((run_start, j - run_start, ids[run_start]))
            run_start = j
