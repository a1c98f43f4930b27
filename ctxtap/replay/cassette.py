"""A capture's model calls as a cassette: each recorded request with the response to play back.

Loaded once, before the proxy starts, into plain data the replay server serves from. Every
recorded call is checked here so that bad input is named before anything runs: a call with no
response or no body, a stream cut before its end, a WebSocket turn that continues a response
the capture does not hold. Such a call is still matched (so the run stays in step), but it is
answered with a provider-style error that names it, never with a hang.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxtap.analysis.blocks.volatile import normalise
from ctxtap.analysis.protocols import registry
from ctxtap.analysis.protocols.registry import RequestContext
from ctxtap.capture.store import Capture, CaptureError
from ctxtap.wire.families import family, ws_terminal_types

# Response headers that describe the recorded transfer, not the content: the replay server
# sets its own (the stored body is decoded, so its encoding and length are the server's to say).
HOP_HEADERS = {"content-length", "transfer-encoding", "content-encoding", "connection", "keep-alive", "date"}



@dataclass
class Block:
    """One block of a request, as the protocol's parser reads it."""

    position: int
    path: str
    kind: str
    role: str | None
    text: str
    signature: str  # hash of kind and the normalised text: equal when only volatile fields differ
    content_hash: str  # hash of kind and the exact text
    breakpoint: bool = False  # carries a cache breakpoint (`cache_control`)


@dataclass
class Frame:
    """A recorded server WebSocket frame, `delay_s` after the request frame that asked for it."""

    delay_s: float
    text: str | None
    data: bytes


@dataclass
class Recorded:
    """One recorded model call and what to answer with."""

    key: str  # flow id, or "<flow id>#<message index>" for a WebSocket request frame
    order: int
    flow_id: str
    provider: str
    api: str
    endpoint: str
    host: str
    path: str
    method: str
    websocket: bool
    request_body: bytes
    blocks: list[Block]
    previous_response_id: str | None = None
    response_id: str | None = None
    status: int | None = None
    reason: str = ""
    headers: list[tuple[str, str]] = field(default_factory=list)
    request_headers: list[tuple[str, str]] = field(default_factory=list)  # as recorded (credentials redacted)
    body: bytes | None = None
    streamed: bool = False
    offsets: list[tuple[int, float]] | None = None  # (bytes so far, seconds after the first byte)
    headers_delay_s: float = 0.0  # request end -> response headers
    first_byte_delay_s: float = 0.0  # response headers -> first body byte
    body_duration_s: float = 0.0  # first byte -> last byte
    frames: list[Frame] = field(default_factory=list)
    problem: str | None = None  # why it cannot be played back (answered with an error naming it)
    request_number: int | None = None  # its #N in its session (requests.request_number), once numbered
    session_label: str | None = None  # its session (the id without its client prefix, cut), when there are several

    def describe(self) -> str:
        """The call in words, by the #N the report, the live view and diff give it (by its place in the
        capture only where the capture could not be analysed)."""
        where = f"{self.method} {self.host}{self.path.split('?', 1)[0]}"
        turn = f", WebSocket message {self.key.split('#', 1)[1]}" if "#" in self.key else ""
        if self.request_number is None:
            return f"recorded request {self.order + 1} ({where}{turn}, flow {self.flow_id[:8]})"
        session = f" of session {self.session_label}" if self.session_label else ""
        return f"recorded request #{self.request_number}{session} ({where}{turn}, flow {self.flow_id[:8]})"


@dataclass
class SideAnswer:
    """A recorded answer to a request that is no model call (settings, telemetry, ...) on a model host."""

    status: int
    content_type: str | None
    body: bytes  # empty when the flow was recorded in metadata mode


@dataclass
class Cassette:
    capture_id: str
    directory: Path
    calls: list[Recorded]
    has_offsets: bool  # the capture stores per-read arrival offsets (recorded by ctxtap >= this issue)
    side: dict[tuple[str, str, str], list[SideAnswer]] = field(default_factory=dict)  # (host, method, path)

    def side_answer(self, host: str, method: str, path: str) -> SideAnswer | None:
        """The recorded answer to a non-model request (the next one, when the same request recurs)."""
        answers = self.side.get((host, method, path.split("?", 1)[0]))
        if not answers:
            return None
        return answers.pop(0) if len(answers) > 1 else answers[0]

    @property
    def problems(self) -> list[Recorded]:
        return [c for c in self.calls if c.problem]

    def hosts(self) -> list[str]:
        return sorted({c.host for c in self.calls})


def _hash(*parts: str) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()[:24]


