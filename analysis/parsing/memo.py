"""Reuse parsing work across the requests of a capture.

Agents resend their whole history on every call. Without reuse, parsing,
attributing and hashing every block of every request costs time in the square
of the number of turns. With a `ParseMemo`:

- each request body is scanned incrementally against the previous body of its
  stream (`analysis.incremental_json`): history elements inside the shared byte
  prefix, and values after it that did not change, come back as the very same
  Python objects. When the capture stored the body as a delta against that very
  previous body, it recorded the prefix length: the bodies are not compared again
  (comparing them would cost time in the resent history);
- per-item drafts, attribution results and finished blocks are cached by the
  identity of those objects (the memo keeps them alive and checks `is`, so an
  id can never be confused with a later object's).

So each history element is parsed, attributed and hashed once. What the previous
call already had is taken over in slices: the scanner records how many leading
elements of each array it carried over (`_lineage`); drafts compare by identity
in C, and attribution steps over a few changed drafts (`analysis.sequences.align`).
A request costs time in what it adds, not in the history it shares. The parsers
stay pure: without a memo they do exactly the same work from scratch.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from ctxtap.analysis.blocks.blockscan import BlockScan
from ctxtap.analysis.blocks.sequences import align
from ctxtap.analysis.parsing.incremental_json import ScanError, scan
from ctxtap.analysis.protocols.common import load_json
from ctxtap.capture.bodies import BodyView, as_bytes

MAX_STREAMS = 64
MAX_ENTRIES = 500_000


class _Bounded(OrderedDict):
    """An insertion-ordered dict that forgets its oldest entries beyond a limit."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    def put(self, key: Any, value: Any) -> None:
        self[key] = value
        if len(self) > self.limit:
            self.popitem(last=False)


