"""Pseudonymise personal data: the same value always becomes the same placeholder.

    pii = PiiRedactor(key, capture_id)                 # capture time: keyed `<user-3fa2c1>`
    body = pii.redact_bytes(body)
    headers = pii.redact_headers(headers)

    pii = PiiRedactor(numbered=True, identity=learned)  # publish time: `<user-1>`, `<email-2>`
    text = pii.redact_text(text)

Placeholders keep structure and repetition: a reader still sees that the
working directory of one request is the one a tool result printed, or that
two headers carry the same session, without learning the value. Numbered
placeholders are allocated in order of first sight within one redactor, so
every file of one publish run agrees; keyed ones (HMAC of the value under the
per-user redaction key and the capture id, like credential placeholders) need
no shared state and are renumbered when published.

What counts as personal, and where it is found, is in `redaction.personal.pii_rules`
(shapes and contexts) and `redaction.personal.identity` (facts learned from the
traffic: the user's name, host, full name, forge account, temp dir). Like the
credential `Redactor`, this never raises: a value it cannot process becomes
`<unscannable-...>`.
"""

from __future__ import annotations

import collections
import hashlib
import hmac
import re
from collections.abc import Iterable

from ctxtap.redaction.personal.identity import Identity
from ctxtap.redaction.personal.pii_rules import (
    KEYED_RE,
    PII_KINDS,
    PII_PLACEHOLDER_RE,
    LearnedMatcher,
    find_pii_spans,
    id_kind,
)

PII_RULESET_VERSION = "pii-2026.11.1"
_MAX_PASSES = 5
_CASE_FOLDED = frozenset({"email", "user", "name", "account", "host", "uuid"})
_HOST_HEADER_RE = re.compile(r"(?i)(?:device|machine|computer|host)[-_]?name$|^hostname$|^x-hostname$")
_ID_HEADER_RE = re.compile(
    r"(?i)(?:session|device|install(?:ation)?|machine|request|trace|span|correlation|thread|conversation"
    r"|window|turn|prompt|user|account|anonymous|org(?:anization)?|tenant|project|client)[-_]?(?:id|uuid)$"
    r"|^traceparent$|^tracestate$|^x-request-id$|^request-id$"
)
_ID_VALUE_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_:.+/=-]{5,255}")

__all__ = ["PII_KINDS", "PII_PLACEHOLDER_RE", "PII_RULESET_VERSION", "Identity", "PiiRedactor"]


def _normalise(kind: str, value: str) -> str:
    """The form a value is remembered by: equal values in any spelling share a placeholder."""
    if kind in _CASE_FOLDED:
        return value.lower()
    if kind == "path-home":
        return value.replace("\\\\", "\\").replace("/", "\\").lower() if ":" in value[:3] else value
    if kind == "phone":
        return "".join(c for c in value if c.isdigit())
    return value


