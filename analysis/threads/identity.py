"""Who sent a request and which session / thread / turn it belongs to.

The client comes from `ctxtap.capture.classify.classify_client` (headers first,
body markers second) so the recorder and the analyzer agree; the identifiers
come from identity steps each client module declares (`analysis.clients.*`).
An identifier is taken from the first step that finds it, in stage order
(`analysis.clients.rules.IdentityStage`), which gives these priorities:

| field            | sources, first wins                                                          |
|------------------|------------------------------------------------------------------------------|
| session_id       | X-Claude-Code-Session-Id; Codex session-id / session_id / conversation_id;   |
|                  | x-codex-turn-metadata / client_metadata session_id; Claude metadata.user_id  |
|                  | (JSON session_id, legacy `_session_` suffix); Gemini request.session_id;     |
|                  | x-session-id; Kimi prompt_cache_key `session_...`; x-grok-conv-id            |
| thread_id        | thread-id / thread_id; turn metadata / client_metadata thread_id; x-grok-conv-id |
| parent_thread_id | x-codex-parent-thread-id; turn metadata parent_thread_id                     |
| turn_id          | turn metadata / client_metadata turn_id; x-claude-code-prompt-id; Gemini user_prompt_id |
| user_id          | Claude metadata.user_id (as given); X-Msh-Device-Id; body user / safety_identifier |
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ctxtap.analysis.clients import registry
from ctxtap.analysis.clients.rules import IdentityContext, IdentityStep
from ctxtap.analysis.parsing.models import CallIdentity
from ctxtap.analysis.threads import runfacts
from ctxtap.capture.bodies import BodyView
from ctxtap.capture.classify import classify_client, client_evidence, client_name
from ctxtap.capture.headers import lower_headers

_steps: dict[tuple[int, frozenset[str]], list[IdentityStep]] = {}


def steps(disabled_clients: Iterable[str] = ()) -> list[IdentityStep]:
    """The identity steps in stage order (ties: client order, then as each client lists them)."""
    disabled = frozenset(disabled_clients)
    key = (registry.version(), disabled)
    found = _steps.get(key)
    if found is None:
        ranked = [(s.stage, ci, si, s) for ci, c in enumerate(registry.clients(disabled))
                  for si, s in enumerate(c.identity)]
        found = _steps[key] = [e[3] for e in sorted(ranked, key=lambda e: e[:3])]
    return found


def extra_request_headers(facts: dict[str, Any], disabled_clients: Iterable[str] = ()) -> list[tuple[str, str]]:
    """Header-like values clients put in a request body (WebSocket frames carry no headers of their own)."""
    out: list[tuple[str, str]] = []
    for client in registry.clients(disabled_clients):
        if client.request_headers is not None:
            out.extend(client.request_headers(facts))
    return out


def identify(
    headers: Iterable[tuple[str, str]],
    raw_body: bytes | BodyView | None,
    facts: dict[str, Any],
    recorded_client: str | None = None,
    recorded_version: str | None = None,
    disabled_clients: Iterable[str] = (),
) -> CallIdentity:
    """Client, version and session identifiers of one request."""
    header_list = list(headers)
    cc = classify_client(header_list, raw_body)
    ident = CallIdentity(client=cc.client, client_version=cc.version, client_rule=cc.rule)
    ctx = IdentityContext(ident, lower_headers(header_list), facts, raw_body, recorded_client, recorded_version)
    for step in steps(disabled_clients):
        step.fill(ctx)
    if client_evidence(ident.client_rule) == "unattributed" and (name := runfacts.program()):
        # nothing on the wire names it (an SDK's user agent): the program the recorded command ran does
        ident.client, ident.client_rule = client_name(name), "argv:program"
    return ident
