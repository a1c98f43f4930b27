"""The capture writer on its own: integrity flags, metadata-only flows, recovery of a torn spool."""

from __future__ import annotations

import io
import json
import os
import sys
import time

import pytest

from ctxtap.capture.events import RequestEvent, ResponseChunk, ResponseEvent, StreamStart
from ctxtap.capture.finalize import finalize
from ctxtap.capture.manifest import Manifest
from ctxtap.capture.store import Capture
from ctxtap.capture.writer import CaptureWriter

KEY = b"k" * 32


def _request(flow_id: str, seq: int, body_in: bytes, body_out: bytes, model: bool = True) -> RequestEvent:
    return RequestEvent(
        flow_id=flow_id, seq=seq, record_full=model, is_model=model, provider="anthropic" if model else "unknown",
        api="messages" if model else "other", endpoint="generate", websocket=False, method="POST", scheme="https",
        host="api.anthropic.com" if model else "telemetry.example.com", port=443,
        path="/v1/messages?key=sk-ant-api03-" + "S" * 80, url="https://api.anthropic.com/v1/messages",
        upstream_url=None, http_version="HTTP/1.1",
        headers=[("x-api-key", "sk-ant-api03-" + "S" * 80), ("content-type", "application/json")],
        body_in=body_in, body_out=body_out, ts_start=time.time(), ts_end=time.time(),
    )


def _response(flow_id: str, body: bytes | None, chunked: bool = False) -> ResponseEvent:
    return ResponseEvent(flow_id=flow_id, status=200, reason="OK", http_version="HTTP/1.1",
                         headers=[("content-type", "text/event-stream" if chunked else "application/json")],
                         body_in=body, body_out=body, streamed=chunked, ts_headers=time.time(),
                         ts_first_byte=None, ts_end=time.time(), chunked=chunked)


def test_integrity_flag_metadata_mode_and_streamed_segments(tmp_path):
    out = tmp_path / "cap"
    writer = CaptureWriter(out, KEY, Manifest(capture_id="t1"))
    writer.submit(_request("same", 0, b'{"a": 1}', b'{"a": 1}'))
    writer.submit(_response("same", b"{}"))
    writer.submit(_request("altered", 1, b'{"a": 1}', b'{"a": 2}'))
    writer.submit(_response("altered", b"{}"))
    writer.submit(_request("telemetry", 2, b'{"event": "x"}', b'{"event": "x"}', model=False))
    writer.submit(_response("telemetry", b'{"ok": true}'))
    # a streamed response whose secret sits inside one event, far past the first segment
    writer.submit(_request("stream", 3, b"{}", b"{}"))
    writer.send(StreamStart("stream", "text/event-stream", None))
    events = [f'data: {{"i": {i}, "pad": "{"x" * 900}"}}\n\n'.encode() for i in range(200)]
    events[150] = b'data: {"text": "OPENAI_API_KEY=sk-proj-' + b"Q" * 60 + b'"}\n\n'
    stream = b"".join(events)
    for i in range(0, len(stream), 7000):  # network reads cut anywhere, even inside the secret
        writer.send(ResponseChunk("stream", stream[i:i + 7000]))
    writer.submit(_response("stream", None, chunked=True)).result(10)
    writer.close()
    manifest = finalize(out)
    cap = Capture.open(out)
    flows = {f["flow_id"]: f for f in cap.flows().to_pylist()}
    assert flows["same"]["integrity_ok"] is True
    assert flows["altered"]["integrity_ok"] is False and manifest.counts["integrity_mismatches"] == 1
    tel = flows["telemetry"]
    assert tel["record_mode"] == "metadata" and tel["request_body_id"] is None and tel["request_headers"] is None
    assert tel["request_bytes_wire"] == len(b'{"event": "x"}') and tel["status"] == 200
    stored = cap.body(flows["stream"]["response_body_id"])
    assert b"Q" * 60 not in stored and b"[REDACTED:" in stored
    assert flows["stream"]["response_bytes_wire"] == len(stream) and flows["stream"]["streamed"]
    assert stored.count(b"data: ") == 200
    assert "S" * 80 not in json.dumps(list(flows.values()), default=str)


