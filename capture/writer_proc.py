"""Run the capture writer in its own process, next to the proxy.

Redaction is regex work that holds Python's GIL; on the proxy's own process it
would stall the event loop that forwards streams. In a child process it runs on
another core while the proxy keeps forwarding. The child also holds the spool,
the writer lock and, at the end, the Parquet finalisation, so the proxy process
stays small.

Protocol over the child's stdin: frames of an 8-byte length, a pickle and the
bodies out of band. A flow is safe once its last frame is in the pipe: the
child ignores Ctrl-C and SIGTERM, and if the proxy dies it reads the pipe to
its end and writes everything it was handed before exiting (the next command
then recovers the capture). So the proxy holds a response's end only until
that frame has left its process, not until it is redacted and on disk; the
child's backlog is bounded, so a slow disk still slows the proxy down rather
than growing memory. The child's stdout stays open only so the proxy sees it exit.
"""

from __future__ import annotations

import collections
import dataclasses
import itertools
import logging
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the proxy side runs on asyncio; the child has no event loop and never imports it
    import asyncio

from ctxtap.capture import ring
from ctxtap.capture.events import ManifestNote, ResponseChunk, RingChunk

_LEN = struct.Struct(">Q")
_SAME = "<same as body_in>"
_ROOT = str(next(p for p in Path(__file__).resolve().parents if (p / "ctxtap" / "__init__.py").is_file()))
CLOSE = "close"
MAX_QUEUED_BYTES = 64 << 20  # frames the proxy holds for a child whose pipe is full, at most
MALLOC_MMAP = 1 << 20  # the child's glibc: buffers this big or bigger are mapped, returned when freed
MALLOC_TRIM = 16 << 20  # and up to this much free heap is kept for the next batch


def _out_of_band(event: object) -> object:
    """The event with its large bytes fields wrapped so pickle sends them out of band (no copy)."""
    if not dataclasses.is_dataclass(event) or isinstance(event, type):
        return event
    changes: dict = {}
    if getattr(event, "body_out", None) is not None and getattr(event, "body_out", None) is getattr(event, "body_in", None):
        changes["body_out"] = _SAME  # forwarded unchanged: send the body once
    for f in dataclasses.fields(event):
        value = getattr(event, f.name)
        if f.name in changes:
            continue
        if type(value) is bytes and len(value) > 4096:
            changes[f.name] = pickle.PickleBuffer(value)
        elif type(value) is list and any(type(v) is bytes and len(v) > 4096 for v in value):  # a batch of reads
            changes[f.name] = [pickle.PickleBuffer(v) if type(v) is bytes and len(v) > 4096 else v for v in value]
    return dataclasses.replace(event, **changes) if changes else event


def _restore(event: object) -> object:
    if getattr(event, "body_out", None) == _SAME:
        event.body_out = event.body_in  # the very same object, as on the proxy side
    return event


def _frame(obj: object) -> list:
    """A frame as a list of buffers: bodies travel out of band, never copied into the pickle.

    Layout: total length, pickle length, pickle, then for each buffer its length and bytes.
    """
    buffers: list[pickle.PickleBuffer] = []
    if isinstance(obj, tuple) and len(obj) == 2:
        obj = (obj[0], _out_of_band(obj[1]))
    data = pickle.dumps(obj, protocol=5, buffer_callback=buffers.append)
    parts: list = [_LEN.pack(len(data)), data]
    for buf in buffers:
        raw = buf.raw()
        parts += [_LEN.pack(raw.nbytes), raw]
    total = sum(len(p) if isinstance(p, bytes) else p.nbytes for p in parts)
    return [_LEN.pack(total), *parts]


def _write_frame(fh, obj: object) -> None:
    _write_all(fh.fileno(), _frame(obj))


def _write_all(fd: int, parts: list) -> None:
    views = [memoryview(p) for p in parts]
    while views:
        n = os.writev(fd, views[:512])
        while n and views:
            if n >= views[0].nbytes:
                n -= views[0].nbytes
                views.pop(0)
            else:
                views[0] = views[0][n:]
                n = 0


def _read_exact(fh, size: int) -> bytes | None:
    data = fh.read(size)
    return data if len(data) == size else None


def _read_len(fh) -> int | None:
    head = _read_exact(fh, _LEN.size)
    return None if head is None else _LEN.unpack(head)[0]


