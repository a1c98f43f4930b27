"""Snapshots of the places a recorded run could change: the working directory and `--watch` places.

`ctxtap record` takes one before and one after the run and keeps what changed (`effects.py`). It
needs nothing from the client, so it works for any CLI. A snapshot is stat-first: the walk keeps size,
mtime and inode of every entry, ignored files included (a client's history files and a `.env` are
often git-ignored); only `.git/` internals are left out. Contents are hashed only where needed (small
files before the run, within a byte budget, so a later change has a before hash; changed paths after)
and are never kept. Bounded in entries, hashed bytes and time: a bound reached is said, and the
comparison then reports only directories both walks listed in full.
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

SKIP_DIRS = frozenset({".git"})
_CHECK_EVERY = 256  # entries between clock readings


@dataclass(frozen=True)
class SnapshotLimits:
    """The bounds of one snapshot pass; `record --snapshot-*` sets them."""

    max_files: int = 200_000
    max_seconds: float = 20.0
    hash_file_bytes: int = 256 * 1024  # before the run, files up to this size are hashed...
    hash_budget_bytes: int = 64 * 1024 * 1024  # ...while the bytes hashed stay within this


@dataclass(frozen=True)
class Entry:
    """What a snapshot keeps of one path: never its content, at most its content hash."""

    kind: str  # file, symlink, dir
    size: int
    mtime_ns: int
    inode: tuple[int, int]
    sha256: str | None = None


@dataclass
class Snapshot:
    """One pass over one place: entries by `/`-separated relative path, and how the pass went."""

    root: Path
    root_kind: str  # workspace | watched
    entries: dict[str, Entry] = field(default_factory=dict)
    listed: set[str] = field(default_factory=set)  # directories listed in full ("" is the root)
    hashed_bytes: int = 0
    seconds: float = 0.0
    stopped: str | None = None


def hash_file(path: Path) -> tuple[str | None, int]:
    """SHA-256 of a file's content and the bytes read; (None, 0) when it cannot be read."""
    digest = hashlib.sha256()
    n = 0
    try:
        with open(path, "rb") as fh:
            while chunk := fh.read(1 << 20):
                digest.update(chunk)
                n += len(chunk)
    except OSError:
        return None, 0
    return digest.hexdigest(), n


def hash_link(path: Path) -> str | None:
    try:
        return hashlib.sha256(os.fsencode(os.readlink(path))).hexdigest()
    except OSError:
        return None


def take(root: Path, root_kind: str, limits: SnapshotLimits, exclude: tuple[Path, ...] = (),
         hash_small: bool = True) -> Snapshot:
    """Walk `root` (without following symlinks); `exclude` holds ctxtap's own folders (the capture)."""
    started = time.monotonic()
    snap = Snapshot(root=root, root_kind=root_kind)
    excluded = {os.path.realpath(p) for p in exclude}
    budget = limits.hash_budget_bytes if hash_small else 0
    stack = [""]
    seen = 0
    while stack:
        rel_dir = stack.pop()
        directory = root / rel_dir if rel_dir else root
        try:
            with os.scandir(directory) as it:
                items = sorted(it, key=lambda e: e.name)
        except OSError:
            continue  # unreadable: not listed, so nothing under it is reported
        complete = True
        for item in items:
            seen += 1
            if seen > limits.max_files:
                snap.stopped = f"max files {limits.max_files}"
            elif seen % _CHECK_EVERY == 0 and time.monotonic() - started > limits.max_seconds:
                snap.stopped = f"max seconds {limits.max_seconds:g}"
            if snap.stopped:
                complete = False
                break
            rel = f"{rel_dir}/{item.name}" if rel_dir else item.name
            try:
                st = item.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                if item.name in SKIP_DIRS or os.path.realpath(item.path) in excluded:
                    continue
                snap.entries[rel] = Entry("dir", 0, st.st_mtime_ns, (st.st_dev, st.st_ino))
                stack.append(rel)
                continue
            kind = "symlink" if stat.S_ISLNK(st.st_mode) else "file" if stat.S_ISREG(st.st_mode) else None
            if kind is None:
                continue  # sockets, fifos, devices
            digest = None
            if kind == "symlink":
                digest = hash_link(Path(item.path))
            elif st.st_size <= limits.hash_file_bytes and st.st_size <= budget - snap.hashed_bytes:
                digest, n = hash_file(Path(item.path))
                snap.hashed_bytes += n
            snap.entries[rel] = Entry(kind, st.st_size, st.st_mtime_ns, (st.st_dev, st.st_ino), digest)
        if complete:
            snap.listed.add(rel_dir)
        if snap.stopped:
            break
    snap.seconds = time.monotonic() - started
    return snap