def parse_blocks(host: str, path: str, body: Any, websocket: bool = False) -> tuple[str, str, list[Block], str | None]:
    """(api, endpoint, blocks, previous_response_id) of a request body (a dict) as its protocol reads it."""
    found = registry.recognise(host, path, websocket)
    if found is None and websocket:
        found = registry.recognise(host, path, False)
    if found is None:
        return "other", "other", [], None
    protocol, endpoint = found
    if not isinstance(body, dict):
        return protocol.api_for(websocket), endpoint, [], None
    body = {k: v for k, v in body.items() if k != "type"} if websocket else body
    try:
        draft = protocol.parse_request(body, RequestContext(path, protocol.new_state()))
    except Exception:  # an unreadable body still replays; it just matches on nothing but position
        return protocol.api_for(websocket), endpoint, [], None
    blocks = [
        Block(i, b.path, str(b.kind), b.role, b.text or "", _hash(str(b.kind), normalise(b.text or "")),
              _hash(str(b.kind), b.text or ""), isinstance(b.wire, dict) and "cache_control" in b.wire)
        for i, b in enumerate(draft.blocks)
    ]
    previous = draft.previous_response_id or (body.get("previous_response_id") if websocket else None)
    return protocol.api_for(websocket), endpoint, blocks, previous if isinstance(previous, str) else None


def _json(raw: bytes | None) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None


def _offsets(value: str | None) -> list[tuple[int, float]] | None:
    if not value:
        return None
    try:
        return [(int(b), float(ms) / 1000) for b, ms in json.loads(value)]
    except (ValueError, TypeError):
        return None


def _gap(a: float | None, b: float | None) -> float:
    return max(0.0, b - a) if a is not None and b is not None else 0.0


def _response_id(api: str, body: bytes | None) -> str | None:
    """The id of a Responses answer (the id a continuation names as previous_response_id)."""
    if not body or not api.startswith("responses"):
        return None
    obj = _json(body)
    if isinstance(obj, dict) and isinstance(obj.get("id"), str):
        return obj["id"]
    marker = b'"type":"response.completed"'
    for line in body.split(b"\n"):
        if line.startswith(b"data:") and (marker in line or b'"response.completed"' in line):
            event = _json(line[5:].strip())
            rid = ((event or {}).get("response") or {}).get("id")
            if isinstance(rid, str):
                return rid
    return None


def number_calls(cassette: Cassette) -> None:
    """Give each call its request number in its session from the capture's analysis (made if needed), so
    replay names requests as every other page and command does; a capture that cannot be analysed keeps
    its calls numbered by their place in it."""
    from ctxtap.analysis.build import ensure_analysis
    from ctxtap.analysis.db import connect, fetch_rows

    try:
        ensure_analysis(cassette.directory)
        rows = fetch_rows(connect([cassette.directory]),
                          "SELECT flow_id, ws_index, session_id, request_number FROM requests")
    except Exception:  # noqa: BLE001 - numbering is a courtesy; replay works without it
        return
    several = len({r["session_id"] for r in rows}) > 1
    by_key = {r["flow_id"] if r["ws_index"] is None else f"{r['flow_id']}#{r['ws_index']}": r for r in rows}
    for call in cassette.calls:
        row = by_key.get(call.key)
        if row is not None:
            call.request_number = row["request_number"]
            call.session_label = session_label(row["session_id"]) if several else None


def session_label(session_id: str) -> str:
    """A session's id without its client prefix, cut to 8 characters: enough to tell a capture's sessions
    apart and to name one (`SESSION#N`), as `analysis.requestref` reads it."""
    return session_id.split(":", 1)[-1][:8]


def load(path: str | Path) -> Cassette:
    """Read a capture's model calls; raises CaptureError when it is not a readable capture."""
    capture = Capture.open(path)
    flows = capture.flows().to_pylist()
    has_offsets = "response_chunk_offsets" in capture.flows().column_names
    ws_rows: dict[str, list[dict]] = {}
    for row in capture.ws_messages().to_pylist():
        ws_rows.setdefault(row["flow_id"], []).append(row)
    calls: list[Recorded] = []
    side: dict[tuple[str, str, str], list[SideAnswer]] = {}
    model_hosts = {f["host"] for f in flows if f["is_model"]}
    for flow in flows:
        if not flow["is_model"]:
            if flow["host"] in model_hosts and flow["status"] is not None and flow["kind"] != "websocket":
                body, _ = _body(capture, flow["response_body_id"])
                key = (flow["host"], flow["method"] or "GET", (flow["path"] or "/").split("?", 1)[0])
                side.setdefault(key, []).append(SideAnswer(flow["status"], flow["response_content_type"], body or b""))
            continue
        if flow["kind"] == "websocket":
            calls.extend(_ws_calls(capture, flow, sorted(ws_rows.get(flow["flow_id"], []), key=lambda m: m["idx"]),
                                   len(calls)))
        else:
            calls.append(_http_call(capture, flow, len(calls)))
    _check_chains(calls)
    return Cassette(capture.manifest.capture_id, capture.directory, calls, has_offsets, side)


def _body(capture: Capture, body_id: int | None) -> tuple[bytes | None, str | None]:
    try:
        return capture.body(body_id), None
    except CaptureError as exc:
        return None, str(exc)