# Every read of the pipe gives the GIL back to the redacting thread and waits for it again: a
# streamed batch (a quarter megabyte in sixteen reads) is read whole, in one or two reads.
WHOLE_FRAME_BYTES = 4 << 20


def _read_frame(fh) -> object | None:
    """One frame. A frame of up to `WHOLE_FRAME_BYTES` is read whole, in as few reads as the pipe
    allows, and its bodies are sliced out of it; a bigger one reads each body straight into its
    own bytes object (no copy of a big body)."""
    total = _read_len(fh)
    if total is None:
        return None
    if total > WHOLE_FRAME_BYTES:
        return _read_frame_in_parts(fh, total)
    frame = bytearray(total)
    if fh.readinto(frame) != total:
        return None
    with memoryview(frame) as view:
        (plen,) = _LEN.unpack_from(view, 0)
        data = view[8 : 8 + plen]
        pos = 8 + plen
        buffers = []
        while pos < total:
            (blen,) = _LEN.unpack_from(view, pos)
            buffers.append(bytes(view[pos + 8 : pos + 8 + blen]))
            pos += 8 + blen
        obj = pickle.loads(data, buffers=buffers)
        data.release()
    if isinstance(obj, tuple) and len(obj) == 2:
        _restore(obj[1])
    return obj


def _read_frame_in_parts(fh, total: int) -> object | None:
    plen = _read_len(fh)
    data = _read_exact(fh, plen) if plen is not None else None
    if data is None:
        return None
    pos = 8 + plen
    buffers = []
    while pos < total:
        blen = _read_len(fh)
        buf = _read_exact(fh, blen) if blen is not None else None
        if buf is None:
            return None
        buffers.append(buf)
        pos += 8 + blen
    obj = pickle.loads(data, buffers=buffers)
    if isinstance(obj, tuple) and len(obj) == 2:
        _restore(obj[1])
    return obj


def _spawn() -> subprocess.Popen:
    """A writer child: it imports what recording needs, then waits for its capture's init frame."""
    env = dict(os.environ)
    env["PYTHONPATH"] = _ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    # Bodies of a megabyte or more pass through the child one after another. glibc raises its
    # mmap threshold after the first such buffer is freed and serves the next ones from a heap
    # it rarely gives back; a fixed threshold keeps big buffers mapped, returned when freed.
    # Below it, a streamed body's batches (a quarter megabyte, copied a few times each) come from
    # the heap, which keeps up to MALLOC_TRIM bytes free instead of handing them back after every
    # batch: mapping fresh pages for each copy was a third of the child's CPU on a 50 MB stream.
    env.setdefault("MALLOC_MMAP_THRESHOLD_", str(MALLOC_MMAP))
    env.setdefault("MALLOC_TRIM_THRESHOLD_", str(MALLOC_TRIM))
    fd = ring.create(ring.RING_BYTES)
    args = ["--ring", str(fd), str(ring.RING_BYTES)] if fd is not None else []
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "ctxtap.capture.writer_proc", *args], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, env=env, bufsize=0, pass_fds=(fd,) if fd is not None else (),
        )
        # the proxy's end of the ring (`capture.ring`); None: the pipe carries every chunk
        proc.ring = ring.RingWriter(fd, ring.RING_BYTES) if fd is not None else None  # type: ignore[attr-defined]
    finally:
        if fd is not None:
            os.close(fd)  # each process keeps its mapping
    _widen_pipe(proc.stdin.fileno())
    return proc


PIPE_BYTES = 1 << 20


def _widen_pipe(fd: int) -> None:
    """A 1 MiB pipe (Linux's default limit for any user) instead of 64 KiB: the child takes a
    streamed batch in one read, and the proxy rarely finds the pipe full."""
    try:
        import fcntl

        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    except (ImportError, AttributeError, OSError):
        pass  # another system, or a lower limit: the default pipe still works


_spare: subprocess.Popen | None = None
_spare_lock = threading.Lock()


def prespawn() -> None:
    """Start the next capture's writer child now, while a run goes on: one proxy recording many
    captures in turn (`ctxtap experiment run`) then switches without waiting for an interpreter
    and its imports. A spare never used exits on its own when this process closes its pipe."""
    global _spare
    with _spare_lock:
        if _spare is None or _spare.poll() is not None:
            _spare = _spawn()


