"""The cross-client layout comparison: where each client puts rules, environment, task and results.

The layout table compares clients side by side, generated from captures rather than written by hand.
"""

from __future__ import annotations

import re

_TOP = re.compile(r"^([A-Za-z_]+)\[(\d+)\]")
_VIA = {
    "tool_result": "tool_result blocks in user messages",
    "function_call_output": "function_call_output input items",
    "custom_tool_call_output": "custom_tool_call_output input items",
    "local_shell_call_output": "local_shell_call_output input items",
    "functionResponse": "functionResponse parts in user contents",
}


def summarise_paths(paths: list[str], roles: list[str]) -> str | None:
    """`system[0..3]`, `input[1..4] (developer)`, `messages[1] (user)` ..."""
    groups: list[tuple[str, int, int, str]] = []
    for path, role in zip(paths, roles, strict=True):
        m = _TOP.match(path)
        if not m:
            continue
        key, idx = m.group(1), int(m.group(2))
        if groups and groups[-1][0] == key and idx - groups[-1][2] <= 1 and groups[-1][3] == role:
            groups[-1] = (key, groups[-1][1], idx, role)
        else:
            groups.append((key, idx, idx, role))
    if not groups:
        return None
    out = []
    for key, a, b, role in groups[:4]:
        span = f"{key}[{a}]" if a == b else f"{key}[{a}..{b}]"
        if key in ("messages", "input", "contents"):
            span += f" ({role})"
        out.append(span)
    if len(groups) > 4:
        out.append(f"+{len(groups) - 4} more")
    return ", ".join(out)


def tool_results_via(pairs: set[tuple[str, str]]) -> str | None:
    """How tool results return, from (wire_type, role) pairs of tool-result blocks."""
    found = []
    for wire_type, role in sorted(pairs):
        if wire_type in _VIA:
            found.append(_VIA[wire_type])
        elif role == "tool":
            found.append("tool messages")
        else:
            found.append(f"{wire_type or 'blocks'} ({role})")
    return ", ".join(dict.fromkeys(found)) or None
