"""The provider's verdict on a cache miss: reading its diagnostics, and asking for them.

Two providers explain a miss themselves when the request asks:

* Anthropic Messages: the request carries `diagnostics: {"previous_message_id": <msg id or null>}` (under
  the beta header `cache-diagnosis-2026-04-07` where the docs still ask for it); the message (on
  `message_start` when streaming) carries `diagnostics`: `null` on a first turn or when nothing diverged,
  `{"cache_miss_reason": null}` while the comparison still runs, else a reason whose `type` is
  `model_changed`, `system_changed`, `tools_changed` or `messages_changed` (with
  `cache_missed_input_tokens`), `previous_message_not_found` or `unavailable`.
  Sources: anthropic-sdk-python `src/anthropic/types/beta/beta_diagnostics.py`,
  `beta_cache_miss_*.py`, `beta_diagnostics_param.py`, `beta_message.py` (`diagnostics`),
  `beta_raw_message_start_event.py` (the stream's message), `types/anthropic_beta_param.py` (the
  beta name); https://platform.claude.com/docs/en/build-with-claude/cache-diagnostics.
* OpenAI Responses: the request carries `prompt_cache_options.comparison_response_id`; the response
  carries `prompt_cache_diagnostics`, a union on `type`: `cache_hit`, `cache_miss` (`reason`,
  `cache_missed_tokens`, optional `comparison_reusable_tokens`), `comparison_response_not_found`,
  `unavailable`. Reasons: `model_changed`, `prompt_cache_key_changed`, `tools_changed`,
  `text_format_changed`, `reasoning_effort_changed`, `verbosity_changed`, `context_compacted`,
  `input_changed`, `service_tier_changed`. Sources: openai-node
  `src/resources/responses/responses.ts` (`Response.prompt_cache_diagnostics`, `Response.CacheMiss`,
  `PromptCacheOptions`, read through a copy of the file at commit 7423ac3e: the newest openai-node and
  openai-python snapshots we could fetch predate the field); https://developers.openai.com/api/docs/guides/prompt-caching/diagnostics.

Reasons are kept verbatim (a future type is `other`, never dropped); `CHANGE` maps them onto the parts
of a request the bytes can name, so the three witnesses can be set side by side.
"""

from __future__ import annotations

import json
from typing import Any

from ctxtap.analysis.parsing.models import CacheDiagnostics

ANTHROPIC_BETA = "cache-diagnosis-2026-04-07"

# what each provider reason says changed, in the words the bytes' comparison uses
CHANGE = {
    "model_changed": "model", "system_changed": "system", "tools_changed": "tools",
    "messages_changed": "messages", "prompt_cache_key_changed": "cache_key", "input_changed": "input",
    "context_compacted": "compaction", "text_format_changed": "settings", "reasoning_effort_changed": "settings",
    "verbosity_changed": "settings", "service_tier_changed": "settings",
}
_ANTHROPIC_OUTCOMES = {"previous_message_not_found": "baseline_not_found", "unavailable": "unavailable"}
_RESPONSES_OUTCOMES = {"cache_hit": "hit", "cache_miss": "miss", "comparison_response_not_found": "baseline_not_found",
                       "unavailable": "unavailable"}


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _raw(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def from_anthropic(message: dict[str, Any]) -> CacheDiagnostics | None:
    """A Messages response's (or `message_start` message's) `diagnostics`; None when it has none."""
    if "diagnostics" not in message:
        return None
    diag = message["diagnostics"]
    if diag is None:
        # a first turn, or a comparison that found nothing diverged: Anthropic's SDK says only "present
        # (possibly null)"; that null means no divergence is langchain4j's reading (AnthropicCacheDiagnostics),
        # not confirmed by Anthropic's own pages. `cache_verdicts` calls it not_compared without a baseline.
        return CacheDiagnostics(outcome="no_divergence", raw="null")
    if not isinstance(diag, dict):
        return CacheDiagnostics(outcome="other", raw=_raw(diag))
    reason = diag.get("cache_miss_reason")
    if reason is None:
        return CacheDiagnostics(outcome="pending", raw=_raw(diag))
    kind = reason.get("type") if isinstance(reason, dict) else None
    if not isinstance(kind, str):
        return CacheDiagnostics(outcome="other", raw=_raw(diag))
    missed = _int(reason.get("cache_missed_input_tokens"))
    outcome = _ANTHROPIC_OUTCOMES.get(kind) or ("miss" if kind.endswith("_changed") or missed is not None else "other")
    return CacheDiagnostics(outcome=outcome, reason=kind, missed_tokens=missed, raw=_raw(diag))


def from_responses(response: dict[str, Any]) -> CacheDiagnostics | None:
    """A Responses object's `prompt_cache_diagnostics`; None when it has none."""
    diag = response.get("prompt_cache_diagnostics")
    if not isinstance(diag, dict):
        return None
    kind = diag.get("type")
    outcome = _RESPONSES_OUTCOMES.get(kind, "other") if isinstance(kind, str) else "other"
    reason = diag.get("reason") if isinstance(diag.get("reason"), str) else None
    return CacheDiagnostics(outcome=outcome, reason=reason, missed_tokens=_int(diag.get("cache_missed_tokens")),
                            reusable_tokens=_int(diag.get("comparison_reusable_tokens")), raw=_raw(diag))


def anthropic_request(body: dict[str, Any]) -> tuple[bool, str | None]:
    """(asked for diagnostics, the message id it compares with) of a Messages request body."""
    diag = body.get("diagnostics")
    if not isinstance(diag, dict):
        return False, None
    baseline = diag.get("previous_message_id")
    return True, baseline if isinstance(baseline, str) else None


def responses_request(body: dict[str, Any]) -> tuple[bool, str | None]:
    """(asked for diagnostics, the response id it compares with) of a Responses request body."""
    options = body.get("prompt_cache_options")
    baseline = options.get("comparison_response_id") if isinstance(options, dict) else None
    return (True, baseline) if isinstance(baseline, str) else (False, None)


def asking(api: str, body: dict[str, Any], baseline: str | None) -> dict[str, Any] | None:
    """`body` asking its provider for cache diagnostics against `baseline`; None where the API has none.

    Only ctxtap's own senders (`replay --send --diagnostics`) call this: the proxy never adds these
    fields to a client's traffic. Responses has no first-turn form (its field is the baseline itself)."""
    if api in ("messages",):
        return {**body, "diagnostics": {"previous_message_id": baseline}}
    if api in ("responses", "responses-websocket"):
        if baseline is None:
            return body
        options = body.get("prompt_cache_options") if isinstance(body.get("prompt_cache_options"), dict) else {}
        return {**body, "prompt_cache_options": {**options, "comparison_response_id": baseline}}
    return None


def beta_header(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The request's headers with Anthropic's diagnostics beta named in `anthropic-beta`."""
    out, seen = [], False
    for name, value in headers:
        if name.lower() == "anthropic-beta":
            seen = True
            names = [v.strip() for v in value.split(",") if v.strip()]
            if ANTHROPIC_BETA not in names:
                value = ",".join([*names, ANTHROPIC_BETA])
        out.append((name, value))
    if not seen:
        out.append(("anthropic-beta", ANTHROPIC_BETA))
    return out
