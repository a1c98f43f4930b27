"""Diff two requests' context layouts block by block: what stayed, changed, moved, appeared or went.

One module for every comparison ctxtap makes between two requests (`ctxtap diff`, experiment
reports, the live view's request diff, replay): blocks are matched by content hash and place,
the first real divergence is named in words, and the cache read is set against it, so all of
them say the same thing about the same pair.

Matching (`diff_blocks`): the blocks of A and B are aligned on their content hashes (longest
common subsequence, so one block inserted near the top does not make every later block
"moved"); aligned equal hashes are `same`. Of the rest, a hash found on the other side is
`moved`; within an unaligned stretch, blocks with the same path (then the same position, then
in order) are `changed`, with a unified text diff when the texts are loaded (and, when their
segments are loaded too, the segments that differ, matched by label); what remains is
`only_a` / `only_b`. A `normalise` function (replay passes one that masks dates, ids and temp
paths) turns a change whose texts are equal after normalising into `same` with `volatile=True`.
"""

from __future__ import annotations

import difflib
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any, Literal

from pydantic import BaseModel

from ctxtap.analysis.blocks.divergence import describe_change

Op = Literal["same", "changed", "moved", "only_a", "only_b"]
OPS: tuple[str, ...] = ("same", "changed", "moved", "only_a", "only_b")
TEXT_DIFF_CONTEXT = 1  # lines of context around each hunk of a changed block's text diff
TEXT_DIFF_MAX_LINES = 400  # a changed block's diff is cut after this many lines (with a marker line)


class SegmentSide(BaseModel):
    """One segment of a block (a section with attributes of its own), as the `segments` view has it."""

    segment_index: int
    source: str | None = None
    label: str | None = None
    byte_start: int
    byte_end: int


class BlockSide(BaseModel):
    """One block of one request, as the `blocks` view has it."""

    position: int
    path: str
    role: str | None = None
    source: str | None = None
    kind: str | None = None
    content_hash: str
    tokens_estimated: int | None = None
    is_cache_breakpoint: bool = False
    text: str | None = None  # block_content text (loaded for changed blocks)
    segments: list[SegmentSide] | None = None  # loaded with the text of changed blocks


class BlockChange(BaseModel):
    op: Op
    a: BlockSide | None = None
    b: BlockSide | None = None
    text_diff: list[str] | None = None  # unified-diff lines for "changed"
    volatile: bool = False  # changed only in what the normaliser calls volatile
    segment_changes: list[str] | None = None  # "changed": which segments differ, e.g. "Environment changed"

    @property
    def side(self) -> BlockSide:
        """B's block, or A's for a block only in A."""
        side = self.b or self.a
        assert side is not None
        return side

    @property
    def tokens(self) -> int:
        return self.side.tokens_estimated or 0


class RequestDiff(BaseModel):
    a_request_id: str
    b_request_id: str
    changes: list[BlockChange]  # in B's order, with only_a blocks placed where they were in A
    first_divergence: int | None  # index into changes of the first non-"same" (non-volatile) change
    first_divergence_words: str  # e.g. "block 3 (system[2], system / runtime_environment) changed: ..."
    a_cache_read_tokens: int | None = None
    b_cache_read_tokens: int | None = None
    cache_break_position: int | None = None  # B position where its cached prefix ended, when known
    tokens_by_op: dict[str, int]
    a_capture_id: str | None = None
    b_capture_id: str | None = None

    def counts(self) -> dict[str, int]:
        """Blocks per op (volatile changes counted as same)."""
        out = dict.fromkeys(OPS, 0)
        for change in self.changes:
            out[change.op] += 1
        return out


# -- matching --------------------------------------------------------------------------------


