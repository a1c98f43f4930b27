"""Analyzer benchmark: cost follows the unique content, not the resent history.

Builds synthetic corpora of long Anthropic-style sessions (every request resends
the whole history) at T, 2T and 4T turns per session, imports them, and prints
side by side, from one run:
  1. bytes tokenised / unique block bytes (target <= 1.05);
  2. analysis time at each length (median of repeats run in rounds over the three
     lengths, so a change in the machine's load hits each alike; wall and CPU), and
     the time ratio of each doubling next to the ratio of unique content it adds
     (target <= 2.2x time per doubling, while request bytes grow ~4x);
  3. speed against naive per-request tokenising of every block (smallest corpus).

Run: .venv/bin/python benchmarks/bench_analyzer.py [--sessions N] [--turns T] [--repeats R] [--shape S]
(--shape claude-code: the history first, a per-request billing hash, a moving cache breakpoint)
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ctxtap.analysis.build import AnalyzeOptions, ensure_analysis  # noqa: E402
from ctxtap.analysis.parsing import tokens  # noqa: E402
from ctxtap.analysis.parsing.parse import parse_exchanges  # noqa: E402
from ctxtap.capture.store import Capture  # noqa: E402
from ctxtap.ingest.importer import import_files  # noqa: E402

WORDS = ("the of and to in is that for it as with was on be by this are from at file src test def class "
         "return import value error result config module function data path").split()


def text(rnd: random.Random, words: int) -> str:
    return " ".join(rnd.choice(WORDS) for _ in range(words))


def _claude_code_body(rnd: random.Random, tools: list, system: list, messages: list) -> dict:
    """Claude Code's shape: the history first, a billing hash that changes on every request in
    system[0], and the cache breakpoint moved to the newest message."""
    messages = json.loads(json.dumps(messages))
    last = messages[-1]
    if isinstance(last["content"], str):
        last["content"] = [{"type": "text", "text": last["content"]}]
    last["content"][-1]["cache_control"] = {"type": "ephemeral"}
    billing = {"type": "text", "text": f"x-anthropic-billing-header: cc_version=9.9.9; cch={rnd.getrandbits(20):05x};"}
    return {"model": "claude-sonnet-4-5", "messages": messages, "system": [billing, *system], "tools": tools,
            "max_tokens": 8000, "stream": False}


def session_entries(index: int, turns: int, start: float, shape: str = "plain") -> list[dict]:
    rnd = random.Random(index)
    tools = [{"name": f"tool_{i}", "description": text(rnd, 120),
              "input_schema": {"type": "object", "properties": {"arg": {"type": "string"}}}} for i in range(8)]
    system = [{"type": "text", "text": text(rnd, 600), "cache_control": {"type": "ephemeral"}}]
    messages: list[dict] = [{"role": "user", "content": f"Task {index}: " + text(rnd, 40)}]
    entries = []
    ts = start
    for turn in range(turns):
        if shape == "claude-code":
            body = _claude_code_body(rnd, tools, system, messages)
        else:
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


def build_capture(tmp: Path, sessions: int, turns: int, shape: str = "plain") -> tuple[Path, int]:
    """Import `sessions` sessions of `turns` turns; one HAR file per session keeps memory bounded."""
    hars, request_bytes = [], 0
    for i in range(sessions):
        entries = session_entries(i, turns, 1_800_000_000 + i * 10_000, shape)
        request_bytes += sum(len(e["request"]["postData"]["text"]) for e in entries)
        har = tmp / f"corpus-{turns}-{i}.har"
        har.write_text(json.dumps({"log": {"version": "1.2", "creator": {"name": "bench"}, "entries": entries}}))
        hars.append(har)
        del entries
    cap = tmp / f"cap-{turns}"
    import_files(hars, cap, b"k" * 32)
    for har in hars:
        har.unlink()
    return cap, request_bytes


def analyse(cap: Path) -> tuple[float, float, dict]:
    """(wall seconds, CPU seconds, build stats) of one full (forced) analysis."""
    start, cpu = time.perf_counter(), time.process_time()
    out, _ = ensure_analysis(cap, AnalyzeOptions(force=True))
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu
    return seconds, cpu_seconds, json.loads((out / "_meta.json").read_text())["stats"]


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
    parser.add_argument("--sessions", type=int, default=4)
    parser.add_argument("--turns", type=int, default=150, help="turns of the shortest corpus (then x2, x4)")
    parser.add_argument("--repeats", type=int, default=5, help="analyses per corpus (in rounds); the median is reported")
    parser.add_argument("--no-naive", action="store_true", help="skip the naive tokenising comparison")
    parser.add_argument("--shape", choices=["plain", "claude-code"], default="plain",
                        help="plain: tools, system, then messages, nothing changes; claude-code: messages first, "
                             "a per-request billing hash in system[0], the cache breakpoint on the newest message")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="ctxtap-bench-analyzer-"))
    os.environ.setdefault("CTXTAP_CONFIG_DIR", str(tmp / "config"))
    lengths = [args.turns, args.turns * 2, args.turns * 4]
    repeats = max(1, args.repeats)
    try:
        caps = [build_capture(tmp, args.sessions, turns, args.shape) for turns in lengths]
        analyse(caps[0][0])  # warm caches (tokenizer load, imports)
        runs: list[list[tuple[float, float, dict]]] = [[] for _ in lengths]
        for _ in range(repeats):  # rounds over all lengths: a change in the machine's load hits each alike
            for i, (cap, _) in enumerate(caps):
                runs[i].append(analyse(cap))
        results = []
        for turns, (cap, nbytes), rs in zip(lengths, caps, runs, strict=True):
            walls, cpus = [r[0] for r in rs], [r[1] for r in rs]
            results.append({"turns": turns, "bytes": nbytes, "stats": rs[-1][2], "walls": walls, "cpus": cpus,
                            "wall": statistics.median(walls), "cpu": statistics.median(cpus), "cap": cap})
        print(f"analyzer benchmark ({args.shape}): {args.sessions} sessions of {', '.join(map(str, lengths))} turns, "
              f"median of {repeats} analyses each, in {repeats} rounds over the three (wall and CPU seconds)")
        for r in results:
            stats = r["stats"]
            ratio = stats["bytes_tokenised"] / stats["unique_block_bytes"]
            print(f"  {r['turns']:4d} turns: {stats['requests']:5d} requests, {r['bytes'] / 1e6:7.1f} MB of request "
                  f"bodies, {stats['unique_block_bytes'] / 1e6:5.2f} MB unique block text; analysed in "
                  f"{r['wall']:6.2f} s wall ({min(r['walls']):.2f}-{max(r['walls']):.2f}), "
                  f"{r['cpu']:6.2f} s CPU ({min(r['cpus']):.2f}-{max(r['cpus']):.2f}); "
                  f"bytes tokenised / unique block bytes = {ratio:.3f}  (target <= 1.05)")
        print("  doubling turns        request bytes   unique content   time (wall)   time (CPU)   target")
        for a, b in zip(results, results[1:], strict=False):
            unique = b["stats"]["unique_block_bytes"] / a["stats"]["unique_block_bytes"]
            print(f"  {a['turns']:4d} -> {b['turns']:4d} turns    x{b['bytes'] / a['bytes']:5.2f}"
                  f"          x{unique:5.2f}           x{b['wall'] / a['wall']:5.2f}        "
                  f"x{b['cpu'] / a['cpu']:5.2f}       <= 2.2")
        if not args.no_naive:
            first = results[0]
            t_naive, _ = naive_tokenise(first["cap"])
            print(f"  naive per-request tokenising of the {first['turns']}-turn corpus: {t_naive:6.2f} s "
                  f"({t_naive / first['wall']:.1f}x the analyzer's whole run)")
        print("  (2 cores shared with other work: wall above CPU means the run waited for a core)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
