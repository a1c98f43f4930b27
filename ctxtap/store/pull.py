"""`ctxtap pull` and `ctxtap rm`: captures back from the store, and out of it.

A pulled capture is private like every capture (0700 folders, 0600 files: `ctxtap.capture.private`),
and its files get back the times its dataset's fingerprint recorded, so the analysis dataset that
came with it is current and is not rebuilt. `rm` deletes a capture's index object first: from then
on no reader sees it, and a removal cut short leaves only objects no reader lists (run it again).
"""

from __future__ import annotations

import hashlib
import json
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from pyarrow import fs

from ctxtap.capture.private import private_dir, tighten
from ctxtap.store.layout import CAPTURES, Entry, _dirs, _value, find_capture, list_captures
from ctxtap.store.location import StoreError, StoreURL, s3_filesystem

WORKERS = 8
CHUNK = 1 << 20


@dataclass
class Pulled:
    capture_id: str
    directory: Path
    files: int
    bytes: int
    pseudonymised: bool


def read_index(filesystem: fs.FileSystem, store: StoreURL, entry: Entry) -> dict:
    with filesystem.open_input_stream(entry.index_path(store)) as f:
        return json.loads(f.read())


def _restore_times(directory: Path) -> None:
    """The capture files' modification times as the dataset's fingerprint has them."""
    try:
        meta = json.loads((directory / "analysis" / "_meta.json").read_text())
    except (OSError, ValueError):
        return
    for name, (size, mtime_ns) in (meta.get("fingerprint", {}).get("files") or {}).items():
        path = directory / name
        if path.is_file() and path.stat().st_size == size:
            os.utime(path, ns=(mtime_ns, mtime_ns))


def pull_capture(url: str, capture_id: str, out_dir: Path, *, endpoint_url: str | None = None,
                 filesystem: fs.FileSystem | None = None, dataset_only: bool = False) -> Pulled:
    """Bring one capture (id or a unique start of one) into `out_dir/<capture id>`; `dataset_only`: its
    manifest and analysis dataset alone (what a report reads), not the recorded bodies."""
    store = StoreURL.parse(url)
    filesystem = filesystem or s3_filesystem(endpoint_url)
    try:
        entry = find_capture(filesystem, store, capture_id)
        index = read_index(filesystem, store, entry)
        target = Path(out_dir) / entry.capture_id
        if (target / "manifest.json").exists():
            raise StoreError(f"{target} already holds a capture; remove it or pull into another --out")
        private_dir(target)
        objects = [o for o in index["objects"]
                   if not dataset_only or o["path"] == "manifest.json" or o["path"].startswith("analysis/")]
        for obj in objects:
            local = (target / obj["path"]).resolve()
            if target.resolve() not in local.parents:
                raise StoreError(f"the index of {entry.capture_id} names a path outside the capture: {obj['path']}")
            private_dir(local.parent)

        def fetch(obj: dict) -> int:
            """One object streamed into its file (0600 from its first byte), checked against the index."""
            digest = hashlib.sha256()
            size = 0
            fd = os.open(target / obj["path"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as out, filesystem.open_input_stream(entry.capture_path(store, obj["key"])) as f:
                while chunk := f.read(CHUNK):
                    out.write(chunk)
                    digest.update(chunk)
                    size += len(chunk)
            if (size, digest.hexdigest()) != (obj["size"], obj["sha256"]):
                raise StoreError(f"{obj['key']} of {entry.capture_id} is not what its index says ({size} bytes, "
                                 f"index {obj['size']}): pull again, or push the capture again")
            return size

        with ThreadPoolExecutor(WORKERS) as pool:  # GETs wait on the network, not on this process
            total = sum(pool.map(fetch, objects))
    except OSError as exc:
        raise StoreError(f"pulling {capture_id} from {store} failed: {exc}") from exc
    tighten(target)
    _restore_times(target)
    return Pulled(entry.capture_id, target, len(objects), total, bool(index.get("pseudonymised")))


def _unindexed(filesystem: fs.FileSystem, store: StoreURL, *, capture_id: str | None = None,
               before: date | None = None) -> list[str]:
    """Capture prefixes left without an index (a push or rm cut short) that match: a LIST per level."""
    base = store.path(CAPTURES)
    out = []
    for client_dir in _dirs(filesystem, base):
        for day_dir in _dirs(filesystem, f"{base}/{client_dir}"):
            day = _value(day_dir, "day")
            if day is None or (before is not None and day >= before.isoformat()):
                continue
            for capture_dir in _dirs(filesystem, f"{base}/{client_dir}/{day_dir}"):
                if capture_id is None or _value(capture_dir, "capture_id") == capture_id:
                    out.append(f"{base}/{client_dir}/{day_dir}/{capture_dir}")
    return out


def remove_captures(url: str, *, capture_id: str | None = None, before: date | None = None,
                    endpoint_url: str | None = None, filesystem: fs.FileSystem | None = None) -> list[Entry]:
    """Delete one capture, or every capture recorded before a day; the removed entries. The objects a
    push or removal cut short left without an index go too (for `--capture`, the exact id)."""
    if (capture_id is None) == (before is None):
        raise StoreError("give either --capture ID or --before DATE")
    store = StoreURL.parse(url)
    filesystem = filesystem or s3_filesystem(endpoint_url)
    try:
        if capture_id is not None:
            try:
                entries = [find_capture(filesystem, store, capture_id)]
            except StoreError:
                leftovers = _unindexed(filesystem, store, capture_id=capture_id)
                if not leftovers:
                    raise
                entries = []
        else:
            entries = [e for e in list_captures(filesystem, store) if e.day < before.isoformat()]
        for entry in entries:
            filesystem.delete_file(entry.index_path(store))  # first: no reader sees it from here on
            filesystem.delete_dir(entry.capture_path(store))
        if not entries or before is not None:
            for prefix in _unindexed(filesystem, store, capture_id=capture_id if not entries else None,
                                     before=before):
                try:
                    filesystem.delete_dir(prefix)
                except FileNotFoundError:  # an empty folder some stores still list after its objects went
                    continue
                if capture_id is not None:
                    entries.append(Entry("", "", capture_id))
    except OSError as exc:
        raise StoreError(f"removing from {store} failed: {exc}. Run it again to finish") from exc
    if capture_id is not None and not entries:
        raise StoreError(f"no capture {capture_id} in {store} (ctxtap ls {store} lists them)")
    return entries
