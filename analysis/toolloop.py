"""The tool loop: every proposed call linked to its result, with repeats, errors and lifetime cost."""

from __future__ import annotations

import json
import re
import shlex

SHELL_TOOLS = {"bash", "shell", "shell_command", "exec_command", "run_shell_command", "local_shell", "exec",
               "terminal", "run_terminal_cmd", "command"}
_COMMAND_KEYS = ("command", "cmd", "script", "commandLine")
_JS_CMD = re.compile(r"\bcmd\s*:\s*(\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*')")
_DENIED = re.compile(r"permission denied by|was denied|user (?:denied|rejected|declined)|not allowed|"
                     r"requires approval|blocked by (?:policy|sandbox)|doesn't want to proceed|rejected by",
                     re.IGNORECASE)
_ERROR = re.compile(r"exit code:? *[1-9]|exited with (?:code|status) [1-9]|\bTraceback \(most recent|"
                    r"command not found|No such file or directory|^error:|\"is_error\": *true|Process exited with code [1-9]",
                    re.IGNORECASE | re.MULTILINE)


def canonical_arguments(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments), sort_keys=True, separators=(",", ":"))
    except (ValueError, TypeError):
        return arguments.strip()


def shell_command(name: str, arguments: str) -> str | None:
    """The shell command a shell-like call runs, if it is one."""
    lowered = name.lower()
    try:
        args = json.loads(arguments)
    except (ValueError, TypeError):
        args = None
    if isinstance(args, dict):
        for key in _COMMAND_KEYS:
            value = args.get(key)
            if isinstance(value, str):
                return value
            if isinstance(value, list) and all(isinstance(v, str) for v in value):
                return shlex.join(value) if value[:2] not in (["bash", "-lc"], ["bash", "-c"]) else value[-1]
    m = _JS_CMD.search(arguments or "")
    if m:  # Codex code mode: JavaScript calling tools.exec_command({cmd: "..."})
        try:
            return json.loads(m.group(1)) if m.group(1).startswith('"') else m.group(1)[1:-1]
        except ValueError:
            return m.group(1)[1:-1]
    if lowered in SHELL_TOOLS and isinstance(arguments, str) and not arguments.lstrip().startswith("{"):
        return arguments.strip() or None
    return None


def split_compound(command: str) -> list[str]:
    """Split `a && b; c | d` into its commands, respecting quotes."""
    parts: list[str] = []
    current: list[str] = []
    quote = None
    i = 0
    while i < len(command):
        ch = command[i]
        if quote:
            current.append(ch)
            if ch == "\\" and i + 1 < len(command):
                current.append(command[i + 1])
                i += 1
            elif ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
            current.append(ch)
        elif command.startswith(("&&", "||"), i):
            parts.append("".join(current))
            current = []
            i += 1
        elif ch in ";|\n":
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
        i += 1
    parts.append("".join(current))
    return [p.strip() for p in parts if p.strip()]


def result_status(text: str, is_error: bool | None) -> str:
    if _DENIED.search(text[:4000]):
        return "denied"
    if is_error or _ERROR.search(text[:4000]):
        return "error"
    return "ok"