def test_torn_spool_is_recovered_by_the_next_reader(tmp_path):
    out = tmp_path / "cap"
    writer = CaptureWriter(out, KEY, Manifest(capture_id="t2"))
    for i in range(5):
        writer.submit(_request(f"f{i}", i, b'{"n": %d}' % i, b'{"n": %d}' % i))
        writer.submit(_response(f"f{i}", b"{}"))
    writer.flush()
    writer.close()  # the recorder "died" here: no finalize
    spool = out / "spool" / "spool.ctxs"
    with open(spool, "ab") as fh:
        fh.write(b"CTXS\x00\x00")  # a frame torn mid-write
    cap = Capture.open(out)
    assert cap.manifest.recovered and cap.manifest.status == "finalized"
    assert cap.manifest.spool_bytes_dropped == 6
    assert [f["state"] for f in cap.flows().to_pylist()] == ["complete"] * 5


def test_writer_child_records_without_pyarrow_and_finalizes_at_the_end(tmp_path):
    """The writer child stays lean while recording: the Parquet writer (pyarrow) is loaded only
    for the final write, and a flow handed to it still ends up in the finalized capture."""
    import asyncio
    import re
    from pathlib import Path

    from ctxtap.capture.writer_proc import ProcessWriter

    directory = tmp_path / "cap"
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "x" * 100_000}]}).encode()

    async def record() -> tuple[str, int]:
        writer = ProcessWriter(directory, b"k" * 32, {"capture_id": "lean-writer"})
        await writer.submit(_request("f1", 1, body, body))
        await writer.submit(_response("f1", b'{"ok": true}'))
        maps = Path(f"/proc/{writer._proc.pid}/maps").read_text()
        return maps, writer.close(finalize=True)

    maps, code = asyncio.run(record())
    assert code == 0
    assert not re.search(r"arrow|duckdb", maps), "the writer child loaded pyarrow or duckdb while recording"
    capture = Capture.open(directory)
    assert capture.manifest.status == "finalized"
    assert [ex.flow_id for ex in capture.exchanges()] == ["f1"]


def test_a_prespawned_writer_child_serves_the_next_capture(tmp_path):
    """`prespawn` starts the next capture's child ahead (experiments switch captures between
    runs); the next ProcessWriter takes it, and a second writer without a spare starts its own."""
    import asyncio

    from ctxtap.capture import writer_proc

    writer_proc.prespawn()
    spare_pid = writer_proc._spare.pid

    async def record(directory, flow_id) -> tuple[int, int]:
        writer = writer_proc.ProcessWriter(directory, b"k" * 32, {"capture_id": flow_id})
        await writer.submit(_request(flow_id, 1, b"{}", b"{}"))
        await writer.submit(_response(flow_id, b'{"ok": true}'))
        return writer._proc.pid, writer.close(finalize=True)

    first_pid, code = asyncio.run(record(tmp_path / "a", "a1"))
    assert first_pid == spare_pid and code == 0 and writer_proc._spare is None
    second_pid, code = asyncio.run(record(tmp_path / "b", "b1"))
    assert second_pid != spare_pid and code == 0
    for name, flow in (("a", "a1"), ("b", "b1")):
        assert [ex.flow_id for ex in Capture.open(tmp_path / name).exchanges()] == [flow]
    writer_proc.prespawn()
    spare = writer_proc._spare
    writer_proc.discard_spare()
    assert spare.poll() is not None and writer_proc._spare is None


def test_the_writer_pipe_takes_a_streamed_batch_in_one_read(tmp_path):
    """The proxy's pipe to its writer child is widened to 1 MiB where Linux allows it, so a 256 KiB
    stream batch is one read for the child, not four each waiting for the redacting thread's GIL."""
    import asyncio
    import fcntl
    from pathlib import Path

    from ctxtap.capture import writer_proc

    limit = int(Path("/proc/sys/fs/pipe-max-size").read_text())

    async def record() -> int:
        writer = writer_proc.ProcessWriter(tmp_path / "cap", b"k" * 32, {"capture_id": "pipe"})
        size = fcntl.fcntl(writer._out, fcntl.F_GETPIPE_SZ)
        await writer.submit(_request("f1", 1, b"{}", b"{}"))
        writer.close(finalize=True)
        return size

    assert asyncio.run(record()) == min(writer_proc.PIPE_BYTES, limit)


