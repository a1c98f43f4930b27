"""Redaction throughput on agent-shaped request bodies (target: >= 50 MB/s).

Every recorded body goes through `Redactor.redact_bytes` on the proxy's writer
thread, so this is the number that decides whether redaction keeps up with a
busy agent. Bodies are built like real ones: a system prompt, tool schemas,
and a conversation whose tool results are source files; some carry a pasted
`.env` with secrets, one carries a screenshot. Real recorded bodies are added
when the shared real-client captures are present.

    python benchmarks/bench_redaction.py            # prints MB/s per body and overall
    python benchmarks/bench_redaction.py --min-mbps 50   # exit 1 below 50 MB/s
"""

from __future__ import annotations

import argparse
import base64
import inspect
import json
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from redaction import Redactor  # noqa: E402
from tests.secret_corpus import generate_secrets  # noqa: E402


def _sources() -> list[str]:
    import argparse as a
    import email.message as em
    import http.client as hc
    import json.decoder as jd
    import logging as lg
    import pathlib as pl
    import subprocess as sp
    import urllib.parse as up

    return [inspect.getsource(m) for m in (a, em, hc, jd, lg, pl, sp, up)]


def agent_body(size: int, seed: int, *, with_secrets: bool = False, with_image: bool = False) -> bytes:
    """An Anthropic-Messages-shaped request of about `size` bytes."""
    rng = random.Random(seed)
    sources = _sources()
    system = "You are a coding agent. Follow the repository conventions. " * 300
    tools = [
        {
            "name": f"tool_{i}",
            "description": "Run a shell command in the workspace and return stdout and stderr. " * 5,
            "input_schema": {
                "type": "object",
                "properties": {"command": {"type": "string"}, "timeout": {"type": "integer"}},
                "required": ["command"],
            },
        }
        for i in range(20)
    ]
    messages: list[dict] = [
        {"role": "user", "content": "Get me oriented in this repo and fix the failing test."}
    ]
    if with_image:
        image = base64.b64encode(rng.randbytes(size // 4)).decode()
        messages.append(
            {
                "role": "user",
                "content": [
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": image}}
                ],
            }
        )
    if with_secrets:
        env = "\n".join(
            f"{s.env_name}={s.surface}" for s in generate_secrets(seed)[:12] if "\n" not in s.surface
        )
        messages.append(
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_env", "content": env}]}
        )
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 32000,
        "system": system,
        "tools": tools,
        "messages": messages,
    }
    i = 0
    while len(json.dumps(body)) < size:
        tool_id = f"toolu_{rng.getrandbits(64):016x}"
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": tool_id,
                        "name": "Bash",
                        "input": {"command": f"cat file_{i}.py"},
                    }
                ],
            }
        )
        source = sources[i % len(sources)]
        start = rng.randrange(max(1, len(source) - 20_000))
        messages.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": tool_id, "content": source[start : start + 20_000]}
                ],
            }
        )
        i += 1
    return json.dumps(body).encode()


def sse_body(size: int, seed: int) -> bytes:
    """A streamed Messages response of about `size` bytes: many small text deltas."""
    rng = random.Random(seed)
    words = "the quick brown fox reads the repository and lists files in src and docs".split()
    events = ['event: message_start\ndata: {"type":"message_start","message":{"id":"msg_01"}}\n\n']
    total = 0
    while total < size:
        delta = {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": " ".join(rng.choices(words, k=3))},
        }
        event = f"event: content_block_delta\ndata: {json.dumps(delta)}\n\n"
        events.append(event)
        total += len(event)
    return "".join(events).encode()


def real_bodies() -> list[tuple[str, bytes]]:
    """Request bodies >= 50 KB from the shared real-client captures, when present."""
    candidates = [os.environ.get("CTXTAP_SHARED", ""), str(ROOT.parent / "shared"), "/work/shared"]
    base = next(
        (Path(c) / "real-clients" for c in candidates if c and (Path(c) / "real-clients").is_dir()), None
    )
    if base is None:
        return []
    try:
        from mitmproxy import http, io
    except ImportError:
        return []
    out = []
    for path in sorted(base.glob("*/*/flows.mitm")):
        with path.open("rb") as fh:
            for flow in io.FlowReader(fh).stream():
                if isinstance(flow, http.HTTPFlow) and flow.request.raw_content:
                    content = flow.request.get_content(strict=False) or b""
                    if len(content) >= 50_000:
                        out.append((f"real/{path.parent.parent.name}/{path.parent.name}", content))
    return out


def measure(redactor: Redactor, data: bytes, repeat: int) -> float:
    """Best-of-`repeat` throughput in MB/s."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        redactor.redact_bytes(data)
        best = min(best, time.perf_counter() - start)
    return len(data) / best / 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--min-mbps", type=float, default=0.0, help="exit 1 if the overall figure is lower")
    args = parser.parse_args()

    cases = [
        ("agent 100 KB", agent_body(100_000, 1)),
        ("agent 300 KB", agent_body(300_000, 2)),
        ("agent 1 MB", agent_body(1_000_000, 3)),
        ("agent 300 KB + .env secrets", agent_body(300_000, 4, with_secrets=True)),
        ("agent 1 MB + screenshot", agent_body(1_000_000, 5, with_image=True)),
        ("sse response 300 KB", sse_body(300_000, 6)),
    ]
    cases += real_bodies()
    redactor = Redactor(b"\x00" * 32, "bench")
    total_bytes = 0
    total_seconds = 0.0
    for name, data in cases:
        mbps = measure(redactor, data, args.repeat)
        total_bytes += len(data)
        total_seconds += len(data) / (mbps * 1e6)
        print(f"{name:40s} {len(data) / 1e3:8.0f} KB {mbps:8.1f} MB/s")
    overall = total_bytes / total_seconds / 1e6
    print(f"{'overall':40s} {total_bytes / 1e3:8.0f} KB {overall:8.1f} MB/s")
    return 1 if overall < args.min_mbps else 0


if __name__ == "__main__":
    raise SystemExit(main())
