"""Redaction of streamed answers in every shape the writer joins, side by side in one run.

A model's answer reaches the writer as SSE (Anthropic, Responses, Chat
Completions, Gemini), as JSON values (Gemini's array without `alt=sse`, Ollama's
NDJSON), or as AWS event-stream frames (Bedrock), each delta a few words. The
writer frames each into events and joins their content streams before redacting
(`redaction.streams`, `json_stream`, `eventstream`), all in Python per event. This
prints, per shape, MB/s and events/s of CPU time through the writer's own stream
object (`_Stream`, 64 KiB reads), best of `--repeat`. A model streams some 100
events a second; the figures say how far above that each shape is.

    python benchmarks/bench_stream_shapes.py [--deltas 60000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ctxtap.capture.bodies import BodyEncoder  # noqa: E402
from ctxtap.capture.writer import _Stream  # noqa: E402
from ctxtap.redaction import Redactor  # noqa: E402
from tests.redaction.eventstream_frames import invoke_stream  # noqa: E402
from tests.redaction.json_stream_bodies import _cohere_sse, _gemini_array, _ollama_chat  # noqa: E402


def anthropic_sse(chunks: list[str]) -> bytes:
    events = [{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": c}} for c in chunks]
    return "".join(f"event: content_block_delta\ndata: {json.dumps(e)}\n\n" for e in events).encode()


SHAPES = [
    ("Anthropic SSE", anthropic_sse, "text/event-stream"),
    ("Cohere-shaped SSE (generic rule)", _cohere_sse, "text/event-stream"),
    ("Gemini JSON array", _gemini_array, "application/json"),
    ("Ollama NDJSON", _ollama_chat, "application/x-ndjson"),
    ("Bedrock event-stream frames", invoke_stream, "application/vnd.amazon.eventstream"),
]


def measure(body: bytes, content_type: str, repeat: int) -> float:
    """Best CPU seconds to feed `body` through a writer stream in 64 KiB reads and finish it."""
    redactor = Redactor(b"\x00" * 32, "bench")
    best = float("inf")
    for _ in range(repeat):
        stream = _Stream(content_type, None, redactor, BodyEncoder().streamed())
        start = time.process_time()
        for i in range(0, len(body), 65536):
            stream.feed([body[i:i + 65536]])
        stream.finish_body()
        best = min(best, time.process_time() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--deltas", type=int, default=60_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    words = ("the quick brown fox reads the repository and lists files in src and docs " * 3).split()
    chunks = [" ".join(words[i % 20: i % 20 + 4]) for i in range(args.deltas)]
    print(f"{'shape':<34}{'MB':>7}{'MB/s':>8}{'events/s':>11}   (CPU time, one core)")
    for name, maker, content_type in SHAPES:
        body = maker(chunks)
        seconds = measure(body, content_type, args.repeat)
        print(f"{name:<34}{len(body) / 1e6:>7.1f}{len(body) / 1e6 / seconds:>8.1f}{args.deltas / seconds:>11,.0f}")


if __name__ == "__main__":
    main()
