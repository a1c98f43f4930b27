"""The capture writer: redacts, decodes, compresses and spools flows off the event loop.

Raw events arrive from the proxy's hooks (through `writer_proc` when the writer runs
in its own child process, the default) and each gets a future back; the writer's
thread turns each event into spool records. Nothing unredacted is ever written:
headers, URLs and decoded bodies pass through the redactor first, and bodies
whose encoding cannot be undone are still scanned byte-wise.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import queue
import threading
import time
import traceback
from collections import Counter
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ctxtap.capture.bodies import BodyEncoder, EncodedBody, StreamedBody
from ctxtap.capture.classify import classify_client, stream_key
from ctxtap.capture.decode import CODINGS, StreamDecoder, decode_body, kept
from ctxtap.capture.events import (
    Barrier,
    ErrorEvent,
    ManifestNote,
    RequestEvent,
    ResponseChunk,
    ResponseEvent,
    StreamStart,
    TelemetryEvent,
    WsEndEvent,
    WsMessageEvent,
    is_terminal_ws_message,
    ws_message_type,
)
from ctxtap.capture.headers import flow_transport, header_value, is_event_stream
from ctxtap.capture.private import private_dir
from ctxtap.capture.spool import LOCK_NAME, SpoolFile
from ctxtap.redaction.eventstream import EventStreamRedactor
from ctxtap.redaction.json_stream import JsonStreamRedactor
from ctxtap.redaction.layered import capture_redactor, ruleset_version
from ctxtap.redaction.streams import Released, SseRedactor, StreamRedactor
from ctxtap.wire.eventstream import looks_like_eventstream
from ctxtap.wire.sse import is_sse_body

if TYPE_CHECKING:  # the writer child saves a ManifestRecord and never imports pydantic
    from ctxtap.capture.manifest import Manifest
    from ctxtap.capture.manifest_file import ManifestRecord

SYNC_INTERVAL_S = 1.0


def _sha(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


SEGMENT_BYTES = 64 * 1024
# A plain streamed body with no line end is cut anyway past this size (a hostile single-line answer
# must not be held whole): at the last byte no secret runs through (a space, quote or bracket)
# in the segment's last 64 KiB, else at the size itself.
MAX_LINE_BYTES = 8 * 1024 * 1024
_CUT_AFTER = tuple(bytes([c]) for c in b' \t\r"\'<>{}[],')


class _Stream:
    """A streamed response processed while it flows: hashed, decoded and redacted as it arrives.

    An SSE body goes through `SseRedactor`, which joins every content stream
    across events, network reads and batches, so a secret streamed in pieces
    is redacted whole wherever the cuts fall; a body of JSON values (NDJSON, a
    JSON array of chunks) or an AWS event stream (Bedrock), whatever its
    content type says, goes through `JsonStreamRedactor` or
    `EventStreamRedactor`, which do the same per element or frame. Other plain
    bodies are redacted in segments ending at a line end. A body in one content-coding is decoded
    as it arrives (bounded, `StreamDecoder`); its compressed bytes are held only
    until they first decode, so a body that never does (or one in several
    codings) is decoded, or kept, at the end like a whole body.
    """

    __slots__ = ("sha", "size", "pending", "body", "sse", "framed", "sniffed", "incremental", "raw", "encoding",
                 "redactions", "decoder", "_redactor", "kept")

    def __init__(self, content_type: str | None, encoding: str | None, redactor, body: StreamedBody,
                 kept: bool = True) -> None:
        # `kept`: the flow is recorded in full. A metadata-only one (a package or a repository an
        # agent downloads through the proxy) is only hashed and counted, never decoded, redacted or held.
        self.kept = kept
        self.sha = hashlib.sha256()
        self.size = 0
        self.pending = bytearray()
        self.body = body  # the redacted pieces as released (a big stream compressed as it goes)
        self.encoding = encoding
        coding = (encoding or "").strip().lower()
        self.decoder = StreamDecoder(coding) if coding in CODINGS else None
        self.incremental = coding in ("", "identity") or self.decoder is not None
        self.sse = SseRedactor(redactor) if self.incremental and is_event_stream(content_type) else None
        self.framed: JsonStreamRedactor | EventStreamRedactor | None = None
        self.sniffed = self.sse is not None  # a plain body's first bytes say how it is redacted (`_sniff`)
        self.raw: list[bytes] = []
        self.redactions: Counter[str] = Counter()
        self._redactor = redactor

    def feed(self, pieces: list[bytes]) -> None:
        """The next reads of the body, in order."""
        for data in pieces:
            self.sha.update(data)
            self.size += len(data)
        if not self.kept:
            return
        if self.decoder is not None and self.incremental:
            pieces = self._decode(pieces)
        if not self.incremental:
            self.raw.extend(pieces)
        elif self.sse is not None:
            self.body.add(self.sse.feed(*pieces))
        elif self.framed is not None:
            self._feed_framed(pieces)
        else:
            for data in pieces:
                self.pending += data
            if not self.sniffed and self._sniff() and (self.sse is not None or self.framed is not None):
                held = bytes(self.pending)  # handed over to the joiner the first bytes chose
                self.pending.clear()
                if self.sse is not None:
                    self.body.add(self.sse.feed(held))
                else:
                    self._feed_framed([held])
            if len(self.pending) >= SEGMENT_BYTES:
                cut = self.pending.rfind(b"\n")
                if cut <= 0 and len(self.pending) >= MAX_LINE_BYTES:
                    cut = _last_boundary(self.pending)
                if cut > 0:
                    self.body.add(self._redact(bytes(self.pending[: cut + 1])))
                    del self.pending[: cut + 1]

    def _sniff(self) -> bool:
        """Settle what a body not declared as SSE holds, once its first bytes tell (True then).

        Events, frames or JSON values under another content type (Gemini's chunks as
        `application/json`, NDJSON, Bedrock's binary frames, SSE sent as `text/plain`) are
        joined like their kind.
        """
        if len(self.pending) < 12 and self.pending[:1] == b"\x00":
            return False  # an event-stream prelude is 12 bytes
        if looks_like_eventstream(bytes(self.pending[:12])):
            self.framed = EventStreamRedactor(self._redactor)
            self.sniffed = True
            return True
        head = bytes(self.pending[:2048]).lstrip()
        if head[:1] in (b"{", b"["):
            self.framed = JsonStreamRedactor(self._redactor)
        elif is_sse_body(head):
            self.sse = SseRedactor(self._redactor)
        elif not head or (len(self.pending) < 2048 and head.startswith((b"event:", b"data:", b"id:", b":"))):
            return False  # too little yet to tell
        self.sniffed = True
        return True

    def _feed_framed(self, pieces: list[bytes]) -> None:
        assert self.framed is not None
        self.body.add(self.framed.feed(*pieces))
        if self.framed.failed:  # not what it looked like after all: line segments from here
            self.redactions.update(self.framed.redactions)
            self.pending += self.framed.abandon()
            self.framed = None

    def _decode(self, pieces: list[bytes]) -> list[bytes]:
        """The decoded bytes of the next reads; until the first decode, the reads are also kept (and
        a body that fails before it is no longer decoded as it goes: see `undecoded`)."""
        assert self.decoder is not None
        out = [decoded for data in pieces if (decoded := self.decoder.feed(data))]
        if self.decoder.size:
            self.raw.clear()
            return out
        self.raw.extend(pieces)
        if self.decoder.error is not None:
            self.incremental, self.sse = False, None
        return []

    @property
    def undecoded(self) -> bool:
        """An encoded body none of which decoded: judged whole at the end (`decode_body`), from `raw`."""
        return self.decoder is not None and not self.decoder.size

    def status(self) -> tuple[str, int]:
        """(decode status, decoded size) of an incremental stream that is over."""
        if self.decoder is None:
            return "identity", self.size
        error = self.decoder.finish()
        return ("decoded" if error is None else kept(f"{self.decoder.coding}: {error}", self.decoder.size),
                self.decoder.size)

    def finish_body(self) -> StreamedBody:
        """The redacted body of an incremental stream that is over."""
        if self.sse is not None:
            self.body.add(self.sse.finish())
            self.redactions.update(self.sse.redactions)
        elif self.framed is not None:
            self.body.add(self.framed.finish())
            self.redactions.update(self.framed.redactions)
            if self.framed.failed:  # a frame cut short at the end
                self.body.add(self._redact(self.framed.abandon()))
        else:
            self.body.add(self._redact(bytes(self.pending)))
            self.pending.clear()
        return self.body

    def _redact(self, data: bytes) -> bytes:
        before = Counter(self._redactor.counts)
        out = self._redactor.redact_bytes(data)
        after = self._redactor.counts
        self.redactions.update({k: after[k] - before.get(k, 0) for k in after if after[k] > before.get(k, 0)})
        return out


def _last_boundary(data: bytearray) -> int:
    """Where to cut a line too long to hold: after the last space, quote, bracket or comma in its
    last 64 KiB (no token runs through one), else at its end."""
    lo = max(0, len(data) - SEGMENT_BYTES)
    last = max(data.rfind(c, lo) for c in _CUT_AFTER)
    return last if last >= 0 else len(data) - 1


class _FlowInfo:
    __slots__ = ("record_full", "is_model", "websocket", "stream_key", "frames")

    def __init__(self, record_full: bool, is_model: bool, websocket: bool, stream_key: str) -> None:
        self.record_full = record_full
        self.is_model = is_model
        self.websocket = websocket
        self.stream_key = stream_key
        self.frames: StreamRedactor | None = None  # WebSocket messages held until a split secret is settled


class CaptureWriter:
    """Owns one capture directory while recording; one thread does all disk work."""

    def __init__(
        self,
        directory: Path,
        redaction_key: bytes,
        manifest: Manifest | ManifestRecord,
    ) -> None:
        self.directory = directory
        private_dir(directory)
        self.manifest = manifest
        redact = tuple((manifest.options or {}).get("redact") or ())
        self.redactor = capture_redactor(redaction_key, manifest.capture_id, redact)
        self.manifest.redaction_ruleset = ruleset_version(redact)
        self._redact_manifest()
        self.manifest.save(directory)
        spool_dir = private_dir(directory / "spool")
        self._lock_fd = os.open(spool_dir / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.write(self._lock_fd, str(os.getpid()).encode())
        self.spool = SpoolFile(spool_dir)
        self.bodies = BodyEncoder()
        self._inflight: dict[str, _FlowInfo] = {}
        self._streams: dict[str, _Stream] = {}
        self._queue: queue.SimpleQueue[tuple[object, Future | None] | None] = queue.SimpleQueue()
        self._last_sync = time.monotonic()
        self._dirty = False
        self.stats: Counter[str] = Counter()
        self._thread = threading.Thread(target=self._run, name="ctxtap-writer", daemon=True)
        self._thread.start()

    def _redact_manifest(self) -> None:
        """The recorded command and the routes are the user's words, and can hold keys
        (`env OPENAI_API_KEY=sk-... codex`, `--route host=https://user:token@gateway`)."""
        if self.manifest.command:
            self.manifest.command = [self.redactor.redact_text(str(arg)) for arg in self.manifest.command]
        routes = (self.manifest.options or {}).get("routes")
        if routes:
            self.manifest.options["routes"] = [self.redactor.redact_text(str(route)) for route in routes]

    # --- public API (any thread) ---------------------------------------------------

    @property
    def thread(self) -> threading.Thread:
        """The thread that redacts and writes (the writer child lowers its priority)."""
        return self._thread

    def submit(self, event: object) -> Future:
        fut: Future = Future()
        self._queue.put((event, fut))
        return fut

    def send(self, event: object) -> None:
        """Fire and forget (stream chunks): queued in order, nobody waits for it."""
        self._queue.put((event, None))

    def flush(self, timeout: float | None = None) -> None:
        self.submit(Barrier()).result(timeout)

    def close(self) -> None:
        """Drain the queue, fsync and release the lock (finalisation is separate)."""
        if not self._thread.is_alive():
            return
        self._queue.put(None)
        self._thread.join()
        self.spool.close()
        fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
        os.close(self._lock_fd)

    # --- writer thread ----------------------------------------------------------------

    def _run(self) -> None:
        while True:
            try:
                item = self._queue.get(timeout=SYNC_INTERVAL_S)
            except queue.Empty:
                self._maybe_sync(force=True)
                continue
            if item is None:
                self._release_all_frames()
                return
            event, fut = item
            try:
                self._handle(event)
            except Exception:  # never lose the writer thread; record what went wrong
                self._write_failure(event, traceback.format_exc(limit=3))
            self._dirty = True
            self._maybe_sync()
            if fut is not None:
                fut.set_result(None)

    def _maybe_sync(self, force: bool = False) -> None:
        now = time.monotonic()
        if self._dirty and (force or now - self._last_sync >= SYNC_INTERVAL_S):
            self.spool.sync()
            self._dirty = False
            self._last_sync = now

    def _handle(self, event: object) -> None:
        if isinstance(event, RequestEvent):
            self._on_request(event)
        elif isinstance(event, ResponseEvent):
            self._on_response(event)
        elif isinstance(event, ErrorEvent):
            self._on_error(event)
        elif isinstance(event, WsMessageEvent):
            self._on_ws_message(event)
        elif isinstance(event, WsEndEvent):
            self._on_ws_end(event)
        elif isinstance(event, ResponseChunk):
            stream = self._streams.get(event.flow_id)
            if stream is not None:
                if not stream.size and any(event.pieces()):  # the first piece: a live view shows it as under way
                    self.spool.append({"t": "chunk1", "flow_id": event.flow_id, "ts_first_chunk": time.time()})
                stream.feed(event.pieces())
        elif isinstance(event, StreamStart):
            info = self._inflight.get(event.flow_id)
            self._streams[event.flow_id] = _Stream(event.content_type, event.content_encoding, self.redactor,
                                                   self.bodies.streamed(), kept=info is None or info.record_full)
        elif isinstance(event, TelemetryEvent):
            self._on_telemetry(event)
        elif isinstance(event, ManifestNote):
            self.manifest.telemetry[event.key] = event.value
            self.manifest.save(self.directory)
        elif isinstance(event, Barrier):
            return
        else:
            raise TypeError(f"unknown event {type(event).__name__}")

    def _counts_delta(self, before: Counter[str]) -> dict[str, int]:
        after = self.redactor.counts
        return {k: after[k] - before.get(k, 0) for k in after if after[k] - before.get(k, 0)}

    def _store_body(self, data: bytes, stream_key: str, sha256: str | None = None) -> int | None:
        """`sha256`: the digest of `data` if already known (a body redaction left as it was)."""
        if not data:
            return None
        return self._spool_body(self.bodies.encode(data, stream_key, sha256))

    def _store_parts(self, parts: list[bytes], stream_key: str, sha256: str | None = None) -> int | None:
        """A streamed body as its pieces: a big one is compressed piece by piece, never joined.
        `sha256`: the digest of the pieces if already known (a stream redaction left as it was)."""
        if not any(parts):
            return None
        return self._spool_body(self.bodies.encode_parts(parts, stream_key, sha256))

    def _store_streamed(self, body: StreamedBody, stream_key: str, sha256: str | None = None) -> int | None:
        if not body.size:
            return None
        return self._spool_body(self.bodies.encode_streamed(body, stream_key, sha256))

    def _spool_body(self, enc: EncodedBody) -> int:
        self.spool.append(
            {"t": "body", "body_id": enc.body_id, "codec": enc.codec, "base_id": enc.base_id,
             "size": enc.size, "sha256": enc.sha256},
            enc.data,
        )
        self.stats["bodies"] += 1
        return enc.body_id

    def _redacted_url(self, url: str) -> tuple[str, str]:
        red = self.redactor.redact_url(url)
        try:
            parts = urlsplit(red)
        except ValueError:  # never lose a flow over an odd URL: split by hand
            rest = red.split("://", 1)[-1]
            return red, "/" + rest.split("/", 1)[1] if "/" in rest else "/"
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        return red, path

    def _said(self, value: str | None) -> str | None:
        """A short string from the wire kept in a column of its own (reason phrase, content type and
        encoding, user agent, a message's `type`): whoever sends it chooses it, so it is redacted too."""
        return self.redactor.redact_text(value) if value else value

    def _on_request(self, ev: RequestEvent) -> None:
        before = Counter(self.redactor.counts)
        url, path = self._redacted_url(ev.url)
        raw = ev.body_in or b""
        raw_sha = _sha(raw)
        row: dict = {
            "t": "req", "flow_id": ev.flow_id, "seq": ev.seq,
            "kind": "websocket" if ev.websocket else "http",
            "record_mode": "full" if ev.record_full else "metadata",
            "method": ev.method, "scheme": ev.scheme, "host": ev.host, "port": ev.port,
            "path": path, "url": url,
            "upstream_url": self._redacted_url(ev.upstream_url)[0] if ev.upstream_url else None,
            "http_version": ev.http_version,
            "ts_request_start": ev.ts_start, "ts_request_end": ev.ts_end,
            "is_model": ev.is_model, "provider": ev.provider, "api": ev.api, "endpoint": ev.endpoint,
            "telemetry_endpoint": ev.telemetry,
            "request_bytes_wire": len(raw),
            "request_sha256_client": raw_sha,
            "request_sha256_upstream": raw_sha if ev.body_out is ev.body_in else _sha(ev.body_out or b""),
        }
        body_stream = "req " + stream_key(ev.host, path, ev.headers)
        if ev.record_full:
            headers = self.redactor.redact_headers(ev.headers)
            encoding = header_value(ev.headers, "content-encoding")
            decoded, status = decode_body(raw, None if ev.body_is_decoded else encoding)
            body = self.redactor.redact_bytes(decoded)
            client = classify_client(headers, body[:65536])
            row.update(
                request_headers=json.dumps(headers),
                request_content_encoding=self._said(encoding),
                request_content_type=self._said(header_value(ev.headers, "content-type")),
                request_decode_status=status,
                request_bytes=len(decoded),
                request_body_id=self._store_body(body, body_stream, raw_sha if body is raw else None),
            )
            if ev.telemetry and decoded:  # an imported metadata-only flow has no body to decode
                self._on_telemetry(TelemetryEvent(
                    seq=-1, ts=ev.ts_end or ev.ts_start, source=f"proxy:{ev.telemetry}", flow_id=ev.flow_id,
                    path=path, signal=self._telemetry_signal(ev.telemetry),
                    content_type=header_value(ev.headers, "content-type"), content_encoding=None,
                    user_agent=header_value(ev.headers, "user-agent"), body=decoded,
                ))
        else:
            client = classify_client(ev.headers)
        row.update(client=self._said(client.client), client_version=self._said(client.version),
                   client_rule=client.rule)
        row["redactions"] = self._counts_delta(before)
        self._inflight[ev.flow_id] = _FlowInfo(ev.record_full, ev.is_model, ev.websocket, body_stream)
        self.spool.append(row)
        self.stats["requests"] += 1

    def _response_row(self, ev: ResponseEvent, info: _FlowInfo | None) -> dict:
        before = Counter(self.redactor.counts)
        stream = self._streams.pop(ev.flow_id, None) if ev.chunked else None
        if stream is not None:
            return self._streamed_row(ev, info, stream, before)
        raw_in = ev.body_in or b""
        raw_out = raw_in if ev.body_out is ev.body_in else (ev.body_out or b"")
        ctype = self._said(header_value(ev.headers, "content-type"))
        in_sha = _sha(raw_in)
        row: dict = {
            "flow_id": ev.flow_id, "status": ev.status, "reason": self._said(ev.reason),
            "response_http_version": ev.http_version,
            "response_content_type": ctype,
            "response_bytes_wire": len(raw_in),
            "response_sha256_upstream": in_sha,
            "response_sha256_client": in_sha if raw_out is raw_in else _sha(raw_out),
            "streamed": ev.streamed,
            "ts_response_headers": ev.ts_headers, "ts_first_byte": ev.ts_first_byte,
            "ts_response_end": ev.ts_end,
            "transport": flow_transport(ev.status, ctype, ev.streamed, bool(info and info.websocket)),
        }
        if info is None or info.record_full:
            headers = self.redactor.redact_headers(ev.headers)
            encoding = header_value(ev.headers, "content-encoding")
            decoded, status = decode_body(raw_in, None if ev.body_is_decoded else encoding)
            body = self.redactor.redact_bytes(decoded)
            key = "resp " + (info.stream_key[4:] if info else ev.flow_id)
            row.update(
                response_headers=json.dumps(headers),
                response_content_encoding=self._said(encoding),
                response_decode_status=status,
                response_bytes=len(decoded),
                response_body_id=self._store_body(body, key, in_sha if body is raw_in else None),
            )
        row["redactions"] = self._counts_delta(before)
        return row

    def _streamed_row(self, ev: ResponseEvent, info: _FlowInfo | None, stream: _Stream,
                      before: Counter[str]) -> dict:
        """The row of a response whose body arrived as chunks (forwarded unchanged, so in == out)."""
        ctype = self._said(header_value(ev.headers, "content-type"))
        digest = stream.sha.hexdigest()
        row: dict = {
            "flow_id": ev.flow_id, "status": ev.status, "reason": self._said(ev.reason),
            "response_http_version": ev.http_version, "response_content_type": ctype,
            "response_bytes_wire": stream.size,
            "response_sha256_upstream": digest, "response_sha256_client": digest,
            "streamed": True,
            "ts_response_headers": ev.ts_headers, "ts_first_byte": ev.ts_first_byte,
            "ts_response_end": ev.ts_end,
            "transport": flow_transport(ev.status, ctype, True, bool(info and info.websocket)),
            "response_chunk_offsets": json.dumps(ev.chunk_offsets, separators=(",", ":"))
            if ev.chunk_offsets else None,
        }
        if info is None or info.record_full:
            key = "resp " + (info.stream_key[4:] if info else ev.flow_id)
            if stream.incremental and not stream.undecoded:
                body = stream.finish_body()
                status, size = stream.status()
                # every change to a stream writes a counted placeholder: none, and the pieces are
                # the wire bytes, whose digest is known (hashing 50 MB again costs 30 ms)
                known_sha = None if stream.redactions or stream.decoder else digest
                body_id = self._store_streamed(body, key, known_sha)
            else:
                decoded, status = decode_body(b"".join(stream.raw), stream.encoding)
                size = len(decoded)
                body_id = self._store_parts([self.redactor.redact_bytes(decoded)], key)
            row.update(
                response_headers=json.dumps(self.redactor.redact_headers(ev.headers)),
                response_content_encoding=self._said(stream.encoding),
                response_decode_status=status,
                response_bytes=size,
                response_body_id=body_id,
            )
        row["redactions"] = dict(Counter(self._counts_delta(before)) + stream.redactions)
        return row

    def _on_response(self, ev: ResponseEvent) -> None:
        info = self._inflight.get(ev.flow_id)
        row = self._response_row(ev, info)
        row["t"] = "resp"
        if ev.error:
            row["error"] = self.redactor.redact_text(ev.error)
        if not (info and info.websocket and ev.status == 101):
            self._inflight.pop(ev.flow_id, None)
        self.spool.append(row)
        self.stats["responses"] += 1

    def _on_error(self, ev: ErrorEvent) -> None:
        info = self._inflight.pop(ev.flow_id, None)
        self._release_frames(info, final=True)
        # mitmproxy's messages can quote the wire (`Invalid header line: b'...'`, h2's header checks)
        error = self.redactor.redact_text(ev.error)
        row: dict = {"t": "err", "flow_id": ev.flow_id, "error": error, "ts_error": ev.ts}
        if ev.partial is not None:
            row.update(self._response_row(ev.partial, info))
            row["t"] = "err"
            row["error"] = error
        self.spool.append(row)
        self.stats["errors"] += 1

    def _on_ws_message(self, ev: WsMessageEvent) -> None:
        info = self._inflight.get(ev.flow_id)
        msg_type = ws_message_type(ev.content, ev.is_text)
        is_request = bool(ev.from_client and info and info.is_model and msg_type == "response.create")
        row: dict = {
            "t": "ws", "flow_id": ev.flow_id, "idx": ev.index, "from_client": ev.from_client,
            "ts": ev.ts, "opcode": "text" if ev.is_text else "binary", "size": len(ev.content),
            "msg_type": self._said(msg_type), "is_model_request": is_request,
        }
        self.stats["ws_messages"] += 1
        if not (ev.record_full and (info is None or info.record_full)):
            row["redactions"] = {}
            self.spool.append(row)
            return
        if info is None:  # a message without its handshake: nothing to join it with
            self._write_frame(row, ev.from_client, Released(row, ev.content, {}))
            return
        if info.frames is None:
            info.frames = StreamRedactor(self.redactor)
        # One joiner per socket keeps rows in order; the direction keeps the two sides' streams apart.
        released = info.frames.feed((row, ev.from_client), ev.content, channel=ev.from_client)
        if is_terminal_ws_message(ev):
            released += info.frames.finish()
        for item in released:
            self._write_frame(*item.token, item)

    def _write_frame(self, row: dict, from_client: bool, item: Released) -> None:
        before = Counter(self.redactor.counts)
        body = item.data if item.clean else self.redactor.redact_payload(item.data)
        row["body_id"] = self._store_body(body, f"ws {row['flow_id']} {'c' if from_client else 's'}")
        row["redactions"] = dict(Counter(self._counts_delta(before)) + Counter(item.redactions))
        self.spool.append(row)

    def _release_frames(self, info: _FlowInfo | None, final: bool) -> None:
        if info is not None and info.frames is not None and final:
            for item in info.frames.finish():
                self._write_frame(*item.token, item)

    def _release_all_frames(self) -> None:
        """Writer shutdown (or the proxy died): write every held message."""
        for info in self._inflight.values():
            try:
                self._release_frames(info, final=True)
            except Exception:
                self.stats["writer_errors"] += 1

    def _on_ws_end(self, ev: WsEndEvent) -> None:
        info = self._inflight.pop(ev.flow_id, None)
        self._release_frames(info, final=True)
        self.spool.append({
            "t": "wsend", "flow_id": ev.flow_id, "ts_ws_end": ev.ts, "ws_close_code": ev.close_code,
            "ws_closed_by_client": ev.closed_by_client, "n_ws_messages": ev.n_messages,
        })

    @staticmethod
    def _telemetry_signal(name: str) -> str:
        from ctxtap.capture.classify import TELEMETRY_ENDPOINTS

        return next((signal for _, _, known, signal in TELEMETRY_ENDPOINTS if known == name), "unknown")

    def _on_telemetry(self, ev: TelemetryEvent) -> None:
        """Decode (OTLP or a vendor format), then redact the document and the records as text
        before anything is written; what does not decode is kept as received, redacted."""
        from ctxtap.capture.telemetry_decode import decode_payload

        before = Counter(self.redactor.counts)
        data, decode_status = decode_body(ev.body, ev.content_encoding)
        decoded = decode_payload(ev.source, ev.signal, ev.content_type, data)
        status = decoded.status if decode_status in ("identity", "decoded") else decode_status
        records: list[dict] = []
        if decoded.document is not None:
            stored = self.redactor.redact_text(json.dumps(decoded.document, ensure_ascii=False)).encode()
            try:
                records = json.loads(self.redactor.redact_text(json.dumps(decoded.records, ensure_ascii=False)))
            except ValueError:  # never expected; the payload itself is still kept, redacted
                status = "error: the decoded records did not survive redaction as JSON"
        else:
            stored = self.redactor.redact_bytes(data)
        telemetry_id = self.stats["telemetry"]
        self.stats["telemetry"] += 1
        row = {
            "t": "tel", "telemetry_id": telemetry_id, "source": ev.source, "flow_id": ev.flow_id,
            "ts_received": ev.ts, "path": self._redacted_url("http://x" + ev.path)[1] if ev.path else ev.path,
            "signal": ev.signal,
            "content_type": self._said(ev.content_type), "content_encoding": self._said(ev.content_encoding),
            "user_agent": self._said(ev.user_agent), "payload_format": decoded.payload_format, "received": ev.received,
            "declared_bytes": ev.declared_bytes, "bytes_wire": len(ev.body), "bytes": len(data),
            "parse_status": status, "n_records": len(records),
            "body_id": self._store_body(stored, f"tel {ev.source} {ev.signal}"),
            "records": records,
        }
        row["redactions"] = self._counts_delta(before)
        self.spool.append(row)

    def _write_failure(self, event: object, detail: str) -> None:
        flow_id = getattr(event, "flow_id", None)
        try:
            self.spool.append({"t": "writer_error", "flow_id": flow_id,
                               "event": type(event).__name__,
                               "error": self.redactor.redact_text(detail[-2000:])})
        except Exception:
            pass
        self.stats["writer_errors"] += 1
