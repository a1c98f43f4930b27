"""Credentials, then personal data: the recorder's redactor when a capture asks for `--redact pii`.

`LayeredRedactor` has the interface the capture writer already uses on
`Redactor` (`redact_bytes`, `redact_text`, `redact_headers`, `redact_url`,
`counts`), so choosing it is one line in the writer:

    self.redactor = capture_redactor(redaction_key, manifest.capture_id, manifest.options.get("redact", ()))

Personal data gets keyed placeholders (`<user-3fa2c1>`): stable for the whole
capture without shared state (the writer may run in a child process, and a
recovered capture keeps its hashes), and renumbered by `ctxtap publish`.
Counts of personal data appear as `pii:<kind>` next to the credential kinds.
"""

from __future__ import annotations

import collections
from collections.abc import Iterable

from ctxtap.redaction.redactor import Redactor
from ctxtap.redaction.version import RULESET_VERSION

REDACT_MODES: tuple[str, ...] = ("pii",)


class LayeredRedactor:
    """`Redactor` first (credentials), then `PiiRedactor` (personal data) on its output."""

    def __init__(self, key: bytes, capture_id: str = "") -> None:
        # only captures that ask for it pay for its rules
        from ctxtap.redaction.personal.pii import PiiRedactor

        self.credentials = Redactor(key, capture_id)
        self.pii = PiiRedactor(key, capture_id)

    @property
    def counts(self) -> collections.Counter[str]:
        merged = collections.Counter(self.credentials.counts)
        merged.update({f"pii:{k}": v for k, v in self.pii.counts.items()})
        return merged

    def redact_bytes(self, data: bytes) -> bytes:
        return self.pii.redact_bytes(self.credentials.redact_bytes(data))

    def redact_payload(self, data: bytes) -> bytes:
        """One message that is not an event stream (see `Redactor.redact_payload`)."""
        return self.pii.redact_bytes(self.credentials.redact_payload(data))

    def redact_text(self, text: str) -> str:
        return self.pii.redact_text(self.credentials.redact_text(text))

    def redact_headers(self, headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
        return self.pii.redact_headers(self.credentials.redact_headers(headers))

    def redact_url(self, url: str) -> str:
        return self.pii.redact_url(self.credentials.redact_url(url))


def capture_redactor(key: bytes, capture_id: str, redact: Iterable[str] = ()) -> Redactor | LayeredRedactor:
    """The redactor for a capture: credentials always, personal data too when `redact` has "pii"."""
    modes = set(redact or ())
    unknown = modes - set(REDACT_MODES)
    if unknown:
        raise ValueError(f"unknown --redact mode(s): {', '.join(sorted(unknown))} (known: {', '.join(REDACT_MODES)})")
    return LayeredRedactor(key, capture_id) if "pii" in modes else Redactor(key, capture_id)


def ruleset_version(redact: Iterable[str] = ()) -> str:
    """What to store as the capture's `redaction_ruleset`: `creds-...` or `creds-...+pii-...`."""
    if "pii" not in set(redact or ()):
        return RULESET_VERSION
    from ctxtap.redaction.personal.pii import PII_RULESET_VERSION

    return f"{RULESET_VERSION}+{PII_RULESET_VERSION}"
