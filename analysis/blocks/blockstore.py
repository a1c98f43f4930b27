"""Content-addressed blocks: each distinct text stored and tokenised once.

Requests reference blocks through occurrences (a distinct path + content +
attributes) and runs (consecutive positions mapping to consecutive occurrence
ids). A request that resends its predecessor's history shares its occurrences,
so storage and tokenising follow the unique content, not the resent bytes.

Occurrence ids are numbered so that a request's history stays a few runs: a
request continues the lane (the recent request it shares most of its leading
blocks with), new occurrences take provisional ids in their lane's own range,
and blocks changed in place (Claude Code's per-request billing hash in
`system[0]`, an edited message) in a range of their own. `finish` lays the
ranges end to end (dense ids from 0). Numbered in one sequence instead, the
blocks of interleaved sessions, or a changing hash, would fall between each
request's new history and its predecessor's, so every request would start a run
of its own and a request's runs would grow with its history.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import accumulate

from ctxtap.analysis.blocks.blockscan import BlockScan, key_of
from ctxtap.analysis.blocks.sequences import align, shared_prefix
from ctxtap.analysis.parsing import tokens
from ctxtap.analysis.parsing.models import Block

OCCURRENCE_FIELDS = (
    "path", "kind", "wire_type", "role", "source", "authority", "scope", "lifetime", "content_type",
    "rule_id", "tool_name", "call_id", "is_error",
)
# cache_breakpoint is per request, not per occurrence: clients move the breakpoint to the
# newest message on every call, and making it part of an occurrence would fragment runs.


LANE_SPAN = 1 << 32  # provisional ids: lane * LANE_SPAN + n, renumbered by `finish`
MAX_LANES = 16  # recent lanes a request is compared with
JOIN_SHARE = 0.5  # a request continues a lane when it shares at least this share of its last request


@dataclass
class RequestBlocks:
    """One request's view of its blocks: occurrence and content ids in position order."""

    occurrences: Sequence[int]  # an int array while requests are added, a view of the runs after `finish`
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
    _lanes: OrderedDict = field(default_factory=OrderedDict)  # lane -> its last request's blocks, ids, ...
    reuse_prefix: bool = True  # False: every request from scratch (the reference for the fast path)
    scan: BlockScan = field(default_factory=BlockScan)  # of the request added last
    _lane_rows: list[list[dict]] = field(default_factory=list)  # provisional occurrence rows by lane
    _in_place_lane: dict[int, int] = field(default_factory=dict)  # lane -> the lane of its in-place changes
    _lane: int = 0  # the lane of the request being added, and of its in-place changes
    _changed: int = 0
    _requests: list[RequestBlocks] = field(default_factory=list)  # renumbered by `finish`
    finished: bool = False

    def add_request(self, request_id: str, blocks: list[Block]) -> RequestBlocks:
        # Fast path: blocks equal to the previous request's at the same position (usually the very
        # objects) take its ids, counts, runs, breakpoints and scan wholesale (slices), stepping over
        # a few changed ones (`align`), so resent history costs no per-block work. Equal blocks have
        # equal ids, so this changes no result.
        if self.finished:
            raise RuntimeError("the block store is finished: no requests can be added")
        lane, last, m, holes = self._lane_for(blocks)
        prev_blocks = last[0] if last is not None else []
        in_place = _changed_in_place(prev_blocks, blocks, m, holes)
        self._lane, self._changed = lane, self._changed_lane(lane) if in_place else lane
        ids, cids, conversation, conv_cum, total, breakpoints, runs, scan, start = self._take_over(
            request_id, blocks, last, m, holes, in_place)
        for position in range(start, len(blocks)):
            block = blocks[position]
            if block.cache_breakpoint:
                breakpoints.append((position, block.cache_breakpoint))
            occ, cid, is_tool = self._ids(request_id, block, position in in_place)
            ids.append(occ)
            cids.append(cid)
            if not is_tool:
                conversation.append(cid)
            conv_cum.append(len(conversation))
            total += self.content_bytes[cid]
        extend_runs(runs, ids, start)
        scan.extend(blocks, start)
        self.scan = scan
        self._lanes[lane] = (blocks, ids, cids, conversation, conv_cum, total, breakpoints, runs, scan)
        self._lanes.move_to_end(lane)
        if len(self._lanes) > MAX_LANES:
            self._lanes.popitem(last=False)
        rb = RequestBlocks(ids, runs, list(breakpoints), cids, conversation, total)
        self._requests.append(rb)
        return rb

    def _lane_for(self, blocks: list[Block]) -> tuple[int, tuple | None, int, list[int]]:
        """(lane, its last request, m, holes): of the recent lanes whose last request shares the
        longest leading run with these blocks (compared in C), the one they align with longest
        (see `align`), if they carry at least JOIN_SHARE of it; else a new lane."""
        scored = [(shared_prefix(last[0], blocks), lane, last) for lane, last in reversed(self._lanes.items())]
        top = max((k for k, _, _ in scored), default=0)
        best: tuple[int, tuple | None, int, list[int]] | None = None
        for k, lane, last in scored:  # the most recent first: it wins ties
            if k == top:
                m, holes = align(last[0], blocks, shared=k)
                if best is None or m > best[2]:
                    best = (lane, last, m, holes)
        if best is not None and best[2] and best[2] >= JOIN_SHARE * len(best[1][0]):  # type: ignore[index]
            return best
        self._lane_rows.append([])
        return len(self._lane_rows) - 1, None, 0, []

    def _changed_lane(self, lane: int) -> int:
        """The lane numbering the in-place changes of `lane`."""
        found = self._in_place_lane.get(lane)
        if found is None:
            self._lane_rows.append([])
            found = self._in_place_lane[lane] = len(self._lane_rows) - 1
        return found

    def _ids(self, request_id: str, block: Block, in_place: bool = False) -> tuple[int, int, bool]:
        """(occurrence id, content id, tool definition?) of one block."""
        hit = self._seen.get(id(block))
        if hit is not None and hit[0] is block:  # the same block object as in an earlier request
            return hit[1], hit[2], hit[3]
        occ, cid = self._register(request_id, block, in_place)
        is_tool = block.kind == "tool_definition"
        self._seen[id(block)] = (block, occ, cid, is_tool)
        return occ, cid, is_tool

    def _take_over(self, request_id: str, blocks: list[Block], last: tuple | None, m: int, holes: list[int],
                   in_place: set[int]) -> tuple:
        """The state of the positions this request shares with its lane's last request (`align`ed:
        equal below m except at the holes), and where to go on."""
        if last is None or not self.reuse_prefix:
            return array("q"), array("q"), array("q"), array("q", [0]), 0, [], [], BlockScan(), 0
        prev_blocks, prev_ids, prev_cids, prev_conv, prev_conv_cum, prev_total, prev_bps, prev_runs, prev_scan = last
        content_bytes = self.content_bytes
        total = prev_total - sum(content_bytes[c] for c in prev_cids[m:])  # what the previous one had past m
        ids, cids, conv_cum = prev_ids[:m], prev_cids[:m], prev_conv_cum[:m + 1]
        conversation = prev_conv[:prev_conv_cum[m]]
        bps = prev_bps[:bisect_left(prev_bps, (m,))]  # breakpoints are in position order
        runs, scan = runs_upto(prev_runs, m), prev_scan.upto(m)
        for p in holes:  # a changed block where the rest is shared: ids at p only
            occ, cid, is_tool = self._ids(request_id, blocks[p], p in in_place)
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

    def _register(self, request_id: str, block: Block, in_place: bool = False) -> tuple[int, int]:
        """Store a block seen for the first time: its content once, its occurrence once (a new
        occurrence changed in place numbered in the provisional range, see `finish`)."""
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
            lane = self._changed if in_place else self._lane
            rows = self._lane_rows[lane]
            occ = lane * LANE_SPAN + len(rows)
            self._occ_index[key] = occ
            row = {f: getattr(block, f) for f in OCCURRENCE_FIELDS}
            row.update(occurrence_id=occ, content_hash=block.content_hash, first_request_id=request_id)
            rows.append(row)
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

    def finish(self) -> None:
        """Number the occurrences changed in place after all others (dense ids from 0), and give
        every request its runs in those ids; requests read their occurrences from their runs."""
        if self.finished:
            return
        self.finished = True
        base, total = [], 0
        for rows in self._lane_rows:
            base.append(total - len(base) * LANE_SPAN)  # added to a provisional id of that lane
            total += len(rows)

        def final(occ: int) -> int:
            return occ + base[occ // LANE_SPAN]

        for rows in self._lane_rows:
            for row in rows:
                row["occurrence_id"] = final(row["occurrence_id"])
            self.occurrences.extend(rows)
        self._lane_rows = []
        for row in self.segments:
            row["occurrence_id"] = final(row["occurrence_id"])
        self.segments.sort(key=_occurrence_id)  # stable: each occurrence's segments stay in order
        for rb in self._requests:
            runs: list[tuple[int, int, int]] = []
            for start, n, occ in rb.runs:
                occ = final(occ)
                if runs and runs[-1][0] + runs[-1][1] == start and runs[-1][2] + runs[-1][1] == occ:
                    s0, n0, o0 = runs.pop()  # a stable run ends where the renumbered range begins
                    start, n, occ = s0, n0 + n, o0
                runs.append((start, n, occ))
            rb.runs = runs
            rb.occurrences = RunIds(runs, len(rb.content_ids))
        self._requests = []
        self._lanes.clear()
        self._seen.clear()
        self._occ_index.clear()

    def tokenise(self, encoding: str = tokens.DEFAULT_ENCODING) -> None:
        """Estimate tokens of every distinct content not yet counted (each exactly once);
        finishes the store first (see `finish`)."""
        self.finish()
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


class RunIds(Sequence[int]):
    """A request's occurrence id at each position, read from its runs (O(log runs) a lookup)."""

    __slots__ = ("_n", "_runs", "_starts")

    def __init__(self, runs: list[tuple[int, int, int]], n: int) -> None:
        self._runs, self._n = runs, n
        self._starts = [start for start, _, _ in runs]

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, position):  # type: ignore[override]
        if isinstance(position, slice):
            return [self[i] for i in range(*position.indices(self._n))]
        if position < 0:
            position += self._n
        if not 0 <= position < self._n:
            raise IndexError(position)
        start, _, occ = self._runs[bisect_right(self._starts, position) - 1]
        return occ + position - start

    def __iter__(self) -> Iterator[int]:
        for _, n, occ in self._runs:
            yield from range(occ, occ + n)


