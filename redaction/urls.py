"""Credentials in URLs: `user:password@`, `?key=`, `&sig=`, `#access_token=`.

The URL is edited as text, never parsed and re-serialised, so everything but
the redacted values stays byte-for-byte as the client sent it (the analysis
groups requests by path and query).
"""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit

from ctxtap.redaction.false_positives import NOT_SECRET_NAMES

_AUTHORITY_RE = re.compile(r"^(\s*[A-Za-z][A-Za-z0-9+.\-]*://)([^/?#]*)")
_BRACKETED_PLACEHOLDER_RE = re.compile(r"\[(REDACTED:[a-z0-9-]{1,48}:[0-9a-f]{6})\]")
_SEGMENT_RE = re.compile(r"[^/?#;]{16,}")
_USERINFO_RE = re.compile(r"^(?P<pre>\s*[A-Za-z][A-Za-z0-9+.\-]*://)(?P<userinfo>[^/?#]*)@")
_PARAM_RE = re.compile(r"(?P<name>[^&;=#]*)=(?P<value>[^&;#]*)")

_QUERY_KINDS: dict[str, str] = {
    "key": "api-key",  # Google APIs: ?key=AIza...
    "sig": "azure-sas-signature",
    "x-amz-signature": "signature",
    "x-amz-credential": "aws-credential",
    "x-amz-security-token": "aws-session-token",
}
# The last word of a parameter name that makes its value a credential:
# `access_token`, `client_secret`, `api-key`, but not `token_type` or `page`.
_LAST_WORD_KINDS: dict[str, str] = {
    "key": "api-key",
    "apikey": "api-key",
    "token": "token",
    "secret": "secret",
    "password": "password",
    "passwd": "password",
    "pwd": "password",
    "pass": "password",
    "signature": "signature",
    "auth": "authorization",
    "authorization": "authorization",
    "credential": "authorization",
    "credentials": "authorization",
}
_SPLIT_RE = re.compile(r"[-_.\s\[\]]+")

URL_KINDS: tuple[str, ...] = (*_QUERY_KINDS.values(), *_LAST_WORD_KINDS.values(), "url-password")


def query_param_kind(name: str) -> str | None:
    """The placeholder kind for a credential-carrying query parameter name, else None."""
    lname = unquote(name).strip().lower()
    if lname in _QUERY_KINDS:
        return _QUERY_KINDS[lname]
    words = [w for w in _SPLIT_RE.split(lname) if w]
    if not words or "".join(words) in NOT_SECRET_NAMES:
        return None
    return _LAST_WORD_KINDS.get(words[-1])


def userinfo_span(url: str) -> tuple[int, int] | None:
    """Where `user:password` sits in `scheme://user:password@host`, or None."""
    m = _USERINFO_RE.match(url)
    return m.span("userinfo") if m is not None else None


def parses(url: str) -> bool:
    try:
        urlsplit(url)
    except ValueError:
        return False
    return True


def encode_authority_placeholders(url: str, keep_parseable: bool = False) -> str:
    """`user:[REDACTED:...]@host` -> `user:%5BREDACTED:...%5D@host`.

    Brackets in the authority mean an IPv6 literal; `urllib.parse.urlsplit`
    raises on anything else there, so placeholders in it are percent-encoded.
    """
    m = _AUTHORITY_RE.match(url)
    if m is None or "[REDACTED:" not in m.group(2):
        return url
    authority = _BRACKETED_PLACEHOLDER_RE.sub(r"%5B\1%5D", m.group(2))
    out = m.group(1) + authority + url[m.end() :]
    if keep_parseable and not parses(out):
        # A replacement swallowed the path's "/" and a later bracket now sits in the
        # authority: encode every bracket there, so a URL that parsed still parses.
        m2 = _AUTHORITY_RE.match(out)
        if m2 is not None:
            out = m2.group(1) + m2.group(2).replace("[", "%5B").replace("]", "%5D") + out[m2.end() :]
    return out


def iter_path_segments(url: str) -> list[tuple[int, int]]:
    """(start, end) of each path segment long enough to be a token (`/bot<token>/`, `/ghp_...`)."""
    m = _AUTHORITY_RE.match(url)
    start = m.end() if m is not None else 0
    end = min((i for i in (url.find("?", start), url.find("#", start)) if i >= 0), default=len(url))
    out = []
    for seg in _SEGMENT_RE.finditer(url, start, end):
        out.append(seg.span())
    return out


def iter_params(url: str) -> list[tuple[int, int, str]]:
    """(value start, value end, name) of each `name=value` in the query and fragment."""
    out: list[tuple[int, int, str]] = []
    q = url.find("?")
    h = url.find("#")
    regions = []
    if q >= 0:
        regions.append((q + 1, h if h > q else len(url)))
    if h >= 0:
        regions.append((h + 1, len(url)))
    for start, end in regions:
        for m in _PARAM_RE.finditer(url, start, end):
            out.append((m.start("value"), m.end("value"), m.group("name")))
    return out