def discard_spare() -> None:
    global _spare
    with _spare_lock:
        spare, _spare = _spare, None
    if spare is not None:
        spare.kill()
        spare.wait()
        if spare.ring is not None:
            spare.ring.close()


def _take_spare() -> subprocess.Popen | None:
    global _spare
    with _spare_lock:
        spare, _spare = _spare, None
    return spare if spare is not None and spare.poll() is None else None


class ProcessWriter:
    """The proxy's handle on a writer child process.

    Driven by the proxy's own event loop, with no threads: frames are written to a
    non-blocking pipe (what does not fit waits in a buffer flushed when the pipe is
    writable) and acknowledgements are read when readable. Forwarding never waits
    on a lock or hands the GIL to a helper thread.
    """

    def __init__(self, directory: Path, redaction_key: bytes, manifest: dict, telemetry: bool = False) -> None:
        """`manifest`: the Manifest fields; the child builds and owns the Manifest itself.
        `telemetry`: the child also runs the loopback OTLP receiver (`telemetry_endpoint`).

        Must be created on the event loop that will use it.
        """
        self.directory = directory
        self.manifest = manifest
        self._proc = _take_spare() or _spawn()
        self._ring: ring.RingWriter | None = self._proc.ring
        self._acks = bytearray()  # the child's acknowledgements of ring space, 8 bytes each
        _write_frame(self._proc.stdin, {"directory": str(directory), "key": redaction_key, "manifest": manifest,
                                        "telemetry": telemetry})
        ready = _read_frame(self._proc.stdout)
        ok = isinstance(ready, dict) and ready.get("ready")
        if self._ring is not None and not (ok and ready.get("ring")):  # the child could not map it
            self._ring.close()
            self._ring = None
        if not ok:
            self._proc.kill()
            raise RuntimeError(f"capture writer failed to start: {ready!r}")
        self.telemetry_endpoint: str | None = ready.get("telemetry_endpoint")
        import asyncio

        self._loop = asyncio.get_running_loop()
        self._out = self._proc.stdin.fileno()
        self._in = self._proc.stdout.fileno()
        os.set_blocking(self._out, False)
        os.set_blocking(self._in, False)
        self._buffer: collections.deque[memoryview] = collections.deque()
        self._flush_scheduled = False
        self._writer_registered = False
        self._queued = 0  # bytes put in the buffer so far
        self._written = 0  # bytes in the pipe so far
        self._handed: collections.deque[tuple[int, asyncio.Future]] = collections.deque()
        self._loop.add_reader(self._in, self._on_readable)
        self.closed = False
        self.failed: str | None = None
        self.waits = 0  # times the proxy waited for the child (see `_keep_bounded`)

    def submit(self, event: object) -> asyncio.Future:
        """Send an event; the future resolves once its frame is in the pipe (handed to the child)."""
        fut = self._loop.create_future()
        if self.failed:
            fut.set_exception(RuntimeError(self.failed))
            return fut
        self._write(_frame((1, event)))
        self._handed.append((self._queued, fut))
        self._keep_bounded()
        return fut

    def send(self, event: object) -> None:
        """Fire and forget (stream chunks): nobody waits for this one. A chunk's bytes go in the
        shared ring where it has room, and only a small frame through the pipe."""
        if not self.failed:
            if self._ring is not None and isinstance(event, ResponseChunk):
                event = self._ring.put(event) or event
            self._write(_frame((0, event)))
            self._keep_bounded()

    def close(self, finalize: bool = True, ended_at: float | None = None) -> int:
        """Send everything left, let the child write (and finalize) the capture, wait for it."""
        if self.closed:
            return self._proc.returncode or 0
        self.closed = True
        self._loop.remove_reader(self._in)
        self._loop.remove_writer(self._out)
        self._writer_registered = False
        os.set_blocking(self._out, True)
        try:
            self._buffer.extend(memoryview(p) for p in _frame((0, {"close": CLOSE if finalize else "stop",
                                                                     "ended_at": ended_at})))
            _write_all(self._out, list(self._buffer))
            self._buffer.clear()
        except OSError:
            pass  # the child is gone: the next reader recovers what it wrote
        self._proc.stdin.close()
        code = self._proc.wait()
        if self._ring is not None:
            self._ring.close()
        return code

    # --- the pipe ------------------------------------------------------------------------

    def _write(self, parts: list) -> None:
        """Queue a frame; the actual write happens right after the current callback, so the
        proxy forwards the client's bytes first and several frames go out in one writev."""
        for part in parts:
            view = memoryview(part)
            self._buffer.append(view)
            self._queued += view.nbytes
        if not self._flush_scheduled and not self._writer_registered:
            self._flush_scheduled = True
            self._loop.call_soon(self._flush_soon)

    def _keep_bounded(self) -> None:
        """Past MAX_QUEUED_BYTES waiting for the pipe, block until half of it is written: the child
        (its own backlog and the pipe full) fell this far behind, so the proxy forwards at the
        child's pace instead of holding ever more of the stream. Rare: the child redacts faster
        than loopback forwards."""
        if self._queued - self._written <= MAX_QUEUED_BYTES or self.failed:
            return
        if not self.waits:
            logging.getLogger(__name__).warning(
                "capture writer fell %d MiB behind: forwarding waits for it (redaction is slower than the "
                "traffic here; a machine with a spare core, or the Hyperscan wheel, keeps up)",
                (self._queued - self._written) >> 20)
        self.waits += 1
        os.set_blocking(self._out, True)
        try:
            while self._buffer and self._queued - self._written > MAX_QUEUED_BYTES // 2 and not self.failed:
                self._on_writable()
        finally:
            os.set_blocking(self._out, False)

    def _flush_soon(self) -> None:
        self._flush_scheduled = False
        if not self._writer_registered:
            self._on_writable()
            if self._buffer and not self.failed:
                self._writer_registered = True
                self._loop.add_writer(self._out, self._on_writable)

    def _on_writable(self) -> None:
        try:
            n = os.writev(self._out, list(itertools.islice(self._buffer, 512)))
        except BlockingIOError:
            return
        except OSError as exc:
            self._fail(f"capture writer process exited ({exc})")
            return
        self._written += n
        while n and self._buffer:
            head = self._buffer[0]
            if n >= head.nbytes:
                n -= head.nbytes
                self._buffer.popleft()
            else:
                self._buffer[0] = head[n:]
                n = 0
        while self._handed and self._handed[0][0] <= self._written:
            fut = self._handed.popleft()[1]
            if not fut.done():
                fut.set_result(None)
        if not self._buffer and self._writer_registered:
            self._writer_registered = False
            self._loop.remove_writer(self._out)

    def _on_readable(self) -> None:
        """The child's stdout carries its acknowledgements of ring space; it closes when the child exits."""
        try:
            data = os.read(self._in, 65536)
        except BlockingIOError:
            return
        if not data:
            self._loop.remove_reader(self._in)
            self._fail("capture writer process exited")
            return
        self._acks += data
        whole = len(self._acks) - len(self._acks) % _LEN.size
        if whole and self._ring is not None:
            self._ring.acknowledge(_LEN.unpack_from(self._acks, whole - _LEN.size)[0])  # the last is the furthest
        del self._acks[:whole]

    def _fail(self, message: str) -> None:
        self.failed = message
        self._loop.remove_writer(self._out)
        self._writer_registered = False
        self._buffer.clear()
        handed, self._handed = self._handed, collections.deque()
        for _, fut in handed:
            if not fut.done():
                fut.set_exception(RuntimeError(message))


