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

When a report is aggregated (see `reports.html.budget`), a ribbon merges
neighbouring requests of a thread that only appended to their predecessor into
the row of the last one (with a count), leaves out its middle rows beyond its
byte share (one row says how many, with the query), only the occurrences and
texts the remaining rows draw are embedded, and texts beyond the budget are left
out (the viewer says so and gives the query that reads each).

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

from ctxtap.reports.html.palette import js_palette, source_index

MAX_BLOCK_BYTES = 64_000  # no single text is embedded beyond this, whatever the budget
MIN_CAP_BYTES = 2_000  # below this a preview stops being useful; the budget yields instead
TAIL_SHARE = 0.25  # of a truncated text, the share kept from the end (logs end with the verdict)
COPY = -1  # op code: copy n positions from the base row
OCC_BYTES = 34  # about what one embedded occurrence costs in the columns
ROW_BYTES = 90  # about what one ribbon row costs besides its ops
TEXT_ENTRY_BYTES = 16  # an embedded text's brackets, size and empty hash, besides its characters
LEFT_OUT_ENTRY_BYTES = 5  # a left-out text: `0,` and `"",`
TEXT_ENTRY_MIN_BYTES = 75  # at least, besides its characters, a text of a full report: brackets, size, hash


@dataclass
class RibbonRow:
    key: str  # request id
    capture_id: str
    label: str
    thread: str
    tokens: int = 0
    n_blocks: int = 0
    marks: str = ""  # short flags shown next to the row: "E" error, "M" cache miss, "D" prefix changed
    num: int = 0  # the request's number in its session
    purpose: str = ""
    extends: bool = False  # the thread's previous request is a prefix of this one (prefix view: extended)


@dataclass
class Ribbon:
    rid: str
    rows: list[RibbonRow] = field(default_factory=list)
    n_rows: int = 0  # rows drawn (requests merged into one row count once; left-out rows as one)
    n_merged: int = 0  # requests drawn by a later request's row
    n_left_out: int = 0  # requests in the left-out middle
    note: str = ""  # what the ribbon aggregated, in words


