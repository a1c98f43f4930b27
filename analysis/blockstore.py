"""Content-addressed blocks: each distinct text stored and tokenised once.

Requests reference blocks through occurrences (a distinct path + content +
attributes) and runs (consecutive positions mapping to consecutive occurrence
ids). A request that resends its predecessor's history shares its occurrences,
so storage and tokenising follow the unique content, not the resent bytes.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field

from analysis import tokens
from analysis.models import Block
from analysis.sequences import shared_prefix

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
    conversation: list[int]  # content ids of the blocks that are not tool definitions
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
    _seen: dict[int, tuple] = field(default_factory=dict)  # id(block) -> (block, occ, cid, tool def?)
    _last: tuple | None = None  # the previous request's blocks and ids, for the fast path

    def add_request(self, request_id: str, blocks: list[Block]) -> RequestBlocks:
        # Fast path: leading blocks that are the very objects of the previous request take its
        # ids, counts and breakpoints wholesale (slices), so resent history costs no per-block work.
        k, ids, cids, conversation, conv_cum, bytes_cum, breakpoints = self._shared_prefix(blocks)
        seen = self._seen
        for position in range(k, len(blocks)):
            block = blocks[position]
            if block.cache_breakpoint:
                breakpoints.append((position, block.cache_breakpoint))
            hit = seen.get(id(block))
            if hit is not None and hit[0] is block:  # the same block object as in an earlier request
                _, occ, cid, is_tool = hit
            else:
                occ, cid = self._register(request_id, block)
                is_tool = block.kind == "tool_definition"
                seen[id(block)] = (block, occ, cid, is_tool)
            ids.append(occ)
            cids.append(cid)
            if not is_tool:
                conversation.append(cid)
            conv_cum.append(len(conversation))
            bytes_cum.append(bytes_cum[-1] + self.content_bytes[cid])
        self._last = (blocks, ids, cids, conversation, conv_cum, bytes_cum, breakpoints)
        return RequestBlocks(ids, to_runs(ids), list(breakpoints), cids, conversation, bytes_cum[-1])

    def _shared_prefix(self, blocks: list[Block]) -> tuple:
        last = self._last
        if last is None:
            return 0, array("q"), array("q"), [], array("q", [0]), array("q", [0]), []
        prev_blocks, prev_ids, prev_cids, prev_conv, prev_conv_cum, prev_bytes_cum, prev_bps = last
        k = shared_prefix(prev_blocks, blocks)  # identity first, then equality: equal blocks have equal ids
        bps = [bp for bp in prev_bps if bp[0] < k]
        return (k, prev_ids[:k], prev_cids[:k], prev_conv[:prev_conv_cum[k]], prev_conv_cum[:k + 1],
                prev_bytes_cum[:k + 1], bps)

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

    def text_of(self, content_id: int) -> str:
        return self.content[self._hashes[content_id]]["text"]


def to_runs(ids: list[int]) -> list[tuple[int, int, int]]:
    """Compress occurrence ids into runs of consecutive ids."""
    runs: list[tuple[int, int, int]] = []
    start = 0
    for i in range(1, len(ids) + 1):
        if i == len(ids) or ids[i] != ids[i - 1] + 1:
            runs.append((start, i - start, ids[start]))
            start = i
    return runs