def diff_blocks(a: Sequence[BlockSide], b: Sequence[BlockSide], *,
                normalise: Callable[[str], str] | None = None) -> list[BlockChange]:
    """The block changes from A to B, in B's order, with A-only blocks where they were in A."""
    matcher = difflib.SequenceMatcher(None, [x.content_hash for x in a], [x.content_hash for x in b],
                                      autojunk=False)
    opcodes = matcher.get_opcodes()
    paired_a: set[int] = set()
    paired_b: set[int] = set()
    for tag, i1, i2, j1, j2 in opcodes:
        if tag == "equal":
            paired_a.update(range(i1, i2))
            paired_b.update(range(j1, j2))

    # moved: an unaligned B block whose hash an unaligned A block has (the nearest one first)
    free_a: dict[str, list[int]] = defaultdict(list)
    for i, block in enumerate(a):
        if i not in paired_a:
            free_a[block.content_hash].append(i)
    moved: dict[int, int] = {}
    for j, block in enumerate(b):
        if j in paired_b or not free_a.get(block.content_hash):
            continue
        candidates = free_a[block.content_hash]
        i = min(candidates, key=lambda k: abs(k - j))
        candidates.remove(i)
        moved[j] = i
        paired_a.add(i)
        paired_b.add(j)

    # changed: inside each unaligned stretch, by path, then by position, then in order
    changed: dict[int, int] = {}
    for tag, i1, i2, j1, j2 in opcodes:
        if tag != "replace":
            continue
        rest_a = [i for i in range(i1, i2) if i not in paired_a]
        rest_b = [j for j in range(j1, j2) if j not in paired_b]
        for key in (lambda s: s.path, lambda s: s.position):
            by_key = {key(a[i]): i for i in reversed(rest_a)}
            for j in list(rest_b):
                i = by_key.pop(key(b[j]), None)
                if i is not None and i in rest_a:
                    changed[j] = i
                    rest_a.remove(i)
                    rest_b.remove(j)
        for i, j in zip(rest_a, rest_b, strict=False):
            changed[j] = i
        paired_a.update(changed.values())
        paired_b.update(changed)

    out: list[BlockChange] = []
    emitted_a: set[int] = set()

    def flush_a(upto: int, lo: int) -> None:
        """Emit the A-only blocks of A[lo:upto] not emitted yet (they go where they were in A)."""
        for i in range(lo, upto):
            if i not in paired_a and i not in emitted_a:
                emitted_a.add(i)
                out.append(BlockChange(op="only_a", a=a[i]))

    for tag, i1, i2, j1, j2 in opcodes:
        if tag == "equal":
            out.extend(BlockChange(op="same", a=a[i1 + k], b=b[j1 + k]) for k in range(i2 - i1))
            continue
        for j in range(j1, j2):
            if j in changed:
                i = changed[j]
                flush_a(i, i1)
                out.append(_changed(a[i], b[j], normalise))
            elif j in moved:
                out.append(BlockChange(op="moved", a=a[moved[j]], b=b[j]))
            else:
                out.append(BlockChange(op="only_b", b=b[j]))
        flush_a(i2, i1)
    return out


def _changed(a: BlockSide, b: BlockSide, normalise: Callable[[str], str] | None) -> BlockChange:
    if a.text is None or b.text is None:
        return BlockChange(op="changed", a=a, b=b)
    if normalise is not None and normalise(a.text) == normalise(b.text):
        return BlockChange(op="same", a=a, b=b, volatile=True)
    return BlockChange(op="changed", a=a, b=b, text_diff=text_diff(a.text, b.text),
                       segment_changes=segment_changes(a, b, normalise))


def _segment_texts(side: BlockSide) -> list[tuple[str, str]]:
    """(name, text) of each segment: its label, else its source, numbered when a name repeats."""
    assert side.text is not None and side.segments is not None
    data = side.text.encode("utf-8", "surrogatepass")
    out: list[tuple[str, str]] = []
    seen: dict[str, int] = {}
    for seg in sorted(side.segments, key=lambda x: x.segment_index):
        name = seg.label or seg.source or "text"
        seen[name] = seen.get(name, 0) + 1
        if seen[name] > 1:
            name = f"{name} #{seen[name]}"
        out.append((name, data[seg.byte_start:seg.byte_end].decode("utf-8", "replace")))
    return out


def segment_changes(a: BlockSide, b: BlockSide, normalise: Callable[[str], str] | None = None) -> list[str] | None:
    """Which segments of a changed block differ, matched by name (label or source): `X changed`,
    `X added`, `X removed`; None when the segments are not loaded or the block is one segment."""
    if a.text is None or b.text is None or not a.segments or not b.segments:
        return None
    if len(a.segments) == 1 and len(b.segments) == 1:
        return None
    norm = normalise or (lambda t: t)
    old, new = dict(_segment_texts(a)), dict(_segment_texts(b))
    out = [f"{name} changed" for name in new if name in old and norm(old[name]) != norm(new[name])]
    out += [f"{name} added" for name in new if name not in old]
    out += [f"{name} removed" for name in old if name not in new]
    return out


def text_diff(old: str, new: str, *, context: int = TEXT_DIFF_CONTEXT,
              max_lines: int = TEXT_DIFF_MAX_LINES) -> list[str]:
    """Unified-diff lines (without the file header) from old to new, cut after max_lines."""
    lines = list(difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=context))[2:]
    if len(lines) > max_lines:
        lines = lines[:max_lines] + [f"… {len(lines) - max_lines} more diff lines"]
    return lines


def lines_differ(change: BlockChange) -> int:
    """Lines removed plus lines added in a changed block's text diff (0 when texts are not loaded)."""
    return sum(1 for line in change.text_diff or () if line[:1] in "+-" and not line.startswith(("+++", "---")))


