"""Which headers carry credentials, and how to redact their values without losing shape.

A header's name is the best evidence there is: `x-api-key: anything` is a
secret whatever it looks like (`statsig-api-key: client-...` in Claude Code's
traffic does not look like one). The auth scheme and cookie names stay, since
the analysis reports them ("Bearer", which cookies were sent).
"""

from __future__ import annotations

import re

# name -> placeholder kind used when the value's format is not recognised
_EXACT: dict[str, str] = {
    "authorization": "authorization",
    "proxy-authorization": "authorization",
    "x-api-key": "api-key",
    "api-key": "api-key",
    "apikey": "api-key",
    "x-goog-api-key": "api-key",
    "cookie": "cookie",
    "set-cookie": "cookie",
    "x-amz-security-token": "aws-session-token",
}

# Names that contain a sensitive word but carry no credential.
_NOT_SENSITIVE = frozenset(
    {
        "sec-websocket-key",
        "sec-websocket-accept",
        "idempotency-key",
        "x-idempotency-key",
        "www-authenticate",
        "proxy-authenticate",
        "authentication-info",
        "proxy-authentication-info",
        "x-stainless-helper-method",
    }
)

_WORD_KINDS: dict[str, str] = {
    "apikey": "api-key",
    "token": "token",
    "secret": "secret",
    "password": "password",
    "passwd": "password",
    "signature": "signature",
    "auth": "authorization",
    "authorization": "authorization",
    "credential": "authorization",
    "credentials": "authorization",
    "cookie": "cookie",
}

HEADER_KINDS: tuple[str, ...] = tuple(dict.fromkeys([*_EXACT.values(), *_WORD_KINDS.values(), "basic-auth"]))

_SPLIT_RE = re.compile(r"[-_.\s]+")
_SCHEME_RE = re.compile(r"(\s*)([A-Za-z][A-Za-z0-9_.\-]*)(\s+)(\S.*?)(\s*)$", re.DOTALL)


def header_kind(name: str) -> str | None:
    """The placeholder kind for a credential-carrying header name, else None."""
    lname = name.strip().lower()
    if lname in _EXACT:
        return _EXACT[lname]
    if lname in _NOT_SENSITIVE:
        return None
    words = [w for w in _SPLIT_RE.split(lname) if w]
    for i, word in enumerate(words):
        if word in _WORD_KINDS:
            return _WORD_KINDS[word]
        if word == "key" and (i == len(words) - 1 or (i > 0 and words[i - 1] == "api")):
            return "api-key"  # x-functions-key, ocp-apim-subscription-key, statsig-api-key
    return None


def split_auth_scheme(value: str) -> tuple[str, str, str] | None:
    """`Bearer abc` -> ("Bearer ", "abc", ""); None when there is no scheme word."""
    m = _SCHEME_RE.match(value)
    if m is None:
        return None
    lead, scheme, gap, credentials, trail = m.groups()
    return lead + scheme + gap, credentials, trail


def split_cookies(value: str) -> list[tuple[str, str, str]]:
    """`a=1; b=2` -> [("a=", "1", "; "), ("b=", "2", "")]: name part, value, separator after."""
    out: list[tuple[str, str, str]] = []
    for m in re.finditer(r"([^;=]*=)?([^;]*)(;\s*|$)", value):
        if m.end() == m.start():
            break
        out.append((m.group(1) or "", m.group(2), m.group(3)))
    return out
