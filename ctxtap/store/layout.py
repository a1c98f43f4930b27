"""The store's layout: every capture is its own objects, partitioned by client, day and capture id.

```
s3://BUCKET/PREFIX/
  captures/clients=CLIENTS/day=YYYY-MM-DD/capture_id=ID/
      manifest.json                      the manifest (without the recording machine's facts)
      flows.parquet, bodies.parquet ...  the capture's Parquet as recorded
      analysis/_meta.json                the analysis dataset's fingerprint and stats
      analysis/TABLE/part-SCHEMA.parquet one file per table; SCHEMA is a digest of its columns
  index/clients=CLIENTS/day=YYYY-MM-DD/capture_id=ID.json
      written last by a push and deleted first by rm: the capture is complete while it exists;
      it lists every object with its size and SHA-256
```

Nothing in the store is shared between captures, so any number of pushers can write at once. A
capture with several clients is filed under their names joined by `+` (`claude-code+codex`);
`--client` matches any of them. `ls` and the queries find captures by listing `index/` (one LIST
call per thousand captures, fewer with filters), never by reading objects; a query then lists only
the partitions it selected and reads one Parquet footer per distinct schema of a table.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import date

from pyarrow import fs

from ctxtap.store.location import StoreURL

CAPTURES = "captures"
LIST_WORKERS = 8
INDEX = "index"
_SAFE = re.compile(r"[^A-Za-z0-9._+-]")


def safe_value(value: str) -> str:
    """A partition value: letters, digits and . _ + - only (a client name from a user agent could hold more)."""
    return _SAFE.sub("_", value) or "unknown"


@dataclass(frozen=True, order=True)
class Entry:
    """One capture in the store, as its index key names it."""

    day: str
    client: str
    capture_id: str

    @property
    def partition(self) -> str:
        return f"clients={self.client}/day={self.day}/capture_id={self.capture_id}"

    def capture_path(self, store: StoreURL, *rel: str) -> str:
        return store.path(CAPTURES, self.partition, *rel)

    def index_path(self, store: StoreURL) -> str:
        return store.path(INDEX, f"clients={self.client}/day={self.day}/capture_id={self.capture_id}.json")

    def clients(self) -> list[str]:
        return self.client.split("+")


def _value(segment: str, key: str) -> str | None:
    name, eq, value = segment.partition("=")
    return value if eq and name == key else None


def _parse_index_key(path: str, root: str) -> Entry | None:
    rest = path[len(root):].lstrip("/").split("/")
    if len(rest) != 4 or rest[0] != INDEX or not rest[3].endswith(".json"):
        return None
    client, day, capture = _value(rest[1], "clients"), _value(rest[2], "day"), _value(rest[3][:-5], "capture_id")
    if not (client and day and capture):
        return None
    return Entry(day, client, capture)


def _dirs(filesystem: fs.FileSystem, path: str) -> list[str]:
    try:
        infos = filesystem.get_file_info(fs.FileSelector(path, recursive=False, allow_not_found=True))
    except FileNotFoundError:
        return []
    return [i.base_name for i in infos if i.type == fs.FileType.Directory]


def _files(filesystem: fs.FileSystem, path: str) -> list[fs.FileInfo]:
    try:
        infos = filesystem.get_file_info(fs.FileSelector(path, recursive=True, allow_not_found=True))
    except FileNotFoundError:
        return []
    return [i for i in infos if i.type == fs.FileType.File]


def list_captures(filesystem: fs.FileSystem, store: StoreURL, *, clients: Iterable[str] = (),
                  since: date | None = None, captures: Iterable[str] = ()) -> list[Entry]:
    """The complete captures in the store that match the filters, oldest day first, from the index's
    keys alone: a LIST of the client partitions, then of the days where `since` prunes them."""
    wanted_clients = set(clients)
    wanted_ids = list(captures)
    out: list[Entry] = []
    index = store.path(INDEX)
    for client_dir in _dirs(filesystem, index):
        client = _value(client_dir, "clients")
        if client is None or (wanted_clients and not wanted_clients & set(client.split("+"))):
            continue
        base = f"{index}/{client_dir}"
        if since is None:
            infos = _files(filesystem, base)
        else:
            infos = []
            for day_dir in _dirs(filesystem, base):
                day = _value(day_dir, "day")
                if day is not None and day >= since.isoformat():
                    infos += _files(filesystem, f"{base}/{day_dir}")
        for info in infos:
            entry = _parse_index_key(info.path, store.root)
            if entry is None:
                continue
            if wanted_ids and not any(entry.capture_id.startswith(w) for w in wanted_ids):
                continue
            out.append(entry)
    return sorted(out)


def find_capture(filesystem: fs.FileSystem, store: StoreURL, capture_id: str) -> Entry:
    """The one capture whose id is `capture_id` or starts with it."""
    matches = list_captures(filesystem, store, captures=[capture_id])
    exact = [e for e in matches if e.capture_id == capture_id]
    if exact:
        return exact[0]
    if not matches:
        from ctxtap.store.location import StoreError

        raise StoreError(f"no capture {capture_id} in {store} (ctxtap ls {store} lists them)")
    if len(matches) > 1:
        from ctxtap.store.location import StoreError

        raise StoreError(f"{capture_id} names {len(matches)} captures in {store}: "
                         + ", ".join(e.capture_id for e in matches[:5]))
    return matches[0]


def capture_files(filesystem: fs.FileSystem, store: StoreURL, entries: Iterable[Entry]) -> dict[Entry, list[fs.FileInfo]]:
    """The objects of these captures, from one recursive LIST per (client, day) partition they fall in."""
    by_partition: dict[tuple[str, str], dict[str, Entry]] = {}
    for e in entries:
        by_partition.setdefault((e.client, e.day), {})[e.capture_id] = e
    out: dict[Entry, list[fs.FileInfo]] = {e: [] for ids in by_partition.values() for e in ids.values()}
    bases = {key: store.path(CAPTURES, f"clients={key[0]}/day={key[1]}") for key in by_partition}
    with ThreadPoolExecutor(LIST_WORKERS) as pool:  # the LISTs of many partitions wait on the network
        listed = dict(zip(bases, pool.map(lambda base: _files(filesystem, base), bases.values()), strict=True))
    for key, infos in listed.items():
        base, ids = bases[key], by_partition[key]
        for info in infos:
            segment = info.path[len(base):].lstrip("/").split("/", 1)[0]
            entry = ids.get(_value(segment, "capture_id") or "")
            if entry is not None:
                out[entry].append(info)
    return out