def first_divergence(changes: Sequence[BlockChange]) -> int | None:
    return next((k for k, c in enumerate(changes) if c.op != "same"), None)


def tokens_by_op(changes: Sequence[BlockChange]) -> dict[str, int]:
    """Estimated tokens per op: B's block's, A's for only_a (volatile changes count as same)."""
    out = dict.fromkeys(OPS, 0)
    for change in changes:
        out[change.op] += change.tokens
    return out


def _where(side: BlockSide) -> str:
    what = " / ".join(x for x in (side.role, side.source) if x)
    return f"block {side.position} ({side.path}{', ' + what if what else ''})"


def describe(change: BlockChange | None) -> str:
    """One change in words, e.g. `block 2 (system[2], system / platform_rules) changed: a timestamp
    inserted (-> Current time: 2026-12-01T11:40:00Z); 1 line differs`."""
    if change is None:
        return "no divergence: every block is the same"
    if change.op == "same":
        suffix = " (only volatile fields differ)" if change.volatile else ""
        return f"{_where(change.side)} is the same{suffix}"
    if change.op == "only_a":
        return f"{_where(change.side)} only in A (removed in B)"
    if change.op == "only_b":
        return f"{_where(change.side)} only in B (added)"
    assert change.a is not None and change.b is not None
    if change.op == "moved":
        return f"{_where(change.b)} moved (was block {change.a.position} at {change.a.path})"
    if change.a.text is None or change.b.text is None:
        return f"{_where(change.b)} changed"
    words = describe_change(change.b.path, change.a.text, change.b.text).split(" changed: ", 1)[-1]
    n = lines_differ(change)
    segs = f"; segments: {', '.join(change.segment_changes)}" if change.segment_changes else ""
    return (f"{_where(change.b)} changed: {words}; {n} line{'' if n == 1 else 's'} "
            f"differ{'s' if n == 1 else ''}{segs}")


# -- over a DuckDB connection (analysis.db.connect) -------------------------------------------

_BLOCKS_SQL = """
SELECT b.position, b.path, b.role, b.source, b.kind, b.content_hash, b.tokens_estimated,
       b.is_cache_breakpoint{text}
FROM blocks b{join}
WHERE b.request_id = ? {capture}
ORDER BY b.position
"""


def load_blocks(con: Any, request_id: str, *, capture_id: str | None = None,
                with_text: bool = False) -> list[BlockSide]:
    """A request's blocks in position order (with their texts when `with_text`)."""
    sql = _BLOCKS_SQL.format(
        text=", c.text" if with_text else "",
        join=(" JOIN t_block_content c ON c.capture_id = b.capture_id AND c.content_hash = b.content_hash"
              if with_text else ""),
        capture="AND b.capture_id = ?" if capture_id is not None else "",
    )
    params: list[Any] = [request_id] + ([capture_id] if capture_id is not None else [])
    cur = con.execute(sql, params)
    names = [d[0] for d in cur.description]
    return [BlockSide(**dict(zip(names, row, strict=True))) for row in cur.fetchall()]


def _texts(con: Any, capture_id: str | None, hashes: set[str]) -> dict[str, str]:
    if not hashes:
        return {}
    marks = ", ".join("?" for _ in hashes)
    sql = f"SELECT content_hash, any_value(text) FROM t_block_content WHERE content_hash IN ({marks})"
    params: list[Any] = sorted(hashes)
    if capture_id is not None:
        sql += " AND capture_id = ?"
        params.append(capture_id)
    return dict(con.execute(sql + " GROUP BY content_hash", params).fetchall())


def _segments(con: Any, capture_id: str, request_id: str, positions: set[int]) -> dict[int, list[SegmentSide]]:
    if not positions:
        return {}
    marks = ", ".join("?" for _ in positions)
    rows = con.execute(
        f"SELECT position, segment_index, source, label, byte_start, byte_end FROM segments "
        f"WHERE capture_id = ? AND request_id = ? AND position IN ({marks}) ORDER BY position, segment_index",
        [capture_id, request_id, *sorted(positions)]).fetchall()
    out: dict[int, list[SegmentSide]] = {}
    for pos, idx, source, label, start, end in rows:
        out.setdefault(pos, []).append(SegmentSide(segment_index=idx, source=source, label=label,
                                                   byte_start=start, byte_end=end))
    return out


def _request_row(con: Any, request_id: str, capture_id: str | None) -> dict[str, Any] | None:
    sql = ("SELECT capture_id, thread_id, seq_in_thread, cache_read_tokens, input_tokens_reported, "
           "input_tokens_estimated, estimate_ratio FROM requests WHERE request_id = ?")
    params: list[Any] = [request_id]
    if capture_id is not None:
        sql += " AND capture_id = ?"
        params.append(capture_id)
    cur = con.execute(sql + " ORDER BY capture_id LIMIT 1", params)
    row = cur.fetchone()
    return dict(zip([d[0] for d in cur.description], row, strict=True)) if row else None


