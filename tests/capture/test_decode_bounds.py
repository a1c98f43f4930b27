"""Compressed bodies that end early, go bad part way or expand without end.

What decoded is what gets redacted and stored: a cut compressed stream stored as
received would hand its secrets to any decompressor, since redaction cannot read
inside it. And decoding stops at a bound, so a decompression bomb cannot take the
writer's memory.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import time
import tracemalloc
import zlib

import brotli
import pytest
import zstandard

from ctxtap.capture.decode import MAX_DECODED, decode_body
from ctxtap.capture.events import RequestEvent, ResponseChunk, ResponseEvent, StreamStart
from ctxtap.capture.finalize import finalize
from ctxtap.capture.manifest import Manifest
from ctxtap.capture.store import Capture
from ctxtap.capture.writer import CaptureWriter

SECRET = "sk-ant-api03-" + "Zq7" * 30 + "AA"


def _raw_deflate(data: bytes) -> bytes:
    c = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return c.compress(data) + c.flush()


COMPRESS = {
    "gzip": gzip.compress,
    "deflate": zlib.compress,
    "raw deflate": _raw_deflate,
    "br": lambda d: brotli.compress(d, quality=5),
    "zstd": lambda d: zstandard.ZstdCompressor(write_content_size=False).compress(d),
}
HEADER = {"raw deflate": "deflate"}


def _body(n: int = 1200) -> bytes:
    """A JSON request that compresses only moderately (hex noise), the secret near its start."""
    rnd = os.urandom(n * 200).hex()
    messages = [{"role": "user", "content": f"export ANTHROPIC_API_KEY={SECRET}"}]
    messages += [{"role": "user", "content": rnd[i * 400 : (i + 1) * 400]} for i in range(n)]
    return json.dumps({"model": "claude-sonnet-4-5", "messages": messages}).encode()


@pytest.mark.parametrize("name", list(COMPRESS))
def test_a_whole_body_decodes(name):
    raw = _body()
    assert decode_body(COMPRESS[name](raw), HEADER.get(name, name)) == (raw, "decoded")


@pytest.mark.parametrize("name", list(COMPRESS))
def test_a_cut_body_keeps_what_decoded_before_the_cut(name):
    raw = _body()
    packed = COMPRESS[name](raw)
    out, status = decode_body(packed[: len(packed) * 2 // 3], HEADER.get(name, name))
    assert out and raw.startswith(out) and len(out) < len(raw)
    assert SECRET.encode() in out  # so the writer's redaction sees it
    coding = HEADER.get(name, name)
    assert status == (f"error: {coding}: the compressed stream ends before its end marker; "
                      f"kept the {len(out)} bytes decoded before it")


def test_a_gzip_body_with_a_bad_checksum_keeps_its_content():
    raw = _body(50)
    packed = bytearray(gzip.compress(raw))
    packed[-8] ^= 0xFF  # the CRC-32 in the trailer
    out, status = decode_body(bytes(packed), "gzip")
    # only the output of the read that met the trailer is lost (at most 64 KiB)
    assert raw.startswith(out) and len(out) >= len(raw) - (64 << 10) and SECRET.encode() in out
    assert status.startswith("error: gzip: invalid data:") and status.endswith("decoded before it")


def test_concatenated_members_and_frames_decode_whole():
    a, b = _body(20), _body(20)
    assert decode_body(gzip.compress(a) + gzip.compress(b) + b"\0" * 8, "gzip") == (a + b, "decoded")
    z = zstandard.ZstdCompressor(write_content_size=False)
    assert decode_body(z.compress(a) + z.compress(b), "zstd") == (a + b, "decoded")


def test_a_stream_cut_before_its_first_output_is_not_stored():
    """A zstd block decodes whole or not at all (up to 128 KiB): cut inside the first one, nothing
    comes out, and the bytes received must not be kept either (a block's literals are readable)."""
    packed = COMPRESS["zstd"](_body())
    out, status = decode_body(packed[:2000], "zstd")
    assert out == b"" and status == ("error: zstd: the compressed stream ends before its end marker; nothing "
                                     "decoded, so the 2000 bytes received are not stored (redaction cannot "
                                     "read inside them)")
    broken = gzip.compress(_body(5))[:10] + os.urandom(500)  # a gzip header, then no deflate data
    out, status = decode_body(broken, "gzip")
    assert out == b"" and status.startswith("error: gzip: invalid data") and "not stored" in status


def test_bytes_that_are_not_what_their_header_says_are_kept_as_received():
    """Plain JSON or binary labelled with a coding it does not have (brotli and raw deflate have no
    magic: some random bytes do read as a cut brotli stream, so the blob here is a fixed one)."""
    blob = random.Random(1).randbytes(4096)
    body = json.dumps({"model": "claude-haiku-4-5", "messages": [{"role": "user", "content": "hi " * 200}]}).encode()
    for data, coding in [(blob, c) for c in ("gzip", "deflate", "br", "zstd")] + [(body, "br"), (body, "gzip")]:
        out, status = decode_body(data, coding)
        assert out == data and status.startswith(f"error: {coding}: ") and "kept" not in status
    assert decode_body(blob, "compress") == (blob, "error: unsupported content-encoding 'compress'")


def test_layered_codings_decode_in_turn_and_a_cut_outer_layer_still_yields_text():
    raw = _body()
    packed = gzip.compress(zlib.compress(raw))
    assert decode_body(packed, "deflate, gzip") == (raw, "decoded")
    out, status = decode_body(packed[: len(packed) // 2], "deflate, gzip")
    assert out and raw.startswith(out) and status.startswith("error: gzip: the compressed stream ends")


def _bomb(name: str, size: int) -> bytes:
    """`size` zero bytes compressed, built a MiB at a time (the zeros are never held at once)."""
    chunk, n = bytes(1 << 20), size >> 20
    if name == "br":
        c = brotli.Compressor(quality=5)
        return b"".join(c.process(chunk) for _ in range(n)) + c.finish()
    if name == "zstd":
        c = zstandard.ZstdCompressor(level=1).compressobj()
        return b"".join(c.compress(chunk) for _ in range(n)) + c.flush()
    c = zlib.compressobj(1, wbits={"gzip": 31, "deflate": 15}[name])
    return b"".join(c.compress(chunk) for _ in range(n)) + c.flush()


@pytest.mark.parametrize("name", ["gzip", "deflate", "br", "zstd"])
def test_a_decompression_bomb_stops_at_the_limit_without_expanding_whole(name):
    size, limit = 512 << 20, 32 << 20
    bomb = _bomb(name, size)
    tracemalloc.start()
    try:
        out, status = decode_body(bomb, name, limit=limit)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(out) == limit and not out.strip(b"\0")
    assert status == f"error: {name}: decoded body exceeds 32 MiB; kept the {limit} bytes decoded before it"
    # the whole bomb is 512 MiB; brotli may overshoot by what one 64-byte step expands to
    assert peak < size // 4, f"{peak >> 20} MiB held decoding a {size >> 20} MiB bomb"


def test_the_default_limit_holds_for_brotli():
    """brotli's one-shot decompress had no bound at all (and deflate's flush none after its limit)."""
    out, status = decode_body(_bomb("br", MAX_DECODED + (64 << 20)), "br")
    assert len(out) == MAX_DECODED and "exceeds 256 MiB" in status


# --- through the writer: what reaches disk -----------------------------------------------------

KEY = b"k" * 32


def _request(flow_id: str, body: bytes, encoding: str) -> RequestEvent:
    return RequestEvent(
        flow_id=flow_id, seq=0, record_full=True, is_model=True, provider="anthropic", api="messages",
        endpoint="generate", websocket=False, method="POST", scheme="https", host="api.anthropic.com", port=443,
        path="/v1/messages", url="https://api.anthropic.com/v1/messages", upstream_url=None, http_version="HTTP/1.1",
        headers=[("content-type", "application/json"), ("content-encoding", encoding)],
        body_in=body, body_out=body, ts_start=time.time(), ts_end=time.time(),
    )


def _readable(stored: bytes) -> bytes:
    """Everything any decompressor gets out of stored bytes, plus the bytes themselves."""
    out = [stored]
    for wbits in (31, 15, -15):
        try:
            out.append(zlib.decompressobj(wbits).decompress(stored))
        except zlib.error:
            pass
    try:
        out.append(brotli.Decompressor().process(stored))
    except brotli.error:
        pass
    try:
        out.append(zstandard.ZstdDecompressor().decompressobj().decompress(stored))
    except zstandard.ZstdError:
        pass
    return b"".join(out)


def test_no_secret_of_a_cut_compressed_body_reaches_disk(tmp_path):
    """A request body cut mid-stream and a streamed response cut by the server, both compressed:
    before, each was stored as received and `zcat` read the key out of the capture."""
    out = tmp_path / "cap"
    writer = CaptureWriter(out, KEY, Manifest(capture_id="cut"))
    raw = _body()
    for coding in ("gzip", "br", "zstd"):
        packed = COMPRESS[coding](raw)
        writer.submit(_request(f"req-{coding}", packed[: len(packed) // 2], coding))
        writer.submit(ResponseEvent(
            flow_id=f"req-{coding}", status=200, reason="OK", http_version="HTTP/1.1",
            headers=[("content-type", "application/json")], body_in=b"{}", body_out=b"{}", streamed=False,
            ts_headers=time.time(), ts_first_byte=None, ts_end=time.time(), chunked=False))
    events = b"".join(b'data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"%s"}}\n\n'
                      % os.urandom(60).hex().encode() for _ in range(300))
    events = events.replace(b'"text":"', b'"text":"key ' + SECRET.encode() + b' ', 1)
    packed = gzip.compress(events)
    writer.submit(_request("stream", b"{}", "identity"))
    writer.send(StreamStart("stream", "text/event-stream", "gzip"))
    cut = packed[: len(packed) * 2 // 3]
    for i in range(0, len(cut), 5000):
        writer.send(ResponseChunk("stream", cut[i : i + 5000]))
    writer.submit(ResponseEvent(
        flow_id="stream", status=200, reason="OK", http_version="HTTP/1.1",
        headers=[("content-type", "text/event-stream"), ("content-encoding", "gzip")], body_in=None, body_out=None,
        streamed=True, ts_headers=time.time(), ts_first_byte=None, ts_end=time.time(), chunked=True,
        error="Server disconnected.")).result(30)
    writer.close()
    finalize(out)
    cap = Capture.open(out)
    flows = {f["flow_id"]: f for f in cap.flows().to_pylist()}
    for coding in ("gzip", "br", "zstd"):
        flow = flows[f"req-{coding}"]
        stored = cap.body(flow["request_body_id"])
        assert SECRET.encode() not in _readable(stored), coding
        assert stored.startswith(b'{"model": "claude-sonnet-4-5"') and b"[REDACTED:" in stored
        assert flow["request_decode_status"].startswith(f"error: {coding}: the compressed stream ends")
    stream = flows["stream"]
    stored = cap.body(stream["response_body_id"])
    assert SECRET.encode() not in _readable(stored)
    assert stored.startswith(b"data: ") and b"[REDACTED:" in stored
    assert stream["response_decode_status"].startswith("error: gzip: the compressed stream ends")


def _sse_with_split_secret() -> bytes:
    """A streamed Messages response whose key arrives in pieces across text deltas."""
    pieces = [os.urandom(40).hex() for _ in range(400)]
    pieces[200:203] = ["key sk-ant-api03-", SECRET[len("sk-ant-api03-"):60], SECRET[60:] + " done"]
    return b"".join(b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
                    b'"delta":{"type":"text_delta","text":"%s"}}\n\n' % p.encode() for p in pieces)


@pytest.mark.parametrize("name", list(COMPRESS))
def test_a_compressed_stream_is_decoded_and_redacted_as_it_arrives(tmp_path, name):
    """The same events stored the same whether they came compressed or not; the writer holds no
    compressed bytes once they decode (before, it kept the whole stream until its end)."""
    coding = HEADER.get(name, name)
    events = _sse_with_split_secret()
    out = tmp_path / "cap"
    writer = CaptureWriter(out, KEY, Manifest(capture_id="streams"))
    packed_wire = COMPRESS[name](events)
    for flow_id, encoding, wire in (("plain", None, events), ("packed", coding, packed_wire)):
        writer.submit(_request(flow_id, b"{}", "identity"))
        writer.send(StreamStart(flow_id, "text/event-stream", encoding))
        for i in range(0, len(wire), 3000):
            writer.send(ResponseChunk(flow_id, wire[i : i + 3000]))
            if flow_id == "packed":
                writer.flush()
                stream = writer._streams[flow_id]
                # reads are kept only until the body first decodes (a zstd block decodes whole)
                assert (stream.raw == []) == (stream.decoder.size > 0)
        if flow_id == "packed":
            assert writer._streams[flow_id].raw == []
        headers = [("content-type", "text/event-stream")] + ([("content-encoding", encoding)] if encoding else [])
        writer.submit(ResponseEvent(
            flow_id=flow_id, status=200, reason="OK", http_version="HTTP/1.1", headers=headers, body_in=None,
            body_out=None, streamed=True, ts_headers=time.time(), ts_first_byte=None, ts_end=time.time(),
            chunked=True)).result(30)
    writer.close()
    finalize(out)
    cap = Capture.open(out)
    flows = {f["flow_id"]: f for f in cap.flows().to_pylist()}
    plain, packed = flows["plain"], flows["packed"]
    stored = cap.body(packed["response_body_id"])
    assert stored == cap.body(plain["response_body_id"]) and SECRET[20:40].encode() not in stored
    assert b"[REDACTED:" in stored
    assert packed["response_decode_status"] == "decoded" and packed["response_bytes"] == len(events)
    assert packed["response_bytes_wire"] == len(packed_wire)
    assert packed["redactions"] == plain["redactions"]


def test_a_stream_that_never_decodes_is_kept_as_received(tmp_path):
    out = tmp_path / "cap"
    writer = CaptureWriter(out, KEY, Manifest(capture_id="garbage"))
    blob = b"data: not actually gzip\n\n" * 400
    writer.submit(_request("s", b"{}", "identity"))
    writer.send(StreamStart("s", "text/event-stream", "gzip"))
    for i in range(0, len(blob), 1000):
        writer.send(ResponseChunk("s", blob[i : i + 1000]))
    writer.submit(ResponseEvent(
        flow_id="s", status=200, reason="OK", http_version="HTTP/1.1",
        headers=[("content-type", "text/event-stream"), ("content-encoding", "gzip")], body_in=None, body_out=None,
        streamed=True, ts_headers=time.time(), ts_first_byte=None, ts_end=time.time(), chunked=True)).result(30)
    writer.close()
    finalize(out)
    cap = Capture.open(out)
    (flow,) = [f for f in cap.flows().to_pylist() if f["flow_id"] == "s"]
    assert cap.body(flow["response_body_id"]) == blob
    status = flow["response_decode_status"]
    assert status.startswith("error: gzip: invalid data") and "kept" not in status


@pytest.mark.parametrize("name", list(COMPRESS))
def test_a_stream_decodes_the_same_whatever_its_reads(name):
    """Reads cut anywhere (single bytes, member and frame boundaries, trailing padding) decode to
    the same bytes as the whole body, and end without a fault."""
    from ctxtap.capture.decode import StreamDecoder

    rng = random.Random(7)
    coding = HEADER.get(name, name)
    parts = [_body(30), _body(20)]
    if name in ("gzip", "zstd"):  # two members / frames, and gzip's tolerated zero padding
        wire = COMPRESS[name](parts[0]) + COMPRESS[name](parts[1]) + (b"\0" * 5 if name == "gzip" else b"")
        expected = parts[0] + parts[1]
    else:
        wire, expected = COMPRESS[name](parts[0]), parts[0]
    for sizes in ([1] * 64 + [len(wire)], [rng.randint(1, 700) for _ in range(len(wire))]):
        decoder = StreamDecoder(coding)
        out, pos = [], 0
        for size in sizes:
            if pos >= len(wire):
                break
            out.append(decoder.feed(wire[pos : pos + size]))
            pos += size
        assert b"".join(out) == expected and decoder.finish() is None and decoder.size == len(expected)
