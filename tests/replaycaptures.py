"""Simulated agent sessions recorded through the real proxy, and `ctxtap replay` run as a real process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ctxtap.modelserver import ModelServer
from tests.proxyharness import ROOT, ctxtap_env, routes_to, start_proxy

REPLAY_TIMEOUT = 180  # a hang fails the test instead of stalling the suite


def record(directory: Path, config: Path, agent: str, chunk_delay_s: float = 0.0, turns: int = 3,
           **options) -> Path:
    """One simulated agent session recorded through the real proxy to the scripted server."""
    from ctxtap.demo.agents import run_agent

    capture = directory / "capture"
    if not (capture / "manifest.json").exists():
        directory.mkdir(parents=True, exist_ok=True)
        with ModelServer(chunk_delay_s=chunk_delay_s) as server:
            proxy = start_proxy(capture, config, routes_to(server.url))
            try:
                summary = run_agent(agent, proxy=proxy.url, ca_file=proxy.ca_bundle, turns=turns, **options)
            finally:
                proxy.stop()
        assert summary.ok, summary.error
    return capture


def replay(capture: Path, out: Path, config: Path, *args: str, agent: str | None = "claude",
           agent_args: tuple[str, ...] = (), env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`ctxtap replay CAPTURE --out OUT ARGS -- python -m ctxtap.demo AGENT` (no command when agent is None)."""
    cmd = [sys.executable, "-m", "ctxtap.cli.main", "replay", str(capture), "--out", str(out), *args]
    if agent is not None:
        # the demo command's defaults are fault-free; these reproduce run_agent's defaults `record` used
        cmd += ["--", sys.executable, "-m", "ctxtap.demo", agent, "--inject-429", "--volatile-turn", "3", *agent_args]
    return subprocess.run(cmd, capture_output=True, text=True, env={**ctxtap_env(config), **(env or {})}, cwd=ROOT,
                          timeout=REPLAY_TIMEOUT, stdin=subprocess.DEVNULL)