def test_the_writer_childs_redacting_thread_yields_to_forwarding(tmp_path):
    """Only the child's redacting thread runs below the proxy's priority (WRITER_NICE steps): the
    thread that takes frames from the pipe keeps it, so the proxy never waits on a pipe left
    unread, and the redacting work waits for a free core instead of taking one from forwarding.
    It still writes everything it was handed."""
    import asyncio
    import os

    from ctxtap.capture import writer_proc

    base = os.getpriority(os.PRIO_PROCESS, 0)

    def nice_values(pid: int) -> list[int]:
        """Each thread's nice value (Linux takes a thread id for PRIO_PROCESS)."""
        return sorted(os.getpriority(os.PRIO_PROCESS, int(tid)) for tid in os.listdir(f"/proc/{pid}/task"))

    async def record() -> list[int]:
        writer = writer_proc.ProcessWriter(tmp_path / "cap", b"k" * 32, {"capture_id": "nice"})
        await writer.submit(_request("f1", 1, b"{}", b"{}"))
        await writer.submit(_response("f1", b'{"ok": true}'))
        values = nice_values(writer._proc.pid)
        assert writer.close(finalize=True) == 0
        return values

    values = asyncio.run(record())
    lowered = min(19, base + writer_proc.WRITER_NICE)
    assert values.count(lowered) == 1, values
    assert values.count(base) == len(values) - 1, values
    assert [ex.flow_id for ex in Capture.open(tmp_path / "cap").exchanges()] == ["f1"]


def test_a_batch_of_reads_crosses_the_pipe_out_of_band_and_in_order():
    """The recorder hands a stream batch over as its list of reads (no join in the proxy): each big
    read travels beside the pickle, not inside it, and the child gets the same pieces in order."""
    import io

    from ctxtap.capture import writer_proc

    pieces = [b"a" * 10_000, b"tiny", b"b" * 5_000, b"", b"c" * 70_000]
    parts = writer_proc._frame((0, ResponseChunk("f1", pieces)))
    pickled = parts[3]  # total length, pickle length, pickle, then each buffer
    assert len(pickled) < 1_000, "the reads were copied into the pickle"
    frame = b"".join(bytes(p) for p in parts)
    kind, event = writer_proc._read_frame(io.BytesIO(frame))
    assert kind == 0 and event.flow_id == "f1" and event.pieces() == pieces
    assert writer_proc._event_size(event) == 256 + sum(map(len, pieces))


class _CountingPipe(io.RawIOBase):
    """A pipe's read end: hands out at most `cut` bytes per read, and counts the reads."""

    def __init__(self, data: bytes, cut: int) -> None:
        self._data, self._pos, self._cut, self.reads = data, 0, cut, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:
        self.reads += 1
        n = min(len(buf), self._cut, len(self._data) - self._pos)
        buf[:n] = self._data[self._pos : self._pos + n]
        self._pos += n
        return n


def test_a_streamed_batch_is_read_whole_in_few_reads_and_a_big_body_in_its_own_pieces():
    """Each read of the pipe hands the GIL back to the redacting thread and waits for it again:
    a batch of sixteen reads cost the child thirty-odd such waits, a fifth of its CPU on a big
    stream. A batch is now read whole (two reads where the pipe holds it), its pieces come out
    as the same bytes in order; a frame bigger than `WHOLE_FRAME_BYTES` is read body by body;
    a frame cut short reads as the end of the pipe."""
    from ctxtap.capture import writer_proc

    batch = [bytes([65 + i]) * 16_384 for i in range(16)]
    big = [b"x" * (writer_proc.WHOLE_FRAME_BYTES + 1), b"tail" * 2_000]
    for pieces, most_reads in ((batch, 2), (big, None)):
        frame = b"".join(bytes(p) for p in writer_proc._frame((0, ResponseChunk("f1", pieces))))
        for cut in (len(frame), 1_000):
            pipe = _CountingPipe(frame, cut)
            kind, event = writer_proc._read_frame(io.BufferedReader(pipe))
            assert kind == 0 and event.pieces() == pieces and all(type(p) is bytes for p in event.pieces())
            if most_reads and cut == len(frame):
                assert pipe.reads <= most_reads
        assert writer_proc._read_frame(io.BufferedReader(_CountingPipe(frame[:-1], len(frame)))) is None
        assert writer_proc._read_frame(io.BufferedReader(_CountingPipe(frame[:5], len(frame)))) is None


