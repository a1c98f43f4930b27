"""The live proxy: secrets whose deltas straddle the 256 KiB batch and 64 KiB segment cuts never reach disk.

A loopback upstream streams one long SSE response through the real
`ctxtap proxy` (mitmproxy). Each secret is split across two deltas placed so
that a cut falls exactly between them, or inside the second one, at every
64 KiB offset (four of which are where the recorder hands the writer a
256 KiB batch); the upstream writes exactly up to each offset and pauses, so
the proxy's reads, and so its batches, end there.
"""

from __future__ import annotations

import http.server
import json
import threading
import time

from ctxtap.capture.store import Capture
from ctxtap.modelserver.client import HttpClient
from tests.proxyharness import all_stored_bytes, start_proxy
from tests.secret_corpus import generate_secrets
from tests.secret_examples.matrix import body_views, leaked

SEGMENT = 64 * 1024
BATCH = 256 * 1024
CUTS = 20  # 1.25 MiB of stream: five batch cuts, twenty segment cuts


def _event(shape: str, text: str) -> bytes:
    if shape == "anthropic":
        ev = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}
        return b"event: content_block_delta\ndata: " + json.dumps(ev).encode() + b"\n\n"
    if shape == "responses":
        ev = {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0,
              "delta": text}
        return b"event: response.output_text.delta\ndata: " + json.dumps(ev).encode() + b"\n\n"
    ev = {"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {"content": text}}]}
    return b"data: " + json.dumps(ev).encode() + b"\n\n"


def _filler(shape: str, size: int) -> bytes:
    """Events of exactly `size` bytes of ordinary prose."""
    out = b""
    while size - len(out) > 0:
        room = size - len(out)
        base = len(_event(shape, ""))
        if room < base + 1:
            return b""  # cannot hit the size exactly
        take = min(room - base, 2000)
        if 0 < room - base - take < base + 1:
            take = room - base - (base + 1)
        out += _event(shape, ("the build passed again. " * 100)[:take])
    return out


def build_stream(secrets: list[str]) -> tuple[bytes, list[int]]:
    """The body and the offsets it must be written up to (every 64 KiB)."""
    body = b""
    placed = []
    for k in range(1, CUTS + 1):
        cut = k * SEGMENT
        secret = secrets[(k - 1) % len(secrets)]
        shape = ("anthropic", "responses", "chat")[k % 3]
        half = len(secret) // 2
        first = _event(shape, "config: " + secret[:half])
        second = _event(shape, secret[half:] + " (rotate it)")
        if k % 2:  # the cut falls between the two deltas
            head = cut - len(body) - len(first)
        else:  # the cut falls inside the second delta, inside the secret
            head = cut - len(body) - len(first) - second.find(json.dumps(secret[half:])[1:4].encode()) - 2
        fill = _filler(shape, head)
        assert len(fill) == head, (k, head)
        body += fill + first + second
        placed.append(secret)
    body += _event("anthropic", " done.") + b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
    return body, [k * SEGMENT for k in range(1, CUTS + 1)]


class _Upstream(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    body = b""
    cuts: list[int] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        last = 0
        for end in [*self.cuts, len(self.body)]:
            part = self.body[last:end]
            self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            self.wfile.flush()
            time.sleep(0.02)  # the proxy reads up to here before more arrives
            last = end
        self.wfile.write(b"0\r\n\r\n")

    def log_message(self, *args) -> None:
        pass


def test_secrets_split_across_batch_and_segment_cuts_never_reach_disk(tmp_path, ctxtap_config):
    secrets = [s.value for s in generate_secrets(seed=11) if s.standalone and s.token]
    secrets.insert(0, "ghp_" + "Q7xk2MZpL9" * 4)  # its first 40 characters are a valid key by themselves
    body, cuts = build_stream(secrets)
    assert len(body) > 4 * BATCH
    _Upstream.body, _Upstream.cuts = body, cuts
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Upstream)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        pp = start_proxy(tmp_path / "cap", ctxtap_config, [f"api.anthropic.com=http://127.0.0.1:{server.server_address[1]}"])
        try:
            client = HttpClient("https://api.anthropic.com", proxy=pp.url, ca_file=pp.ca_bundle, timeout=60)
            resp = client.request("POST", "/v1/messages", b'{"stream": true}', [("content-type", "application/json")])
            assert resp.body() == body  # forwarded unchanged
            client.close()
        finally:
            pp.stop()
    finally:
        server.shutdown()
    used = secrets[:CUTS]
    stored = [data.decode("utf-8", "replace") for _, data in all_stored_bytes(tmp_path / "cap")]
    cap = Capture.open(tmp_path / "cap")
    (flow,) = [f for f in cap.flows().to_pylist() if f["host"] == "api.anthropic.com"]
    stored_body = cap.body(flow["response_body_id"])
    views = stored + body_views(stored_body)
    assert leaked(used, views) == set()
    for line in stored_body.decode().splitlines():  # every stored event still parses, placeholders inside strings
        if line.startswith("data:"):
            json.loads(line[5:])
    assert stored_body.count(b"[REDACTED:") >= CUTS
    assert flow["response_bytes_wire"] == len(body)
