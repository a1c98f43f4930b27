"""The recording addon: capture model-API traffic completely, live, redacted, crash-safe.

Use from ctxtap (`ctxtap record` / `ctxtap proxy`) or directly:

    mitmdump -s proxy_addons/recorder.py --set ctxtap_out=captures/mine \\
             --set ctxtap_route=api.anthropic.com=http://127.0.0.1:8080

What it does per flow:
- classifies it at request-headers time (provider, API, model call or not);
- taps streamed responses (SSE, chunked, no content-length) chunk by chunk:
  each chunk is forwarded the moment it arrives, a reference is kept for the record;
- hands raw facts to the capture writer, a child process by default (`ProcessWriter`),
  which redacts before writing, so redaction never competes with the proxy's event loop;
- holds the end of each response until its last record has left the proxy for the
  writer (which writes everything it was handed even if the proxy dies), so a
  `kill -9` of the proxy never loses a flow whose client saw the response complete.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from mitmproxy import ctx, http

# `mitmdump -s proxy_addons/recorder.py` loads this file as a script: make the
# project's package importable when ctxtap is not installed (the folder that holds `ctxtap/`:
# the repository from a checkout, site-packages from a wheel).
_ROOT = str(next(p for p in Path(__file__).resolve().parents if (p / "ctxtap" / "__init__.py").is_file()))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from ctxtap import __version__  # noqa: E402
from ctxtap.capture.classify import classify_flow, telemetry_endpoint  # noqa: E402
from ctxtap.capture.events import (  # noqa: E402
    ErrorEvent,
    RequestEvent,
    ResponseChunk,
    ResponseEvent,
    StreamStart,
    WsEndEvent,
    WsMessageEvent,
    is_terminal_ws_message,
)
from ctxtap.capture.headers import is_event_stream  # noqa: E402
from ctxtap.capture.ids import new_capture_id  # noqa: E402
from ctxtap.capture.paths import default_captures_dir, redaction_key  # noqa: E402
from ctxtap.capture.writer_proc import ProcessWriter  # noqa: E402
from ctxtap.proxy_addons.router import Router  # noqa: E402
from ctxtap.proxy_addons.sweep import Sweeper  # noqa: E402

log = logging.getLogger(__name__)

# Streamed bodies reach the writer in batches of about this size: one frame per network read
# would cost more than the bytes themselves. A batch belongs to a response that has not ended,
# so holding it back never loses a completed flow.
CHUNK_BATCH = 1 << 20
_REPLAY_TOKEN = re.compile(r"/_replay/[^/]+/")

# Arrival offsets kept per streamed response (for replay pacing); past this many reads the last
# entry is moved forward instead, so a pathological stream cannot grow memory.
MAX_CHUNK_OFFSETS = 20_000


def parse_model_hosts(specs: Sequence[str]) -> dict[str, str]:
    """"HOST" or "HOST=PROVIDER" -> {host: provider}."""
    hosts: dict[str, str] = {}
    for spec in specs:
        host, _, provider = spec.partition("=")
        if host.strip():
            hosts[host.strip().lower()] = provider.strip() or "custom"
    return hosts


def _is_streaming_response(flow: http.HTTPFlow) -> bool:
    """Stream SSE and bodies of unknown length; buffer bodies with a Content-Length."""
    resp = flow.response
    assert resp is not None
    if resp.status_code in (101, 204, 304) or flow.request.method == "HEAD":
        return False
    if is_event_stream(resp.headers.get("content-type")):
        return True
    return "content-length" not in resp.headers


class _FlowState:
    """Per-flow bookkeeping, dropped when the flow ends (nothing accumulates)."""

    __slots__ = ("seq", "record_full", "is_model", "websocket", "body_in", "chunks", "pending", "first_byte",
                 "ws_index", "url", "scheme", "host", "port", "path", "provider", "api", "endpoint",
                 "submitted_request", "offsets", "size", "telemetry")

    def __init__(self, seq: int, req: http.Request) -> None:
        self.seq = seq
        # The target as the client asked for it, before any --route rewrites it.
        self.url = req.pretty_url
        self.scheme = req.scheme
        self.host = req.pretty_host
        self.port = req.port
        self.path = req.path
        self.record_full = False
        self.is_model = False
        self.websocket = False
        self.body_in: bytes | None = None
        self.chunks: list[bytes] | None = None  # set once the response streams through the tap
        self.pending = 0  # bytes in `chunks` not yet handed to the writer
        self.first_byte: float | None = None
        self.offsets: list[list[float]] | None = None  # [bytes so far, ms after first byte] per read
        self.size = 0
        self.ws_index = 0
        self.provider = "unknown"
        self.api = "other"
        self.endpoint = "other"
        self.submitted_request = False
        self.telemetry: str | None = None


class Recorder:
    """Head of the addon chain: classify, tap, and note bytes as received."""

    def __init__(self) -> None:
        self.writer = None  # ProcessWriter, or CaptureWriter with ctxtap_writer_process=false
        self.model_hosts: dict[str, str] = {}
        self.states: dict[str, _FlowState] = {}
        self.seq = 0
        self.capture_dir: Path | None = None
        self.telemetry_endpoint: str | None = None  # the OTLP receiver's base URL, token included
        self._receiver = None  # in-process writer mode only
        self.sweeper = Sweeper()

    # --- options and lifecycle ------------------------------------------------------------

    def load(self, loader) -> None:
        loader.add_option("ctxtap_out", str, "", "Capture directory (default: captures/<capture-id>).")
        loader.add_option("ctxtap_model_hosts", Sequence[str], [],
                          "Extra model-API hosts to record in full: HOST or HOST=PROVIDER (repeatable).")
        loader.add_option("ctxtap_record_all", bool, False,
                          "Record headers and bodies of every flow, not only model-API flows.")
        loader.add_option("ctxtap_command", str, "", "JSON list: the command being recorded (for the manifest).")
        loader.add_option("ctxtap_keep_ws_messages", bool, False,
                          "Keep WebSocket messages in memory (default: drop each once it is spooled).")
        loader.add_option("ctxtap_redact", Sequence[str], [],
                          "Also redact before writing: pii (personal data). Credentials are always redacted.")
        loader.add_option("ctxtap_replay", str, "",
                          "JSON object: this run replays another capture (source capture, mode, trace id).")
        loader.add_option("ctxtap_telemetry", bool, False,
                          "Run a loopback OTLP/HTTP receiver (in the writer process) for the client's own "
                          "telemetry; its endpoint is logged and given to `ctxtap record`'s command.")
        loader.add_option("ctxtap_writer_process", bool, True,
                          "Redact and write in a separate process (default), keeping the proxy's event loop free.")

    def configure(self, updated: set[str]) -> None:
        if "ctxtap_model_hosts" in updated:
            self.model_hosts = parse_model_hosts(ctx.options.ctxtap_model_hosts)

    def running(self) -> None:
        self._ensure_writer()
        self.sweeper.start()

    def _ensure_writer(self):
        if self.writer is None:
            capture_id = new_capture_id()
            out = ctx.options.ctxtap_out
            directory = Path(out) if out else default_captures_dir() / capture_id
            if directory.exists() and (directory / "manifest.json").exists():
                raise RuntimeError(f"{directory} already holds a capture; choose another --out")
            command = json.loads(ctx.options.ctxtap_command) if ctx.options.ctxtap_command else None
            import mitmproxy.version

            manifest = dict(
                capture_id=capture_id,
                mitmproxy_version=mitmproxy.version.VERSION,
                command=command,
                options={
                    "routes": list(ctx.options.ctxtap_route) if "ctxtap_route" in ctx.options else [],
                    "model_hosts": list(ctx.options.ctxtap_model_hosts),
                    "record_all": ctx.options.ctxtap_record_all,
                    "redact": list(ctx.options.ctxtap_redact),
                    "listen_host": ctx.options.listen_host or "",
                    "listen_port": ctx.options.listen_port,
                    "pid": os.getpid(),
                },
            )
            if ctx.options.ctxtap_replay:
                manifest["replay"] = json.loads(ctx.options.ctxtap_replay)
            telemetry = bool(ctx.options.ctxtap_telemetry)
            if ctx.options.ctxtap_writer_process:
                self.writer = ProcessWriter(directory, redaction_key(), manifest, telemetry=telemetry)
                self.telemetry_endpoint = self.writer.telemetry_endpoint
            else:  # in-process writer: simpler to debug, but redaction competes with the event loop
                from ctxtap.capture.manifest import Manifest
                from ctxtap.capture.writer import CaptureWriter
                from ctxtap.capture.writer_proc import start_receiver

                self.writer = CaptureWriter(directory, redaction_key(), Manifest(**manifest))
                if telemetry:
                    self._receiver = start_receiver(self.writer)
                    self.telemetry_endpoint = self._receiver.endpoint
            self.capture_dir = directory
            log.info("ctxtap %s recording to %s", __version__, directory)
        return self.writer

    def done(self) -> None:
        if self.writer is None:
            return
        if isinstance(self.writer, ProcessWriter):
            self.writer.close(finalize=True, ended_at=time.time())  # the child finalizes
        else:
            from ctxtap.capture.finalize import finalize

            if self._receiver is not None:
                self._receiver.stop()
            self.writer.manifest.ended_at = time.time()
            self.writer.manifest.save(self.writer.directory)
            self.writer.close()
            finalize(self.writer.directory)
        self.writer = None

    # --- HTTP hooks --------------------------------------------------------------------------

    def requestheaders(self, flow: http.HTTPFlow) -> None:
        req = flow.request
        state = _FlowState(self.seq, req)
        self.seq += 1
        websocket = req.headers.get("upgrade", "").lower() == "websocket"
        cls = classify_flow(req.pretty_host, req.path, req.method, websocket, self.model_hosts)
        state.is_model = cls.is_model
        state.websocket = websocket
        state.provider, state.api, state.endpoint = cls.provider, cls.api, cls.endpoint
        known = telemetry_endpoint(req.pretty_host, req.path, req.method)
        state.telemetry = known[0] if known else None
        state.record_full = cls.is_model or bool(known) or bool(ctx.options.ctxtap_record_all)
        self.states[flow.id] = state

    def request(self, flow: http.HTTPFlow) -> None:
        state = self.states.get(flow.id)
        if state is not None:
            state.body_in = flow.request.raw_content

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        state = self.states.get(flow.id)
        if state is None or flow.response is None or not _is_streaming_response(flow):
            return
        writer = self._ensure_writer()
        headers = flow.response.headers
        writer.send(StreamStart(flow.id, headers.get("content-type"), headers.get("content-encoding")))
        state.chunks = []
        state.pending = 0
        flow_id = flow.id

        def tap(data: bytes) -> bytes:
            # Forward each chunk unchanged at once; keep a reference for the record and hand the
            # writer batches of about CHUNK_BATCH bytes (the last batch goes before the end).
            if data:
                now = time.time()
                if state.first_byte is None:
                    state.first_byte = now
                    state.offsets = []
                state.size += len(data)
                entry = [state.size, round((now - state.first_byte) * 1000, 1)]
                if len(state.offsets) < MAX_CHUNK_OFFSETS:
                    state.offsets.append(entry)
                else:
                    state.offsets[-1] = entry
                state.chunks.append(data)
                state.pending += len(data)
                if state.pending >= CHUNK_BATCH:
                    self.flush_chunks(flow_id, state)
            return data

        flow.response.stream = tap

    def flush_chunks(self, flow_id: str, state: _FlowState) -> None:
        if state.chunks:
            # the reads themselves go to the writer (each out of band): no copy of the stream here
            self._ensure_writer().send(ResponseChunk(flow_id, state.chunks))
            state.chunks, state.pending = [], 0

    # --- WebSocket hooks ---------------------------------------------------------------------

    async def websocket_message(self, flow: http.HTTPFlow) -> None:
        state = self.states.get(flow.id)
        if state is None or flow.websocket is None or not flow.websocket.messages:
            return
        msg = flow.websocket.messages[-1]
        event = WsMessageEvent(
            flow_id=flow.id, index=state.ws_index, from_client=msg.from_client, ts=msg.timestamp,
            is_text=msg.is_text, content=msg.content, record_full=state.record_full,
        )
        state.ws_index += 1
        fut = self._ensure_writer().submit(event)
        if not ctx.options.ctxtap_keep_ws_messages:
            # Already spooled: drop earlier messages so a long socket does not grow memory.
            del flow.websocket.messages[:-1]
        if is_terminal_ws_message(event):
            await asyncio.wrap_future(fut)

    def websocket_end(self, flow: http.HTTPFlow) -> None:
        state = self.states.pop(flow.id, None)
        if state is None or flow.websocket is None or self.writer is None:
            return  # (no writer: the proxy is shutting down and the capture is already closed)
        ws = flow.websocket
        self._ensure_writer().submit(WsEndEvent(
            flow_id=flow.id, ts=ws.timestamp_end or time.time(), close_code=ws.close_code,
            closed_by_client=ws.closed_by_client, n_messages=state.ws_index,
        ))

    # --- helpers used by the tail addon ----------------------------------------------------

    def request_event(self, flow: http.HTTPFlow, state: _FlowState) -> RequestEvent:
        req = flow.request
        # a replay's cassette server takes its per-run token in the route's path: never stored
        upstream = _REPLAY_TOKEN.sub("/_replay/<token>/", req.url)
        return RequestEvent(
            flow_id=flow.id, seq=state.seq, record_full=state.record_full, is_model=state.is_model,
            provider=state.provider, api=state.api, endpoint=state.endpoint, websocket=state.websocket,
            method=req.method, scheme=state.scheme, host=state.host, port=state.port, path=state.path,
            url=state.url, upstream_url=upstream if upstream != state.url else None,
            http_version=req.http_version,
            headers=list(req.headers.items(multi=True)), body_in=state.body_in, body_out=req.raw_content,
            ts_start=req.timestamp_start, ts_end=req.timestamp_end, telemetry=state.telemetry,
        )

    def response_event(self, flow: http.HTTPFlow, state: _FlowState) -> ResponseEvent:
        resp = flow.response
        assert resp is not None
        streamed = state.chunks is not None
        if streamed:
            self.flush_chunks(flow.id, state)
        body = None if streamed else resp.raw_content
        return ResponseEvent(
            flow_id=flow.id, status=resp.status_code, reason=resp.reason, http_version=resp.http_version,
            headers=list(resp.headers.items(multi=True)), body_in=body, body_out=body, streamed=streamed,
            ts_headers=resp.timestamp_start, ts_first_byte=state.first_byte, ts_end=resp.timestamp_end,
            chunked=streamed, chunk_offsets=state.offsets if streamed else None,
        )


class RecorderTail:
    """Tail of the chain: note bytes as sent on, submit records, wait for durability."""

    def __init__(self, head: Recorder) -> None:
        self.head = head

    def request(self, flow: http.HTTPFlow) -> None:
        state = self.head.states.get(flow.id)
        if state is None:
            return
        event = self.head.request_event(flow, state)
        state.submitted_request = True
        self.head._ensure_writer().submit(event)

    async def response(self, flow: http.HTTPFlow) -> None:
        state = self.head.states.get(flow.id)
        if state is None or flow.response is None:
            return
        if not state.websocket or flow.response.status_code != 101:
            self.head.states.pop(flow.id, None)
        event = self.head.response_event(flow, state)
        fut = self.head._ensure_writer().submit(event)
        await asyncio.wrap_future(fut)
        self.head.sweeper.finished(flow)

    async def error(self, flow: http.HTTPFlow) -> None:
        state = self.head.states.pop(flow.id, None)
        if state is None:
            return
        writer = self.head._ensure_writer()
        if not state.submitted_request:
            writer.submit(self.head.request_event(flow, state))
        partial = None
        if flow.response is not None:
            partial = self.head.response_event(flow, state)
        message = flow.error.msg if flow.error else "unknown error"
        await asyncio.wrap_future(writer.submit(ErrorEvent(flow.id, message, time.time(), partial)))
        self.head.sweeper.finished(flow)


def make_addons() -> list:
    """The addon chain in order: recorder head, router, recorder tail."""
    head = Recorder()
    return [head, Router(), RecorderTail(head)]


addons = make_addons()