def test_a_finished_stream_keeps_no_second_copy_of_its_body():
    """`_Stream.finish_body` hands the body over and keeps nothing of it, so a streamed body is
    held once (not twice) while it is hashed, compressed and spooled."""
    from ctxtap.capture.bodies import BodyEncoder
    from ctxtap.capture.writer import _Stream
    from ctxtap.redaction import Redactor

    for content_type in ("text/event-stream", "application/x-ndjson"):
        stream = _Stream(content_type, None, Redactor(KEY), BodyEncoder().streamed())
        data = b'data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}\n\n' * 2000
        for i in range(0, len(data), 70_000):
            stream.feed([data[i:i + 70_000]])
        body = stream.finish_body()
        assert b"".join(body.parts) == data and body.size == len(data) and not stream.pending


def test_big_streams_are_held_compressed_not_whole(tmp_path, monkeypatch):
    """Past a delta base's size a streamed body is compressed as it is released: the writer holds
    its compressed size, not its size (it held every piece until the stream ended: 100 MB of
    stream, 100 MB of writer). Two such streams at once, with other bodies stored between their
    reads, each read back exactly, with the digest of their bytes."""
    import hashlib
    import tracemalloc

    import pyarrow.parquet as pq

    from ctxtap.capture import bodies
    from ctxtap.capture.finalize import BODIES_FILE

    monkeypatch.setattr(bodies, "MAX_BASE_BYTES", 1 << 20)
    secret = "sk-proj-" + "Q7x" * 20

    def events(tag: str) -> list[bytes]:
        out = [b"data: " + json.dumps({"type": "content_block_delta", "index": 0, "delta": {
            "type": "text_delta", "text": f"{tag} {i}: the quick brown fox jumps over the lazy dog. " * 20}}).encode()
            + b"\n\n" for i in range(20_000)]  # about 23 MB
        out[10_000] = out[10_000].replace(f"{tag} 10000".encode(), b"key " + secret.encode())
        return out

    streams = {"a": events("alpha"), "b": events("beta")}
    size = sum(len(e) for evs in streams.values() for e in evs)
    out = tmp_path / "cap"
    writer = CaptureWriter(out, KEY, Manifest(capture_id="big-streams"))
    for n, name in enumerate(streams):
        writer.submit(_request(name, n, b"{}", b"{}")).result()
        writer.send(StreamStart(name, "text/event-stream", None))
    tracemalloc.start()
    for i in range(0, 20_000, 64):
        for name, evs in streams.items():
            writer.send(ResponseChunk(name, evs[i:i + 64]))
        if i % 1280 == 0:  # other flows' bodies stored while both streams are arriving
            body = json.dumps({"n": i, "messages": ["x" * 5000]}).encode()
            writer.submit(_request(f"r{i}", 10 + i, body, body)).result()
    for name in streams:
        writer.submit(_response(name, None, chunked=True)).result()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < size // 4, (peak, size)
    writer.close()
    finalize(out)
    cap = Capture.open(out)
    digests = {r["body_id"]: r["sha256"] for r in pq.read_table(out / BODIES_FILE).to_pylist()}
    flows = {f["flow_id"]: f for f in cap.flows().to_pylist()}
    for name, evs in streams.items():
        flow = flows[name]
        body = cap.body(flow["response_body_id"])
        start = body.index(b"[REDACTED:")
        placeholder = body[start:body.index(b"]", start) + 1]
        assert secret.encode() not in body
        assert body.replace(placeholder, b"") == b"".join(evs).replace(secret.encode(), b"")
        assert flow["response_bytes"] == sum(map(len, evs))
        assert digests[flow["response_body_id"]] == hashlib.sha256(body).hexdigest()


