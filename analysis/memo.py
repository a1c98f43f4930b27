"""Reuse parsing work across the requests of a capture.

Agents resend their whole history on every call. Without reuse, parsing,
attributing and hashing every block of every request costs time in the square
of the number of turns. With a `ParseMemo`:

- each request body is scanned incrementally against the previous body of its
  stream (`analysis.incremental_json`): history elements inside the shared byte
  prefix come back as the very same Python objects;
- per-item drafts, attribution results and finished blocks are cached by the
  identity of those objects (the memo keeps them alive and checks `is`, so an
  id can never be confused with a later object's).

So each history element is parsed, attributed and hashed once; a request costs
a dictionary lookup per element it shares with its predecessor. The parsers stay
pure: without a memo they do exactly the same work from scratch.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from analysis.blockscan import BlockScan
from analysis.incremental_json import ScanError, scan
from analysis.protocols.common import load_json
from analysis.sequences import align

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
        self.bytes_scanned = 0
        self.bytes_seen = 0

    # --- bodies -------------------------------------------------------------------------

    def load_body(self, stream: str, raw: bytes | None, tracked: tuple[str, ...] = ()) -> tuple[Any, str | None]:
        """(body, error) like `load_json`, reusing the stream's previous parse.

        `tracked`: the top-level arrays the protocol resends on every call (its
        history), whose leading elements are taken over one by one.
        """
        if not raw:
            return load_json(raw)
        self.bytes_seen += len(raw)
        try:
            scanned = scan(raw, tracked, prev=self._scans.get(stream))
        except (ScanError, UnicodeDecodeError, RecursionError, ValueError):
            self._scans.pop(stream, None)
            self.bytes_scanned += len(raw)
            return load_json(raw)
        self._scans.put(stream, scanned)
        self.bytes_scanned += scanned.scanned_bytes
        return scanned.obj, None

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
        """Keep this call's items and where each one's drafts end, for the next call's prefix."""
        reused, drafts, warnings, names, ends = marks
        last = self._last_items.get(key)
        if reused and last is not None:
            # the first `reused` items were taken over: splice their marks in front of ours
            _, (p_drafts, p_warn, p_names, p_ends) = last
            b, w, t = p_ends[reused - 1]
            drafts = p_drafts[:b] + drafts
            warnings = p_warn[:w] + warnings
            names = p_names[:t] + names
            ends = p_ends[:reused] + [(eb + b, ew + w, et + t) for eb, ew, et in ends]
        self._last_items.put(key, (list(items), (drafts, warnings, names, ends)))

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