class ParseMemo:
    def __init__(self) -> None:
        self._scans: _Bounded = _Bounded(MAX_STREAMS)
        self._items: _Bounded = _Bounded(MAX_ENTRIES)
        self._attrs: _Bounded = _Bounded(MAX_ENTRIES)
        self._cwd: _Bounded = _Bounded(MAX_ENTRIES)
        self._last_attr: _Bounded = _Bounded(MAX_STREAMS)
        self._last_items: _Bounded = _Bounded(MAX_STREAMS)
        self._last_cwd: tuple | None = None
        self._lineage: _Bounded = _Bounded(MAX_STREAMS * 4)  # id(list) -> (list, base, leading shared)
        self.bytes_scanned = 0
        self.bytes_seen = 0
        self.prefixes_taken = 0  # bodies whose shared prefix came from the capture, not a comparison

    # --- bodies -------------------------------------------------------------------------

    def load_body(self, stream: str, raw: bytes | BodyView | None, tracked: tuple[str, ...] = (),
                  body_id: int | None = None, base: tuple[int, int | None] | None = None) -> tuple[Any, str | None]:
        """(body, error) like `load_json`, reusing the stream's previous parse.

        `tracked`: the top-level arrays the protocol resends on every call (its
        history), whose leading elements are taken over one by one. `body_id` and
        `base` (base body id, leading bytes shared with it, None: all): where the
        capture stored `raw` (`Exchange.request_body_id` / `request_body_base`); when
        the previous parse was of that base, its prefix is taken over without
        comparing the bytes.
        """
        if not raw:
            return load_json(None)
        self.bytes_seen += len(raw)
        prev, prev_id = self._scans.get(stream, (None, None))
        shared = None
        if base is not None and prev_id is not None and base[0] == prev_id:
            shared = len(raw) if base[1] is None else base[1]
            self.prefixes_taken += 1
        try:
            scanned = scan(raw, tracked, prev=prev, shared=shared)
        except (ScanError, UnicodeDecodeError, RecursionError, ValueError):
            self._scans.pop(stream, None)
            self.bytes_scanned += len(raw)
            return load_json(as_bytes(raw))
        self._scans.put(stream, (scanned, body_id))
        self.bytes_scanned += scanned.scanned_bytes
        if prev is not None:
            for key, kept in scanned.reused_elements.items():
                items, base = scanned.obj[key], prev.obj[key]
                if kept and items is not base:
                    self._lineage.put(id(items), (items, base, kept))
        return scanned.obj, None

    def identical_prefix(self, prev: list, items: list) -> int:
        """Leading elements of `items` that are the very objects of `prev` (by `is`).

        Arrays the scanner carried over from the previous body start from the count it
        recorded, so only the elements past it are compared one by one.
        """
        if prev is items:
            return len(items)
        k = 0
        hit = self._lineage.get(id(items))
        if hit is not None and hit[0] is items and hit[1] is prev:
            k = hit[2]
        n = min(len(prev), len(items))
        while k < n and prev[k] is items[k]:
            k += 1
        return k

    # --- per-item drafts --------------------------------------------------------------------

    def item(self, tag: str, index: int, obj: Any) -> Any | None:
        hit = self._items.get((tag, index, id(obj)))
        if hit is not None and hit[0] is obj:
            return hit[1]
        return None

    def put_item(self, tag: str, index: int, obj: Any, value: Any) -> None:
        if isinstance(obj, dict | list):
            self._items.put((tag, index, id(obj)), (obj, value))

    # --- attribution ----------------------------------------------------------------------------

    def attributed(self, key: tuple, draft: Any) -> Any | None:
        hit = self._attrs.get(key)
        if hit is not None and hit[0] is draft:
            return hit[1]
        return None

    def put_attributed(self, key: tuple, draft: Any, value: Any) -> None:
        self._attrs.put(key, (draft, value))

    def last_items(self, key: tuple) -> tuple | None:
        return self._last_items.get(key)

    def remember_items(self, key: tuple, items: list, marks: tuple) -> None:
        """Keep this call's items and where each one's drafts, warnings, tool names and replay
        facts end, for the next call's prefix. `items` is kept as is (parsed bodies are never
        modified), so the scanner's lineage can vouch for its leading elements."""
        reused, drafts, warnings, names, facts, ends = marks
        last = self._last_items.get(key)
        if reused and last is not None:
            # The first `reused` items were taken over: splice their marks in front of ours.
            # The previous record's lists belong to it alone (readers take slices) and it is
            # replaced now, so they are cut and extended in place, not copied.
            _, (p_drafts, p_warn, p_names, p_facts, p_ends) = last
            b, w, t, f = p_ends[reused - 1]
            for mine, theirs, cut in ((drafts, p_drafts, b), (warnings, p_warn, w), (names, p_names, t),
                                      (facts, p_facts, f)):
                del theirs[cut:]
                theirs.extend(mine)
            del p_ends[reused:]
            p_ends.extend((eb + b, ew + w, et + t, ef + f) for eb, ew, et, ef in ends)
            drafts, warnings, names, facts, ends = p_drafts, p_warn, p_names, p_facts, p_ends
        self._last_items.put(key, (items, (drafts, warnings, names, facts, ends)))

    def attributed_alignment(self, context: tuple, drafts: list) -> tuple | None:
        """(m, holes, blocks, seen, scan) of the previous call in this context: its drafts are the
        very objects of these at every position below m except the holes (see `align`)."""
        last = self._last_attr.get(context)
        if last is None:
            return None
        prev_drafts, prev_blocks, prev_seen, prev_scan = last
        m, holes = align(prev_drafts, drafts)  # drafts compare by identity
        return m, holes, prev_blocks, prev_seen, prev_scan

    def remember_attributed(self, context: tuple, drafts: list, blocks: list, seen: list[bool],
                            scan: BlockScan) -> None:
        # draft lists are not changed once attributed: kept as they are, for identity comparisons
        self._last_attr.put(context, (drafts, blocks, seen, scan))

    def cwd_alignment(self, drafts: list) -> tuple[int, list[int], int | None, str | None]:
        """(m, holes, hit, cwd): how drafts line up with the previous call's (see `align`), and the
        position and value of the first working directory that call found (None: none)."""
        if self._last_cwd is None:
            return 0, [], None, None
        prev, hit, cwd = self._last_cwd
        m, holes = align(prev, drafts)  # drafts compare by identity
        return m, holes, hit, cwd

    def remember_cwd(self, drafts: list, hit: int | None, cwd: str | None) -> str | None:
        self._last_cwd = (drafts, hit, cwd)  # draft lists are not changed once attributed
        return cwd

    def cwd_of(self, draft: Any, compute) -> str | None:
        hit = self._cwd.get(id(draft))
        if hit is not None and hit[0] is draft:
            return hit[1]
        value = compute(draft)
        self._cwd.put(id(draft), (draft, value))
        return value
