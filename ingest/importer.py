"""`ctxtap import`: mitmproxy flow files and HAR into the capture format.

Imported flows go through the same writer as live traffic, so they are
classified, decoded, redacted and stored exactly as if they had been recorded.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from pathlib import Path

from mitmproxy import http, io

from ctxtap.capture.classify import classify_flow, telemetry_endpoint
from ctxtap.capture.environment import RunEnvironment
from ctxtap.capture.events import (
    ErrorEvent,
    RequestEvent,
    ResponseEvent,
    WsEndEvent,
    WsMessageEvent,
)
from ctxtap.capture.finalize import finalize
from ctxtap.capture.headers import header_value
from ctxtap.capture.manifest import Manifest, new_capture_id
from ctxtap.capture.writer import CaptureWriter


class ImportError_(Exception):
    """A file that is neither a mitmproxy flow file nor HAR."""


def _classify(host: str, path: str, method: str, websocket: bool, model_hosts: dict[str, str],
              record_all: bool) -> tuple[bool, bool, str, str, str, str | None]:
    cls = classify_flow(host, path, method, websocket, model_hosts)
    known = telemetry_endpoint(host, path, method)
    telemetry = known[0] if known else None
    return cls.is_model, cls.is_model or bool(telemetry) or record_all, cls.provider, cls.api, cls.endpoint, telemetry


# --- mitmproxy flow files --------------------------------------------------------------------


def mitm_events(flow: http.HTTPFlow, seq: int, model_hosts: dict[str, str], record_all: bool) -> Iterator[object]:
    req = flow.request
    websocket = req.headers.get("upgrade", "").lower() == "websocket"
    is_model, full, provider, api, endpoint, telemetry = _classify(
        req.pretty_host, req.path, req.method, websocket, model_hosts, record_all)
    yield RequestEvent(
        flow_id=flow.id, seq=seq, record_full=full, is_model=is_model, provider=provider, api=api,
        endpoint=endpoint, websocket=websocket, method=req.method, scheme=req.scheme, host=req.pretty_host,
        port=req.port, path=req.path, url=req.pretty_url, upstream_url=None, http_version=req.http_version,
        headers=list(req.headers.items(multi=True)), body_in=req.raw_content, body_out=req.raw_content,
        ts_start=req.timestamp_start, ts_end=req.timestamp_end, telemetry=telemetry,
    )
    resp = flow.response
    response = None
    if resp is not None:
        response = ResponseEvent(
            flow_id=flow.id, status=resp.status_code, reason=resp.reason, http_version=resp.http_version,
            headers=list(resp.headers.items(multi=True)), body_in=resp.raw_content, body_out=resp.raw_content,
            streamed=False, ts_headers=resp.timestamp_start, ts_first_byte=None, ts_end=resp.timestamp_end,
        )
    if flow.error is not None:
        yield ErrorEvent(flow.id, flow.error.msg, flow.error.timestamp or time.time(), response)
        return
    if response is not None:
        yield response
    if flow.websocket is not None:
        ws = flow.websocket
        for index, msg in enumerate(ws.messages):
            yield WsMessageEvent(flow.id, index, msg.from_client, msg.timestamp, msg.is_text, msg.content, full)
        yield WsEndEvent(flow.id, ws.timestamp_end or (resp.timestamp_end if resp else 0.0) or 0.0,
                         ws.close_code, ws.closed_by_client, len(ws.messages))


def read_mitm(path: Path) -> Iterator[http.HTTPFlow]:
    with open(path, "rb") as fh:
        for flow in io.FlowReader(fh).stream():
            if isinstance(flow, http.HTTPFlow):
                yield flow


# --- HAR ------------------------------------------------------------------------------------------


def _har_time(value: str) -> float:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def _har_body(content: dict | None) -> bytes | None:
    if not content:
        return None
    text = content.get("text")
    if text is None:
        return None
    if content.get("encoding") == "base64":
        return base64.b64decode(text)
    return text.encode("utf-8", "surrogateescape")


def har_events(entry: dict, seq: int, flow_id: str, model_hosts: dict[str, str],
               record_all: bool) -> Iterator[object]:
    request, response = entry.get("request", {}), entry.get("response", {})
    url = request.get("url", "")
    scheme, _, rest = url.partition("://")
    netloc, _, path = rest.partition("/")
    host, _, port = netloc.partition(":")
    path = "/" + path
    headers = [(h["name"], h["value"]) for h in request.get("headers", [])]
    websocket = (header_value(headers, "upgrade") or "").lower() == "websocket" or "_webSocketMessages" in entry
    method = request.get("method", "GET")
    is_model, full, provider, api, endpoint, telemetry = _classify(host, path, method, websocket, model_hosts,
                                                                   record_all)
    start = _har_time(entry["startedDateTime"]) if entry.get("startedDateTime") else 0.0
    total = (entry.get("time") or 0) / 1000
    timings = entry.get("timings") or {}
    before_wait = sum(max(0, timings.get(k) or 0) for k in ("blocked", "dns", "connect", "send", "wait")) / 1000
    body = _har_body(request.get("postData"))
    yield RequestEvent(
        flow_id=flow_id, seq=seq, record_full=full, is_model=is_model, provider=provider, api=api,
        endpoint=endpoint, websocket=websocket, method=method, scheme=scheme or "https", host=host,
        port=int(port) if port.isdigit() else (443 if scheme == "https" else 80), path=path, url=url,
        upstream_url=None, http_version=request.get("httpVersion") or "HTTP/1.1", headers=headers,
        body_in=body, body_out=body, ts_start=start, ts_end=start, body_is_decoded=True, telemetry=telemetry,
    )
    if response and response.get("status"):
        rbody = _har_body(response.get("content"))
        yield ResponseEvent(
            flow_id=flow_id, status=int(response["status"]), reason=response.get("statusText", ""),
            http_version=response.get("httpVersion") or "HTTP/1.1",
            headers=[(h["name"], h["value"]) for h in response.get("headers", [])],
            body_in=rbody, body_out=rbody, streamed=False, ts_headers=start + before_wait,
            ts_first_byte=None, ts_end=start + total, body_is_decoded=True,
        )
    messages = entry.get("_webSocketMessages") or []
    for index, msg in enumerate(messages):
        data = msg.get("data", "")
        is_text = msg.get("opcode", 1) == 1
        content = data.encode() if is_text else base64.b64decode(data)
        yield WsMessageEvent(flow_id, index, msg.get("type") == "send", float(msg.get("time", start)),
                             is_text, content, full)
    if websocket and response and response.get("status") == 101:
        last = max([float(m.get("time", start)) for m in messages] or [start + total])
        yield WsEndEvent(flow_id, last, None, None, len(messages))


def read_har(path: Path) -> list[dict]:
    try:
        data = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError is a ValueError
        raise ImportError_(f"{path}: not valid HAR JSON ({exc}); the file is truncated or not a HAR") from None
    try:
        return list(data["log"]["entries"])
    except (KeyError, TypeError):
        raise ImportError_(f"{path}: not a HAR file (no log.entries)") from None


# --- driver ---------------------------------------------------------------------------------------

Track = Callable[[Iterable, "int | None", str], Iterable]


def detect_format(path: Path) -> str:
    head = path.read_bytes()[:64].lstrip()
    return "har" if head.startswith(b"{") else "mitm"


SHOWN_SKIPPED = 10  # entry indexes kept in the manifest per file and reason


def _skip_reason(entry: object) -> str | None:
    """Why a HAR entry cannot be imported (a flow needs at least its request's URL), or None."""
    request = entry.get("request") if isinstance(entry, dict) else None
    if not isinstance(request, dict) or not request.get("url"):
        return "no request URL"
    return None


def import_files(paths: Iterable[Path], out: Path, redaction_key: bytes,
                 model_hosts: dict[str, str] | None = None, record_all: bool = False,
                 redact: Iterable[str] = (), track: Track | None = None, require_entries: bool = False,
                 environment: RunEnvironment | None = None) -> Manifest:
    """Import every flow of every file into a new capture at `out` and finalize it.
    `track(items, total, description)` wraps each file's entries (a command counts them).
    `require_entries`: a file with nothing to import is an error (the command line), not an empty
    capture. HAR entries that cannot be imported are skipped and listed in the manifest's options
    (`skipped_entries`: file, reason, count, the first indexes)."""
    paths = list(paths)
    track = track or (lambda items, total, description: items)
    model_hosts = model_hosts or {}
    manifest = Manifest(capture_id=new_capture_id(), source="import",
                        options={"files": [p.name for p in paths], "record_all": record_all,
                                 "model_hosts": sorted(model_hosts), "redact": list(redact)},
                        environment=environment.model_dump(exclude_none=True, exclude_defaults=True) if environment
                        else {})
    writer = CaptureWriter(out, redaction_key, manifest)
    seq = 0
    first = last = None
    skipped: list[dict] = []
    try:
        for path in paths:
            if detect_format(path) == "har":
                entries = read_har(path)
                if require_entries and not entries:
                    raise ImportError_(f"{path}: the HAR has no entries (log.entries is empty): export it "
                                       f"again after the requests ran")
                dropped: dict[str, list[int]] = {}
                for i, entry in enumerate(track(entries, len(entries), f"importing {path.name}")):
                    reason = _skip_reason(entry)
                    if reason:
                        dropped.setdefault(reason, []).append(i)
                        continue
                    for event in har_events(entry, seq, f"har-{seq}-{i}", model_hosts, record_all):
                        writer.submit(event)
                    seq += 1
                skipped += [{"file": path.name, "reason": reason, "count": len(where), "of": len(entries),
                             "entries": where[:SHOWN_SKIPPED]} for reason, where in dropped.items()]
                if require_entries and entries and sum(len(w) for w in dropped.values()) == len(entries):
                    raise ImportError_(f"{path}: none of its {len(entries)} entries can be imported "
                                       f"({', '.join(dropped)})")
            else:
                before = seq
                try:
                    for flow in track(read_mitm(path), None, f"importing {path.name}"):
                        for event in mitm_events(flow, seq, model_hosts, record_all):
                            writer.submit(event)
                        first = min(first or flow.timestamp_start, flow.timestamp_start)
                        last = max(last or 0, flow.timestamp_start)
                        seq += 1
                except Exception as exc:  # mitmproxy's reader raises on non-flow files
                    if seq == 0:
                        raise ImportError_(f"{path}: not a mitmproxy flow file or HAR ({exc})") from exc
                    raise ImportError_(f"{path}: unreadable after {seq} flows ({exc}); the file is truncated "
                                       f"or damaged") from exc
                if require_entries and seq == before:
                    raise ImportError_(f"{path}: the file holds no flows (empty, or a flow file without HTTP "
                                       f"flows)")
    finally:
        writer.flush()
        writer.close()
    if first is not None or skipped:
        manifest = Manifest.load(out)
        if first is not None:
            manifest.started_at, manifest.ended_at = first, last
        if skipped:
            manifest.options["skipped_entries"] = skipped
        manifest.save(out)
    return finalize(out)