def predecessor(con: Any, request_id: str, *, capture_id: str | None = None) -> str | None:
    """The request's predecessor in its thread (seq_in_thread - 1), or None for a thread's first."""
    row = _request_row(con, request_id, capture_id)
    if row is None or not row["seq_in_thread"]:
        return None
    found = con.execute(
        "SELECT request_id FROM requests WHERE capture_id = ? AND thread_id = ? AND seq_in_thread = ?",
        [row["capture_id"], row["thread_id"], row["seq_in_thread"] - 1]).fetchone()
    return found[0] if found else None


def cache_break_position(blocks: Sequence[BlockSide], cache_read_tokens: int | None,
                         estimate_ratio: float | None = None) -> int | None:
    """The first B position the provider did not read from its cache, or None when not reported.

    The reported read is set against the blocks' cumulative estimates (scaled by the request's
    reported/estimated ratio); a cache can only end at a breakpoint, so when the request marks
    breakpoints the nearest breakpoint boundary is taken, else the nearest block boundary.
    """
    if cache_read_tokens is None:
        return None
    if cache_read_tokens <= 0 or not blocks:
        return 0
    ratio = estimate_ratio if estimate_ratio and estimate_ratio > 0 else 1.0
    boundaries = [(0, 0.0)]
    total = 0.0
    for block in blocks:
        total += (block.tokens_estimated or 0) * ratio
        if block.is_cache_breakpoint or not any(x.is_cache_breakpoint for x in blocks):
            boundaries.append((block.position + 1, total))
    return min(boundaries, key=lambda pb: (abs(pb[1] - cache_read_tokens), -pb[0]))[0]


def request_diff(con: Any, a: str, b: str | None = None, *, normalise: Callable[[str], str] | None = None,
                 a_capture_id: str | None = None, b_capture_id: str | None = None) -> RequestDiff:
    """Diff request A against request B (B None: B is `a`, A its thread predecessor).

    Raises LookupError when a request is not in the connection's captures or has no predecessor.
    """
    if b is None:
        b, b_capture_id = a, a_capture_id
        pred = predecessor(con, b, capture_id=b_capture_id)
        if pred is None:
            raise LookupError(f"request {b} has no predecessor in its thread (it is the thread's first)")
        a = pred
        a_capture_id = (_request_row(con, b, b_capture_id) or {}).get("capture_id")
    row_a, row_b = _request_row(con, a, a_capture_id), _request_row(con, b, b_capture_id)
    for rid, row in ((a, row_a), (b, row_b)):
        if row is None:
            raise LookupError(f"request {rid} is not in these captures")
    assert row_a is not None and row_b is not None
    blocks_a = load_blocks(con, a, capture_id=row_a["capture_id"])
    blocks_b = load_blocks(con, b, capture_id=row_b["capture_id"])
    changes = diff_blocks(blocks_a, blocks_b)
    # load the texts of changed pairs only, then diff again with them (and the normaliser)
    want_a = {c.a.content_hash for c in changes if c.op == "changed" and c.a}
    want_b = {c.b.content_hash for c in changes if c.op == "changed" and c.b}
    if want_a or want_b:
        pos_a = {c.a.position for c in changes if c.op == "changed" and c.a}
        pos_b = {c.b.position for c in changes if c.op == "changed" and c.b}
        texts_a, segs_a = _texts(con, row_a["capture_id"], want_a), _segments(con, row_a["capture_id"], a, pos_a)
        texts_b, segs_b = _texts(con, row_b["capture_id"], want_b), _segments(con, row_b["capture_id"], b, pos_b)
        blocks_a = [x.model_copy(update={"text": texts_a.get(x.content_hash), "segments": segs_a.get(x.position)})
                    if x.position in pos_a else x for x in blocks_a]
        blocks_b = [x.model_copy(update={"text": texts_b.get(x.content_hash), "segments": segs_b.get(x.position)})
                    if x.position in pos_b else x for x in blocks_b]
        changes = diff_blocks(blocks_a, blocks_b, normalise=normalise)
    first = first_divergence(changes)
    return RequestDiff(
        a_request_id=a, b_request_id=b, changes=changes, first_divergence=first,
        first_divergence_words=describe(changes[first] if first is not None else None),
        a_cache_read_tokens=row_a["cache_read_tokens"], b_cache_read_tokens=row_b["cache_read_tokens"],
        cache_break_position=cache_break_position(blocks_b, row_b["cache_read_tokens"], row_b["estimate_ratio"]),
        tokens_by_op=tokens_by_op(changes), a_capture_id=row_a["capture_id"], b_capture_id=row_b["capture_id"],
    )
