"""Prompt-cache diagnostics as the providers answer them, so ctxtap's reading is tested on their shapes.

A request that asks (Anthropic `diagnostics: {previous_message_id}`, Responses
`prompt_cache_options.comparison_response_id`) is compared with the request that produced the named
response, part by part in the provider's cache order, and answered in the documented shape
(the sources are listed in tests/fixtures/cache_diagnostics/SOURCES.md):

* Anthropic: `diagnostics` on the message (on `message_start` when streaming): `null` on a first turn
  or when nothing diverged, `{"cache_miss_reason": {"type": "model_changed" | "tools_changed" |
  "system_changed" | "messages_changed", "cache_missed_input_tokens": n}}`, or
  `{"type": "previous_message_not_found"}` for an id it never answered. Parts are compared model,
  tools, system, messages (the cache order; the docs do not say which reason wins when several parts
  changed, so the first in cache order does here).
* Responses: `prompt_cache_diagnostics` on the response: `cache_miss` with `reason`,
  `cache_missed_tokens` and `comparison_reusable_tokens`, `cache_hit`, `comparison_response_not_found`,
  or `unavailable` (nothing diverged yet nothing was read: an expired or too short prefix, for which
  the reasons have no word).

`Engine.forced_diagnostics` answers the next requests that ask with given objects instead (a
documented fixture replayed over the real wire).
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from .cache import CacheResult
from .prefix import _VOLATILE_SYSTEM_PREFIX

MAX_PRINTS = 4096
_SETTINGS = (("service_tier", "service_tier_changed"), ("text.format", "text_format_changed"),
             ("reasoning.effort", "reasoning_effort_changed"), ("text.verbosity", "verbosity_changed"))


def _strip(block: Any) -> Any:
    return {k: v for k, v in block.items() if k != "cache_control"} if isinstance(block, dict) else block


def _enc(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, list):
        return content
    return [{"type": "text", "text": content}] if isinstance(content, str) else []


def _get(body: dict[str, Any], dotted: str) -> Any:
    value: Any = body
    for key in dotted.split("."):
        value = value.get(key) if isinstance(value, dict) else None
    return value


@dataclass(frozen=True)
class Fingerprint:
    """What a request's cache prefix is made of: its model, key and settings, and its parts in cache
    order, each a list of encoded items (a later request extends `messages`/`input` by appending)."""

    model: str
    cache_key: str | None
    settings: tuple[tuple[str, str], ...]
    parts: tuple[tuple[str, tuple[bytes, ...]], ...]

    def tokens(self, bytes_per_token: float, upto: str | None = None) -> int:
        """Tokens of the parts before `upto` (all of them without)."""
        n = 0
        for name, items in self.parts:
            if name == upto:
                break
            n += sum(len(i) for i in items)
        return round(n / bytes_per_token)


def fingerprint(family: str, body: dict[str, Any], model: str) -> Fingerprint | None:
    """The request's fingerprint, for the families that have diagnostics."""
    if family == "anthropic":
        system = [_strip(b) for b in _blocks(body.get("system"))
                  if not (isinstance(b, dict) and str(b.get("text", "")).startswith(_VOLATILE_SYSTEM_PREFIX))]
        messages = [_enc([m.get("role"), [_strip(b) for b in _blocks(m.get("content"))]])
                    for m in body.get("messages") or [] if isinstance(m, dict)]
        parts = (("tools", tuple(_enc(_strip(t)) for t in body.get("tools") or [])),
                 ("system", tuple(_enc(b) for b in system)), ("messages", tuple(messages)))
        return Fingerprint(model, None, (), parts)
    if family == "responses":
        items = body.get("input")
        items = [{"type": "message", "role": "user", "content": items}] if isinstance(items, str) else items or []
        head = [_enc({"instructions": body["instructions"]})] if body.get("instructions") else []
        settings = tuple((name, _enc(_get(body, name))) for name, _ in _SETTINGS)
        parts = (("tools", tuple(_enc(t) for t in body.get("tools") or [])),
                 ("input", tuple(head + [_enc(i) for i in items])))
        return Fingerprint(model, body.get("prompt_cache_key"), settings, parts)
    return None