class OccurrenceColumn:
    """A read-only sequence: one field of the occurrence at each position of a request."""

    __slots__ = ("_ids", "_name", "_rows")

    def __init__(self, rows: list[dict], ids: Sequence[int], name: str) -> None:
        self._rows, self._ids, self._name = rows, ids, name

    def __len__(self) -> int:
        return len(self._ids)

    def __getitem__(self, position: int):
        return self._rows[self._ids[position]][self._name]


def _changed_in_place(prev: list[Block], blocks: list[Block], m: int, holes: list[int]) -> set[int]:
    """Positions whose block replaces the previous request's block at the same path: a hole of
    the alignment from the start, or the one difference of the alignment from the end after
    the growing part (a per-request value in a system prompt sent after the history). Only
    these take provisional occurrence ids (see `BlockStore.finish`); new history does not."""
    out = {p for p in holes if blocks[p].path == prev[p].path}
    tail, prev_tail = blocks[m:], prev[m:]
    if tail and prev_tail:
        # position-independent keys: blocks after the growing part sit at new positions
        _, back = align([(b.path, b.content_hash) for b in reversed(prev_tail)],
                        [(b.path, b.content_hash) for b in reversed(tail)], 1)
        if back and back[0] > 0 and tail[-1 - back[0]].path == prev_tail[-1 - back[0]].path:
            out.add(len(blocks) - 1 - back[0])
    return out


def _occurrence_id(row: dict) -> int:
    return row["occurrence_id"]


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
