"""Token usage: the counting rules every protocol's usage normalisation follows.

Providers disagree on where cache tokens sit: some report them on top of the
input count ("additive"), others inside the prompt count ("inclusive"). Each
protocol module maps its provider's usage object onto `Usage` with the helpers
here; every field carries a status so "not reported" never turns into a silent
zero.

Status rules (the decision the issue asks us to document):
* a field copied from the provider is "reported";
* a derived field (uncached = prompt - cached, an additive total = sum) is
  "reported" only when every input was reported;
* a derived field that had to assume a missing input is zero (no cached count
  where the provider omits zeros, as proto3 JSON does) is "estimated";
* anything else is "not_available" with value None.
"""

from __future__ import annotations

from typing import Any

from ctxtap.analysis.parsing.models import TokenCount, Usage
from ctxtap.analysis.protocols.common import as_int


def reported(value: Any) -> TokenCount:
    n = as_int(value)
    return TokenCount(value=n, status="reported") if n is not None else TokenCount()


def derived(*parts: TokenCount, sign: tuple[int, ...] | None = None, assume_zero: bool = False) -> TokenCount:
    """Sum (or difference, via `sign`) of counts; reported only if all parts were."""
    signs = sign or (1,) * len(parts)
    total = 0
    all_reported = True
    for part, s in zip(parts, signs, strict=True):
        if part.value is None:
            if not assume_zero:
                return TokenCount()
            all_reported = False
            continue
        total += s * part.value
        if part.status != "reported":
            all_reported = False
    if parts and parts[0].value is None:
        return TokenCount()
    return TokenCount(value=max(total, 0), status="reported" if all_reported else "estimated")


def get_path(d: Any, *keys: str) -> Any:
    """`d[k1][k2]...`, or None where a level is missing or not an object."""
    for key in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(key)
    return d


def inclusive(
    total: TokenCount,
    read: TokenCount,
    write: TokenCount,
    output: TokenCount,
    reasoning: TokenCount,
    raw: dict,
    uncached: TokenCount | None = None,
) -> Usage:
    """Usage whose cache counters are inside the prompt count; uncached = prompt - cached unless given."""
    if uncached is None or uncached.value is None:
        if read.value is None:
            # prompt reported but no cache counter: assume nothing was cached
            uncached = derived(total, TokenCount(), sign=(1, -1), assume_zero=True)
        elif write.value is None:
            uncached = derived(total, read, sign=(1, -1))
        else:
            uncached = derived(total, read, write, sign=(1, -1, -1))
    return Usage(
        input_total=total,
        input_uncached=uncached,
        cache_read=read,
        cache_write=write,
        output=output,
        reasoning=reasoning,
        cache_semantics="inclusive",
        raw=raw,
    )
