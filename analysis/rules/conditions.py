"""Run conditions: what a run was allowed and given, each read from evidence and saying where.

A run's answer depends on more than its task: the client and its version, the rules it sent
(its system prompt), the tools it offered (MCP servers among them), whether its commands ran in
a sandbox and whether they needed approval, and the repository state it started from. This
module reads them from what a capture holds, never guesses:

- the recorded command line (the manifest's `command`): Codex's `--sandbox`/`-s`,
  `--ask-for-approval`/`-a`, `-c sandbox_mode=…`/`-c approval_policy=…`, `--full-auto`,
  `--dangerously-bypass-approvals-and-sandbox`; Claude Code's `--permission-mode` and
  `--dangerously-skip-permissions`; Gemini CLI's `--approval-mode`, `--sandbox`; `--yolo`;
- the text of the request (`REQUEST_PATTERNS`): Codex's permissions instructions (`sandbox_mode` is
  `read-only`, "Approval policy is currently never", `<approval_policy>` tags), Gemini CLI's and
  Kimi's sandbox sections, Claude Code's plan-mode reminder, Kimi Code's auto permission mode;
- the recorded machine facts (`ctxtap record`: working directory, git commit, dirty work tree).

A condition with no evidence is `unknown`. Digests of the rules and of the tool schemas are taken
after `mask` replaces what changes from run to run without meaning anything (dates, times, ids and
hashes by `analysis/blocks/volatile.py`; absolute paths; the recorded working directory, home, user
and host), so two runs of the same client version agree and a changed rule shows.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ctxtap.analysis.blocks.volatile import normalise

UNKNOWN = "unknown"
DIGEST_CHARS = 16

# The conditions two runs are compared on, with their words (`ctxtap diff`, `experiment report`).
FIELDS: tuple[tuple[str, str], ...] = (
    ("client", "client"),
    ("client_version", "client version"),
    ("model", "model"),
    ("sandbox", "sandbox mode"),
    ("approval", "approval mode"),
    ("working_dir", "working directory"),
    ("git_head", "git commit"),
    ("git_dirty", "git work tree dirty"),
    ("rules_digest", "rules digest"),
    ("tools_digest", "tool schemas digest"),
    ("mcp_servers", "MCP servers offered"),
)
LABELS = dict(FIELDS)

CODEX_SANDBOX = ("read-only", "workspace-write", "danger-full-access")
CODEX_APPROVAL = ("untrusted", "on-failure", "on-request", "never")
CLAUDE_PERMISSION = ("default", "acceptEdits", "plan", "bypassPermissions", "dontAsk", "auto")
GEMINI_APPROVAL = ("default", "auto_edit", "yolo")


@dataclass(frozen=True)
class Evidence:
    value: str
    source: str  # where it was read, in words


# -- the command line --------------------------------------------------------------------------------


def _tokens(argv: Sequence[str]) -> list[str]:
    """The arguments, with a shell string (`sh -c "codex --sandbox read-only …"`) split into its words."""
    out: list[str] = []
    for arg in argv:
        out.append(arg)
        if " " in arg and arg.lstrip().startswith(("codex", "claude", "gemini", "kimi", "npx", "-")):
            try:
                out.extend(shlex.split(arg))
            except ValueError:
                continue
    return out


def _config_value(raw: str) -> str:
    return raw.strip().strip("\"'")


CLIENT_PROGRAMS = ("claude", "codex", "gemini", "kimi", "opencode", "grok", "qwen")


def _program(tok: str) -> str | None:
    base = tok.rsplit("/", 1)[-1].split("@", 1)[0]
    for name in CLIENT_PROGRAMS:
        if base == name or base.endswith(f"/{name}") or base in (f"{name}-cli", f"{name}-code"):
            return name
    return None


def from_command(argv: Sequence[str] | None) -> dict[str, Evidence]:
    """Sandbox and approval flags on a recorded command line: {"sandbox"|"approval": Evidence}.

    Flags are read after the client's program (`codex`, `claude`, `gemini`, `@openai/codex`, ...) when
    one is named, so a wrapper's own options (`npx -y`, `python -c`) are not taken for the client's."""
    found: dict[str, Evidence] = {}
    tokens = _tokens(argv or [])
    program, start = None, 0
    for i, tok in enumerate(tokens):
        program = _program(tok)
        if program:
            start = i + 1
            break

    def put(field: str, value: str, flag: str) -> None:
        found.setdefault(field, Evidence(value, f"command line: {flag}"))

    for i in range(start, len(tokens)):
        tok = tokens[i]
        name, eq, inline = tok.partition("=")
        value = inline if eq else (tokens[i + 1] if i + 1 < len(tokens) else "")
        shown = tok if eq else f"{name} {value}"
        if name in ("--sandbox", "-s"):
            if value in CODEX_SANDBOX:
                put("sandbox", value, shown)
            elif name == "--sandbox":  # Gemini CLI's --sandbox: a boolean, or the sandbox command with =
                put("sandbox", _config_value(inline) if eq else "on", tok)
        elif name in ("--ask-for-approval", "-a") and value in CODEX_APPROVAL:
            put("approval", value, shown)
        elif name in ("-c", "--config") and value:
            key, _, setting = value.partition("=")
            if key.strip() == "sandbox_mode" and setting:
                put("sandbox", _config_value(setting), f"{name} {value}")
            elif key.strip() == "approval_policy" and setting:
                put("approval", _config_value(setting), f"{name} {value}")
        elif name == "--permission-mode" and value in CLAUDE_PERMISSION:
            put("approval", value, shown)
        elif name == "--approval-mode" and value in GEMINI_APPROVAL:
            put("approval", value, shown)
        elif tok == "--dangerously-skip-permissions":
            put("approval", "bypassPermissions", tok)
        elif tok == "--dangerously-bypass-approvals-and-sandbox":
            put("approval", "never", tok)
            put("sandbox", "danger-full-access", tok)
        elif tok == "--full-auto":  # Codex's documented alias
            put("approval", "on-request", "--full-auto (Codex: -a on-request)")
            put("sandbox", "workspace-write", "--full-auto (Codex: --sandbox workspace-write)")
        elif tok == "--yolo" or (tok == "-y" and program == "gemini"):
            put("approval", "yolo", tok)
    return found


# -- the request -------------------------------------------------------------------------------------

# (field, pattern, value: a fixed word or None for the pattern's first group, rule id)
REQUEST_PATTERNS: tuple[tuple[str, re.Pattern[str], str | None, str], ...] = (
    ("sandbox", re.compile(r"`sandbox_mode` is `([\w-]+)`"), None, "codex.permissions-instructions"),
    ("sandbox", re.compile(r"<sandbox_mode>\s*([\w-]+)\s*</sandbox_mode>"), None, "codex.environment-context"),
    ("approval", re.compile(r"Approval policy is currently ([\w-]+)"), None, "codex.permissions-instructions"),
    ("approval", re.compile(r"<approval_policy>\s*([\w-]+)\s*</approval_policy>"), None, "codex.environment-context"),
    ("sandbox", re.compile(r"You are running outside of a sandbox container"), "none", "gemini.outside-sandbox"),
    ("sandbox", re.compile(r"You are running (?:in|inside) a sandbox container"), "container", "gemini.sandbox"),
    ("sandbox", re.compile(r"You are running under macos seatbelt", re.I), "seatbelt", "gemini.seatbelt"),
    ("sandbox", re.compile(r"The (?:operating )?environment is not (?:in )?a sandbox"), "none", "kimi.not-a-sandbox"),
    ("approval", re.compile(r"Plan mode is active\b"), "plan", "claude-code.plan-mode-reminder"),
    ("approval", re.compile(r"Auto permission mode is active\b"), "auto", "kimi.auto-permission-mode"),
)


# A working directory the request states (Codex's `<cwd>`, Claude Code's "Primary working directory:", Kimi's
# "The current working directory is `…`", opencode's and Grok's "Working directory:"): an absolute path.
STATED_CWD = re.compile(r"<cwd>\s*(/[^<\n]*?)\s*</cwd>"
                        r"|(?:^|\n)[ \t-]*(?:Primary |Current )?[Ww]orking directory:[ \t]*(/[^\n`'\"]*?)[ \t]*(?:\n|$)"
                        r"|The current working directory is `(/[^`\n]+)`")


def stated_cwd(text: str) -> str | None:
    m = STATED_CWD.search(text)
    return next((g for g in m.groups() if g), None) if m else None


def from_texts(texts: Iterable[tuple[str, str]]) -> dict[str, Evidence]:
    """Sandbox and approval stated in a request's text: `texts` are (where, text) pairs in request order."""
    found: dict[str, Evidence] = {}
    for where, text in texts:
        for field, pattern, value, rule in REQUEST_PATTERNS:
            if field in found:
                continue
            m = pattern.search(text)
            if m:
                quote = text[max(0, m.start() - 20):m.end() + 20].replace("\n", " ").strip()
                found[field] = Evidence(value or m.group(1), f"{where}: …{quote}… (rule {rule})")
    return found