# The redacting thread's CPU priority below the proxy's (Linux nice steps): see `_yield_to_forwarding`.
WRITER_NICE = 10


def _yield_to_forwarding(thread: threading.Thread) -> None:
    """Lower the redacting thread's CPU priority, and only that thread's.

    On a machine whose cores are all busy (the client, the model server, the proxy, the writer),
    the writer's CPU is forwarding's loss: a 50 MB stream went through at 0.66 of bare mitmdump's
    rate with the writer at the proxy's priority and 0.73 a step lower (eight interleaved pairs).
    The thread that reads the pipe keeps its priority, so the proxy's frames are still taken in
    at once; the redacting thread catches up when a core is free, its backlog bounded as
    before. Linux sets a nice value per thread; elsewhere the writer keeps its priority.
    """
    if not sys.platform.startswith("linux") or thread.native_id is None:
        return
    try:
        os.setpriority(os.PRIO_PROCESS, thread.native_id, min(19, os.getpriority(os.PRIO_PROCESS, 0) + WRITER_NICE))
    except OSError:
        pass  # not allowed here: the writer keeps its priority


# Bytes read from the proxy but not yet redacted and written. A few large bodies keep the
# writer busy; beyond that a bigger backlog only holds memory (the pipe slows the proxy instead).
MAX_BACKLOG_BYTES = 32 << 20
SWITCH_INTERVAL_S = 0.0005


