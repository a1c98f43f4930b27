"""The spool survives torn writes: every intact frame before the tear is read back."""

from __future__ import annotations

from ctxtap.capture.decode import decode_body
from ctxtap.capture.spool import SpoolFile, iter_frames, read_frames


def test_frames_roundtrip_and_torn_tail_is_dropped(tmp_path):
    spool = SpoolFile(tmp_path)
    for i in range(10):
        spool.append({"t": "x", "i": i, "text": "é" * i}, bytes([i]) * i)
    spool.close()
    size = spool.path.stat().st_size
    # Simulate a kill in the middle of the last write.
    with open(spool.path, "r+b") as fh:
        fh.truncate(size - 3)
    frames, dropped = read_frames(spool.path)
    assert [h["i"] for h, _ in frames] == list(range(9))
    assert frames[5][1] == bytes([5]) * 5
    assert dropped > 0


def test_corrupt_frame_stops_reading(tmp_path):
    spool = SpoolFile(tmp_path)
    for i in range(3):
        spool.append({"i": i}, b"payload")
    spool.close()
    data = bytearray(spool.path.read_bytes())
    data[-2] ^= 0xFF  # flip a payload byte of the last frame
    spool.path.write_bytes(bytes(data))
    assert [h["i"] for h, _, _ in iter_frames(spool.path)] == [0, 1]


def test_spool_file_is_private(tmp_path):
    spool = SpoolFile(tmp_path)
    spool.close()
    assert spool.path.stat().st_mode & 0o077 == 0


def test_decode_body_all_encodings():
    import gzip
    import zlib

    import brotli
    import zstandard

    raw = b'{"hello": "world"}' * 100
    assert decode_body(gzip.compress(raw), "gzip") == (raw, "decoded")
    assert decode_body(zlib.compress(raw), "deflate") == (raw, "decoded")
    raw_deflate = zlib.compressobj(wbits=-15)
    assert decode_body(raw_deflate.compress(raw) + raw_deflate.flush(), "deflate") == (raw, "decoded")
    assert decode_body(brotli.compress(raw), "br") == (raw, "decoded")
    # zstd without a content size in the frame header (as Codex streams it)
    cctx = zstandard.ZstdCompressor(write_content_size=False)
    assert decode_body(cctx.compress(raw), "zstd") == (raw, "decoded")
    assert decode_body(gzip.compress(zlib.compress(raw)), "deflate, gzip") == (raw, "decoded")
    assert decode_body(raw, None) == (raw, "identity")


def test_decode_body_bad_input_keeps_raw_bytes():
    data, status = decode_body(b"not gzip at all", "gzip")
    assert data == b"not gzip at all" and status.startswith("error:")
    data, status = decode_body(b"xx", "compress")
    assert data == b"xx" and "unsupported" in status


def test_a_large_payload_is_written_without_a_copy(tmp_path):
    import tracemalloc

    spool = SpoolFile(tmp_path)
    payload = b"x" * (4 << 20)
    tracemalloc.start()
    try:
        spool.append({"t": "body"}, payload)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    spool.close()
    assert peak < 1 << 20
    assert read_frames(spool.path)[0][0][1] == payload
