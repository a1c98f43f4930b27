"""Effect receipts: what a recorded run created, modified, deleted or renamed on disk.

The two snapshots of `workspace.py` are compared here and stored in the capture as
`effects.parquet` (one row per changed path) and `effect_roots.parquet` (one row per place
snapshotted, with its bounds and whether it was seen in full): sizes and content hashes, never
contents. Places neither the working directory nor `--watch`ed are not seen at all.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from ctxtap.capture.schema import EFFECT_ROOTS_SCHEMA, EFFECTS_SCHEMA
from ctxtap.capture.workspace import Entry, Snapshot, SnapshotLimits, hash_file, hash_link, take

EFFECTS_FILE, EFFECT_ROOTS_FILE = "effects.parquet", "effect_roots.parquet"
GATES_FILE = "gates.json"  # the conditions `record --check` judged the run by, for reports


@dataclass
class Receipt:
    """Before-snapshots of the run's places; `finish` takes the after-snapshots and writes the receipt."""

    places: list[tuple[Path, str]]  # (absolute root, workspace | watched)
    limits: SnapshotLimits = field(default_factory=SnapshotLimits)
    exclude: tuple[Path, ...] = ()
    before: list[Snapshot] = field(default_factory=list)

    def start(self) -> Receipt:
        self.before = [take(root, kind, self.limits, self.exclude) for root, kind in self.places]
        return self

    def finish(self, capture_dir: Path, capture_id: str) -> tuple[list[dict], list[dict]]:
        """Snapshot again, compare, write both files into the capture; (change rows, root rows)."""
        changes: list[dict] = []
        roots: list[dict] = []
        for snap in self.before:
            after = take(snap.root, snap.root_kind, self.limits, self.exclude, hash_small=False)
            rows, hashed = compare(snap, after, self.limits.hash_budget_bytes)
            after.hashed_bytes += hashed
            for row in rows:
                row["capture_id"] = capture_id
            changes += rows
            roots.append({
                "capture_id": capture_id, "root": str(snap.root), "root_kind": snap.root_kind,
                "files_before": len(snap.entries), "files_after": len(after.entries),
                "hashed_bytes": snap.hashed_bytes + after.hashed_bytes,
                "seconds_before": round(snap.seconds, 4), "seconds_after": round(after.seconds, 4),
                "complete": snap.stopped is None and after.stopped is None,
                "stopped": snap.stopped or after.stopped,
            })
        write(capture_dir, changes, roots)
        return changes, roots


def write(capture_dir: Path, changes: list[dict], roots: list[dict]) -> None:
    for rows, schema, name in ((changes, EFFECTS_SCHEMA, EFFECTS_FILE), (roots, EFFECT_ROOTS_SCHEMA, EFFECT_ROOTS_FILE)):
        tmp = capture_dir / f"{name}.tmp"
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), tmp, compression="zstd")
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, capture_dir / name)


def write_gates(capture_dir: Path, gates: dict) -> None:
    """Keep the gates a run was judged by beside its receipt, so a report can say which it breaks."""
    tmp = capture_dir / f"{GATES_FILE}.tmp"
    tmp.write_text(json.dumps(gates, indent=2, sort_keys=True))
    os.replace(tmp, capture_dir / GATES_FILE)


def _parent(rel: str) -> str:
    return rel.rsplit("/", 1)[0] if "/" in rel else ""


def compare(before: Snapshot, after: Snapshot, hash_budget: int) -> tuple[list[dict], int]:
    """Changed paths between two snapshots of one place, and the bytes read to hash them. Only
    directories listed in full by the other snapshot can show a path as created or deleted."""
    hashed = 0

    def digest(rel: str, entry: Entry) -> str | None:
        nonlocal hashed
        if entry.sha256 is not None:
            return entry.sha256
        path = after.root / rel
        if entry.kind == "symlink":
            return hash_link(path)
        if hashed + entry.size > hash_budget:
            return None
        value, n = hash_file(path)
        hashed += n
        return value

    created: dict[str, Entry] = {}
    deleted: dict[str, Entry] = {}
    rows: list[dict] = []
    for rel, new in after.entries.items():
        if new.kind == "dir":
            continue
        old = before.entries.get(rel)
        if old is None or old.kind == "dir":
            if _parent(rel) in before.listed:
                created[rel] = new
            continue
        if (old.kind, old.size, old.mtime_ns, old.inode) == (new.kind, new.size, new.mtime_ns, new.inode):
            continue
        sha = digest(rel, new)
        if sha is not None and sha == old.sha256 and old.kind == new.kind:
            continue  # touched or replaced with the same bytes
        rows.append(_row(before.root, before.root_kind, rel, "modified", None, old, new, sha))
    for rel, old in before.entries.items():
        if old.kind != "dir" and (rel not in after.entries or after.entries[rel].kind == "dir") \
                and _parent(rel) in after.listed:
            deleted[rel] = old
    created_sha = {rel: digest(rel, new) for rel, new in created.items()}
    by_inode = {old.inode: rel for rel, old in deleted.items()}
    by_content = {(old.size, old.sha256): rel for rel, old in deleted.items() if old.sha256}
    for rel, new in created.items():
        sha = created_sha[rel]
        source = by_inode.get(new.inode) or by_content.get((new.size, sha))
        if source is not None and source in deleted:
            old = deleted.pop(source)
            rows.append(_row(before.root, before.root_kind, rel, "renamed", source, old, new, sha))
        else:
            rows.append(_row(before.root, before.root_kind, rel, "created", None, None, new, sha))
    for rel, old in deleted.items():
        rows.append(_row(before.root, before.root_kind, rel, "deleted", None, old, None, None))
    rows.sort(key=lambda r: r["rel_path"])
    return rows, hashed


def _row(root: Path, root_kind: str, rel: str, change: str, source: str | None, old: Entry | None,
         new: Entry | None, sha_after: str | None) -> dict:
    return {
        "root": str(root), "root_kind": root_kind, "rel_path": rel, "change": change, "renamed_from": source,
        "entry_type": (new or old).kind if (new or old) else None,
        "size_before": old.size if old else None, "size_after": new.size if new else None,
        "sha256_before": old.sha256 if old else None, "sha256_after": sha_after,
        "mtime_after": new.mtime_ns / 1e9 if new else None,
    }
