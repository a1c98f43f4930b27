"""The request headers Claude Code sends with a call (a support module, no tests: the Anthropic and Bedrock
parser tests use them)."""

from __future__ import annotations

CLAUDE_HEADERS = [
    ("User-Agent", "claude-cli/2.1.300 (external, cli)"),
    ("X-Claude-Code-Session-Id", "sess-from-header"),
    ("x-app", "cli"),
    ("x-claude-code-prompt-id", "prompt-1"),
    ("x-claude-1p-request-class", "main"),
]
