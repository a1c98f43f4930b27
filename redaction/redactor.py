"""The one object the recorder and the importer use: bytes, text, headers and URLs in, redacted out.

It works on copies the proxy hands over after forwarding, so nothing here can
change what reaches the model API. It must never raise: a recorder that
crashes on an odd body loses the capture, so any internal failure replaces
the whole value with a placeholder (losing a body beats leaking a key).
"""

from __future__ import annotations

import collections
from urllib.parse import unquote

from ctxtap.redaction.detectors import TOKEN_CHARS, is_placeholder_password
from ctxtap.redaction.encodings import percent_decode
from ctxtap.redaction.eventstream import redact_eventstream
from ctxtap.redaction.false_positives import looks_random
from ctxtap.redaction.headers import header_kind, split_auth_scheme, split_cookies
from ctxtap.redaction.json_stream import looks_like_json_stream, redact_json_stream
from ctxtap.redaction.placeholder import PLACEHOLDER_RE, PlaceholderMaker, is_placeholder
from ctxtap.redaction.scanner import Scanner, get_scanner
from ctxtap.redaction.streams import redact_sse
from ctxtap.redaction.urls import (
    encode_authority_placeholders,
    iter_params,
    iter_path_segments,
    parses,
    query_param_kind,
    userinfo_span,
)
from ctxtap.wire.eventstream import looks_like_eventstream
from ctxtap.wire.sse import is_sse_body

_CACHE_LIMIT = 4096
_URL_HEADERS = frozenset({"location", "content-location", "referer", "origin"})
_MAX_PASSES = 5
_TOKEN_BYTES = frozenset(TOKEN_CHARS)


def _is_glued(data: bytes, start: int, end: int) -> bool:
    """Does a token character touch the span (other than the `n` of a `\\n` escape)?

    A `.`/`~`/`:` then a token character counts too: dotted formats (JWTs) glued
    together only show the second one once the first is a placeholder.
    """
    if end < len(data) and data[end] in _TOKEN_BYTES:
        return True
    if end + 1 < len(data) and data[end] in b".~:" and data[end + 1] in _TOKEN_BYTES:
        return True
    if start == 0 or data[start - 1] not in _TOKEN_BYTES:
        return False
    return not (start >= 2 and data[start - 2] == 0x5C)


