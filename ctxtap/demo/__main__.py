"""`python -m ctxtap.demo AGENT`: one simulated agent session, as a command an experiment can run.

It talks to the provider's real origin through the proxy named by HTTPS_PROXY and trusts the
CA bundle named by SSL_CERT_FILE (what `ctxtap record` and `ctxtap experiment run` set), so
the recording proxy routes it to the scripted model server. Exit 0 when the session finished,
1 when it failed (the reason on stderr); `--answer FILE` writes the final answers for a check.
It also stands in for a real CLI under `ctxtap replay CAPTURE -- ...` (`--prompt-suffix` changes the
task; `--inject-429 --volatile-turn 3` reproduce a session recorded with the demo's defaults).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from ctxtap.demo.agents import AGENTS, run_agent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ctxtap.demo", description=__doc__.split("\n\n")[0])
    parser.add_argument("agent", choices=AGENTS)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--clock", choices=["none", "system", "message"], default="none",
                        help="a fresh timestamp every turn, in the system prompt or in the user message")
    parser.add_argument("--inject-429", action="store_true", help="ask the server for one 429 with Retry-After")
    parser.add_argument("--inject", metavar="FAULT", help="ask for this fault instead: 401, '429; retry-after=2', ...")
    parser.add_argument("--inject-turn", type=int, default=2, help="the turn whose first request gets the fault")
    parser.add_argument("--retry-scale", type=float, default=0.01, help="Retry-After is multiplied by this")
    parser.add_argument("--max-retry-wait", type=float, default=0.5, help="longest wait before a retry, seconds")
    parser.add_argument("--answer", type=Path, help="write the session's final answers (JSON) to this file")
    parser.add_argument("--volatile-turn", type=int, default=0, help="from this turn on, a timestamp leads the system prompt")
    parser.add_argument("--prompt-suffix", default="", help="appended to every user prompt (a changed task)")
    args = parser.parse_args(argv)
    proxy = os.environ.get("HTTPS_PROXY") or os.environ.get("https_proxy")
    ca_file = os.environ.get("SSL_CERT_FILE")
    try:
        summary = run_agent(args.agent, proxy=proxy, ca_file=ca_file, turns=args.turns,
                            clock=None if args.clock == "none" else args.clock, volatile_turn=args.volatile_turn,
                            inject_error=args.inject_429 or bool(args.inject), inject=args.inject or "429",
                            inject_turn=args.inject_turn, retry_scale=args.retry_scale,
                            max_retry_wait=args.max_retry_wait, prompt_suffix=args.prompt_suffix)
    except Exception as exc:  # a failed session is this command's result, said in one line
        print(f"{args.agent}: the session failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    if args.answer:
        args.answer.write_text(json.dumps({"agent": args.agent, "answers": summary.final_texts}, indent=2))
    print(f"{args.agent}: {summary.turns} turns, {len(summary.calls)} model calls, {summary.tool_calls} tool calls, "
          f"{summary.retries} retries")
    return 0 if summary.ok else 1


if __name__ == "__main__":
    sys.exit(main())
