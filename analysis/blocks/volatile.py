"""Fields that change from run to run without meaning anything: dates, ids, temp paths, hashes.

Replay compares a new run's requests with the recorded ones; a CLI that puts today's date,
a fresh session id or a temp directory in its prompt would otherwise diverge on every run.
`normalise` masks those fields (the diff engine's `normalise=` hook), and `volatile_changes`
lists which of them differed, so they are reported apart from real divergence.
"""

from __future__ import annotations

import re

_MONTHS = ("January|February|March|April|May|June|July|August|September|October|November|December|"
           "Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec")
_DAYS = "Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday|Mon|Tue|Wed|Thu|Fri|Sat|Sun"

# Order matters: the longer shapes first (a timestamp before its date, a uuid before a hash).
PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("timestamp", re.compile(r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?")),
    ("date", re.compile(r"\b\d{4}-\d{2}-\d{2}\b|\b\d{4}/\d{2}/\d{2}\b")),
    ("date", re.compile(rf"\b(?:(?:{_DAYS}),?\s+)?(?:{_MONTHS})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}\b")),
    ("date", re.compile(rf"\b(?:(?:{_DAYS}),?\s+)?\d{{1,2}}\s+(?:{_MONTHS})\.?,?\s+\d{{4}}\b")),
    ("time", re.compile(r"\b\d{1,2}:\d{2}:\d{2}(?:\.\d+)?\b")),
    # how long a tool ran (Codex: "Wall time: 0.3 seconds"; JSON: "duration_ms": 12)
    ("duration", re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|milliseconds?|s|secs?|seconds?)\b")),
    ("duration", re.compile(r"(?i)(?<=[\"\s_])(?:wall_?time|duration|elapsed|took)\w*\"?\s*[:=]\s*\d+(?:\.\d+)?")),
    ("uuid", re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b")),
    ("id", re.compile(r"\b(?:req|msg|resp|call|toolu|chatcmpl|sess|session|run|fc|rs|srvtoolu|ws|conv|item)_"
                      r"[A-Za-z0-9]{6,}\b")),
    ("temp path", re.compile(r"(?:/private)?/(?:tmp|var/folders|var/tmp)/[^\s\"'`,;:)\]}]+")),
    ("hash", re.compile(r"\b[0-9a-f]{16,}\b")),
    # a short per-request hash as a key's value, letters and digits (a plain number is no hash) ...
    ("hash", re.compile(r"(?<=[=:])(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{5,15}\b")),
    # ... or Claude Code's billing-header hash, whatever its digits (`cch=61a74;`, `cch=27819;`)
    ("hash", re.compile(r"(?<=\bcch=)[0-9a-f]{5}\b")),
    ("epoch", re.compile(r"\b1[6-9]\d{8}(?:\.\d+|\d{3})?\b")),
]


def _mask(kind: str) -> str:
    return f"<{kind.replace(' ', '-')}>"


def normalise(text: str) -> str:
    """`text` with every volatile field replaced by a placeholder naming its kind."""
    for kind, pattern in PATTERNS:
        text = pattern.sub(_mask(kind), text)
    return text


def volatile_fields(text: str) -> list[tuple[str, str]]:
    """The volatile fields of `text` in order of appearance: (kind, value)."""
    found: list[tuple[int, str, str]] = []
    for kind, pattern in PATTERNS:
        def keep(m: re.Match[str], kind: str = kind) -> str:
            found.append((m.start(), kind, m.group(0)))
            return "\0" * len(m.group(0))  # masked, so a later pattern does not match inside it
        text = pattern.sub(keep, text)
    return [(kind, value) for _, kind, value in sorted(found)]


def volatile_changes(a: str, b: str, limit: int = 5) -> list[str]:
    """What differs between two texts in their volatile fields, e.g. "date 2026-11-30 -> 2026-12-01"."""
    fa, fb = volatile_fields(a), volatile_fields(b)
    out: list[str] = []
    for i in range(max(len(fa), len(fb))):
        ka, va = fa[i] if i < len(fa) else (None, None)
        kb, vb = fb[i] if i < len(fb) else (None, None)
        if va != vb:
            out.append(f"{kb or ka} {va if va is not None else '(none)'} -> {vb if vb is not None else '(none)'}")
            if len(out) >= limit:
                break
    return out