@dataclass
class _DrawRow:
    """A ribbon row as drawn: one request, several merged ones (drawn as the last), or a left-out gap."""

    key: str
    label: str
    marks: str
    thread: str
    occ: list[int]
    capture_id: str
    count: int = 1
    gap: str = ""  # for a left-out gap: the command that lists its requests' blocks


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
                                      ("src", "tok", "b", "path", "kind", "attrs", "rule", "tool", "err", "txt", "seg")}
        self.text_index: dict[str, int] = {}
        self.text_sizes: list[int] = []
        self.text_hashes: list[str] = []
        self.text_captures: list[str] = []
        self.ribbons: dict[str, dict] = {}
        self.request_positions: dict[tuple[str, str], list[int]] = {}
        self.breakpoints: dict[tuple[str, str], list[int]] = {}  # flat [position, string id, ...]
        self.truncated = 0
        self.cap_bytes = MAX_BLOCK_BYTES
        self.compact = False  # aggregated report: embed only what the ribbons draw, leave texts out to fit
        self.commands: dict[str, str] = {}  # capture id -> "ctxtap sql CAPTURE"
        self._draw: dict[str, list[_DrawRow]] = {}
        self._emitted: tuple[list[int], list[int], list[int]] | None = None  # occurrences, texts, text weights
        self.left_out_texts = 0
        self.embedded_texts = 0
        self._texts: dict[str, str] = {}  # content hash -> text, as read
        self.occ_index: dict[str, dict[int, int]] = {}  # capture loaded in part: occurrence id -> column

    # -- occurrences -----------------------------------------------------------------------------

    def add_capture(self, con: duckdb.DuckDBPyConnection, capture_id: str, command: str = "",
                    request_ids: Sequence[str] | None = None) -> None:
        """Load one capture's occurrences (its connection sees only that capture); `command` is
        `ctxtap sql CAPTURE`, for the queries that read what an aggregated report leaves out.

        With `request_ids`, only the occurrences those requests' blocks use (a page that draws a
        request or two of a 10,000-request capture: its cost follows the requests, not the capture);
        `load_positions` may then be asked for those requests only."""
        if capture_id in self.offsets:
            return
        self.cons[capture_id] = con
        self.commands[capture_id] = command
        wanted, params = "", []
        if request_ids is not None:
            wanted = """JOIN (SELECT DISTINCT unnest(range(occurrence_start, occurrence_start + n)) AS occurrence_id
                        FROM t_request_block_runs WHERE request_id IN (SELECT unnest(?::VARCHAR[]))) w
                        ON w.occurrence_id = o.occurrence_id"""
            params = [sorted(set(request_ids))]
        rows = con.execute(f"""
            SELECT o.occurrence_id, o.source, c.tokens_estimated, c.bytes, o.path, o.kind, o.role,
                   o.wire_type, o.authority, o.scope, o.lifetime, o.content_type, o.rule_id,
                   o.tool_name, o.is_error, o.content_hash
            FROM t_block_occurrences o {wanted}
            JOIN t_block_content c ON c.content_hash = o.content_hash
            ORDER BY o.occurrence_id""", params).fetchall()
        sections: dict[int, list[int]] = {}  # occurrence -> flat [source index, tokens, ...] of its segments
        try:
            for occ_id, sources, tokens in con.execute(f"""
                    SELECT o.occurrence_id, list(o.source ORDER BY o.segment_index),
                           list(o.tokens_estimated ORDER BY o.segment_index)
                    FROM t_block_segments o {wanted} GROUP BY o.occurrence_id HAVING count(*) > 1""",
                                                       params).fetchall():
                sections[occ_id] = [v for src, n in zip(sources, tokens, strict=True)
                                    for v in (source_index(src), int(n or 0))]
        except duckdb.Error:  # datasets from before segments
            pass
        s, cols = self.strings, self.cols
        base = self.offsets[capture_id] = len(cols["src"])
        index: dict[int, int] | None = None if request_ids is None else {}
        for (occ, source, tok, nbytes, path, kind, role, wire, authority, scope, lifetime, ctype, rule,
             tool, is_error, chash) in rows:
            if index is not None:  # only some occurrences: each gets the next column
                index[occ] = len(cols["src"])
            else:
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
            cols["seg"].append(sections.get(occ, 0))
        if index is not None:
            self.occ_index[capture_id] = index

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
        index = self.occ_index.get(capture_id)
        for rid, _start, n, occ_start in rows:
            if index is None:
                self.request_positions[(capture_id, rid)].extend(range(base + occ_start, base + occ_start + n))
            else:
                self.request_positions[(capture_id, rid)].extend(index[o] for o in range(occ_start, occ_start + n))
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

    def add_ribbon(self, ribbon: Ribbon, merge: bool = False, max_bytes: int | None = None,
                   gap_command: str = "") -> list[tuple[int | None, bool]]:
        """Lay out a ribbon's rows; per request row, return (the index of the row that draws it, None when
        left out; whether that row draws several requests).

        `merge`: neighbouring requests of a thread that only appended to their predecessor, unmarked,
        share the row of the last of them. `max_bytes`: beyond it the middle rows are left out, as one
        row whose query (`gap_command` with `{first}` and `{last}` request numbers) lists their blocks.
        """
        tok = self.cols["tok"]
        draw: list[_DrawRow] = []
        where: list[tuple[int | None, bool]] = []
        members: list[list[int]] = []  # input rows of each drawn row
        for i, row in enumerate(ribbon.rows):
            occ = self.positions(row.capture_id, row.key)
            row.tokens = sum(tok[o] for o in occ)
            row.n_blocks = len(occ)
            last = draw[-1] if draw else None
            if (merge and last is not None and last.thread == row.thread and row.extends and not row.marks
                    and not last.marks and len(occ) >= len(last.occ)):
                first = ribbon.rows[members[-1][0]]
                last.key, last.occ, last.count = row.key, occ, last.count + 1
                last.label = f"#{first.num}–#{row.num} {row.purpose} ×{last.count}"
                members[-1].append(i)
                continue
            draw.append(_DrawRow(row.key, row.label, row.marks, row.thread, occ, row.capture_id))
            members.append([i])
        kept = list(range(len(draw)))
        if max_bytes is not None:
            kept = _head_and_tail_within(draw, max_bytes)
        out: list[_DrawRow] = []
        index: dict[int, int] = {}

        def gap(start: int, stop: int) -> None:  # the drawn rows start..stop-1 are left out: one row says so
            gone = [i for d in range(start, stop) for i in members[d]]
            if not gone:
                return
            first, last = ribbon.rows[gone[0]], ribbon.rows[gone[-1]]
            marks = "".join(m for m in "EMD" if any(m in ribbon.rows[i].marks for i in gone))
            out.append(_DrawRow("", f"… {len(gone):,} requests left out (#{first.num}–#{last.num})", marks,
                                "", [], first.capture_id, len(gone),
                                gap_command.format(first=first.num, last=last.num)))
            ribbon.n_left_out += len(gone)

        previous = -1
        for k in kept:
            gap(previous + 1, k)
            index[k] = len(out)
            out.append(draw[k])
            previous = k
        gap(previous + 1, len(draw))
        for d, rows in enumerate(members):
            for _ in rows:
                where.append((index.get(d), len(rows) > 1))
        ribbon.n_rows = len(out)
        ribbon.n_merged = sum(len(m) - 1 for m in members if len(m) > 1)
        self._draw[ribbon.rid] = out
        self._emitted = None
        return where

    def _ribbons_json(self, remap_occ: dict[int, int] | None) -> dict[str, dict]:
        """Each ribbon's rows as ops against the previous drawn row of the same thread."""
        ribbons = {}
        for rid, rows in self._draw.items():
            rows_out = []
            last_in_thread: dict[str, tuple[int, list[int]]] = {}
            tok = self.cols["tok"]
            for i, row in enumerate(rows):
                occ = row.occ if remap_occ is None else [remap_occ[o] for o in row.occ]
                base_index, base = last_in_thread.get(row.thread, (-1, []))
                out: dict[str, Any] = {"id": row.key, "l": row.label, "m": row.marks,
                                       "t": sum(tok[o] for o in row.occ), "base": base_index,
                                       "ops": encode_row(occ, base),
                                       "bp": self.breakpoints.get((row.capture_id, row.key), []) if row.key else []}
                if row.count > 1 and not row.gap:
                    out["n"] = row.count
                if row.gap:
                    out["gap"], out["q"] = row.count, row.gap
                rows_out.append(out)
                if not row.gap:
                    last_in_thread[row.thread] = (i, occ)
            ribbons[rid] = {"rows": rows_out, "max": max((r["t"] for r in rows_out), default=0)}
            if self.compact:  # the command that reads what is left out: per ribbon, or per row across captures
                captures = {row.capture_id for row in rows}
                if len(captures) == 1:
                    ribbons[rid]["c"] = self.commands.get(captures.pop(), "")
                else:
                    for row, out in zip(rows, rows_out, strict=True):
                        out["c"] = self.commands.get(row.capture_id, "")
        return ribbons

    def _emit(self) -> tuple[list[int], list[int], list[int]]:
        """Occurrences and texts the drawn rows use (compact reports), with each text's weight: the
        requests whose rows carry it."""
        if self._emitted is None:
            seen: dict[int, None] = {}
            weight: dict[int, int] = {}
            txt = self.cols["txt"]
            for rows in self._draw.values():
                for row in rows:
                    for t in {txt[o] for o in row.occ}:
                        weight[t] = weight.get(t, 0) + row.count
                    seen.update(dict.fromkeys(row.occ))
            occ = sorted(seen)
            texts = sorted({txt[o] for o in occ if txt[o] >= 0})
            self._emitted = (occ, texts, [weight.get(t, 0) for t in texts])
        return self._emitted

    # -- serialisation ---------------------------------------------------------------------------

    def data_json(self) -> str:
        if not self.compact:
            return json_for_script({"palette": js_palette(), "strings": self.strings.items, "occ": self.cols,
                                    "ribbons": self._ribbons_json(None)})
        occ, texts, _ = self._emit()
        remap = {o: k for k, o in enumerate(occ)}
        text_remap = {t: k for k, t in enumerate(texts)}
        cols = {name: [col[o] for o in occ] for name, col in self.cols.items() if name != "txt"}
        cols["txt"] = [text_remap.get(self.cols["txt"][o], -1) for o in occ]
        return json_for_script({"palette": js_palette(), "strings": self.strings.items, "occ": cols,
                                "ribbons": self._ribbons_json(remap)})

    def texts_json(self, budget_bytes: int) -> str:
        """Every distinct text once: [head, tail, original bytes], within `budget_bytes` of JSON."""
        if self.compact:
            return self._compact_texts_json(budget_bytes)
        cap = min(MAX_BLOCK_BYTES, max(MIN_CAP_BYTES, water_level(self.text_sizes, budget_bytes)))
        for _ in range(4):  # JSON escaping adds a little: shrink the cap until the encoding fits
            encoded = self._encode_texts(cap)
            if len(encoded.encode()) <= budget_bytes or cap <= MIN_CAP_BYTES:
                break
            cap = max(MIN_CAP_BYTES, int(cap * budget_bytes / len(encoded.encode()) * 0.97))
        self.cap_bytes = cap
        self.embedded_texts = len(self.text_sizes)
        return encoded

    def _compact_texts_json(self, budget_bytes: int) -> str:
        """The drawn rows' texts within `budget_bytes`: the most carried (then the shortest) first, each
        whole or at least MIN_CAP_BYTES; those that do not fit are left out (`0` in their place)."""
        _, texts, weights = self._emit()
        sizes = [self.text_sizes[t] for t in texts]
        order = sorted(range(len(texts)), key=lambda k: (-weights[k], sizes[k], k))
        room = budget_bytes - LEFT_OUT_ENTRY_BYTES * len(texts) - 200
        keep: list[int] = []
        for k in order:
            cost = min(sizes[k], MIN_CAP_BYTES) + TEXT_ENTRY_BYTES - LEFT_OUT_ENTRY_BYTES
            if cost > room:
                break
            room -= cost
            keep.append(k)
        scale = 1.0
        for _ in range(8):
            inner = (budget_bytes - LEFT_OUT_ENTRY_BYTES * (len(texts) - len(keep)) - 200
                     - TEXT_ENTRY_BYTES * len(keep)) * scale
            cap = min(MAX_BLOCK_BYTES, max(MIN_CAP_BYTES, water_level([sizes[k] for k in keep], int(inner))))
            encoded = self._encode_texts(cap, {texts[k] for k in keep}, texts)
            size = len(encoded.encode())
            if size <= budget_bytes or not keep:
                break
            if cap > MIN_CAP_BYTES:  # JSON escaping adds a little: a lower cap first, then fewer texts
                scale *= budget_bytes / size * 0.98
            else:
                keep = keep[:int(len(keep) * budget_bytes / size * 0.95)]
        self.cap_bytes = cap
        self.embedded_texts = len(keep)
        self.left_out_texts = len(texts) - len(keep)
        return encoded

    def _encode_texts(self, cap: int, keep: set[int] | None = None, order: Sequence[int] | None = None) -> str:
        """Texts at `cap`; compact reports pass the texts to embed (`keep`) and, in id order, all the
        texts they draw (`order`): the others are left out."""
        hashes = self.text_hashes
        ids = range(len(hashes)) if order is None else order
        self._fetch_texts([t for t in ids if keep is None or t in keep])
        texts: list[Any] = []
        out_hashes = []
        truncated = 0
        for t in ids:
            h, size = hashes[t], self.text_sizes[t]
            if keep is not None and t not in keep:
                texts.append(0)
                out_hashes.append("")
                continue
            text = self._texts.get(h) or ""
            if size <= cap:
                texts.append([text, "", size])
                out_hashes.append(h if keep is None else "")  # a whole text needs no query
                continue
            truncated += 1
            tail_bytes = int(cap * TAIL_SHARE)
            texts.append([utf8_cut(text, cap - tail_bytes), utf8_cut(text, tail_bytes, from_end=True), size])
            out_hashes.append(h)
        self.truncated = truncated
        return json_for_script({"texts": texts, "hashes": out_hashes, "cap": cap})

    def _fetch_texts(self, ids: Sequence[int]) -> None:
        """Read these texts from their captures once."""
        chunk = 2000
        for capture_id, con in self.cons.items():
            mine = [self.text_hashes[t] for t in ids if self.text_captures[t] == capture_id
                    and self.text_hashes[t] not in self._texts]
            for start in range(0, len(mine), chunk):
                rows = con.execute("SELECT content_hash, text FROM t_block_content WHERE content_hash IN "
                                   "(SELECT unnest(?::VARCHAR[]))", [mine[start:start + chunk]]).fetchall()
                self._texts.update(rows)


def _head_and_tail_within(rows: Sequence[_DrawRow], max_bytes: int) -> list[int]:
    """Indices of the first and last rows whose estimated JSON fits `max_bytes` (all when they fit)."""
    costs = []
    last_in_thread: dict[str, list[int]] = {}
    for row in rows:
        base = last_in_thread.get(row.thread, [])
        new = sum(1 for p, o in enumerate(row.occ) if p >= len(base) or base[p] != o)
        costs.append(ROW_BYTES + len(row.label) + 6 * len(encode_row(row.occ, base)) + OCC_BYTES * new)
        last_in_thread[row.thread] = row.occ
    if sum(costs) <= max_bytes:
        return list(range(len(rows)))
    room = max_bytes - 2 * ROW_BYTES  # the gap row
    head, tail = 0, len(rows)
    while head < tail:
        side = head if head <= len(rows) - tail else tail - 1
        if costs[side] > room:
            break
        room -= costs[side]
        if side == head:
            head += 1
        else:
            tail -= 1
    if head == 0 and rows:  # always draw the first row
        head = 1
    return list(range(head)) + list(range(max(tail, head), len(rows)))


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