class _Backlog:
    """Bytes read from the proxy but not yet written: bounded, so memory stays bounded."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self._cond = threading.Condition()

    def take(self, size: int) -> None:
        with self._cond:
            while self.used and self.used + size > self.limit:
                self._cond.wait()
            self.used += size

    def give(self, size: int) -> None:
        with self._cond:
            self.used -= size
            self._cond.notify_all()


# A streamed response's chunks wait, up to this many bytes, while more of it keeps coming; a held
# chunk waits QUIET_S for the proxy's next frame before the writer takes it up. The proxy hands
# over a stream in batches of a megabyte (`proxy_addons.recorder.CHUNK_BATCH`), so QUIET_S sets the
# rate from which a stream counts as one that keeps coming: 10 MB/s. At 20 ms (while batches were a
# quarter megabyte) a 50 MB/s stream's batches came 21 ms apart and each looked like a pause.
MAX_HELD_BYTES = 32 << 20
QUIET_S = 0.1


class _HeldChunks:
    """Streamed chunks the writer has not started on yet, oldest first.

    On two busy cores the redacting thread's CPU is forwarding's loss whatever its priority (nice
    or SCHED_IDLE alike): a 50 MB stream went through at 0.72 of bare mitmdump's rate with every
    chunk handed to the writer at once, 0.84 with up to 32 MiB of them waiting (ten interleaved
    rounds). So a chunk waits while its stream keeps coming: the writer takes chunks up when the
    proxy pauses (QUIET_S without a frame), before any other event (order kept), and the oldest
    first past MAX_HELD_BYTES. The moment of redaction moves to where the cores are free; the
    bytes read but not yet written are at most MAX_HELD_BYTES more than the backlog's bound."""

    def __init__(self, writer, backlog: _Backlog, limit: int) -> None:
        self._writer, self._backlog, self.limit = writer, backlog, limit
        self._items: collections.deque[tuple[ResponseChunk, int]] = collections.deque()
        self.used = 0

    def __bool__(self) -> bool:
        return bool(self._items)

    def add(self, event: ResponseChunk, size: int) -> None:
        while self._items and self.used + size > self.limit:
            self._submit(*self._items.popleft())
        self._items.append((event, size))
        self.used += size

    def release(self) -> None:
        while self._items:
            self._submit(*self._items.popleft())

    def _submit(self, event: object, size: int) -> None:
        self.used -= size
        self._backlog.take(size)  # blocks while the writer is too far behind: the pipe then slows the proxy
        self._writer.submit(event).add_done_callback(lambda _f: self._backlog.give(size))


def _quiet(stream, seconds: float) -> bool:
    """Nothing more to read from `stream`'s pipe within `seconds` (bytes already in its buffer
    count as nothing: releasing early only costs concurrency)."""
    try:
        return not select.select([stream], [], [], seconds)[0]
    except (OSError, ValueError):
        return True


def _event_size(event: object) -> int:
    size = 256
    for name in ("body_in", "body_out", "data", "content"):
        value = getattr(event, name, None)
        if isinstance(value, bytes):
            size += len(value)
        elif isinstance(value, list):
            size += sum(len(v) for v in value)
    return size


def start_receiver(writer):
    """The loopback OTLP receiver, feeding `writer` (a CaptureWriter: its submit is thread-safe).
    The manifest names its endpoint with the per-run token left out."""
    from ctxtap.capture.otlp_receiver import TelemetryReceiver

    receiver = TelemetryReceiver(writer.submit).start()
    writer.submit(ManifestNote("receiver", {
        "endpoint": receiver.endpoint.replace(receiver.token, "<token>"), "max_payload_bytes": receiver.max_bytes,
    }))
    return receiver