def merge(command: dict[str, Evidence], request: dict[str, Evidence], field: str) -> Evidence:
    """What the request states wins (it is what the client ran with, config files included); the
    command line is named beside it; `unknown` without either."""
    c, r = command.get(field), request.get(field)
    if r and c:
        agree = "agrees" if c.value == r.value else f"says {c.value}"
        return Evidence(r.value, f"{r.source}; the {c.source} {agree}")
    if r or c:
        return r or c  # type: ignore[return-value]
    return Evidence(UNKNOWN, "no evidence: neither the recorded command line nor the request states it")


# -- digests -----------------------------------------------------------------------------------------

_ABS_PATH = re.compile(r"(?<![\w.:/~-])(?:~|/)(?:[\w.@+-]+/)+[\w.@+-]*")


def mask(text: str, facts: Sequence[str] = ()) -> str:
    """The text with what changes between runs of the same client version masked: volatile fields
    (dates, times, ids, hashes, temp paths), then any absolute path of two or more parts, then the
    recorded machine facts that are left (a one-part working directory, the user and host names)."""
    text = _ABS_PATH.sub("<path>", normalise(text))
    for value in sorted((f for f in facts if f and len(f) >= 3), key=len, reverse=True):
        text = text.replace(value, "<path>" if value.startswith(("/", "~")) else "<fact>")
    return text


