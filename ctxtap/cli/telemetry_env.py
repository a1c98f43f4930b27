"""What `ctxtap record --telemetry` sets so a client exports its own telemetry to ctxtap.

Each supported client is switched on with its own documented switches (looked up in the
installed packages): Claude Code and Gemini CLI by environment variables, Codex by
`-c` config overrides on its command line. ctxtap never edits a user's config files, and
a user's own telemetry settings win: if the user already points the client somewhere,
nothing is injected and ctxtap only records which variables it saw (names, never values,
since OTEL headers carry credentials). The plan's `manifest()` says exactly what was
injected, with the receiver's per-run token shown as `<token>`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

# Variables that decide where (or whether) telemetry goes: if the user set any, theirs win.
_DESTINATION_VARS = {
    "claude-code": ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
                    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_LOGS_EXPORTER", "OTEL_METRICS_EXPORTER",
                    "CLAUDE_CODE_ENABLE_TELEMETRY"),
    "gemini-cli": ("GEMINI_TELEMETRY_ENABLED", "GEMINI_TELEMETRY_TARGET", "GEMINI_TELEMETRY_OTLP_ENDPOINT",
                   "GEMINI_TELEMETRY_OUTFILE", "GEMINI_TELEMETRY_USE_COLLECTOR", "OTEL_EXPORTER_OTLP_ENDPOINT"),
    "codex": (),  # Codex reads [otel] from its config.toml only; see _codex_user_otel
}
_RUNTIMES = {"node", "nodejs", "bun", "deno", "npx", "bunx", "tsx"}


@dataclass
class TelemetryPlan:
    client: str | None  # claude-code | gemini-cli | codex, or None (not a client ctxtap can switch on)
    enabled: bool  # the receiver runs and settings were injected
    reason: str = ""  # why not, when not
    env: dict[str, str] = field(default_factory=dict)  # variables to add
    argv: list[str] = field(default_factory=list)  # the command to run (with overrides, for Codex)
    overrides: list[str] = field(default_factory=list)  # the `-c` overrides added (Codex)
    user_settings: list[str] = field(default_factory=list)  # the user's own telemetry variables seen

    def manifest(self, token: str | None) -> dict:
        def hide(value: str) -> str:
            return value.replace(token, "<token>") if token else value

        return {
            "client": self.client, "enabled": self.enabled, "reason": self.reason or None,
            "injected_env": {k: hide(v) for k, v in sorted(self.env.items())},
            "injected_args": [hide(a) for a in self.overrides],
            "user_settings_seen": sorted(self.user_settings),
        }


def detect_client(command: Sequence[str]) -> str | None:
    """The client a command line runs: its program, or the script a runtime (node, bun) runs."""
    words = list(command)
    program = os.path.basename(words[0]) if words else ""
    if program in _RUNTIMES:
        scripts = [w for w in words[1:] if not w.startswith("-")]
        program = scripts[0] if scripts else ""
    lowered = program.lower()
    name = os.path.basename(lowered)
    if name in ("claude", "claude.exe") or "claude-code" in lowered:
        return "claude-code"
    if name == "gemini" or "gemini-cli" in lowered:
        return "gemini-cli"
    if name == "codex" or "@openai/codex" in lowered or name == "codex.js":
        return "codex"
    return None


def _codex_user_otel(environ: Mapping[str, str]) -> bool:
    """True when the user's Codex config has its own [otel] table (read, never written)."""
    home = environ.get("CODEX_HOME") or os.path.join(environ.get("HOME", ""), ".codex")
    try:
        with open(os.path.join(home, "config.toml"), encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError:
        return False
    return any(line.strip().startswith(("[otel]", "[otel.", "otel.", "otel =")) for line in text.splitlines())


def _user_vars(environ: Mapping[str, str]) -> list[str]:
    return sorted(k for k in environ if k.startswith(("OTEL_", "GEMINI_TELEMETRY_")) or k == "CLAUDE_CODE_ENABLE_TELEMETRY")


def plan(command: Sequence[str], environ: Mapping[str, str], wanted: bool = True) -> TelemetryPlan:
    """Decide before the proxy starts whether the receiver is needed; `fill` adds the endpoint."""
    client = detect_client(command)
    seen = _user_vars(environ)
    if not wanted:
        return TelemetryPlan(client, False, "--no-telemetry", argv=list(command), user_settings=seen)
    if client is None:
        return TelemetryPlan(None, False, "the command is not a client whose telemetry ctxtap can switch on "
                             "(Claude Code, Gemini CLI, Codex)", argv=list(command), user_settings=seen)
    won = [k for k in _DESTINATION_VARS[client] if environ.get(k)]
    if client == "codex" and _codex_user_otel(environ):
        won.append("[otel] in $CODEX_HOME/config.toml")
    if won:
        return TelemetryPlan(client, False, "the user's own telemetry settings win: " + ", ".join(won),
                             argv=list(command), user_settings=seen)
    return TelemetryPlan(client, True, argv=list(command), user_settings=seen)


def fill(p: TelemetryPlan, endpoint: str) -> TelemetryPlan:
    """Add the client's switches pointing at the receiver's base URL (`http://127.0.0.1:PORT/<token>`)."""
    if not p.enabled:
        return p
    if p.client == "claude-code":
        p.env = {
            "CLAUDE_CODE_ENABLE_TELEMETRY": "1",
            "OTEL_LOGS_EXPORTER": "otlp",
            "OTEL_METRICS_EXPORTER": "otlp",
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
            "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,  # the SDK appends /v1/logs, /v1/metrics
            "OTEL_LOGS_EXPORT_INTERVAL": "1000",  # ms: events leave before a short `-p` run ends
            "OTEL_METRIC_EXPORT_INTERVAL": "1000",
        }
    elif p.client == "gemini-cli":
        p.env = {
            "GEMINI_TELEMETRY_ENABLED": "true",
            "GEMINI_TELEMETRY_TARGET": "local",
            "GEMINI_TELEMETRY_OTLP_PROTOCOL": "http",  # OTLP/HTTP JSON; /v1/logs etc. appended to the path
            "GEMINI_TELEMETRY_OTLP_ENDPOINT": endpoint,
            "GEMINI_TELEMETRY_LOG_PROMPTS": "false",  # the prompts are on the wire already
        }
    elif p.client == "codex":
        # Codex's [otel] as -c overrides (TOML values); metrics keep their default exporter, so the
        # vendor metrics Codex sends to its own endpoint still pass through the proxy.
        p.overrides = [
            "-c", f'otel.exporter={{otlp-http={{endpoint="{endpoint}/v1/logs",protocol="binary"}}}}',
            "-c", f'otel.trace_exporter={{otlp-http={{endpoint="{endpoint}/v1/traces",protocol="binary"}}}}',
        ]
        position = _program_index(p.argv) + 1
        p.argv = [*p.argv[:position], *p.overrides, *p.argv[position:]]
    return p


def _program_index(argv: Sequence[str]) -> int:
    """Index of the client's own word in the command (after a runtime such as node)."""
    if argv and os.path.basename(argv[0]) in _RUNTIMES:
        for i, word in enumerate(argv[1:], 1):
            if not word.startswith("-"):
                return i
    return 0