def test_a_download_recorded_as_metadata_is_only_hashed_and_counted(tmp_path):
    """A chunked response of a metadata-only flow (a repository or a package an agent fetches
    through the proxy) was decoded, redacted and held like a model's answer, then thrown away:
    hundreds of megabytes of a git pack through the redactor. Now only its digest and size are
    kept, as the row needs; a model flow's stream beside it is still redacted and stored."""
    import hashlib
    import tracemalloc

    out = tmp_path / "cap"
    writer = CaptureWriter(out, KEY, Manifest(capture_id="downloads"))
    seen = []
    redact_bytes = writer.redactor.redact_bytes
    writer.redactor.redact_bytes = lambda data: seen.append(len(data)) or redact_bytes(data)
    pack = bytes(range(256)) * 4096 + b"token=sk-ant-api03-" + b"S" * 80 + b"\n"  # 1 MiB and a line
    writer.submit(_request("pack", 0, b"", b"", model=False)).result()
    writer.send(StreamStart("pack", "application/x-git-upload-pack-result", None))
    writer.submit(_request("model", 1, b"{}", b"{}")).result()
    writer.send(StreamStart("model", "application/x-ndjson", None))
    tracemalloc.start()
    for _ in range(40):
        writer.send(ResponseChunk("pack", [pack]))
        writer.send(ResponseChunk("model", [b'{"text": "hello"}\n' * 100]))
    for name in ("pack", "model"):
        writer.submit(ResponseEvent(flow_id=name, status=200, reason="OK", http_version="HTTP/1.1",
                                    headers=[("transfer-encoding", "chunked")], body_in=None, body_out=None,
                                    streamed=True, ts_headers=time.time(), ts_first_byte=None,
                                    ts_end=time.time(), chunked=True)).result()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    writer.close()
    finalize(out)
    flows = {f["flow_id"]: f for f in Capture.open(out).flows().to_pylist()}
    pack_flow, model_flow = flows["pack"], flows["model"]
    assert pack_flow["record_mode"] == "metadata" and pack_flow["response_body_id"] is None
    assert pack_flow["response_bytes_wire"] == 40 * len(pack)
    assert pack_flow["response_sha256_upstream"] == hashlib.sha256(pack * 40).hexdigest()
    assert model_flow["response_body_id"] is not None
    assert sum(seen) < len(pack), "the download went through the redactor"
    assert peak < 4 << 20, peak


def test_the_proxy_holds_a_bounded_queue_when_the_child_falls_behind(tmp_path, monkeypatch, caplog):
    """Frames waiting for a full pipe stay under MAX_QUEUED_BYTES: past it the proxy waits for the
    child instead of holding ever more of a big stream; the whole body still reaches the capture."""
    import asyncio

    from ctxtap.capture import writer_proc

    monkeypatch.setattr(writer_proc, "MAX_QUEUED_BYTES", 4 << 20)
    delta = json.dumps({"type": "content_block_delta", "index": 0,
                        "delta": {"type": "text_delta", "text": "The quick brown fox. " * 390}})
    event = f"event: content_block_delta\ndata: {delta}\n\n".encode()
    batch = [event] * 32  # about 256 KiB: one recorder batch of reads
    batches = 400  # about 100 MB: more than the child's backlog and the pipe hold

    async def record() -> tuple[int, int]:
        writer = writer_proc.ProcessWriter(tmp_path / "cap", b"k" * 32, {"capture_id": "bounded"})
        await writer.submit(_request("s", 1, b"{}", b"{}"))
        writer.send(StreamStart("s", "text/event-stream", None))
        most = 0
        for _ in range(batches):
            writer.send(ResponseChunk("s", list(batch)))
            most = max(most, writer._queued - writer._written)
            await asyncio.sleep(0)  # the event loop runs (its flushes too) between reads
        await writer.submit(_response("s", None, chunked=True))
        assert writer.close(finalize=True) == 0
        return most, writer.waits

    most, waits = asyncio.run(record())
    frame = sum(map(len, batch)) + 4096
    assert waits > 0 and most <= writer_proc.MAX_QUEUED_BYTES + frame, (most, waits)
    assert sum("forwarding waits for it" in m for m in caplog.messages) == 1  # said once, not per wait
    (ex,) = Capture.open(tmp_path / "cap").exchanges()
    assert ex.response_body == event * (32 * batches)


class _Taken:
    """Takes the place of the CaptureWriter behind `_HeldChunks`: records what it is handed, each
    event done at once (so the backlog's share is given back at once)."""

    def __init__(self) -> None:
        self.events: list = []

    def submit(self, event):
        import concurrent.futures

        self.events.append(event)
        fut = concurrent.futures.Future()
        fut.set_result(None)
        return fut


