"""AWS event-stream bodies as Bedrock streams them, built from the format, and read back with every frame
checked (a support module, no tests: the event-stream redaction tests, the proxy's redaction test and
benchmarks/bench_stream_shapes.py use it)."""

from __future__ import annotations

import base64
import json
import struct
import zlib


def _header(name: str, value: str) -> bytes:
    raw_name, raw_value = name.encode(), value.encode()
    return bytes([len(raw_name)]) + raw_name + b"\x07" + len(raw_value).to_bytes(2, "big") + raw_value


def frame(payload: bytes, event_type: str = "chunk", extra: bytes = b"", *, exception: bool = False) -> bytes:
    """One AWS event-stream message (prelude, headers, payload, CRC-32s), built here from the format;
    with `exception`, an exception message of that type (as Bedrock ends a failing stream)."""
    headers = (_header(":exception-type" if exception else ":event-type", event_type)
               + _header(":content-type", "application/json")
               + _header(":message-type", "exception" if exception else "event") + extra)
    prelude = struct.pack(">II", 16 + len(headers) + len(payload), len(headers))
    prelude += zlib.crc32(prelude).to_bytes(4, "big")
    message = prelude + headers + payload
    return message + zlib.crc32(message).to_bytes(4, "big")


def invoke_stream(chunks: list[str]) -> bytes:
    """InvokeModelWithResponseStream: each Anthropic event base64-encoded in `bytes`."""
    events = [{"type": "message_start", "message": {"id": "msg_1", "role": "assistant", "content": []}}]
    events += [{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": c}} for c in chunks]
    events.append({"type": "message_stop", "amazon-bedrock-invocationMetrics": {"inputTokenCount": 9}})
    return b"".join(frame(json.dumps({"bytes": base64.b64encode(json.dumps(e).encode()).decode(),
                                      "p": "abcdefghijklmnop"[: 1 + i % 16]}, separators=(",", ":")).encode())
                    for i, e in enumerate(events))


def converse_stream(chunks: list[str]) -> bytes:
    """ConverseStream: the JSON in the payload itself, one `contentBlockDelta` frame per piece."""
    out = [frame(b'{"role":"assistant","p":"abc"}', "messageStart")]
    out += [frame(json.dumps({"contentBlockIndex": 0, "delta": {"text": c}, "p": "xy"}).encode(), "contentBlockDelta")
            for c in chunks]
    return b"".join(out + [frame(b'{"stopReason":"end_turn","p":"a"}', "messageStop")])


def frames_of(body: bytes) -> list[tuple[bytes, bytes]]:
    """(headers, payload) of every frame, each checked against its lengths and checksums."""
    out, pos = [], 0
    while pos < len(body):
        total, header_size, crc = struct.unpack_from(">III", body, pos)
        assert zlib.crc32(body[pos:pos + 8]) == crc
        message = body[pos:pos + total]
        assert zlib.crc32(message[:-4]) == int.from_bytes(message[-4:], "big")
        out.append((message[12:12 + header_size], message[12 + header_size:-4]))
        pos += total
    assert pos == len(body)
    return out


def streamed_text(body: bytes) -> str:
    text = ""
    for _, payload in frames_of(body):
        obj = json.loads(payload)
        if "bytes" in obj:
            obj = json.loads(base64.b64decode(obj["bytes"]))
        delta = obj.get("delta")
        text += delta.get("text", "") if isinstance(delta, dict) else ""
    return text
