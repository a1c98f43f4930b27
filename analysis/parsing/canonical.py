"""Canonical JSON, content hashes and binary placeholders shared by the protocol parsers.

Identical context must hash identically in every request so prefix comparison and
deduplication work; cache markers (`cache_control`, `prompt_cache_breakpoint`) move
between requests without changing what the model reads, so they are left out of the
hash. Binary payloads never reach a block's text: they become short placeholders.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

CACHE_KEYS = ("cache_control", "prompt_cache_breakpoint")

_BASE64ISH = re.compile(r"^[A-Za-z0-9+/=_\-\s]+$")
_DATA_URL = re.compile(r"^data:([\w.+\-/]+)?(;[\w=.\-]+)*;base64,", re.I)


MAX_DEPTH = 100


def loads(raw: bytes | str) -> Any:
    """json.loads whose only failure is ValueError (absurd nesting included)."""
    try:
        return json.loads(raw)
    except RecursionError as e:
        raise ValueError("JSON nested too deeply") from e


def limit_depth(obj: Any, depth: int = MAX_DEPTH) -> Any:
    """Copy of a JSON value cut at `depth` levels, for values too deep to encode or walk."""
    if depth <= 0:
        return "[nested too deeply]"
    if isinstance(obj, dict):
        return {k: limit_depth(v, depth - 1) for k, v in obj.items()}
    if isinstance(obj, list):
        return [limit_depth(v, depth - 1) for v in obj]
    return obj


def canonical_json(obj: Any) -> str:
    """Stable JSON text: sorted keys, no whitespace, unicode kept."""
    try:
        return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    except RecursionError:
        return json.dumps(
            limit_depth(obj), sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
        )


def strip_cache_markers(obj: Any) -> Any:
    """The wire object without cache markers (on the block and on its direct content parts)."""
    if not isinstance(obj, dict):
        return obj
    if not any(k in obj for k in CACHE_KEYS) and not _content_has_markers(obj):
        return obj
    out = {k: v for k, v in obj.items() if k not in CACHE_KEYS}
    content = out.get("content")
    if isinstance(content, list):
        out["content"] = [
            {k: v for k, v in p.items() if k not in CACHE_KEYS} if isinstance(p, dict) else p for p in content
        ]
    return out


def _content_has_markers(obj: dict) -> bool:
    content = obj.get("content")
    if not isinstance(content, list):
        return False
    return any(isinstance(p, dict) and any(k in p for k in CACHE_KEYS) for p in content)


def safe_text(text: str) -> str:
    """Replace lone surrogates (possible in JSON input) so the text is valid UTF-8."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


TEXT_PART_TYPES = frozenset({"text", "input_text", "output_text"})


def canonical_content(wire: Any) -> Any:
    """The wire object as hashed: cache markers removed, a bare text part reduced to its string.

    Clients send the same text as `"content": "..."` in one request and as
    `[{"type": "text", "text": "..."}]` in the next (Claude Code does this with its
    environment message); the model reads the same tokens, so both hash alike.
    """
    wire = strip_cache_markers(wire)
    if (
        isinstance(wire, dict)
        and isinstance(wire.get("type"), str)
        and wire["type"] in TEXT_PART_TYPES
        and isinstance(wire.get("text"), str)
        and set(wire) <= {"type", "text", "annotations"}
        and not wire.get("annotations")
    ):
        return wire["text"]
    return wire


def content_hash(wire: Any) -> str:
    """SHA-256 hex of the canonical JSON of a block's canonical content."""
    return sha256_text(canonical_json(canonical_content(wire)))


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def utf8_len(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def cache_breakpoint(obj: Any) -> str | None:
    """Normalise a block's cache marker to None, "ephemeral", "5m" or "1h"."""
    if not isinstance(obj, dict):
        return None
    cc = obj.get("cache_control")
    if isinstance(cc, dict):
        ttl = cc.get("ttl")
        return ttl if ttl in ("5m", "1h") else "ephemeral"
    if cc is not None:
        return "ephemeral"
    if obj.get("prompt_cache_breakpoint"):
        return "ephemeral"
    return None


def base64_size(data: str) -> int:
    """Decoded size of a base64 string, without decoding it."""
    data = data.strip()
    pad = len(data) - len(data.rstrip("="))
    return max(0, len(data) * 3 // 4 - pad)


def data_url_placeholder(kind: str, url: str) -> str:
    """Placeholder for an image/file URL; data: URLs become media type and size."""
    m = _DATA_URL.match(url)
    if m:
        media = m.group(1) or "application/octet-stream"
        return f"[{kind} {media} {base64_size(url[m.end() :])} bytes]"
    return f"[{kind} url {url[:300]}]"


def scrub_binary(obj: Any) -> Any:
    """A JSON value with long base64-looking strings and data: URLs replaced by placeholders.

    Copy-on-write: returns the very same object when nothing needed replacing, so
    callers can tell (by identity) that the scrubbed text equals the canonical one.
    """
    try:
        return _scrub(obj, "")
    except RecursionError:
        return _scrub(limit_depth(obj), "")


def _scrub(obj: Any, _key: str) -> Any:
    if isinstance(obj, dict):
        out = None
        for k, v in obj.items():
            new = _scrub(v, k)
            if new is not v:
                out = dict(obj) if out is None else out
                out[k] = new
        return obj if out is None else out
    if isinstance(obj, list):
        items = [_scrub(v, _key) for v in obj]
        return obj if all(a is b for a, b in zip(items, obj, strict=True)) else items
    if isinstance(obj, str) and len(obj) > 512:
        if _DATA_URL.match(obj):
            return data_url_placeholder("binary", obj)
        if _key in ("data", "b64_json", "file_data", "encrypted_content", "signature") or (
            " " not in obj[:512] and _BASE64ISH.match(obj[:2048])
        ):
            return f"[binary {base64_size(obj)} bytes]"
    return obj
