"""Who sent a request and which session / thread / turn it belongs to.

The client comes from `ctxtap.capture.classify.classify_client` (headers first, body
markers second) so the recorder and the analyzer agree; this module adds the
identifiers each client provides. Sources, in priority order per field:

| field            | sources                                                                      |
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

import re
from collections.abc import Iterable
from typing import Any

from analysis.canonical import loads
from analysis.models import Identity
from analysis.protocols.common import as_dict, as_str
from ctxtap.capture.classify import classify_client

_CC_VERSION = re.compile(rb"cc_version=(\d+\.\d+\.\d+)")
_LEGACY_SESSION = re.compile(r"_session_([0-9a-fA-F-]{8,})$")


def headers_dict(headers: Iterable[tuple[str, str]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in headers:
        out.setdefault(str(key).lower(), str(value))
    return out


def turn_metadata(h: dict[str, str]) -> dict[str, Any]:
    """Parsed `x-codex-turn-metadata` JSON (empty when absent or malformed)."""
    raw = h.get("x-codex-turn-metadata")
    if not raw:
        return {}
    try:
        value = loads(raw)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def frame_headers(client_metadata: dict[str, Any]) -> list[tuple[str, str]]:
    """Header-like values Codex copies into a WebSocket frame's `client_metadata`."""
    out: list[tuple[str, str]] = []
    for key, value in client_metadata.items():
        if not isinstance(value, str):
            continue
        if key.startswith("ws_request_header_"):
            out.append((key.removeprefix("ws_request_header_").replace("_", "-"), value))
        elif key.startswith("x-"):
            out.append((key, value))
    return out


def identify(
    headers: Iterable[tuple[str, str]],
    raw_body: bytes | None,
    facts: dict[str, Any],
    recorded_client: str | None = None,
    recorded_version: str | None = None,
) -> Identity:
    """Client, version and session identifiers of one request."""
    header_list = list(headers)
    h = headers_dict(header_list)
    cc = classify_client(header_list, raw_body)
    ident = Identity(client=cc.client, client_version=cc.version, client_rule=cc.rule)
    ev = ident.evidence
    if ident.client.startswith("unknown") and recorded_client and not recorded_client.startswith("unknown"):
        ident.client, ident.client_version, ident.client_rule = recorded_client, recorded_version, "recorded"
    if ident.client == "unknown" and facts.get("user_prompt_id"):
        ident.client, ident.client_rule = "gemini-cli", "body:user_prompt_id"
    if ident.client_version is None and raw_body:
        m = _CC_VERSION.search(raw_body[:200_000])
        if m:
            ident.client_version = m.group(1).decode()
            ev["body.cc_version"] = ident.client_version

    def put(field: str, value: Any, source: str) -> None:
        if isinstance(value, str) and value and getattr(ident, field) is None:
            setattr(ident, field, value)
            ev[source] = value

    tm = turn_metadata(h)
    client_md = as_dict(facts.get("client_metadata"))
    put("session_id", h.get("x-claude-code-session-id"), "header.x-claude-code-session-id")
    for name in ("session-id", "session_id", "conversation_id"):
        put("session_id", h.get(name), f"header.{name}")
    put("session_id", as_str(tm.get("session_id")), "x-codex-turn-metadata.session_id")
    put("session_id", as_str(client_md.get("session_id")), "client_metadata.session_id")
    _claude_user_id(ident, facts.get("metadata_user_id"), put)
    put("session_id", facts.get("session_id"), "body.session_id")
    put("session_id", h.get("x-session-id"), "header.x-session-id")

    for name in ("thread-id", "thread_id"):
        put("thread_id", h.get(name), f"header.{name}")
    put("thread_id", as_str(tm.get("thread_id")), "x-codex-turn-metadata.thread_id")
    put("thread_id", as_str(client_md.get("thread_id")), "client_metadata.thread_id")
    put("thread_id", h.get("x-grok-conv-id"), "header.x-grok-conv-id")
    put("parent_thread_id", h.get("x-codex-parent-thread-id"), "header.x-codex-parent-thread-id")
    put("parent_thread_id", as_str(tm.get("parent_thread_id")), "x-codex-turn-metadata.parent_thread_id")

    put("turn_id", as_str(tm.get("turn_id")), "x-codex-turn-metadata.turn_id")
    put("turn_id", as_str(client_md.get("turn_id")), "client_metadata.turn_id")
    put("turn_id", h.get("x-claude-code-prompt-id"), "header.x-claude-code-prompt-id")
    put("turn_id", facts.get("user_prompt_id"), "body.user_prompt_id")

    put("prompt_cache_key", facts.get("prompt_cache_key"), "body.prompt_cache_key")
    key = ident.prompt_cache_key or ""
    if key.startswith("session_"):  # Kimi: prompt_cache_key is the CLI session id
        put("session_id", key, "body.prompt_cache_key")
    put("session_id", h.get("x-grok-conv-id"), "header.x-grok-conv-id")
    put("user_id", h.get("x-msh-device-id"), "header.x-msh-device-id")
    put("user_id", facts.get("user"), "body.user")
    return ident


def _claude_user_id(ident: Identity, raw: Any, put: Any) -> None:
    """Claude `metadata.user_id`: JSON with session_id (v2.1.78+) or legacy `..._session_<uuid>`."""
    if not isinstance(raw, str) or not raw:
        return
    ident.user_id = ident.user_id or raw
    try:
        value = loads(raw)
    except ValueError:
        value = None
    if isinstance(value, dict):
        put("session_id", as_str(value.get("session_id")), "body.metadata.user_id.session_id")
        return
    m = _LEGACY_SESSION.search(raw)
    if m:
        put("session_id", m.group(1), "body.metadata.user_id._session_")