def test_a_streams_chunks_wait_while_it_flows_oldest_first_past_the_bound():
    """The writer child holds a stream's chunks instead of redacting them while more keep coming
    (its CPU would be forwarding's loss on busy cores): nothing is handed over below the bound, the
    oldest first past it, everything in order on release, and the backlog's count is given back."""
    from ctxtap.capture import writer_proc

    taken = _Taken()
    backlog = writer_proc._Backlog(1 << 20)
    chunks = [ResponseChunk("s", bytes([65 + i]) * 3000) for i in range(6)]
    size = writer_proc._event_size(chunks[0])
    held = writer_proc._HeldChunks(taken, backlog, limit=3 * size)
    for chunk in chunks[:3]:
        held.add(chunk, size)
    assert taken.events == [] and held and held.used == 3 * size
    held.add(chunks[3], size)
    held.add(chunks[4], size)
    assert taken.events == chunks[:2] and held.used == 3 * size
    held.add(chunks[5], size)
    held.release()
    assert taken.events == chunks and not held and held.used == 0 and backlog.used == 0
    held.add(ResponseChunk("big", b"x" * (8 * size)), 8 * size)  # one chunk over the bound waits alone
    assert taken.events == chunks and held.used == 8 * size


def _redacting_cpu(pid: int) -> float:
    """CPU seconds of a writer child's redacting thread (the one below the process's priority)."""
    base = os.getpriority(os.PRIO_PROCESS, pid)
    for tid in os.listdir(f"/proc/{pid}/task"):
        if os.getpriority(os.PRIO_PROCESS, int(tid)) > base:
            fields = open(f"/proc/{pid}/task/{tid}/stat").read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    raise AssertionError("no redacting thread below the child's priority")


def test_the_writer_child_takes_up_held_chunks_when_the_stream_pauses(tmp_path):
    """Held chunks are redacted in the stream's first pause, not only at its end: the child's
    redacting thread has done the work while the response is still open; the body is whole."""
    import asyncio

    from ctxtap.capture import writer_proc

    delta = json.dumps({"type": "content_block_delta", "index": 0,
                        "delta": {"type": "text_delta", "text": "The quick brown fox. " * 390}})
    event = f"event: content_block_delta\ndata: {delta}\n\n".encode()
    batch = [event] * 32  # about 256 KiB: one recorder batch of reads

    async def record() -> float:
        writer = writer_proc.ProcessWriter(tmp_path / "cap", b"k" * 32, {"capture_id": "pause"})
        await writer.submit(_request("s", 1, b"{}", b"{}"))
        writer.send(StreamStart("s", "text/event-stream", None))
        await asyncio.sleep(0.5)
        before = _redacting_cpu(writer._proc.pid)
        for _ in range(40):  # about 10 MB, then the stream pauses with its response still open
            writer.send(ResponseChunk("s", list(batch)))
            await asyncio.sleep(0)
        worked, deadline = 0.0, time.monotonic() + 30
        while worked < 0.03 and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
            worked = _redacting_cpu(writer._proc.pid) - before
        await writer.submit(_response("s", None, chunked=True))
        assert writer.close(finalize=True) == 0
        return worked

    assert asyncio.run(record()) >= 0.03
    (ex,) = Capture.open(tmp_path / "cap").exchanges()
    assert ex.response_body == event * (32 * 40)


