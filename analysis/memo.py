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

from analysis.incremental_json import ScanError, scan
from analysis.protocols.common import load_json
from analysis.sequences import shared_prefix

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

    def attributed_prefix(self, context: tuple, drafts: list) -> tuple[int, list, bool]:
        """(n, blocks, user task seen): the longest run of leading drafts identical (same objects)
        to the previous call's in this context, with the blocks they produced."""
        last = self._last_attr.get(context)
        if last is None:
            return 0, [], False
        prev_drafts, prev_blocks, prev_seen = last
        k = shared_prefix(prev_drafts, drafts)  # drafts compare by identity
        return k, prev_blocks[:k], (prev_seen[k - 1] if k else False)

    def remember_attributed(self, context: tuple, drafts: list, blocks: list, start: int,
                            seen_after: list[bool]) -> None:
        last = self._last_attr.get(context)
        prefix_seen = last[2][:start] if last is not None and start else []
        self._last_attr.put(context, (list(drafts), blocks, prefix_seen + seen_after))

    def cwd_prefix(self, drafts: list) -> tuple[int, str | None]:
        """(index to scan from, cwd) using the previous call: drafts it already scanned are skipped."""
        if self._last_cwd is None:
            return 0, None
        prev, hit, cwd = self._last_cwd
        k = shared_prefix(prev, drafts)  # drafts compare by identity
        if hit is not None and hit < k:
            return k, cwd
        return k, None

    def remember_cwd(self, drafts: list, hit: int | None, cwd: str | None) -> None:
        self._last_cwd = (list(drafts), hit, cwd)

    def cwd_of(self, draft: Any, compute) -> str | None:
        hit = self._cwd.get(id(draft))
        if hit is not None and hit[0] is draft:
            return hit[1]
        value = compute(draft)
        self._cwd.put(id(draft), (draft, value))
        return value
