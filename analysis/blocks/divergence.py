"""Say in words what changed between two versions of a block.

The first block that differs from the previous request is where the cached
prefix ends; the reader wants to know why: a per-request hash, a timestamp, a
reordered tool, a new reminder.
"""

from __future__ import annotations

import re

_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("a UUID", re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")),
    ("a timestamp", re.compile(r"\d{1,2}:\d{2}(:\d{2})?|\d{4}-\d{2}-\d{2}[T ]\d|\b\d{10}(\.\d+)?\b")),
    ("a date", re.compile(r"\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2}/\d{2,4}|\b(Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*\b")),
    ("a per-request hash", re.compile(r"^[0-9a-f]{3,64}$")),
    ("a number", re.compile(r"^\d+(\.\d+)?$")),
]


def _token_bounds(text: str, start: int, end: int) -> tuple[int, int]:
    """Widen [start, end) to whole word-ish tokens so the excerpt reads well."""
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] in "-_:.T"):
        start -= 1
    while end < len(text) and (text[end].isalnum() or text[end] in "-_:."):
        end += 1
    return start, end


def changed_span(old: str, new: str) -> tuple[str, str, str, str, str]:
    """(context, old middle, new middle, raw old middle, raw new middle).

    The raw middles are exactly what differs once the common prefix and suffix
    are stripped; the others are widened to whole words for display.
    """
    p = 0
    limit = min(len(old), len(new))
    while p < limit and old[p] == new[p]:
        p += 1
    s = 0
    while s < limit - p and old[len(old) - 1 - s] == new[len(new) - 1 - s]:
        s += 1
    o_start, o_end = _token_bounds(old, p, len(old) - s)
    n_start, n_end = _token_bounds(new, p, len(new) - s)
    start = min(o_start, n_start)
    context = old[max(0, start - 24):start].rsplit("\n", 1)[-1]
    return context, old[start:o_end], new[start:n_end], old[p:len(old) - s], new[p:len(new) - s]


def classify_change(old_mid: str, new_mid: str) -> str:
    old, new = old_mid.strip(), new_mid.strip()
    for label, pattern in _PATTERNS:
        if old and new and pattern.search(old) and pattern.search(new):
            return label
    if not old or not new:
        side, verb = (new, "inserted") if not old else (old, "removed")
        for label, pattern in _PATTERNS[:3]:
            if pattern.search(side):
                return f"{label} {verb}"
        return f"text {verb}"
    return "text changed"


def _clip(text: str, limit: int = 40) -> str:
    text = text.replace("\n", "\\n")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe_change(path: str, old: str, new: str) -> str:
    """E.g. `system[0] changed: a per-request hash (cch=49d84 -> cch=7a1f2)`."""
    context, old_mid, new_mid, old_raw, new_raw = changed_span(old, new)
    label = classify_change(old_raw, new_raw)
    if label == "text changed" and any(c.isdigit() for c in old_mid) and any(c.isdigit() for c in new_mid):
        # two random hashes can share their first or last characters (`a634d` -> `a6319` differ in
        # `4d` / `19`, too short to read as a hash): read the whole words instead
        label = classify_change(old_mid, new_mid)
    if not old_raw.strip() or not new_raw.strip():
        old_mid, new_mid = old_raw, new_raw
    lead = ""
    if label in ("a per-request hash", "a number"):
        m = re.search(r"[\w.\-]*[=:]\s*$", context)
        lead = m.group() if m else ""
    return f"{path} changed: {label} ({_clip(lead + old_mid)} -> {_clip(lead + new_mid)})"


PREFIX_CHANGES = frozenset({"changed", "inserted", "removed", "reordered"})


def prefix_changed(kind: str | None) -> bool:
    """Whether a request broke its thread predecessor's prefix (not a pure extension)."""
    return kind in PREFIX_CHANGES


def divergence_label(summary: str | None) -> str | None:
    """A divergence summary without its example values: `system[2] changed: a timestamp`."""
    return summary.split(" (", 1)[0] if summary else summary
