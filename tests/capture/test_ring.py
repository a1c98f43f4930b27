"""The shared-memory ring that carries streamed bytes from the proxy to its writer child."""

from __future__ import annotations

import os
import sys

import pytest

from ctxtap.capture import ring
from ctxtap.capture.events import ResponseChunk

# The ring is Linux's (a memfd); elsewhere the pipe carries every chunk (tested in test_capture_writer.py).
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the ring needs a memfd (Linux)")


def _ends(size: int) -> tuple[ring.RingWriter, ring.RingReader]:
    fd = ring.create(size)
    try:
        return ring.RingWriter(fd, size), ring.RingReader(fd, size)
    finally:
        os.close(fd)


def test_a_batch_comes_out_as_it_went_in_and_space_is_reused_only_once_acknowledged():
    writer, reader = _ends(100)
    first = ResponseChunk("a", [b"0123456789", b"abcdefghij" * 3])
    ref = writer.put(first)
    assert ref is not None and ref.end == 40 and reader.take(ref) == first
    assert writer.put(ResponseChunk("a", [b"x" * 50])) is not None  # 40..90
    assert writer.put(ResponseChunk("a", [b"y" * 20])) is None  # would cross the end: starts at 0, not yet free
    writer.acknowledge(40)
    ref = writer.put(ResponseChunk("b", [b"y" * 20]))  # the ring's last 10 bytes are skipped
    assert ref is not None and ref.offset == 0 and ref.end == 120
    assert reader.take(ref) == ResponseChunk("b", [b"y" * 20])
    assert writer.put(ResponseChunk("c", [b"z" * 101])) is None  # bigger than the ring: the pipe carries it
    writer.acknowledge(10**9)  # never past what was put
    assert writer.tail == writer.head == 120
    assert writer.carried == 110


def test_pieces_keep_their_bytes_across_many_turns_of_the_ring():
    writer, reader = _ends(1000)
    for turn in range(50):
        pieces = [bytes([turn % 256]) * (17 + turn % 5), os.urandom(61 + turn)]
        ref = writer.put(ResponseChunk("s", pieces))
        assert ref is not None
        assert reader.take(ref).data == pieces
        writer.acknowledge(ref.end)