class Redactor:
    """Replaces credentials with `[REDACTED:<kind>:<6 hex>]`, equal secrets getting equal placeholders.

    `key` is the per-user redaction key (see `ctxtap.capture.paths.redaction_key`);
    `capture_id` scopes the hashes to one capture. `backend` picks the rule
    engine ("hyperscan" or "python"; default: the fastest installed).
    """

    def __init__(self, key: bytes, capture_id: str = "", *, backend: str | None = None) -> None:
        if isinstance(key, str):
            key = key.encode("utf-8")
        self._maker = PlaceholderMaker(bytes(key), capture_id)
        self.counts: collections.Counter[str] = collections.Counter()
        self._cache: dict[tuple[str, bytes, bool], bytes] = {}
        self._scanner: Scanner = get_scanner(backend)

    @property
    def backend(self) -> str:
        """Which engine runs the rules: "hyperscan" or "python"."""
        return self._scanner.backend

    # --- placeholders ---------------------------------------------------------------

    def placeholder(self, kind: str, secret: bytes, *, percent_encoded: bool = False) -> bytes:
        """The placeholder for one secret; counts the replacement."""
        cache_key = (kind, secret, percent_encoded)
        made = self._cache.get(cache_key)
        if made is None:
            if len(self._cache) >= _CACHE_LIMIT:
                self._cache.clear()
            made = self._maker.make(kind, secret, percent_encoded=percent_encoded)
            self._cache[cache_key] = made
        self.counts[kind] += 1
        return made

    def _placeholder_str(self, kind: str, secret: str, *, percent_encoded: bool = False) -> str:
        raw = secret.encode("utf-8", "surrogatepass")
        return self.placeholder(kind, raw, percent_encoded=percent_encoded).decode("ascii")

    def _unscannable(self, value: object) -> bytes:
        try:
            raw = bytes(value)  # type: ignore[call-overload]
        except Exception:
            raw = repr(value).encode("utf-8", "replace")
        return self.placeholder("unscannable", raw)

    # --- bodies -----------------------------------------------------------------------

    def redact_bytes(self, data: bytes) -> bytes:
        """Any body: JSON, SSE, a WebSocket frame or binary. Unchanged outside the replaced spans.

        An SSE body, an AWS event stream (Bedrock) or a stream of JSON values (NDJSON, a JSON
        array of chunks) has its content streams joined first (`redaction.streams`,
        `redaction.eventstream`, `redaction.json_stream`), so a secret streamed a few
        characters per delta is caught whole.
        """
        try:
            data = bytes(data)
            if is_sse_body(data):
                return redact_sse(data, self)
            if looks_like_eventstream(data):
                return redact_eventstream(data, self)
            if looks_like_json_stream(data):
                return redact_json_stream(data, self)
            return self._redact_payload(data)
        except Exception:
            return self._unscannable(data)

    def redact_payload(self, data: bytes) -> bytes:
        """One message that is not an event stream (a JSON body, a frame, the joined text of deltas)."""
        try:
            return self._redact_payload(bytes(data))
        except Exception:
            return self._unscannable(data)

    def _redact_payload(self, data: bytes) -> bytes:
        out, glued = self._redact_once(data)
        # A secret glued to another one (`sk_live_...-----BEGIN`) only shows its
        # boundary once its neighbour is a placeholder: go again so that
        # redacting twice never finds more than redacting once.
        for _ in range(_MAX_PASSES):
            if not glued:
                break
            out, glued = self._redact_once(out)
        return out

    def _redact_once(self, data: bytes) -> tuple[bytes, bool]:
        """One sweep; also says whether another could find more (see `_is_glued`)."""
        spans = self._scanner.find_spans(data)
        glued = False
        if spans:
            parts: list[bytes] = []
            last = 0
            for span in spans:
                parts.append(data[last : span.start])
                parts.append(self.placeholder(span.kind, data[span.start : span.end], percent_encoded=span.encoded))
                last = span.end
                glued = glued or _is_glued(data, span.start, span.end)
            parts.append(data[last:])
            data = b"".join(parts)
        return data, glued

    def redact_text(self, text: str) -> str:
        """Same as `redact_bytes` for text; lone surrogates survive the round trip."""
        try:
            raw = text.encode("utf-8", "surrogatepass")
            out = self.redact_bytes(raw)
            return text if out == raw else out.decode("utf-8", "surrogatepass")
        except Exception:
            return self._unscannable(str(text).encode("utf-8", "replace")).decode("ascii")

    # --- headers ----------------------------------------------------------------------

    def redact_headers(self, headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """Credential headers by name (keeping auth scheme and cookie names); the rest by content."""
        out: list[tuple[str, str]] = []
        try:
            items = list(headers)
        except Exception:
            return out
        for item in items:
            try:
                name, value = item
                out.append((name, self._redact_header(name, value)))
            except Exception:
                name = item[0] if isinstance(item, tuple) and item else ""
                out.append((name, self._unscannable(repr(item).encode("utf-8", "replace")).decode("ascii")))
        return out

    def _redact_header(self, name: str, value: str) -> str:
        kind = header_kind(name)
        if kind is None:
            if name.strip().lower() in _URL_HEADERS:
                return self.redact_url(value)
            return self.redact_text(value)
        if kind == "cookie":
            return self._redact_cookies(value, first_only=name.strip().lower() == "set-cookie")
        if kind == "authorization":
            parts = split_auth_scheme(value)
            if parts is not None:
                prefix, credentials, trail = parts
                scheme = prefix.strip().lower()
                cred_kind = "basic-auth" if scheme == "basic" else self._kind_of(credentials, kind)
                return prefix + self._replace_whole(credentials, cred_kind) + trail
        return self._replace_whole(value, self._kind_of(value.strip(), kind))

    def _replace_whole(self, value: str, kind: str) -> str:
        stripped = value.strip()
        if not stripped or is_placeholder(stripped.encode("utf-8", "surrogatepass")):
            return value
        lead = value[: len(value) - len(value.lstrip())]
        trail = value[len(value.rstrip()) :]
        return lead + self._placeholder_str(kind, stripped) + trail

    def _redact_cookies(self, value: str, *, first_only: bool) -> str:
        out: list[str] = []
        for i, (name_part, cookie_value, sep) in enumerate(split_cookies(value)):
            if (first_only and i > 0) or not name_part:
                out.append(name_part + cookie_value + sep)
                continue
            out.append(
                name_part
                + self._replace_whole(cookie_value, self._kind_of(cookie_value.strip(), "cookie"))
                + sep
            )
        return "".join(out)

    def _kind_of(self, secret: str, default: str) -> str:
        return self._scanner.kind_of_value(secret.encode("utf-8", "surrogatepass")) or default

    # --- URLs -------------------------------------------------------------------------

    def redact_url(self, url: str) -> str:
        """`user:password@`, credential query/fragment parameters, then the detectors on the whole URL."""
        try:
            parseable = parses(url)
            edits: list[tuple[int, int, str]] = []
            span = userinfo_span(url)
            if span is not None:
                edits.extend(self._userinfo_edits(url, *span))
            for start, end in iter_path_segments(url):
                # Body scanning skips tokens right after `/` (base64 is full of them); a path has few.
                segment = url[start:end]
                kind = self._scanner.kind_of_value(unquote(segment).encode("utf-8", "surrogatepass"))
                if kind is not None:
                    edits.append((start, end, self._placeholder_str(kind, segment, percent_encoded=True)))
            for start, end, name in iter_params(url):
                value = url[start:end]
                kind = query_param_kind(name)
                if kind is None and value:
                    edits.extend(self._encoded_value_edits(value, start))
                if (
                    kind is None
                    or not value
                    or PLACEHOLDER_RE.fullmatch(value.encode("utf-8", "surrogatepass"))
                ):
                    continue
                kind = self._kind_of(unquote(value), kind)
                edits.append((start, end, self._placeholder_str(kind, value, percent_encoded=True)))
            for start, end, replacement in _disjoint(edits):
                url = url[:start] + replacement + url[end:]
            return encode_authority_placeholders(self.redact_text(url), keep_parseable=parseable)
        except Exception:
            return self._unscannable(str(url).encode("utf-8", "replace")).decode("ascii")

    def _encoded_value_edits(self, value: str, offset: int) -> list[tuple[int, int, str]]:
        """Secrets in a percent-encoded query value under any name (`?ref=curl%20-u%20me%3Apw`)."""
        if not value.isascii() or ("%" not in value and "+" not in value):
            return []
        raw = value.encode("ascii")
        decoded, origin = percent_decode(raw, True)
        edits = []
        for span in self._scanner.find_spans(decoded):
            lo = origin[span.start]
            hi = origin[span.end] if span.end < len(decoded) else len(raw)
            secret = value[lo:hi]
            edits.append((offset + lo, offset + hi, self._placeholder_str(span.kind, secret, percent_encoded=True)))
        return edits

    def _userinfo_edits(self, url: str, start: int, end: int) -> list[tuple[int, int, str]]:
        userinfo = url[start:end]
        raw = userinfo.encode("utf-8", "surrogatepass")
        if not userinfo or is_placeholder(raw):
            return []
        colon = _colon_outside_placeholders(raw)
        if colon >= 0:
            password = userinfo[len(raw[: colon + 1].decode("utf-8", "surrogatepass")) :]
            praw = password.encode("utf-8", "surrogatepass")
            if not password or is_placeholder(praw) or is_placeholder_password(praw):
                return []
            kind = self._kind_of(unquote(password), "url-password")
            return [(end - len(password), end, self._placeholder_str(kind, password, percent_encoded=True))]
        if PLACEHOLDER_RE.search(raw):
            return []
        kind = self._scanner.kind_of_value(unquote(userinfo).encode("utf-8", "surrogatepass"))
        if kind is None and not looks_random(raw):
            return []  # `git@`, `alice@`: a user name, not a credential
        return [(start, end, self._placeholder_str(kind or "url-password", userinfo, percent_encoded=True))]


def _colon_outside_placeholders(userinfo: bytes) -> int:
    """Index of the `user:password` colon, skipping colons inside `[REDACTED:kind:hash]`."""
    pos = 0
    for m in PLACEHOLDER_RE.finditer(userinfo):
        colon = userinfo.find(b":", pos, m.start())
        if colon >= 0:
            return colon
        pos = m.end()
    return userinfo.find(b":", pos)


def _disjoint(edits: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Edits to apply right to left, none overlapping: of two overlapping spans the wider one wins
    (a path segment and a query value can cover the same bytes in odd URLs)."""
    chosen: list[tuple[int, int, str]] = []
    for start, end, replacement in sorted(edits, key=lambda e: (e[0], -(e[1] - e[0]))):
        if chosen and start < chosen[-1][1]:
            if end - start > chosen[-1][1] - chosen[-1][0]:
                chosen[-1] = (start, end, replacement)
            continue
        chosen.append((start, end, replacement))
    return list(reversed(chosen))