def digest(parts: Iterable[str]) -> str | None:
    h = hashlib.sha256()
    n = 0
    for part in parts:
        h.update(part.encode("utf-8", "surrogatepass") + b"\0")
        n += 1
    return h.hexdigest()[:DIGEST_CHARS] if n else None


# -- MCP servers -------------------------------------------------------------------------------------

_MCP_NAME = re.compile(r"^mcp__(?P<server>[^_].*?)__(?P<tool>.+)$")


def mcp_servers(tools: Iterable[tuple[str | None, str]]) -> tuple[list[str], list[str]]:
    """(servers, evidence) from the tools offered, each (tool name, definition JSON text): a name
    `mcp__SERVER__TOOL` (Claude Code, Codex), a Responses `{"type": "mcp", "server_label": …}` tool, a
    namespace named `mcp__SERVER`."""
    servers: dict[str, str] = {}
    for name, text in tools:
        m = _MCP_NAME.match(name or "")
        if m:
            servers.setdefault(m.group("server"), f"tool name {name}")
            continue
        if name and name.startswith("mcp__") and name.count("__") == 1:
            servers.setdefault(name[5:], f"tool namespace {name}")
            continue
        if name == "mcp" or '"server_label"' in text:
            try:
                wire = json.loads(text)
            except ValueError:
                continue
            if isinstance(wire, dict) and wire.get("type") == "mcp" and isinstance(wire.get("server_label"), str):
                servers.setdefault(wire["server_label"], f"tool schema type mcp, server_label {wire['server_label']}")
    names = sorted(servers)
    return names, [servers[s] for s in names]


# -- comparing two runs ------------------------------------------------------------------------------


def as_words(value: Any) -> str:
    if value is None or value == "":
        return UNKNOWN
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list | tuple):
        return ", ".join(map(str, value)) or "none"
    return str(value)


def differences(a: dict[str, Any], b: dict[str, Any], fields: Sequence[str] | None = None) -> list[dict[str, str]]:
    """The conditions that differ between A and B: [{field, label, a, b}] in FIELDS order."""
    out = []
    for field in fields or [f for f, _ in FIELDS]:
        va, vb = as_words(a.get(field)), as_words(b.get(field))
        if va != vb:
            out.append({"field": field, "label": LABELS.get(field, field), "a": va, "b": vb})
    return out


SOURCE_FIELDS = ("sandbox_source", "approval_source", "working_dir_source", "mcp_source")


def merge_rows(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Several sessions' `run_conditions` rows as one run's conditions: each field's distinct values in
    words, joined (`0.171.0, 0.172.0`); `unknown` without a row."""
    merged: dict[str, Any] = {}
    for field, _ in FIELDS:
        values = list(dict.fromkeys(as_words(r.get(field)) for r in rows))
        merged[field] = ", ".join(values) if values else UNKNOWN
    for field in SOURCE_FIELDS:
        merged[field] = "; ".join(dict.fromkeys(str(r[field]) for r in rows if r.get(field))) or None
    return merged


def difference_line(diff: dict[str, str]) -> str:
    return f"{diff['label']} {diff['a']} -> {diff['b']}"


def summary(conditions: dict[str, Any]) -> str:
    """One line of a run's conditions: `codex 0.171.0, sandbox read-only, approval never, …`."""
    parts = [" ".join(as_words(conditions.get(f)) for f in ("client", "client_version"))]
    for field, label in (("model", "model"), ("sandbox", "sandbox"), ("approval", "approval"),
                         ("git_head", "commit"), ("rules_digest", "rules"), ("tools_digest", "tools"),
                         ("mcp_servers", "MCP")):
        value = as_words(conditions.get(field))
        if field == "git_head" and value != UNKNOWN:
            value = value[:12] + (" (dirty)" if conditions.get("git_dirty") in (True, "yes") else "")
        parts.append(f"{label} {value}")
    return ", ".join(parts)
