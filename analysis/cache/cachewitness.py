"""Three witnesses of a cache miss set side by side: the bytes, the provider, the client.

Each witness names what changed in its own words: the bytes a block's path, the provider a reason
type (`tools_changed`, `input_changed`), the client whatever its telemetry says. `change_of_*` map
them onto one vocabulary (`model`, `tools`, `system`, `messages`, `input`, `cache_key`, `settings`,
`compaction`, `ttl`, `none`) so `agreement` can say whether they agree, and where not, why.

The client's claim is read from its telemetry records wherever one carries it, under any of the
names clients use: Claude Code's `prompt_cache.last_miss_cause` (what it reports of the session's
last miss) and `message.diagnostics.cache_miss_reason` (the provider's diagnostics as the client
kept them). Neither name is documented as an OpenTelemetry attribute; both are read wherever they
appear, nested or dotted, so a claim is found without naming the exporter.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass

from ctxtap.analysis.cache.cachediag import CHANGE

# `input` (OpenAI: instructions and input items) covers both of the bytes' system and messages
_COVERS = {"input": {"system", "messages", "input"}}
# outcomes in which the provider compared and says what changed (or that nothing did)
_SPEAKS = {"miss", "hit", "no_divergence"}
_CLAIM_NAME = re.compile(r"(^|\.)(last_miss_cause|cache_miss_reason|cache_miss_cause)(\.type)?$")
_ID = re.compile(r"^(msg|resp)_[A-Za-z0-9_-]+$")
_WORDS = (("model", "model"), ("tool", "tools"), ("system", "system"), ("instruction", "system"),
          ("message", "messages"), ("history", "messages"), ("conversation", "messages"),
          ("input", "input"), ("ttl", "ttl"), ("expir", "ttl"), ("idle", "ttl"), ("timeout", "ttl"),
          ("compact", "compaction"), ("cache_key", "cache_key"), ("cache key", "cache_key"))


def change_of_block(kind: str | None, role: str | None) -> str:
    """The part of a request a block belongs to, as providers name the parts of their cache prefix."""
    if kind == "tool_definition":
        return "tools"
    if role in ("system", "developer"):
        return "system"
    return "messages"


def change_of_provider(outcome: str | None, reason: str | None) -> str | None:
    """What the provider's verdict says changed; None where it does not say (pending, unavailable...)."""
    if outcome in ("hit", "no_divergence"):
        return "none"
    if outcome == "miss" and reason:
        return CHANGE.get(reason, reason)
    return None


def change_of_claim(claim: str | None) -> str | None:
    """The change a client's claim names: a provider reason as is, else by its words; None if unread."""
    if not claim:
        return None
    text = claim.strip().lower()
    if text in CHANGE:
        return CHANGE[text]
    if text in ("none", "hit", "no_divergence"):
        return "none"
    for word, change in _WORDS:
        if word in text:
            return change
    return None


def _fits(a: str, b: str) -> bool | None:
    """Do two witnesses' changes agree? None where one cannot see what the other names."""
    if a == b:
        return True
    if b in _COVERS.get(a, ()) or a in _COVERS.get(b, ()):
        return True
    if "settings" in (a, b) and "none" in (a, b):
        return None  # settings (effort, format, tier) are no blocks: the bytes cannot see them
    return False


@dataclass(frozen=True)
class Verdict:
    agreement: str  # agree | disagree | unknown
    detail: str


def agreement(bytes_change: str | None, bytes_cause: str | None, provider_change: str | None,
              client_change: str | None) -> Verdict:
    """`agree` when at least two witnesses speak and none contradicts another, `disagree` when any
    two contradict, else `unknown`. The bytes answer a client's `ttl` with their own TTL verdict."""
    said = {"bytes": bytes_change, "provider": provider_change, "client": client_change}
    results: list[tuple[str, str, bool]] = []

    def compare(x: str, y: str) -> None:
        a, b = said[x], said[y]
        if a is None or b is None:
            return
        if x == "bytes" and b == "ttl":
            fit: bool | None = bytes_cause == "ttl_expired"
        else:
            fit = _fits(a, b)
        if fit is not None:
            results.append((x, y, fit))

    compare("bytes", "provider")
    compare("bytes", "client")
    compare("provider", "client")
    words = "; ".join(f"{who}: {what}" for who, what in said.items() if what is not None)
    if any(not fit for _, _, fit in results):
        clash = next((x, y) for x, y, fit in results if not fit)
        return Verdict("disagree", f"{clash[0]} and {clash[1]} differ ({words})")
    if results:
        return Verdict("agree", words)
    return Verdict("unknown", words or "no witness compared this request with a baseline")


# --- the client's claim ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Claim:
    text: str  # as the client wrote it
    name: str  # the attribute it came under
    event: str | None  # the telemetry record's name
    ts: float | None
    response_id: str | None  # a response id the record names (msg_..., resp_...)
    session: str | None
    telemetry_id: int | None


def _flatten(value: object, prefix: str = "") -> Iterable[tuple[str, object]]:
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _flatten(inner, f"{prefix}.{key}" if prefix else str(key))
    else:
        yield prefix, value


def _unjson(value: object) -> object:
    """Exporters flatten objects into JSON strings; read them back where they are objects."""
    if isinstance(value, str) and value[:1] == "{":
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def claims(records: Iterable[dict]) -> list[Claim]:
    """Every cache-miss claim in the capture's telemetry records (telemetry_records.parquet rows)."""
    out = []
    for rec in records:
        try:
            attrs = json.loads(rec.get("attributes") or "{}")
        except ValueError:
            continue
        if not isinstance(attrs, dict):
            continue
        flat = dict(_flatten({k: _unjson(v) for k, v in attrs.items()}))
        found = [(name, value) for name, value in flat.items() if _CLAIM_NAME.search(name)]
        found = [(n, v) for n, v in found if isinstance(v, str) and v]
        if not found:
            continue
        name, text = min(found, key=lambda nv: (not nv[0].endswith(".type"), len(nv[0])))
        ids = [v for v in flat.values() if isinstance(v, str) and _ID.match(v)]
        session = next((str(flat[k]) for k in ("session.id", "session_id", "sessionId") if flat.get(k)), None)
        out.append(Claim(text=text, name=name, event=rec.get("name"), ts=rec.get("ts"),
                         response_id=ids[0] if ids else None, session=session or rec.get("trace_id"),
                         telemetry_id=rec.get("telemetry_id")))
    return out
