"""`ctxtap demo`: simulated coding agents that talk to the scripted model server.

They let a new user see ctxtap's recording and reports without API keys,
installed CLIs or network access.
"""

from __future__ import annotations

from .agents import AGENTS, DEFAULT_BASE_URLS, AgentSummary, FakeShell, run_agent, run_all

__all__ = ["AGENTS", "DEFAULT_BASE_URLS", "AgentSummary", "FakeShell", "run_agent", "run_all"]
