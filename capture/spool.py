"""The append-only, crash-safe spool.

Each record is one frame: MAGIC, header length, payload length, CRC32, a JSON
header and a binary payload. Frames are written with a single `writev()` on an
O_APPEND descriptor, so once `write()` returns the record survives a `kill -9`
of the process (it is in the kernel); `fsync` runs periodically and on close
for power loss. A reader stops at the first torn or corrupt frame: everything
before it is intact by construction.
"""

from __future__ import annotations

import fcntl
import json
import os
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path

from ctxtap.capture.private import private_dir

MAGIC = b"CTXS"
_HEAD = struct.Struct(">4sIQI")  # magic, header length, payload length, crc32
SPOOL_NAME = "spool.ctxs"
LOCK_NAME = "writer.lock"  # in the spool directory; held by the process writing the capture


def writer_alive(directory: Path) -> bool:
    """True while a recorder holds the capture's writer lock.

    Here, next to the spool, so the command line can ask without importing the writer
    (redaction) or the reader (pyarrow).
    """
    lock = directory / "spool" / LOCK_NAME
    if not lock.exists():
        return False
    try:
        fd = os.open(lock, os.O_RDWR)
    except FileNotFoundError:  # the recorder finished between the check and the open
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def _frame_parts(header: dict, payload: bytes) -> tuple[bytes, bytes]:
    """A frame as (its head, its payload): written together without copying the payload."""
    head = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()
    crc = zlib.crc32(payload, zlib.crc32(head))
    return _HEAD.pack(MAGIC, len(head), len(payload), crc) + head, payload


class SpoolFile:
    """Appends frames to `<dir>/spool.ctxs`."""

    def __init__(self, directory: Path) -> None:
        private_dir(directory)
        self.path = directory / SPOOL_NAME
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

    def append(self, header: dict, payload: bytes = b"") -> None:
        """One `writev` of head and payload (no copy of a large payload into one frame)."""
        head, payload = _frame_parts(header, payload)
        views = [memoryview(head), memoryview(payload)]
        while views:
            n = os.writev(self._fd, views)
            while views and n >= views[0].nbytes:
                n -= views.pop(0).nbytes
            if views and n:
                views[0] = views[0][n:]

    def sync(self) -> None:
        os.fsync(self._fd)

    def close(self) -> None:
        try:
            os.fsync(self._fd)
        finally:
            os.close(self._fd)


def read_frames(path: Path) -> tuple[list[tuple[dict, bytes]], int]:
    """All intact frames of a spool file, and the number of trailing bytes dropped."""
    frames: list[tuple[dict, bytes]] = []
    end = 0
    for header, payload, end in iter_frames(path):  # noqa: B007 - end is used after the loop
        frames.append((header, payload))
    size = path.stat().st_size if path.exists() else 0
    return frames, max(0, size - end)


def iter_frames(path: Path, start: int = 0) -> Iterator[tuple[dict, bytes, int]]:
    """Yield (header, payload, end offset) for each intact frame, stopping at a torn one.

    `start`: the end offset of a frame read before (a live reader follows the spool from there).
    """
    if not path.exists():
        return
    with open(path, "rb") as fh:
        fh.seek(start)
        while True:
            head = fh.read(_HEAD.size)
            if len(head) < _HEAD.size:
                return
            magic, hlen, plen, crc = _HEAD.unpack(head)
            if magic != MAGIC:
                return
            body = fh.read(hlen + plen)
            if len(body) < hlen + plen:
                return
            if zlib.crc32(body) != crc:
                return
            try:
                header = json.loads(body[:hlen])
            except ValueError:
                return
            yield header, body[hlen:], fh.tell()
