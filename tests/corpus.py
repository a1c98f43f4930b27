"""The real-client corpus (../shared/real-clients) as `Exchange` objects, for tests and benchmarks.

The corpus ships only with the development workspace; everything here degrades to
"absent" so tests can skip with a clear reason on a user's clone.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

from ctxtap.capture.classify import classify_client, classify_flow
from ctxtap.capture.exchange import Exchange, WsMessage

CORPUS_ROOT = Path(
    os.environ.get("CTXTAP_REAL_CLIENTS", Path(__file__).resolve().parents[2] / "shared" / "real-clients")
)
RUNS = (
    "basic/claude",
    "basic/codex",
    "basic/codex-sse",
    "basic/grok",
    "basic/kimi-code",
    "long/claude",
    "long/codex-sse",
    "long/kimi-code",
)
CORPUS2_ROOT = Path(
    os.environ.get("CTXTAP_REAL_CLIENTS_2", Path(__file__).resolve().parents[2] / "shared" / "real-clients-2")
)
SKIP_REASON = f"real-client corpus not found at {CORPUS_ROOT} (set CTXTAP_REAL_CLIENTS to its path)"


def available() -> bool:
    return all((CORPUS_ROOT / run / "flows.mitm").is_file() for run in RUNS)


def flow_to_exchange(flow) -> Exchange:  # a mitmproxy HTTPFlow
    """One mitmproxy HTTPFlow as an Exchange with decoded bodies."""
    req = flow.request
    resp = flow.response
    websocket = getattr(flow, "websocket", None)
    headers = [(k, v) for k, v in req.headers.items(multi=True)]
    body = req.get_content(strict=False) if req.raw_content is not None else None
    fc = classify_flow(req.pretty_host, req.path, req.method, websocket=websocket is not None)
    cc = classify_client(headers, body)
    messages = []
    if websocket is not None:
        for i, m in enumerate(websocket.messages):
            messages.append(
                WsMessage(
                    index=i,
                    from_client=m.from_client,
                    ts=m.timestamp,
                    opcode="text" if m.is_text else "binary",
                    content=m.content,
                )
            )
    return Exchange(
        flow_id=flow.id,
        kind="websocket" if websocket is not None else "http",
        method=req.method,
        url=req.pretty_url,
        host=req.pretty_host,
        path=req.path,
        provider=fc.provider,
        api=fc.api,
        client=cc.client,
        client_version=cc.version,
        request_headers=headers,
        request_body=body,
        status=resp.status_code if resp else None,
        response_headers=[(k, v) for k, v in resp.headers.items(multi=True)] if resp else [],
        response_body=resp.get_content(strict=False) if resp and resp.raw_content is not None else None,
        ts_start=req.timestamp_start,
        ts_response_headers=resp.timestamp_start if resp else None,
        ts_first_byte=resp.timestamp_start if resp else None,
        ts_end=resp.timestamp_end if resp else None,
        error=flow.error.msg if flow.error else None,
        ws_messages=messages,
    )


@cache
def load_run(run: str, root: Path | None = None) -> tuple[Exchange, ...]:
    """Every flow of one run (of ../shared/real-clients, or of `root`), in capture order."""
    from mitmproxy import io

    with open((root or CORPUS_ROOT) / run / "flows.mitm", "rb") as fh:
        flows = list(io.FlowReader(fh).stream())
    return tuple(flow_to_exchange(f) for f in flows if hasattr(f, "request"))


def recorded_command(run: str, root: Path | None = None) -> list[str]:
    """The command line a run of the second corpus was recorded with (its `cmd.txt`'s `+ ...` line, as
    `ctxtap record -- ...` would keep it), or [] when it has none."""
    import shlex

    path = (root or CORPUS2_ROOT) / run / "cmd.txt"
    lines = path.read_text().splitlines() if path.is_file() else []
    return next((shlex.split(ln[2:]) for ln in lines if ln.startswith("+ ")), [])


# --- hand-written protocol fixtures (tests/fixtures/protocols) -----------------------

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "protocols"

_HOSTS = {
    "messages": "api.anthropic.com",
    "responses": "api.openai.com",
    "chat-completions": "api.moonshot.ai",
    "gemini": "cloudcode-pa.googleapis.com",
}


def fixture(name: str) -> bytes:
    """Bytes of a fixture file, e.g. fixture("anthropic/response_stream.sse")."""
    return (FIXTURES / name).read_bytes()


def http_exchange(
    path: str,
    request: bytes | str | dict | None,
    response: bytes | str | dict | None = None,
    *,
    host: str | None = None,
    status: int | None = 200,
    headers: list[tuple[str, str]] | None = None,
    response_headers: list[tuple[str, str]] | None = None,
    flow_id: str = "flow-1",
    ts: float = 1000.0,
) -> Exchange:
    """An HTTP exchange built from fixture bytes; content type inferred from the response body."""
    import json

    def raw(value: bytes | str | dict | None) -> bytes | None:
        if value is None or isinstance(value, bytes):
            return value
        return value.encode() if isinstance(value, str) else json.dumps(value).encode()

    body = raw(request)
    resp = raw(response)
    if host is None:
        fc_api = next((api for pattern, api in _API_BY_PATH if pattern in path), "messages")
        host = _HOSTS[fc_api]
    if response_headers is None:
        sse = resp is not None and resp.lstrip()[:6] in (b"event:", b"data: ")
        response_headers = [("content-type", "text/event-stream" if sse else "application/json")]
    fc = classify_flow(host, path, "POST")
    return Exchange(
        flow_id=flow_id,
        url=f"https://{host}{path}",
        host=host,
        path=path,
        provider=fc.provider,
        api=fc.api,
        request_headers=headers or [],
        request_body=body,
        status=status,
        response_headers=response_headers,
        response_body=resp,
        ts_start=ts,
        ts_first_byte=ts + 0.5,
        ts_end=ts + 1.0,
    )


_API_BY_PATH = (
    ("/messages", "messages"),
    ("/responses", "responses"),
    ("/chat/completions", "chat-completions"),
    ("enerateContent", "gemini"),
    ("countTokens", "gemini"),
)


def ws_exchange(
    frames: list[tuple[bool, bytes]], headers: list[tuple[str, str]] | None = None, flow_id: str = "ws-1"
) -> Exchange:
    """A Responses WebSocket connection from (from_client, content) frames."""
    return Exchange(
        flow_id=flow_id,
        kind="websocket",
        method="GET",
        url="https://api.openai.com/v1/responses",
        host="api.openai.com",
        path="/v1/responses",
        provider="openai",
        api="responses-websocket",
        request_headers=headers or [],
        status=101,
        ts_start=2000.0,
        ws_messages=[
            WsMessage(index=i, from_client=c, ts=2000.0 + i, content=content)
            for i, (c, content) in enumerate(frames)
        ],
    )


def ws_fixture_frames(name: str) -> list[tuple[bool, bytes]]:
    """Frames of a `.jsonl` fixture whose lines are {"from_client": bool, "frame": {...}}."""
    import json

    frames = []
    for line in fixture(name).decode().splitlines():
        if line.strip():
            row = json.loads(line)
            frames.append((bool(row["from_client"]), json.dumps(row["frame"]).encode()))
    return frames
