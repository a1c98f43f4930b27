"""Each request against its thread predecessor: shared prefix, divergence, expected cache reads, miss cause."""

from __future__ import annotations

import fnmatch
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ctxtap.analysis.blocks.divergence import describe_change
from ctxtap.analysis.blocks.sequences import align, common_prefix

DEFAULT_RULES = Path(__file__).with_name("cache_rules.toml")
HIT_FRACTION = 0.9


@dataclass(frozen=True)
class CacheRule:
    mode: str  # breakpoints | prefix
    min_tokens: int
    granularity: int = 1
    ttl_s: float = 300.0
    ttl_1h_s: float = 3600.0
    lookback_blocks: int = 20


class CacheRules:
    def __init__(self, data: dict) -> None:
        self.providers: dict = data.get("provider", {})
        self.as_of = data.get("as_of", "undated")

    @classmethod
    def load(cls, override: Path | None = None) -> CacheRules:
        data = tomllib.loads(DEFAULT_RULES.read_text())
        if override is not None:
            extra = tomllib.loads(Path(override).read_text())
            for name, rule in extra.get("provider", {}).items():
                merged = {**data["provider"].get(name, {}), **rule}
                merged["model"] = rule.get("model", []) + data["provider"].get(name, {}).get("model", [])
                data["provider"][name] = merged
        return cls(data)

    def rule(self, provider: str, model: str | None) -> CacheRule:
        entry = self.providers.get(provider) or self.providers["default"]
        values = {k: v for k, v in entry.items() if k != "model"}
        for override in entry.get("model", []):
            if model and fnmatch.fnmatchcase(model.lower(), override["match"].lower()):
                values.update({k: v for k, v in override.items() if k != "match"})
                break
        return CacheRule(**values)


class TokenCounts(Protocol):
    """Estimated tokens of a request's leading blocks."""

    def upto(self, p: int) -> int:
        """Tokens of blocks [0, p)."""
        ...


@dataclass
class ReqView:
    """What the prefix analysis needs of one request.

    Sequences may be lazy (read by position) and token counts come as prefix sums,
    so building a view costs nothing per block of resent history.
    """

    request_id: str
    provider: str
    model: str | None
    ts_start: float
    ts_end: float | None
    hashes: Sequence[int]  # content keys per block (equal keys = identical content)
    cache_keys: Sequence[int]  # the same, with blocks the provider leaves out of its cache key neutralised
    tokens: TokenCounts  # estimated tokens of the leading blocks
    paths: Sequence[str]
    kinds: Sequence[str]
    sources: Sequence[str]
    texts: list[str] | None  # loaded lazily only for the divergent block
    breakpoints: dict[int, str]  # position -> ttl ("ephemeral", "5m", "1h")
    auto_breakpoint: str | None  # Anthropic top-level cache_control
    cache_read: int | None
    cache_write: int | None
    calibration: float | None  # reported / estimated input


def divergence(prev: ReqView, cur: ReqView, text_of) -> tuple[str, str | None]:
    """(kind, summary) of how `cur` departs from `prev`."""
    common = common_prefix(prev.hashes, cur.hashes)
    if common == len(prev.hashes):
        return "extended", None
    path = cur.paths[common] if common < len(cur.paths) else prev.paths[common]
    window = min(len(prev.hashes), len(cur.hashes)) - common  # both differ at `common` already
    if window > 1 and _same_multiset(prev.hashes, cur.hashes, common, common + window):
        return "reordered", f"{path}: blocks reordered ({prev.kinds[common]} moved)"
    if common < len(cur.hashes) and _occurs(prev.hashes, cur.hashes[common], common + 1):
        return "removed", f"{prev.paths[common]} removed ({prev.kinds[common]}, {prev.sources[common]})"
    if common < len(cur.hashes) and _occurs(cur.hashes, prev.hashes[common], common + 1):
        return "inserted", f"{path} inserted ({cur.kinds[common]}, {cur.sources[common]})"
    if common >= len(cur.hashes):
        return "removed", f"{prev.paths[common]} and later removed"
    old, new = text_of(prev, common), text_of(cur, common)
    if prev.paths[common] == cur.paths[common]:
        return "changed", describe_change(path, old, new)
    return "changed", f"{path} replaced ({prev.kinds[common]} -> {cur.kinds[common]})"


def _same_multiset(a: Sequence[int], b: Sequence[int], start: int, end: int) -> bool:
    """Do a[start:end] and b[start:end] hold the same keys, in any order? Where they are equal
    but for a few positions (a per-request hash, a moved marker), only those are compared:
    sorting a long history on every request would cost time in its length."""
    m, holes = align(a, b, shared=start)
    if m >= end:
        return sorted(a[h] for h in holes if h < end) == sorted(b[h] for h in holes if h < end)
    return sorted(a[start:end]) == sorted(b[start:end])