class PiiRedactor:
    """Replaces personal data with `<kind-N>` (numbered) or `<kind-xxxxxx>` (keyed) placeholders.

    `identity` carries what is known about the user; by default every text
    handed over also teaches it (`learn=False` freezes it, as the final scan
    does). `skip_kinds` exists so tests can prove the final scan catches what
    the pseudonymiser was told to leave.
    """

    def __init__(
        self,
        key: bytes | str = b"",
        capture_id: str = "",
        *,
        numbered: bool = False,
        identity: Identity | None = None,
        learn: bool = True,
        skip_kinds: Iterable[str] = (),
    ) -> None:
        if isinstance(key, str):
            key = key.encode("utf-8")
        self._capture_key = hmac.new(bytes(key), capture_id.encode("utf-8", "surrogatepass"), hashlib.sha256).digest()
        self.numbered = numbered
        self.identity = identity if identity is not None else Identity()
        self.learn = learn
        self.skip_kinds = frozenset(skip_kinds)
        self.counts: collections.Counter[str] = collections.Counter()  # kind -> replacements
        self.rule_counts: collections.Counter[str] = collections.Counter()  # "kind/rule" -> replacements
        self._by_value: dict[str, str] = {}
        self._next: collections.Counter[str] = collections.Counter()
        self._matcher = LearnedMatcher()
        self._learned: set[bytes] = set()  # digests of texts already learned from (history is resent)

    # --- placeholders ---------------------------------------------------------------------

    def pseudonym(self, kind: str, value: str, rule: str = "context") -> str:
        """The placeholder for `value`; the first kind a value is seen as names it from then on."""
        norm = _normalise(kind, value)
        keyed = KEYED_RE.fullmatch(value)
        if keyed is not None:
            norm = "#" + keyed.group("hash")  # a capture-time placeholder: renumbered, same hash same number
            kind = keyed.group("kind")
        made = self._by_value.get(norm)
        if made is None:
            if self.numbered:
                self._next[kind] += 1
                made = f"<{kind}-{self._next[kind]}>"
            else:
                digest = hmac.new(self._capture_key, norm.encode("utf-8", "surrogatepass"), hashlib.sha256)
                made = f"<{kind}-{digest.hexdigest()[:6]}>"
            self._by_value[norm] = made
        made_kind = made[1 : made.rindex("-")]
        self.counts[made_kind] += 1
        self.rule_counts[f"{made_kind}/{rule}"] += 1
        return made

    def reserve(self, text: str, *, hint: str | None = None) -> None:
        """Give the values in `text` their placeholders now, without counting a replacement.

        Publishing reserves the analyzer's session ids first (`hint="session"`), so a
        session is `<session-N>` even if a request-id header happened to carry it first.
        """
        try:
            for span in find_pii_spans(text, self.identity, hint=hint, learned=self._matcher,
                                       keep_keyed=not self.numbered):
                kind = span.kind.partition("/")[0]
                value = text[span.start : span.end]
                norm = _normalise(kind, value)
                if norm not in self._by_value and not KEYED_RE.fullmatch(value):
                    before = (collections.Counter(self.counts), collections.Counter(self.rule_counts))
                    self.pseudonym(kind, value)
                    self.counts, self.rule_counts = before
        except Exception:
            pass

    # --- learning -------------------------------------------------------------------------

    def learn_text(self, text: str) -> None:
        """Learning from a text twice adds nothing: an agent resends its history with every call."""
        digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        if digest in self._learned:
            return
        self._learned.add(digest)
        self.identity.learn_text(text)
        self.identity.refresh_accounts()

    def learn_headers(self, headers: Iterable[tuple[str, str]]) -> None:
        self.identity.learn_headers(headers)
        self.identity.refresh_accounts()

    # --- text and bytes -------------------------------------------------------------------

    def redact_text(self, text: str, *, hint: str | None = None, escaped: bool = False) -> str:
        """Every personal value in `text` replaced; unchanged elsewhere. `hint` names bare UUIDs' kind."""
        try:
            if not text:
                return text
            for _ in range(_MAX_PASSES):
                # Learn again from each pass's output: a replacement can expose a context
                # (`...0001USER=bob` -> `<uuid-1>USER=bob`) that redacting twice would act on.
                if self.learn:
                    self.learn_text(text)
                out = self._redact_once(text, hint, escaped)
                if out == text:
                    break
                text = out
            return text
        except Exception:
            return self.pseudonym("unscannable", str(text), "error")

    def _redact_once(self, text: str, hint: str | None, escaped: bool) -> str:
        spans = find_pii_spans(
            text, self.identity, escaped=escaped, hint=hint, learned=self._matcher, keep_keyed=not self.numbered
        )
        if not spans and not (self.numbered and "<" in text):
            return text
        parts: list[str] = []
        last = 0
        for span in spans:
            kind, _, rule = span.kind.partition("/")
            if kind in self.skip_kinds:
                continue
            parts.append(text[last : span.start])
            parts.append(self.pseudonym(kind, text[span.start : span.end], rule))
            last = span.end
        parts.append(text[last:])
        out = "".join(parts)
        if self.numbered and "<" in out:
            out = KEYED_RE.sub(lambda m: self.pseudonym(m.group("kind"), m.group(), "capture-placeholder"), out)
        return out

    def redact_bytes(self, data: bytes) -> bytes:
        """Any body (JSON, SSE, frames): read as UTF-8 with escapes respected; other bytes kept."""
        try:
            raw = bytes(data)
            text = raw.decode("utf-8", "surrogateescape")
            out = self.redact_text(text, escaped=True)
            return raw if out == text else out.encode("utf-8", "surrogateescape")
        except Exception:
            return self.pseudonym("unscannable", repr(data)[:200], "error").encode("ascii")

    # --- headers and URLs -----------------------------------------------------------------

    def redact_headers(self, headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """Device names by header name, identifiers by header name, everything else as text."""
        out: list[tuple[str, str]] = []
        try:
            items = [(str(n), str(v)) for n, v in headers]
        except Exception:
            return out
        if self.learn:
            self.learn_headers(items)
        for _ in range(_MAX_PASSES):
            # A later header can teach a name an earlier one holds: redo them all until nothing new is learned.
            version = self.identity.version
            out = []
            for name, value in items:
                try:
                    out.append((name, self._redact_header(name, value)))
                except Exception:
                    out.append((name, self.pseudonym("unscannable", value, "error")))
            if self.identity.version == version:
                break
        return out

    def _redact_header(self, name: str, value: str) -> str:
        stripped = value.strip()
        if not stripped or stripped.startswith("[REDACTED:"):
            return value
        if PII_PLACEHOLDER_RE.fullmatch(stripped):
            return self.redact_text(value) if self.numbered else value  # keyed ones get renumbered
        bare = name.strip().lower()
        if _HOST_HEADER_RE.search(bare) and "host" not in self.skip_kinds:
            return self.pseudonym("host", stripped, "header-host")
        if _ID_HEADER_RE.search(bare):
            kind = id_kind(bare)
            redacted = self.redact_text(value, hint=kind)
            if redacted == value and _ID_VALUE_RE.fullmatch(stripped) and any(c.isdigit() for c in stripped):
                if kind not in self.skip_kinds:
                    return self.pseudonym(kind, stripped, "header-id")
            return redacted
        return self.redact_text(value)

    def redact_url(self, url: str) -> str:
        return self.redact_text(url)
