"""A shared-memory ring that carries streamed response bytes from the proxy to its writer child.

Through the pipe, a 50 MB stream cost the proxy a kernel copy of every byte into fresh pipe pages
and the child a copy out into a frame buffer and another into each piece, all on cores the
forwarding needs. Through the ring the proxy copies a batch once into pages it reuses and sends a
small frame (`RingChunk`) down the pipe; the child copies the pieces out when it reads that frame
and acknowledges on its stdout, which frees the space for reuse.

Nothing else orders the two: a frame follows its bytes through the same pipe, and the proxy reuses
space only after reading the child's acknowledgement, each step a system call. Linux only (a
memfd); where there is none, or a batch does not fit in the free space, the pipe carries it as
before.
"""

from __future__ import annotations

import mmap
import os

from ctxtap.capture.events import ResponseChunk, RingChunk

RING_BYTES = 8 << 20


def create(size: int) -> int | None:
    """A shared memory file of `size` bytes (its descriptor), or None where the system has none."""
    try:
        fd = os.memfd_create("ctxtap-ring", os.MFD_CLOEXEC)  # Popen's pass_fds hands it to the child
    except (AttributeError, OSError):
        return None
    try:
        os.ftruncate(fd, size)
    except OSError:
        os.close(fd)
        return None
    return fd


class RingWriter:
    """The proxy's end: puts a batch's bytes in the ring, in order, where the child has freed space.

    Positions count every byte ever put (`head`) and every byte the child has acknowledged
    (`tail`); a batch is kept contiguous, so one that would cross the ring's end starts again at
    its beginning and the skipped end counts as used until the next acknowledgement."""

    def __init__(self, fd: int, size: int) -> None:
        self._map = mmap.mmap(fd, size)
        self.size = size
        self.head = 0
        self.tail = 0
        self.carried = 0  # bytes the ring carried (the rest went through the pipe)

    def put(self, event: ResponseChunk) -> RingChunk | None:
        """The frame that stands for `event` once its bytes are in the ring; None if they do not fit."""
        pieces = event.pieces()
        total = sum(map(len, pieces))
        start, offset = self.head, self.head % self.size
        if offset + total > self.size:
            start, offset = start + self.size - offset, 0
        if total > self.size or start + total - self.tail > self.size:
            return None
        at = offset
        for piece in pieces:
            self._map[at : at + len(piece)] = piece
            at += len(piece)
        self.head = start + total
        self.carried += total
        return RingChunk(event.flow_id, offset, [len(p) for p in pieces], self.head)

    def acknowledge(self, end: int) -> None:
        """The child has copied out every byte before position `end`."""
        self.tail = max(self.tail, min(end, self.head))

    def close(self) -> None:
        self._map.close()


class RingReader:
    """The child's end: turns a `RingChunk` back into the chunk the proxy handed over."""

    def __init__(self, fd: int, size: int) -> None:
        self._map = mmap.mmap(fd, size, prot=mmap.PROT_READ)

    def take(self, ref: RingChunk) -> ResponseChunk:
        """The chunk's pieces copied out of the ring: its space may be reused once this returns."""
        pieces, at = [], ref.offset
        for n in ref.lengths:
            pieces.append(self._map[at : at + n])
            at += n
        return ResponseChunk(ref.flow_id, pieces)