def _occurs(keys: Sequence[int], key: int, start: int) -> bool:
    """`key in keys[start:]`, without copying the slice."""
    try:
        keys.index(key, start)
    except ValueError:
        return False
    return True


def _ttl(view: ReqView, pos: int, rule: CacheRule) -> float:
    marker = view.breakpoints.get(pos) or view.auto_breakpoint
    return rule.ttl_1h_s if marker == "1h" else rule.ttl_s


def expected_reads(prev: ReqView | None, cur: ReqView, rule: CacheRule, gap_s: float | None) -> tuple[int, dict]:
    """Estimated cache reads the provider's rules allow, and the facts behind the number.

    The provider's minimum is in its own tokens, so the cacheable prefix is compared with it after
    calibration (`cacheable_reported`): the figure the explanation shows is the figure compared."""
    facts: dict = {"common_blocks": 0, "common_tokens": 0, "cacheable_tokens": 0, "cacheable_reported": 0,
                   "ttl_s": rule.ttl_s, "prev_cached_tokens": 0}
    if prev is None:
        return 0, facts
    common = common_prefix(prev.cache_keys, cur.cache_keys)
    facts["prefix_extended"] = common == len(prev.cache_keys)
    common_tokens = cur.tokens.upto(common)
    facts.update(common_blocks=common, common_tokens=common_tokens)
    if rule.mode == "breakpoints":
        written = sorted(set(prev.breakpoints) | ({len(prev.hashes) - 1} if prev.auto_breakpoint else set()))
        reading = sorted(set(cur.breakpoints) | ({len(cur.hashes) - 1} if cur.auto_breakpoint else set()))
        prev_cached = prev.tokens.upto(written[-1] + 1) if written else 0
        facts["prev_cached_tokens"] = prev_cached
        best = -1
        for b in written:
            if b < common and any(0 <= c - b <= rule.lookback_blocks for c in reading):
                best = max(best, b)
        cacheable = cur.tokens.upto(best + 1) if best >= 0 else 0
        ttl = _ttl(prev, best, rule) if best >= 0 else rule.ttl_s
    else:
        prev_cached = prev.tokens.upto(len(prev.hashes))
        facts["prev_cached_tokens"] = prev_cached
        cacheable = (common_tokens // rule.granularity) * rule.granularity
        ttl = rule.ttl_s
    facts["ttl_s"] = ttl
    facts["cacheable_tokens"] = cacheable
    facts["cacheable_reported"] = round(cacheable * (cur.calibration or 1.0))
    facts["ttl_expired"] = gap_s is not None and gap_s > ttl
    facts["below_minimum"] = facts["cacheable_reported"] < rule.min_tokens
    if facts["ttl_expired"] or facts["below_minimum"]:
        return 0, facts
    return cacheable, facts


def cache_verdict(prev: ReqView | None, cur: ReqView, rule: CacheRule, expected_est: int, facts: dict,
                  gap_s: float | None) -> tuple[int | None, str, str | None, str | None]:
    """(expected in reported units, status, miss cause, explanation).

    A read where the rules expected none is `unexpected_read`, not a hit: the prefix was cached by
    a request this one is not compared with (another thread, a parallel request, before the capture)."""
    scale = cur.calibration or 1.0
    expected = round(expected_est * scale)
    read = cur.cache_read
    if read is None:
        return expected, "n/a", None, None
    if read > 0 and expected == 0:
        where = "on the first request of its thread" if prev is None else "where the rules expected none"
        return expected, "unexpected_read", None, (
            f"{read:,} tokens read {where}: cached by another request (another thread, a parallel "
            "request, or before the capture)")
    if read > 0 and read >= HIT_FRACTION * expected:
        return expected, "hit", None, None
    status = "partial" if read > 0 else "miss"
    if prev is None:
        return expected, status, "cold_start", "first request of its thread: nothing cached yet"
    prev_cached_est = facts.get("prev_cached_tokens", 0)
    if not facts.get("prefix_extended") and facts["common_tokens"] < prev_cached_est:
        return expected, status, "prefix_change", (
            f"prefix changed after {facts['common_blocks']} blocks (~{round(facts['common_tokens'] * scale)} tokens)")
    if facts.get("ttl_expired"):
        return expected, status, "ttl_expired", (
            f"TTL expired after a {_minutes(gap_s)} gap ({_minutes(facts['ttl_s'])} TTL)")
    if facts.get("below_minimum"):
        return expected, status, "below_minimum", (
            f"shared prefix ~{facts['cacheable_reported']:,} tokens, below the {rule.min_tokens:,}-token minimum")
    return expected, status, "unexplained", "prefix, TTL and minimum all allowed a read"


def _minutes(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    if seconds >= 3600:
        return f"{seconds / 3600:.0f} h"
    if seconds >= 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds:.0f} s"
