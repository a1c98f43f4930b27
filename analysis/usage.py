"""Token usage normalised across providers (wire-formats.md section 9).

Providers disagree on where cache tokens sit: Anthropic reports them on top of
`input_tokens` ("additive"); OpenAI, Chat Completions and Gemini report them
inside the prompt count ("inclusive"). Every field carries a status so "not
reported" never turns into a silent zero.

Status rules (the decision the issue asks us to document):
* a field copied from the provider is "reported";
* a derived field (uncached = prompt - cached, Anthropic total = sum) is
  "reported" only when every input was reported;
* a derived field that had to assume a missing input is zero (no cached count
  where the provider omits zeros, e.g. Gemini's proto3 JSON) is "estimated";
* anything else is "not_available" with value None.
"""

from __future__ import annotations

from typing import Any

from analysis.models import TokenCount, Usage
from analysis.protocols.common import as_int


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


def _get(d: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(key)
    return d


def anthropic_usage(u: Any) -> Usage:
    """Messages API: input_tokens is the uncached part; cache counters are additive."""
    if not isinstance(u, dict) or not u:
        return Usage()
    uncached = reported(u.get("input_tokens"))
    read = reported(u.get("cache_read_input_tokens"))
    write = reported(u.get("cache_creation_input_tokens"))
    w5 = reported(_get(u, "cache_creation", "ephemeral_5m_input_tokens"))
    w1 = reported(_get(u, "cache_creation", "ephemeral_1h_input_tokens"))
    return Usage(
        input_total=derived(uncached, read, write, assume_zero=True),
        input_uncached=uncached,
        cache_read=read,
        cache_write=write,
        cache_write_5m=w5,
        cache_write_1h=w1,
        output=reported(u.get("output_tokens")),
        reasoning=reported(_get(u, "output_tokens_details", "thinking_tokens")),
        cache_semantics="additive",
        raw=u,
    )


def _inclusive(
    total: TokenCount,
    read: TokenCount,
    write: TokenCount,
    output: TokenCount,
    reasoning: TokenCount,
    raw: dict,
    uncached: TokenCount | None = None,
) -> Usage:
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


def responses_usage(u: Any) -> Usage:
    """OpenAI Responses: cached_tokens (and cache_write_tokens) are inside input_tokens."""
    if not isinstance(u, dict) or not u:
        return Usage()
    return _inclusive(
        total=reported(u.get("input_tokens")),
        read=reported(_get(u, "input_tokens_details", "cached_tokens")),
        write=reported(_get(u, "input_tokens_details", "cache_write_tokens")),
        output=reported(u.get("output_tokens")),
        reasoning=reported(_get(u, "output_tokens_details", "reasoning_tokens")),
        raw=u,
    )


def chat_usage(u: Any) -> Usage:
    """Chat Completions incl. Moonshot top-level cached_tokens and DeepSeek hit/miss counters."""
    if not isinstance(u, dict) or not u:
        return Usage()
    read_value = u.get("cached_tokens")
    if as_int(read_value) is None:
        read_value = _get(u, "prompt_tokens_details", "cached_tokens")
    if as_int(read_value) is None:
        read_value = u.get("prompt_cache_hit_tokens")
    miss = reported(u.get("prompt_cache_miss_tokens"))
    return _inclusive(
        total=reported(u.get("prompt_tokens")),
        read=reported(read_value),
        write=reported(_get(u, "prompt_tokens_details", "cache_write_tokens")),
        output=reported(u.get("completion_tokens")),
        reasoning=reported(_get(u, "completion_tokens_details", "reasoning_tokens")),
        raw=u,
        uncached=miss if miss.value is not None else None,
    )


def gemini_usage(u: Any) -> Usage:
    """Gemini usageMetadata: cached inside promptTokenCount; thoughts on top of candidates.

    Gemini omits zero counters, so a missing cachedContentTokenCount or
    thoughtsTokenCount next to a reported prompt count is an estimated zero.
    """
    if not isinstance(u, dict) or not u:
        return Usage()
    total = reported(u.get("promptTokenCount"))
    read = reported(u.get("cachedContentTokenCount"))
    if read.value is None and total.value is not None:
        read = TokenCount(value=0, status="estimated")
    candidates = reported(u.get("candidatesTokenCount"))
    thoughts = reported(u.get("thoughtsTokenCount"))
    if thoughts.value is None and candidates.value is not None:
        thoughts = TokenCount(value=0, status="estimated")
    output = derived(candidates, thoughts, assume_zero=True) if candidates.value is not None else thoughts
    return _inclusive(
        total=total,
        read=read,
        write=TokenCount(),
        output=output,
        reasoning=thoughts,
        raw=u,
    )