def test_a_stream_that_keeps_coming_is_held_until_it_pauses(tmp_path):
    """A fast stream's batches (the recorder's CHUNK_BATCH each, 50 MB/s: one every 20 ms) wait in the
    child while they keep coming: its redacting thread, whose CPU is forwarding's loss on two busy
    cores, does nothing until the stream pauses; then it redacts them all, and the body is whole.
    With a quiet time shorter than the gap between two batches, each batch looked like a pause."""
    import asyncio

    from ctxtap.capture import writer_proc
    from ctxtap.proxy_addons.recorder import CHUNK_BATCH

    delta = json.dumps({"type": "content_block_delta", "index": 0,
                        "delta": {"type": "text_delta", "text": "The quick brown fox. " * 390}})
    event = f"event: content_block_delta\ndata: {delta}\n\n".encode()
    batch = [event] * (CHUNK_BATCH // len(event) + 1)

    async def record() -> tuple[float, float]:
        writer = writer_proc.ProcessWriter(tmp_path / "cap", b"k" * 32, {"capture_id": "fast"})
        await writer.submit(_request("s", 1, b"{}", b"{}"))
        writer.send(StreamStart("s", "text/event-stream", None))
        await asyncio.sleep(0.5)
        pid = writer._proc.pid
        before = _redacting_cpu(pid)
        for _ in range(12):
            writer.send(ResponseChunk("s", list(batch)))
            await asyncio.sleep(0.02)
        during = _redacting_cpu(pid) - before
        worked, deadline = during, time.monotonic() + 30
        while worked < 0.05 and time.monotonic() < deadline:  # the pause: now it redacts
            await asyncio.sleep(0.1)
            worked = _redacting_cpu(pid) - before
        await writer.submit(_response("s", None, chunked=True))
        assert writer.close(finalize=True) == 0
        return during, worked

    during, worked = asyncio.run(record())
    assert during < 0.05 <= worked, (during, worked)
    (ex,) = Capture.open(tmp_path / "cap").exchanges()
    assert ex.response_body == b"".join(batch) * 12


@pytest.mark.parametrize("shared", [True, False], ids=["ring", "pipe only"])
def test_a_stream_through_the_writer_childs_ring_is_whole_and_redacted(tmp_path, monkeypatch, shared):
    """A stream many times the size of the shared-memory ring (`capture.ring`): batches go through the
    ring where the child has freed room and through the pipe where not, or all through the pipe where
    there is no ring; the body is the same, a key cut between two batches is redacted."""
    import asyncio

    from ctxtap.capture import ring, writer_proc

    if shared and not sys.platform.startswith("linux"):
        pytest.skip("the ring needs a memfd (Linux)")
    monkeypatch.setattr(ring, "RING_BYTES", 1 << 20)
    if not shared:
        monkeypatch.setattr(ring, "create", lambda size: None)
    key = "sk-proj-" + "Q7x" * 20
    events = [b"data: " + json.dumps({"type": "content_block_delta", "index": 0, "delta": {
        "type": "text_delta", "text": f"line {i} " + "The quick brown fox. " * 40}}).encode() + b"\n\n"
        for i in range(6000)]
    events[3000] = b"data: " + json.dumps({"delta": {"text": f"OPENAI_API_KEY={key} done"}}).encode() + b"\n\n"
    stream = b"".join(events)
    cut = stream.index(key.encode()) + 10

    async def record() -> int:
        writer = writer_proc.ProcessWriter(tmp_path / "cap", b"k" * 32, {"capture_id": "ring"})
        await writer.submit(_request("s", 1, b"{}", b"{}"))
        writer.send(StreamStart("s", "text/event-stream", None))
        for start in range(0, len(stream), 200_000):
            end = min(len(stream), start + 200_000)
            if start < cut < end:  # the key in two batches
                writer.send(ResponseChunk("s", [stream[start:cut]]))
                start = cut
            writer.send(ResponseChunk("s", [stream[start:end][i:i + 8192] for i in range(0, end - start, 8192)]))
            await asyncio.sleep(0.001)  # the event loop reads the child's acknowledgements
        await writer.submit(_response("s", None, chunked=True))
        carried = writer._ring.carried if writer._ring is not None else 0
        assert writer.close(finalize=True) == 0
        return carried

    carried = asyncio.run(record())
    assert (carried > 2 * ring.RING_BYTES) if shared else carried == 0
    (ex,) = Capture.open(tmp_path / "cap").exchanges()
    body = ex.response_body
    assert key.encode() not in body and key[:18].encode() not in body
    placeholder = body[body.index(b"[REDACTED:"):body.index(b"]", body.index(b"[REDACTED:")) + 1]
    assert body.replace(placeholder, key.encode()) == stream


def test_the_quiet_check_sees_a_frame_waiting_in_the_pipe():
    """`_quiet` (when held chunks are taken up) is true of an empty pipe and false once a frame waits."""
    from ctxtap.capture import writer_proc

    read, write = os.pipe()
    try:
        with open(read, "rb", closefd=False) as stream:
            assert writer_proc._quiet(stream, 0.01)
            os.write(write, b"frame")
            assert not writer_proc._quiet(stream, 0.01)
    finally:
        os.close(read)
        os.close(write)


def test_every_stored_stream_body_has_the_digest_of_its_bytes(tmp_path, monkeypatch):
    """A stream the redactor left as it was is stored with the digest of the wire bytes (not hashed
    again); one it changed, with the digest of what was stored. Both, small and big (hashed piece by
    piece), with secrets whole in one event, split across events, or none."""
    import hashlib

    import pyarrow.parquet as pq

    from ctxtap.capture import bodies
    from ctxtap.capture.finalize import BODIES_FILE

    monkeypatch.setattr(bodies, "MAX_BASE_BYTES", 50_000)
    secret = "sk-proj-" + "Q7x" * 20

    def deltas(texts: list[str]) -> bytes:
        return b"".join(b"data: " + json.dumps({"type": "content_block_delta", "index": 0, "delta": {
            "type": "text_delta", "text": t}}).encode() + b"\n\n" for t in texts)

    filler = ["The quick brown fox. " * 40] * 100  # about 90 KB: past MAX_BASE_BYTES
    streams = {
        "clean-big": deltas(filler), "clean-small": deltas(filler[:3]),
        "whole-big": deltas(filler[:50] + [f"key {secret} here"] + filler[50:]),
        "split-big": deltas(filler[:50] + ["OPENAI_API_KEY=" + secret[:20], secret[20:] + " done"] + filler[50:]),
        "split-small": deltas(["OPENAI_API_KEY=" + secret[:20], secret[20:] + " done"]),
    }
    out = tmp_path / "cap"
    writer = CaptureWriter(out, KEY, Manifest(capture_id="digests"))
    for n, (name, data) in enumerate(streams.items()):
        writer.submit(_request(name, n, b"{}", b"{}"))
        writer.send(StreamStart(name, "text/event-stream", None))
        for i in range(0, len(data), 7000):
            writer.send(ResponseChunk(name, data[i:i + 7000]))
        writer.submit(_response(name, None, chunked=True)).result(10)
    writer.close()
    finalize(out)
    cap = Capture.open(out)
    digests = {r["body_id"]: r["sha256"] for r in pq.read_table(out / BODIES_FILE, columns=["body_id", "sha256"])
               .to_pylist()}
    for flow in cap.flows().to_pylist():
        body = cap.body(flow["response_body_id"])
        assert digests[flow["response_body_id"]] == hashlib.sha256(body).hexdigest(), flow["flow_id"]
        assert (body == streams[flow["flow_id"]]) == flow["flow_id"].startswith("clean"), flow["flow_id"]
        assert secret[:20].encode() not in body and secret[20:].encode() not in body


def test_a_stream_with_no_line_end_is_not_held_whole(monkeypatch):
    """A plain streamed body with no line end (a hostile single-line answer) was held whole until it
    ended; an SSE body with no blank line the same. Past a bound both are cut where no secret runs
    through, so what is held stays bounded; every byte is kept and each key is still redacted."""
    from ctxtap.capture import writer as writer_module
    from ctxtap.capture.bodies import BodyEncoder
    from ctxtap.capture.writer import _Stream
    from ctxtap.redaction import Redactor, streams

    monkeypatch.setattr(writer_module, "MAX_LINE_BYTES", 1 << 20)
    monkeypatch.setattr(streams, "MAX_EVENT_BYTES", 1 << 20)
    key = "sk-ant-api03-" + "Ln8" * 30 + "AA"
    text = b" ".join(b"word%d" % i if i % 40_000 else b"token=" + key.encode() for i in range(1, 700_000))
    for content_type, body in (("application/octet-stream", text), ("text/event-stream", b"data: " + text)):
        stream = _Stream(content_type, None, Redactor(KEY), BodyEncoder().streamed())
        held = 0
        for i in range(0, len(body), 65536):
            stream.feed([body[i:i + 65536]])
            held = max(held, len(stream.pending) + (stream.sse.held_bytes if stream.sse else 0))
        out = b"".join(stream.finish_body().parts)
        assert held < 3 << 20, (content_type, held)
        assert key.encode() not in out and out.count(b"[REDACTED:") == text.count(key.encode())
        placeholder = out[out.index(b"[REDACTED:"):out.index(b"]", out.index(b"[REDACTED:")) + 1]
        assert out.replace(placeholder, key.encode()) == body, content_type