def _http_call(capture: Capture, flow: dict, order: int) -> Recorded:
    host, path, method = flow["host"] or "", flow["path"] or "", flow["method"] or "POST"
    request_body, req_problem = _body(capture, flow["request_body_id"])
    api, endpoint, blocks, _ = parse_blocks(host, path, _json(request_body))
    call = Recorded(
        key=flow["flow_id"], order=order, flow_id=flow["flow_id"], provider=flow["provider"] or "unknown", api=api, endpoint=endpoint, host=host,
        path=path, method=method, websocket=False, request_body=request_body or b"", blocks=blocks,
        status=flow["status"], reason=flow["reason"] or "",
        headers=[(k, v) for k, v in json.loads(flow["response_headers"] or "[]") if k.lower() not in HOP_HEADERS],
        request_headers=[(k, v) for k, v in json.loads(flow["request_headers"] or "[]")],
        streamed=bool(flow["streamed"]), offsets=_offsets(flow.get("response_chunk_offsets")),
        headers_delay_s=_gap(flow["ts_request_end"] or flow["ts_request_start"], flow["ts_response_headers"]),
        first_byte_delay_s=_gap(flow["ts_response_headers"], flow["ts_first_byte"]),
        body_duration_s=_gap(flow["ts_first_byte"] or flow["ts_response_headers"], flow["ts_response_end"]),
    )
    body, body_problem = _body(capture, flow["response_body_id"])
    call.body = body
    call.response_id = _response_id(api, body)
    if flow["record_mode"] != "full":
        call.problem = "recorded in metadata mode: the capture holds no bodies to play back"
    elif flow["status"] is None:
        call.problem = "no response was recorded (the recording stopped while it was running)"
    elif req_problem or body_problem:
        call.problem = f"missing body: {req_problem or body_problem}"
    elif body is None and flow["status"] == 200:
        call.problem = "missing response body: the capture records a 200 answer but holds no body for it"
    elif flow["state"] == "error" and flow["status"] == 200 and not _whole(api, flow["transport"], body):
        call.problem = f"truncated stream: the recorded response was cut ({flow['error'] or 'error'})"
    elif call.streamed and flow["status"] == 200 and flow["transport"] == "sse" and body is not None \
            and not any(m in body for m in _stream_end(api, (b"",))):
        call.problem = "truncated stream: the recorded stream ends before its final event"
    return call


def _stream_end(api: str, unknown: tuple[bytes, ...]) -> tuple[bytes, ...]:
    """What ends a complete stream of the family (`ctxtap.wire.families`); `(b"",)` never calls one cut."""
    known = family(api)
    return known.stream_end if known is not None and known.stream_end else unknown


def _whole(api: str, transport: str | None, body: bytes | None) -> bool:
    """Did the recorded response end whole although its flow ended in an error? A client that stops
    reading at a stream's last event and closes before the chunked end arrives leaves such a flow."""
    if body is None:
        return False
    if transport == "sse":
        return any(m in body for m in _stream_end(api, ()))
    return _json(body) is not None


def _ws_calls(capture: Capture, flow: dict, rows: list[dict], order: int) -> list[Recorded]:
    host, path = flow["host"] or "", flow["path"] or ""
    calls: list[Recorded] = []
    current: Recorded | None = None
    asked_at = 0.0
    for row in rows:
        data, problem = _body(capture, row["body_id"])
        text = (data or b"").decode("utf-8", "replace") if row["opcode"] == "text" else None
        if row["from_client"] and row["is_model_request"]:
            obj = _json(data)
            api, endpoint, blocks, previous = parse_blocks(host, path, obj, websocket=True)
            current = Recorded(
                key=f"{flow['flow_id']}#{row['idx']}", order=order + len(calls), flow_id=flow["flow_id"],
                provider=flow["provider"] or "unknown", api=api,
                endpoint=endpoint, host=host, path=path, method="GET", websocket=True, request_body=data or b"",
                blocks=blocks, previous_response_id=previous, status=101,
                request_headers=[(k, v) for k, v in json.loads(flow["request_headers"] or "[]")],
            )
            if problem or data is None:
                current.problem = f"missing body: {problem or 'the request frame has no stored body'}"
            asked_at = row["ts"] or 0.0
            calls.append(current)
        elif not row["from_client"] and current is not None:
            if data is None:
                current.problem = current.problem or f"missing body: server frame {row['idx']} has no stored body"
                continue
            current.frames.append(Frame(_gap(asked_at, row["ts"]), text, data))
            if row["msg_type"] == "response.completed":
                event = _json(data) or {}
                rid = (event.get("response") or {}).get("id")
                current.response_id = rid if isinstance(rid, str) else current.response_id
    for call in calls:
        ends = [f for f in call.frames if f.text and (_json(f.data) or {}).get("type") in ws_terminal_types()]
        if not call.problem and not ends:
            call.problem = "truncated stream: the recorded WebSocket turn has no final response frame"
    return calls


def _check_chains(calls: list[Recorded]) -> None:
    """A continuation must name a response the capture holds (else the chain has a gap)."""
    known: set[str] = set()
    for call in calls:
        previous = call.previous_response_id
        if previous and previous not in known and not call.problem:
            call.problem = (f"WebSocket chain gap: it continues response {previous}, which the capture does not "
                            f"hold (a turn is missing before it)")
        if call.response_id:
            known.add(call.response_id)
