"""Score a recorded run of a real CLI against its hand-checked reference layout
(benchmarks/reference_layouts/), shared by the real-CLI tier and the tests on its recordings."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import bench_generalisation as bench  # noqa: E402

# real-CLI tier name -> reference layout
REFERENCE_OF = {"claude": "claude-code", "claude-bedrock": "claude-code", "claude-vertex": "claude-code",
                "claude-foundry": "claude-code", "claude-aws": "claude-code", "claude-google-cloud": "claude-code",
                "claude-mantle": "claude-code",
                "codex": "codex", "codex-sse": "codex-sse", "kimi-code": "kimi-code",
                "grok": "grok-cli", "gemini": "gemini-cli", "opencode": "opencode", "opencode-bedrock": "opencode",
                "kimi-cli": "kimi-cli", "pi": "pi", "mini-swe-agent": "mini-swe-agent",
                "qwen-code": "qwen-code", "cline": "cline"}


# Runs that open with requests of their own before the reference's calls: Claude Code on Bedrock
# first probes each model it may use (a request with `max_tokens` 1, read off the raw body).
PROBES_FIRST = frozenset({"claude-bedrock"})


def layout_problems(cli: str, calls: list) -> list[str]:
    """What the recorded calls get wrong against the CLI's reference: sources by segment (tokens),
    side requests, threads. Empty when ctxtap reads the run as a person checked it."""
    ref = tomllib.loads((bench.REFERENCES / f"{REFERENCE_OF[cli]}.toml").read_text())
    ref["name"] = REFERENCE_OF[cli]
    if cli in PROBES_FIRST:
        probes = [i for i, c in enumerate(calls) if c.request.max_output_tokens == 1]
        rest = [i for i in range(len(calls)) if i not in probes]  # the reference's calls, in order
        if len(rest) <= max(ref["request"], *ref.get("side", []), *ref["threads"].get("main", [])):
            return [f"{cli}: {len(rest)} calls besides {len(probes)} probes, fewer than the reference has"]
        ref.update(request=rest[ref["request"]], side=probes + [rest[i] for i in ref.get("side", [])],
                   threads={name: [rest[i] for i in members] for name, members in ref["threads"].items()})
    if len(calls) <= ref["request"]:
        return [f"{cli}: {len(calls)} model calls, the reference scores request {ref['request']}"]
    try:
        score = bench.score(ref, calls)
    except ValueError as exc:  # an anchor of the reference is no longer in the request
        return [str(exc)]
    problems = []
    if score.share < 0.95:
        problems.append(f"{cli}: only {score.share:.1%} of the request's tokens have the reference's source")
    if score.side_found != score.side_expected or score.side_extra:
        problems.append(f"{cli}: side requests found {score.side_found}/{score.side_expected}, "
                        f"{score.side_extra} more than the reference")
    if score.threads_right != score.threads_expected:
        problems.append(f"{cli}: threads right {score.threads_right}/{score.threads_expected}")
    return problems
