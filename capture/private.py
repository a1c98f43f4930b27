"""Captures and everything derived from them are readable by their user only.

They hold prompts, code and tool output from the user's machine, so directories are 0700 and
files 0600, as the config directory and keys are (`paths.py`). Three parts make that hold:

- ctxtap's own processes (each command, the writer child) run with umask 077, so files that
  pyarrow, DuckDB or polars create are private from their first byte;
- a step that wrote a tree walks it afterwards (`tighten`), so what a caller with a wider umask
  made through the API is private too, and a capture of an earlier version is tightened when
  it is next opened;
- the commands the user asked ctxtap to run (the agent of `record`, `replay`, `experiment`)
  get the user's own umask back (`user_umask`): their workspace files keep their usual modes.

Stdlib only: the proxy process imports it (contract lean-proxy).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path

PRIVATE_UMASK = 0o077
DIR_MODE = 0o700
FILE_MODE = 0o600

_user_umask: int | None = None  # the umask this process had before ctxtap restricted it


def current_umask() -> int:
    """The process's umask, read without ever widening it (no moment with umask 0 for other threads)."""
    mask = os.umask(PRIVATE_UMASK)
    os.umask(mask)
    return mask


def user_umask() -> int:
    """The umask a command the user asked for runs with: the one ctxtap found, not its own."""
    return current_umask() if _user_umask is None else _user_umask


def restrict_umask() -> int:
    """Umask 077 for the rest of this process (a child of ctxtap's own, e.g. the writer); the old one."""
    global _user_umask
    previous = os.umask(PRIVATE_UMASK)
    if _user_umask is None:
        _user_umask = previous
    return previous


@contextmanager
def private_umask() -> Iterator[None]:
    """Umask 077 while a command runs, the caller's again afterwards (tests run commands in-process)."""
    global _user_umask
    outer = _user_umask
    previous = os.umask(PRIVATE_UMASK)
    if outer is None:
        _user_umask = previous
    try:
        yield
    finally:
        os.umask(previous)
        _user_umask = outer


def private_dir(path: Path) -> Path:
    """`path` as a directory, 0700; the ancestors it had to create are 0700 too (they are ctxtap's,
    e.g. `captures/`), existing ones are left as they are. mkdir's mode is masked by the umask,
    hence the chmod."""
    path = Path(path)
    missing = []
    for directory in (path, *path.parents):
        if directory.exists():
            break
        missing.append(directory)
    for directory in reversed(missing):
        try:
            directory.mkdir(mode=DIR_MODE)
        except FileExistsError:  # made meanwhile by someone else: theirs, left alone
            continue
        os.chmod(directory, DIR_MODE)
    if not missing:
        path.mkdir(exist_ok=True)  # a file there raises, as mkdir would
    os.chmod(path, DIR_MODE)
    return path


def tighten(path: Path, skip: Collection[str] = ()) -> int:
    """Take group and other permissions off `path` and everything under it; how many entries changed.

    Symbolic links under `path` are neither followed nor changed. Directories named in `skip` are left as they
    are, with their contents (an experiment's `work/` copies belong to the user's command).
    Entries that cannot be changed (another owner, a read-only file system, gone meanwhile) are
    passed over: tightening never makes a command fail.
    """
    changed = 0
    stack = [os.fspath(path)]
    top = True
    while stack:
        current = stack.pop()
        try:
            st = os.stat(current) if top else os.lstat(current)  # `path` itself may be a link the user gave
        except OSError:
            continue
        if stat.S_ISLNK(st.st_mode):
            continue
        is_dir = stat.S_ISDIR(st.st_mode)
        if is_dir and not top and os.path.basename(current) in skip:
            continue
        top = False
        mode = stat.S_IMODE(st.st_mode)
        if mode & PRIVATE_UMASK:
            try:
                os.chmod(current, mode & ~PRIVATE_UMASK)
                changed += 1
            except OSError:
                pass
        if is_dir:
            try:
                with os.scandir(current) as entries:
                    stack.extend(entry.path for entry in entries)
            except OSError:
                continue
    return changed
