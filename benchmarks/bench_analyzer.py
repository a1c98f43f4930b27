"""Analyzer benchmark: cost follows the unique content, not the resent history.

Builds a synthetic corpus of many long Anthropic-style sessions (every request
resends the whole history), imports it, and prints side by side:
  1. bytes tokenised / unique block bytes (target <= 1.05);
  2. analysis time when turns per session double, against the growth of
     cumulative request bytes (target <= 2.3x time for ~4x bytes);
  3. speed against naive per-request tokenising of every block.

Run: .venv/bin/python benchmarks/bench_analyzer.py [--sessions N] [--turns T]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from analysis import tokens  # noqa: E402
from analysis.build import AnalyzeOptions, ensure_analysis  # noqa: E402
from analysis.parse import parse_exchanges  # noqa: E402
from ctxtap.capture.store import Capture  # noqa: E402
from ctxtap.ingest.importer import import_files  # noqa: E402

WORDS = ("the of and to in is that for it as with was on be by this are from at file src test def class "
         "return import value error result config module function data path").split()


def text(rnd: random.Random, words: int) -> str:
    return " ".join(rnd.choice(WORDS) for _ in range(words))


def session_entries(index: int, turns: int, start: float) -> list[dict]:
    rnd = random.Random(index)
    tools = [{"name": f"tool_{i}", "description": text(rnd, 120),
              "input_schema": {"type": "object", "properties": {"arg": {"type": "string"}}}} for i in range(8)]
    system = [{"type": "text", "text": text(rnd, 600), "cache_control": {"type": "ephemeral"}}]
    messages: list[dict] = [{"role": "user", "content": f"Task {index}: " + text(rnd, 40)}]
    entries = []
    ts = start
    for turn in range(turns):
        body = {"model": "claude-sonnet-4-5", "max_tokens": 8000, "stream": False, "tools": tools,
                "system": system, "messages": messages}
        call_id = f"toolu_{index}_{turn}"
        response = {"id": f"msg_{index}_{turn}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                    "content": [{"type": "text", "text": text(rnd, 20)},
                                {"type": "tool_use", "id": call_id, "name": "tool_1", "input": {"arg": text(rnd, 5)}}],
                    "stop_reason": "tool_use",
                    "usage": {"input_tokens": 100, "cache_read_input_tokens": 1000 * turn,
                              "cache_creation_input_tokens": 200, "output_tokens": 40}}
        entries.append({
            "startedDateTime": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(ts)), "time": 500,
            "request": {"method": "POST", "url": "https://api.anthropic.com/v1/messages", "httpVersion": "HTTP/1.1",
                        "headers": [{"name": "content-type", "value": "application/json"},
                                    {"name": "x-claude-code-session-id", "value": f"bench-session-{index}"},
                                    {"name": "user-agent", "value": "claude-cli/9.9.9 (external, cli)"}],
                        "postData": {"mimeType": "application/json", "text": json.dumps(body)}},
            "response": {"status": 200, "statusText": "OK", "httpVersion": "HTTP/1.1",
                         "headers": [{"name": "content-type", "value": "application/json"}],
                         "content": {"mimeType": "application/json", "text": json.dumps(response)}},
        })
        ts += 2
        messages = messages + [
            {"role": "assistant", "content": response["content"]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": text(rnd, 300)}]},
        ]
    return entries


def build_capture(tmp: Path, sessions: int, turns: int) -> tuple[Path, int]:
    entries = []
    for i in range(sessions):
        entries += session_entries(i, turns, 1_800_000_000 + i * 10_000)
    har = tmp / f"corpus-{turns}.har"
    har.write_text(json.dumps({"log": {"version": "1.2", "creator": {"name": "bench"}, "entries": entries}}))
    cap = tmp / f"cap-{turns}"
    import_files([har], cap, b"k" * 32)
    request_bytes = sum(len(e["request"]["postData"]["text"]) for e in entries)
    return cap, request_bytes


def analyse(cap: Path) -> tuple[float, dict]:
    """(seconds, build stats) of one full (forced) analysis."""
    start = time.perf_counter()
    out, _ = ensure_analysis(cap, AnalyzeOptions(force=True))
    seconds = time.perf_counter() - start
    return seconds, json.loads((out / "_meta.json").read_text())["stats"]


def naive_tokenise(cap: Path) -> tuple[float, int]:
    """Parse every request and tokenise all of its blocks, the way a per-request tool would."""
    start = time.perf_counter()
    total = 0
    for call in parse_exchanges(Capture.open(cap).exchanges()):
        texts = [b.text for b in call.request.blocks]
        total += sum(tokens.count(texts))
    return time.perf_counter() - start, total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--turns", type=int, default=40)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="ctxtap-bench-analyzer-"))
    os.environ.setdefault("CTXTAP_CONFIG_DIR", str(tmp / "config"))
    try:
        small, small_bytes = build_capture(tmp, args.sessions, args.turns)
        large, large_bytes = build_capture(tmp, args.sessions, args.turns * 2)
        analyse(small)  # warm caches (tokenizer load, imports)
        # best of three: the machine's noise is larger than the effect near the target
        t_small, s_small = min(analyse(small) for _ in range(3))
        t_large, s_large = min(analyse(large) for _ in range(3))
        t_naive, _ = naive_tokenise(large)
        print(f"analyzer benchmark: {args.sessions} sessions, {args.turns} vs {args.turns * 2} turns each")
        for label, seconds, stats, nbytes in (("small", t_small, s_small, small_bytes),
                                              ("large", t_large, s_large, large_bytes)):
            ratio = stats["bytes_tokenised"] / stats["unique_block_bytes"]
            print(f"  {label}: {stats['requests']} requests, {nbytes / 1e6:7.1f} MB of request bodies, "
                  f"{stats['unique_block_bytes'] / 1e6:6.2f} MB unique block text, analysed in {seconds:6.2f} s; "
                  f"bytes tokenised / unique block bytes = {ratio:.3f}  (target <= 1.05)")
        print(f"  doubling turns: request bytes x{large_bytes / small_bytes:.2f}, "
              f"analysis time x{t_large / t_small:.2f}  (target <= 2.3)")
        print(f"  naive per-request tokenising of the large corpus: {t_naive:6.2f} s "
              f"({t_naive / t_large:.1f}x the analyzer's whole run)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