def _first_change(old: Fingerprint, new: Fingerprint) -> str | None:
    """The first part that differs, in cache order; `messages`/`input` may grow by appending."""
    for (name, before), (_, after) in zip(old.parts, new.parts, strict=True):
        grows = name in ("messages", "input")
        if (after[:len(before)] != before) if grows else (after != before):
            return name
    return None


class Diagnoser:
    """Fingerprints of the answered requests by response id, and the verdicts on the ones that ask."""

    def __init__(self, bytes_per_token: float) -> None:
        self.bytes_per_token = bytes_per_token
        self.forced: list[dict[str, Any] | None] = []  # the next answers, verbatim (see the module docstring)
        self._prints: OrderedDict[str, Fingerprint] = OrderedDict()
        self._lock = threading.Lock()

    def remember(self, response_id: str, print_: Fingerprint | None) -> None:
        if print_ is None:
            return
        with self._lock:
            self._prints[response_id] = print_
            while len(self._prints) > MAX_PRINTS:
                self._prints.popitem(last=False)

    def _baseline(self, response_id: str) -> Fingerprint | None:
        with self._lock:
            return self._prints.get(response_id)

    def _forced(self) -> tuple[bool, dict[str, Any] | None]:
        with self._lock:
            return (True, self.forced.pop(0)) if self.forced else (False, None)

    def anthropic(self, body: dict[str, Any], now: Fingerprint | None) -> tuple[bool, dict[str, Any] | None]:
        """(asked, the message's `diagnostics` value) for a Messages request."""
        asked = body.get("diagnostics")
        if not isinstance(asked, dict):
            return False, None
        forced, value = self._forced()
        if forced:
            return True, value
        baseline_id = asked.get("previous_message_id")
        if not isinstance(baseline_id, str) or now is None:
            return True, None  # a first turn opts in: nothing to compare yet
        old = self._baseline(baseline_id)
        if old is None:
            return True, {"cache_miss_reason": {"type": "previous_message_not_found"}}
        part = "model" if old.model != now.model else _first_change(old, now)
        if part is None:
            return True, None
        missed = old.tokens(self.bytes_per_token) - (0 if part == "model" else old.tokens(self.bytes_per_token, part))
        return True, {"cache_miss_reason": {"type": f"{part}_changed", "cache_missed_input_tokens": missed}}

    def responses(self, body: dict[str, Any], now: Fingerprint | None,
                  usage: CacheResult) -> tuple[bool, dict[str, Any] | None]:
        """(asked, the response's `prompt_cache_diagnostics`) for a Responses request."""
        options = body.get("prompt_cache_options")
        baseline_id = options.get("comparison_response_id") if isinstance(options, dict) else None
        if not isinstance(baseline_id, str):
            return False, None
        forced, value = self._forced()
        if forced:
            return True, value
        old = self._baseline(baseline_id)
        if old is None or now is None:
            return True, {"type": "comparison_response_not_found"}
        reusable = old.tokens(self.bytes_per_token)
        reason = None
        if old.model != now.model:
            reason, kept = "model_changed", 0
        elif old.cache_key != now.cache_key:
            reason, kept = "prompt_cache_key_changed", 0
        else:
            changed = dict(_SETTINGS)
            setting = next((name for (name, a), (_, b) in zip(old.settings, now.settings, strict=True) if a != b), None)
            part = _first_change(old, now)
            if setting is not None:
                reason, kept = changed[setting], 0
            elif part is not None:
                reason, kept = f"{part}_changed", old.tokens(self.bytes_per_token, part)
        if reason is None:
            return True, {"type": "cache_hit"} if usage.read else {"type": "unavailable"}
        return True, {"type": "cache_miss", "reason": reason, "cache_missed_tokens": reusable - kept,
                      "comparison_reusable_tokens": reusable}
