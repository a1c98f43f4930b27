"""Typed placeholders with a short keyed hash: `[REDACTED:github-token:3fa2c1]`.

The hash lets a reader see that two redacted values were the same secret
(the same key sent to two hosts, a token echoed back in a tool result)
without revealing it. It is keyed with a per-user secret that never lives in
the capture, so a short password cannot be brute-forced from the placeholder.
The key is further bound to the capture id, so hashes do not correlate across
captures.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from urllib.parse import unquote_to_bytes

PLACEHOLDER_MARK = b"REDACTED:"
HASH_HEX_CHARS = 6

# What redact() writes. Used to leave existing placeholders alone, which is what
# makes redaction idempotent. Inside a URL's authority the brackets are
# percent-encoded (`%5BREDACTED:url-password:3fa2c1%5D`), since `[...]` there
# means an IPv6 address and makes URL parsers raise.
PLACEHOLDER_RE = re.compile(rb"(?:\[|%5[Bb])REDACTED:[a-z0-9-]{1,48}:[0-9a-f]{6}(?:\]|%5[Dd])")

_JSON_ESCAPE_RE = re.compile(rb'\\(?:u([0-9a-fA-F]{4})|(["\\/bfnrt]))')
_SIMPLE_ESCAPES = {
    b'"': b'"',
    b"\\": b"\\",
    b"/": b"/",
    b"b": b"\b",
    b"f": b"\f",
    b"n": b"\n",
    b"r": b"\r",
    b"t": b"\t",
}
_WHITESPACE_RE = re.compile(rb"\s+")


def _json_unescape_once(value: bytes) -> bytes:
    def repl(m: re.Match[bytes]) -> bytes:
        if m.group(1) is not None:
            code = int(m.group(1), 16)
            return chr(code).encode("utf-8", "surrogatepass")
        return _SIMPLE_ESCAPES[m.group(2)]

    return _JSON_ESCAPE_RE.sub(repl, value)


def canonical_secret(secret: bytes, kind: str, *, percent_encoded: bool = False) -> bytes:
    """The form of a secret that is hashed, so equal secrets hash equal in any placement.

    A key seen raw in a header, JSON-escaped in a body, double-escaped inside
    a tool result or percent-encoded in a query string is one secret.
    """
    value = secret
    for _ in range(4):  # JSON inside JSON inside JSON is the deepest seen in practice
        if b"\\" not in value:
            break
        unescaped = _json_unescape_once(value)
        if unescaped == value:
            break
        value = unescaped
    if percent_encoded and b"%" in value:
        value = unquote_to_bytes(value)
    if kind in ("private-key", "gcp-sa-key"):
        value = _WHITESPACE_RE.sub(b"", value)
    return value


class PlaceholderMaker:
    """Builds placeholders whose hash is HMAC(HMAC(key, capture_id), secret)."""

    def __init__(self, key: bytes, capture_id: str = "") -> None:
        self._capture_key = hmac.new(
            key, capture_id.encode("utf-8", "surrogatepass"), hashlib.sha256
        ).digest()

    def digest(self, canonical: bytes) -> str:
        return hmac.new(self._capture_key, canonical, hashlib.sha256).hexdigest()[:HASH_HEX_CHARS]

    def make(self, kind: str, secret: bytes, *, percent_encoded: bool = False) -> bytes:
        digest = self.digest(canonical_secret(secret, kind, percent_encoded=percent_encoded))
        return b"[REDACTED:" + kind.encode("ascii") + b":" + digest.encode("ascii") + b"]"


def is_placeholder(value: bytes) -> bool:
    return PLACEHOLDER_RE.fullmatch(value) is not None
