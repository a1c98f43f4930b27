"""`ctxtap export --har`: a capture as HAR 1.2, bodies exactly as stored.

WebSocket messages use Chrome's `_webSocketMessages` form, so any HAR tool can
read a capture and anyone can check what was kept (and what was redacted).
"""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from pathlib import Path

from ctxtap import __version__
from ctxtap.capture.store import Capture


def _iso(ts: float | None) -> str:
    return datetime.fromtimestamp(ts or 0, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _content(body: bytes | None, mime: str | None) -> dict:
    out: dict = {"size": len(body or b""), "mimeType": mime or ""}
    if body:
        try:
            out["text"] = body.decode("utf-8")
        except UnicodeDecodeError:
            out["text"] = base64.b64encode(body).decode()
            out["encoding"] = "base64"
    return out


def _headers(raw: str | None) -> list[dict]:
    return [{"name": k, "value": v} for k, v in json.loads(raw or "[]")]


def _ms(a: float | None, b: float | None) -> float:
    return max(0.0, (b - a) * 1000) if a and b else -1


def flow_entry(capture: Capture, flow: dict, messages: list[dict]) -> dict:
    start = flow["ts_request_start"]
    end = flow["ts_response_end"] or flow["ts_ws_end"] or start
    query = flow["path"].split("?", 1)[1] if "?" in (flow["path"] or "") else ""
    request: dict = {
        "method": flow["method"], "url": flow["url"], "httpVersion": flow["http_version"] or "HTTP/1.1",
        "headers": _headers(flow["request_headers"]), "cookies": [],
        "queryString": [{"name": k, "value": v} for k, _, v in (p.partition("=") for p in query.split("&") if p)],
        "headersSize": -1, "bodySize": flow["request_bytes_wire"] or 0,
    }
    req_body = capture.body(flow["request_body_id"])
    if req_body:
        request["postData"] = {"mimeType": flow["request_content_type"] or "", **{
            k: v for k, v in _content(req_body, None).items() if k in ("text", "encoding")}}
    resp_body = capture.body(flow["response_body_id"])
    response = {
        "status": flow["status"] or 0, "statusText": flow["reason"] or "",
        "httpVersion": flow["response_http_version"] or flow["http_version"] or "HTTP/1.1",
        "headers": _headers(flow["response_headers"]), "cookies": [],
        "content": _content(resp_body, flow["response_content_type"]),
        "redirectURL": "", "headersSize": -1, "bodySize": flow["response_bytes_wire"] or 0,
    }
    entry = {
        "startedDateTime": _iso(start),
        "time": _ms(start, end) if end else 0,
        "request": request,
        "response": response,
        "cache": {},
        "timings": {
            "send": _ms(start, flow["ts_request_end"]) if flow["ts_request_end"] else 0,
            "wait": _ms(flow["ts_request_end"] or start, flow["ts_response_headers"]),
            "receive": _ms(flow["ts_response_headers"], flow["ts_response_end"]),
        },
        "_ctxtap": {k: flow[k] for k in ("flow_id", "record_mode", "state", "is_model", "provider", "api",
                                         "transport", "client", "client_version", "error", "upstream_url",
                                         "request_content_encoding", "response_content_encoding",
                                         "integrity_ok")},
    }
    if flow["kind"] == "websocket":
        entry["_resourceType"] = "websocket"
        entry["_webSocketMessages"] = []
        for m in sorted(messages, key=lambda m: m["idx"]):
            data = capture.body(m["body_id"]) or b""
            text = data.decode("utf-8", "replace") if m["opcode"] == "text" else base64.b64encode(data).decode()
            entry["_webSocketMessages"].append({
                "type": "send" if m["from_client"] else "receive", "time": m["ts"],
                "opcode": 1 if m["opcode"] == "text" else 2, "data": text,
            })
    return entry


def export_har(capture: Capture, out: Path) -> int:
    """Write the capture as HAR 1.2 to `out`; returns the number of entries."""
    ws_by_flow: dict[str, list[dict]] = {}
    for m in capture.ws_messages().to_pylist():
        ws_by_flow.setdefault(m["flow_id"], []).append(m)
    entries = [flow_entry(capture, f, ws_by_flow.get(f["flow_id"], [])) for f in capture.flows().to_pylist()]
    har = {"log": {"version": "1.2", "creator": {"name": "ctxtap", "version": __version__},
                   "pages": [], "entries": entries,
                   "comment": f"ctxtap capture {capture.manifest.capture_id}; bodies decoded and redacted"}}
    out.write_text(json.dumps(har, indent=1, ensure_ascii=False))
    return len(entries)
