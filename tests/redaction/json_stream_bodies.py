"""Streamed answers as JSON values and as SSE of APIs the joiner has no rule for: Gemini's JSON array,
Ollama's NDJSON, Cohere's and TGI's SSE, one delta per chunk (a support module, no tests: the JSON-stream
redaction tests, the proxy's redaction test and benchmarks/bench_stream_shapes.py use it)."""

from __future__ import annotations

import json


def _gemini_array(chunks: list[str]) -> bytes:
    """`streamGenerateContent` without `alt=sse`: one pretty-printed JSON array, an element per chunk."""
    elements = [json.dumps({"candidates": [{"content": {"parts": [{"text": c}], "role": "model"}, "index": 0}],
                            "usageMetadata": {"promptTokenCount": 9}, "modelVersion": "gemini-2.5-pro"}, indent=2)
                for c in chunks]
    return ("[" + "\n,\r\n".join(elements) + "]").encode()


def _ollama_chat(chunks: list[str]) -> bytes:
    lines = [{"model": "qwen3", "created_at": f"2026-12-03T10:00:0{i % 10}Z",
              "message": {"role": "assistant", "content": c}, "done": False} for i, c in enumerate(chunks)]
    lines.append({"model": "qwen3", "message": {"role": "assistant", "content": ""}, "done": True,
                  "eval_count": len(chunks)})
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def _ollama_generate(chunks: list[str]) -> bytes:
    return "".join(json.dumps({"model": "qwen3", "response": c, "done": False}) + "\n" for c in chunks).encode()


def _cohere_sse(chunks: list[str]) -> bytes:
    """An SSE API no rule names (Cohere v2 chat): the text sits at `delta.message.content.text`."""
    events = [{"type": "content-delta", "index": 0, "delta": {"message": {"content": {"text": c}}}} for c in chunks]
    return "".join(f"event: content-delta\ndata: {json.dumps(e)}\n\n" for e in events).encode()


def _tgi_sse(chunks: list[str]) -> bytes:
    """Hugging Face text-generation-inference: `token.text` per event."""
    events = [{"index": i, "token": {"id": i, "text": c, "logprob": -0.1, "special": False},
               "generated_text": None, "details": None} for i, c in enumerate(chunks)]
    return "".join(f"data:{json.dumps(e)}\n\n" for e in events).encode()
