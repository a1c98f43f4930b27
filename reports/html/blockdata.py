"""The report's embedded block data: every occurrence once, every text once, ribbons as diffs.

A 1000-request session resends the same blocks hundreds of thousands of times,
so nothing here is per (request, position):

* occurrences (a block at a path with its attributes) are columns indexed by a
  report-wide id (`offset[capture] + occurrence_id`);
* a ribbon row (one request's blocks in order) is encoded against the previous
  row of the same thread: "copy n positions" / "occurrences a..a+n-1" ops, so a
  request that extends its predecessor costs a few integers;
* texts are keyed by content hash and embedded once, truncated head+tail to a
  per-block cap chosen so that all texts fit the report's byte budget (the
  exact original size travels with each text).

The JSON is written into `<script type="application/json">` elements; `<`, `>`
and `&` are escaped so no block text can close the element.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb

from reports.html.palette import js_palette, source_index

MAX_BLOCK_BYTES = 64_000  # no single text is embedded beyond this, whatever the budget
MIN_CAP_BYTES = 2_000  # below this a preview stops being useful; the budget yields instead
TAIL_SHARE = 0.25  # of a truncated text, the share kept from the end (logs end with the verdict)
COPY = -1  # op code: copy n positions from the base row


@dataclass
class RibbonRow:
    key: str  # request id
    capture_id: str
    label: str
    thread: str
    tokens: int = 0
    n_blocks: int = 0
    marks: str = ""  # short flags shown next to the row: "E" error, "M" cache miss, "D" prefix changed


@dataclass
class Ribbon:
    rid: str
    rows: list[RibbonRow] = field(default_factory=list)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def json_for_script(data: Any) -> str:
    """JSON safe to place inside a <script> element (no `</script>`, no `<!--`), encodable as UTF-8
    (a lone surrogate, which a JSON body can smuggle in as `\\ud800`, stays an escape)."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    text = _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def utf8_cut(text: str, limit: int, from_end: bool = False) -> str:
    """At most `limit` UTF-8 bytes of `text` (its head, or its tail), never splitting a character."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return text
    part = data[-limit:] if from_end else data[:limit]
    return part.decode("utf-8", "ignore")


def water_level(sizes: Sequence[int], budget: int) -> int:
    """The largest per-item cap c with sum(min(size, c)) <= budget (all sizes if they fit)."""
    ordered = sorted(sizes)
    remaining = budget
    for i, s in enumerate(ordered):
        share = remaining // (len(ordered) - i)
        if s > share:
            return max(share, 0)
        remaining -= s
    return ordered[-1] if ordered else 0


class _Strings:
    """Interned strings: columns carry small integers instead of repeated text."""

    def __init__(self) -> None:
        self.items: list[str] = [""]
        self.index: dict[str, int] = {"": 0}

    def __call__(self, value: str | None) -> int:
        if not value:
            return 0
        i = self.index.get(value)
        if i is None:
            i = self.index[value] = len(self.items)
            self.items.append(value)
        return i


class BlockData:
    """Collects occurrences, texts and ribbons for one report, then serialises them."""

    def __init__(self) -> None:
        self.strings = _Strings()
        self.offsets: dict[str, int] = {}
        self.cons: dict[str, duckdb.DuckDBPyConnection] = {}
        self.cols: dict[str, list] = {k: [] for k in
                                      ("src", "tok", "b", "path", "kind", "attrs", "rule", "tool", "err", "txt")}
        self.text_index: dict[str, int] = {}
        self.text_sizes: list[int] = []
        self.text_hashes: list[str] = []
        self.text_captures: list[str] = []
        self.ribbons: dict[str, dict] = {}
        self.request_positions: dict[tuple[str, str], list[int]] = {}
        self.breakpoints: dict[tuple[str, str], list[int]] = {}  # flat [position, string id, ...]
        self.truncated = 0
        self.cap_bytes = MAX_BLOCK_BYTES

    # -- occurrences -----------------------------------------------------------------------------

    def add_capture(self, con: duckdb.DuckDBPyConnection, capture_id: str) -> None:
        """Load one capture's occurrences (its connection sees only that capture)."""
        if capture_id in self.offsets:
            return
        self.cons[capture_id] = con
        rows = con.execute("""
            SELECT o.occurrence_id, o.source, c.tokens_estimated, c.bytes, o.path, o.kind, o.role,
                   o.wire_type, o.authority, o.scope, o.lifetime, o.content_type, o.rule_id,
                   o.tool_name, o.is_error, o.content_hash
            FROM t_block_occurrences o
            JOIN t_block_content c ON c.content_hash = o.content_hash
            ORDER BY o.occurrence_id""").fetchall()
        s, cols = self.strings, self.cols
        base = self.offsets[capture_id] = len(cols["src"])
        for (occ, source, tok, nbytes, path, kind, role, wire, authority, scope, lifetime, ctype, rule,
             tool, is_error, chash) in rows:
            while len(cols["src"]) < base + occ:  # holes in occurrence ids: keep positions aligned
                self._append_blank()
            txt = self.text_index.get(chash)
            if txt is None:
                txt = self.text_index[chash] = len(self.text_sizes)
                self.text_sizes.append(int(nbytes or 0))
                self.text_hashes.append(chash)
                self.text_captures.append(capture_id)
            cols["src"].append(source_index(source))
            cols["tok"].append(int(tok or 0))
            cols["b"].append(int(nbytes or 0))
            cols["path"].append(s(path))
            cols["kind"].append(s(f"{kind} · {wire}" if wire and wire != kind else kind))
            cols["attrs"].append(s(" · ".join(x or "?" for x in (role, authority, scope, lifetime, ctype))))
            cols["rule"].append(s(rule))
            cols["tool"].append(s(tool))
            cols["err"].append(1 if is_error else 0)
            cols["txt"].append(txt)

    def _append_blank(self) -> None:
        for name, col in self.cols.items():
            col.append(-1 if name == "txt" else 0)

    def positions(self, capture_id: str, request_id: str) -> list[int]:
        """The report-wide occurrence ids of a request's blocks, in position order."""
        return self.request_positions.get((capture_id, request_id), [])

    def load_positions(self, capture_id: str, request_ids: Iterable[str]) -> None:
        """Expand request_block_runs for these requests of one capture, once."""
        wanted = sorted({r for r in request_ids if (capture_id, r) not in self.request_positions})
        if not wanted:
            return
        con = self.cons[capture_id]
        rows = con.execute("""
            SELECT request_id, position_start, n, occurrence_start FROM t_request_block_runs
            WHERE request_id IN (SELECT unnest(?::VARCHAR[]))
            ORDER BY request_id, position_start""", [wanted]).fetchall()
        for rid in wanted:
            self.request_positions[(capture_id, rid)] = []
        base = self.offsets[capture_id]
        for rid, _start, n, occ_start in rows:
            self.request_positions[(capture_id, rid)].extend(range(base + occ_start, base + occ_start + n))
        try:
            marks = con.execute("""
                SELECT request_id, position, cache_breakpoint FROM t_request_breakpoints
                WHERE request_id IN (SELECT unnest(?::VARCHAR[])) ORDER BY request_id, position""",
                                [wanted]).fetchall()
        except duckdb.Error:  # datasets from before per-request breakpoints
            marks = []
        for rid, position, ttl in marks:
            self.breakpoints.setdefault((capture_id, rid), []).extend([int(position), self.strings(ttl)])

    # -- ribbons ---------------------------------------------------------------------------------

    def add_ribbon(self, ribbon: Ribbon) -> None:
        """Encode a ribbon's rows as ops against the previous row of the same thread."""
        rows_out = []
        last_in_thread: dict[str, tuple[int, list[int]]] = {}
        tok = self.cols["tok"]
        for i, row in enumerate(ribbon.rows):
            occ = self.positions(row.capture_id, row.key)
            row.tokens = sum(tok[o] for o in occ)
            row.n_blocks = len(occ)
            base_index, base = last_in_thread.get(row.thread, (-1, []))
            rows_out.append({"id": row.key, "l": row.label, "m": row.marks, "t": row.tokens, "base": base_index,
                             "ops": encode_row(occ, base),
                             "bp": self.breakpoints.get((row.capture_id, row.key), [])})
            last_in_thread[row.thread] = (i, occ)
        self.ribbons[ribbon.rid] = {"rows": rows_out, "max": max((r.tokens for r in ribbon.rows), default=0)}

    # -- serialisation ---------------------------------------------------------------------------

    def data_json(self) -> str:
        return json_for_script({"palette": js_palette(), "strings": self.strings.items, "occ": self.cols,
                                "ribbons": self.ribbons})

    def texts_json(self, budget_bytes: int) -> str:
        """Every distinct text once: [head, tail, original bytes], within `budget_bytes` of JSON."""
        cap = min(MAX_BLOCK_BYTES, max(MIN_CAP_BYTES, water_level(self.text_sizes, budget_bytes)))
        for _ in range(4):  # JSON escaping adds a little: shrink the cap until the encoding fits
            encoded = self._encode_texts(cap)
            if len(encoded.encode()) <= budget_bytes or cap <= MIN_CAP_BYTES:
                break
            cap = max(MIN_CAP_BYTES, int(cap * budget_bytes / len(encoded.encode()) * 0.97))
        self.cap_bytes = cap
        return encoded

    def _encode_texts(self, cap: int) -> str:
        texts: list[list] = []
        truncated = 0
        chunk = 2000
        hashes = self.text_hashes
        by_hash: dict[str, str] = {}
        for capture_id, con in self.cons.items():
            mine = [h for h, c in zip(hashes, self.text_captures, strict=True) if c == capture_id]
            for start in range(0, len(mine), chunk):
                rows = con.execute("SELECT content_hash, text FROM t_block_content WHERE content_hash IN "
                                   "(SELECT unnest(?::VARCHAR[]))", [mine[start:start + chunk]]).fetchall()
                by_hash.update(rows)
        for h, size in zip(hashes, self.text_sizes, strict=True):
            text = by_hash.get(h) or ""
            if size <= cap:
                texts.append([text, "", size])
                continue
            truncated += 1
            tail_bytes = int(cap * TAIL_SHARE)
            texts.append([utf8_cut(text, cap - tail_bytes), utf8_cut(text, tail_bytes, from_end=True), size])
        self.truncated = truncated
        return json_for_script({"texts": texts, "hashes": hashes, "cap": cap})


def encode_row(occ: Sequence[int], base: Sequence[int]) -> list[int]:
    """Flat ops [a, n, ...]: a == COPY copies n positions of `base` at the same positions; else occurrences a..a+n-1."""
    ops: list[int] = []
    i, n = 0, len(occ)
    limit = len(base)
    while i < n:
        if i < limit and occ[i] == base[i]:
            j = i
            while j < n and j < limit and occ[j] == base[j]:
                j += 1
            ops += [COPY, j - i]
            i = j
        else:
            j = i + 1
            while j < n and occ[j] == occ[j - 1] + 1 and not (j < limit and occ[j] == base[j]):
                j += 1
            ops += [occ[i], j - i]
            i = j
    return ops


def decode_row(ops: Sequence[int], base: Sequence[int]) -> list[int]:
    """Inverse of `encode_row` (the inline script does the same in JavaScript)."""
    out: list[int] = []
    for k in range(0, len(ops), 2):
        a, n = ops[k], ops[k + 1]
        if a == COPY:
            out.extend(base[len(out):len(out) + n])
        else:
            out.extend(range(a, a + n))
    return out
