"""The cross-client layout comparison: where each client puts rules, environment, task and results.

One row per client, read from captures: which block paths hold the rules, the
environment, the task and the tool results.
"""

from __future__ import annotations

import re

from ctxtap.analysis.protocols.registry import history_arrays, tool_result_shapes

_TOP = re.compile(r"^([A-Za-z_]+)(?:\[(\d+)\])?")


def summarise_paths(paths: list[str], roles: list[str]) -> str | None:
    """`system[0..3]`, `input[1..4] (developer)`, `messages[1] (user)`, `instructions` ...

    A role like `system, part` says the source fills only part of that block (a segment)."""
    groups: list[tuple[str, int, int, str]] = []
    for path, role in zip(paths, roles, strict=True):
        m = _TOP.match(path)
        if not m:
            continue
        key, idx = m.group(1), int(m.group(2)) if m.group(2) is not None else -1  # -1: a field, not an array
        if groups and groups[-1][0] == key and idx - groups[-1][2] <= 1 and groups[-1][3] == role:
            groups[-1] = (key, groups[-1][1], idx, role)
        else:
            groups.append((key, idx, idx, role))
    if not groups:
        return None
    out = []
    conversation = history_arrays()
    for key, a, b, role in groups[:4]:
        span = key if a < 0 else f"{key}[{a}]" if a == b else f"{key}[{a}..{b}]"
        if key in conversation:
            span += f" ({role})"
        elif role.endswith(", part"):
            span += " (part)"
        out.append(span)
    if len(groups) > 4:
        out.append(f"+{len(groups) - 4} more")
    return ", ".join(out)


def tool_results_via(pairs: set[tuple[str, str]]) -> str | None:
    """How tool results return, from (wire_type, role) pairs of tool-result blocks."""
    found = []
    shapes = tool_result_shapes()
    for wire_type, role in sorted(pairs):
        if wire_type in shapes:
            found.append(shapes[wire_type])
        elif role == "tool":
            found.append("tool messages")
        else:
            found.append(f"{wire_type or 'blocks'} ({role})")
    return ", ".join(dict.fromkeys(found)) or None
