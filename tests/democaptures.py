"""Small analysed captures of one simulated agent, recorded through the real proxy to the scripted server.

Used by the diff and experiment tests: one agent and a few turns keep them quick, and the agent's
options (see `ctxtap.demo.agents.AgentOptions`) are the variable a test changes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def agent_capture(directory: Path, config_dir: Path, agent: str = "claude", turns: int = 3,
                  **options: Any) -> Path:
    """`directory/capture`: one simulated agent session, analysed (reused when already recorded)."""
    from ctxtap.analysis.build import ensure_analysis
    from ctxtap.demo.agents import run_agent
    from ctxtap.modelserver import ModelServer
    from tests.proxyharness import routes_to, start_proxy

    capture = directory / "capture"
    if not (capture / "manifest.json").exists():
        directory.mkdir(parents=True, exist_ok=True)
        with ModelServer() as server:
            proxy = start_proxy(capture, config_dir, routes_to(server.url))
            try:
                summary = run_agent(agent, proxy=proxy.url, ca_file=proxy.ca_bundle, turns=turns, **options)
            finally:
                proxy.stop()
        assert summary.ok, summary.error
    ensure_analysis(capture)
    return capture