def _ring_reader(args: list[str]) -> ring.RingReader | None:
    """The ring the proxy passed (`--ring FD SIZE`), if any and if it maps (the ready frame says)."""
    if len(args) != 3 or args[0] != "--ring":
        return None
    try:
        fd, size = int(args[1]), int(args[2])
        try:
            return ring.RingReader(fd, size)
        finally:
            os.close(fd)
    except (OSError, ValueError):
        return None


def _take_from_ring(shared: ring.RingReader | None, ref: RingChunk, out: int) -> ResponseChunk:
    """The chunk copied out of the ring, its space acknowledged to the proxy at once.

    `out` (the child's stdout) does not block: an acknowledgement counts every byte before it, so
    one the proxy is not reading now is covered by the next. A blocking one could wait on a proxy
    that itself waits for this process to read its pipe."""
    if shared is None:  # not expected: the proxy puts chunks in the ring only when it passed one
        raise RuntimeError("a ring chunk arrived but no ring was passed")
    chunk = shared.take(ref)
    try:
        os.write(out, _LEN.pack(ref.end))  # 8 bytes: a pipe writes them whole or not at all
    except OSError:
        pass  # full for now, or the proxy is gone (then the child writes what arrived)
    return chunk


def main() -> int:
    """The child: read events and write them through a CaptureWriter until close or end-of-file.

    Imports only what recording uses; the Parquet writer (pyarrow, ~50 MB resident) is
    imported for the finalisation at the end.
    """
    from ctxtap.capture.manifest_file import ManifestRecord
    from ctxtap.capture.private import restrict_umask
    from ctxtap.capture.writer import CaptureWriter

    # Everything this process writes is the capture (pyarrow's Parquet too): private from the start,
    # whatever umask the process that spawned it (a test, an embedding program) had.
    restrict_umask()
    # Ctrl-C and SIGTERM reach the whole process group; the writer must outlive them long
    # enough to write what it was given. It stops on the proxy's close frame or end-of-file.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    # This thread reads the pipe while the writer thread redacts. Every read returns to a GIL
    # the redacting thread holds for up to the switch interval (5 ms by default): one wait per
    # read capped the intake of a streamed body at ~12 MB/s. Hand the GIL over sooner.
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    init = _read_frame(stdin)
    if not isinstance(init, dict):
        return 2
    directory = Path(init["directory"])
    try:
        writer = CaptureWriter(directory, init["key"], ManifestRecord.from_fields(init["manifest"]))
    except Exception as exc:  # report why instead of dying silently
        _write_frame(stdout, {"ready": False, "error": str(exc)})
        stdout.flush()
        return 2
    _yield_to_forwarding(writer.thread)  # before `ready`: from the first frame on
    receiver = None
    if init.get("telemetry"):
        receiver = start_receiver(writer)
    shared = _ring_reader(sys.argv[1:])
    _write_frame(stdout, {"ready": True, "telemetry_endpoint": receiver.endpoint if receiver else None,
                          "ring": shared is not None})
    stdout.flush()
    os.set_blocking(stdout.fileno(), False)  # from now on it carries only acknowledgements of ring space
    backlog = _Backlog(MAX_BACKLOG_BYTES)
    held = _HeldChunks(writer, backlog, MAX_HELD_BYTES)
    closing: dict | None = None
    while True:
        if held and _quiet(stdin, QUIET_S):
            held.release()
        frame = _read_frame(stdin)
        if frame is None:  # the proxy died: write what arrived, leave recovery to the next reader
            break
        _, event = frame
        if isinstance(event, dict) and "close" in event:
            closing = event
            break
        if isinstance(event, RingChunk):
            event = _take_from_ring(shared, event, stdout.fileno())
        size = _event_size(event)
        if isinstance(event, ResponseChunk):
            held.add(event, size)
            continue
        held.release()
        backlog.take(size)  # blocks while the writer is too far behind: the pipe then slows the proxy
        writer.submit(event).add_done_callback(lambda _f, size=size: backlog.give(size))
    held.release()
    if receiver is not None:
        receiver.stop()
        writer.submit(ManifestNote("receiver_stats", {"received": receiver.received, "refused": receiver.refused}))
    writer.close()
    if closing is not None and closing["close"] == CLOSE:
        if closing.get("ended_at"):
            writer.manifest.ended_at = closing["ended_at"]
            writer.manifest.save(directory)
        from ctxtap.capture.finalize import finalize

        finalize(directory)
    return 0


if __name__ == "__main__":
    sys.exit(main())
