"""`python -m ctxtap.demo AGENT [--turns N]`: one simulated agent session as a command of its own.

It talks through the proxy the environment names (HTTPS_PROXY, and SSL_CERT_FILE for its CA), so
it can stand in for a real CLI under `ctxtap record -- ...` or `ctxtap replay CAPTURE -- ...`.
Exits 0 when the agent finished its tool loop, 1 when it failed (the reason on stderr).
"""

from __future__ import annotations

import argparse
import os
import sys

from .agents import AGENTS, run_agent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ctxtap.demo", description=__doc__.splitlines()[0])
    parser.add_argument("agent", choices=AGENTS)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--no-error", action="store_true", help="do not ask the server for a rate-limit error")
    parser.add_argument("--volatile-turn", type=int, default=3, help="turn from which a timestamp leads the prompt")
    parser.add_argument("--prompt-suffix", default="", help="appended to every user prompt (a changed task)")
    args = parser.parse_args(argv)
    proxy = os.environ.get("HTTPS_PROXY") or os.environ.get("https_proxy")
    try:
        summary = run_agent(args.agent, proxy=proxy, ca_file=os.environ.get("SSL_CERT_FILE"), turns=args.turns,
                            inject_error=not args.no_error, volatile_turn=args.volatile_turn,
                            prompt_suffix=args.prompt_suffix)
    except Exception as exc:  # a failed session is the answer, not a crash
        print(f"{args.agent}: failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(f"{args.agent}: {len(summary.calls)} model calls, {summary.tool_calls} tool calls, "
          f"{'ok' if summary.ok else 'FAILED: ' + str(summary.error)}")
    return 0 if summary.ok else 1


if __name__ == "__main__":
    sys.exit(main())
