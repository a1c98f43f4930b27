"""Credential redaction applied to every recorded header, URL and body before it is written.

    redactor = Redactor(ctxtap.capture.paths.redaction_key(), capture_id)
    body = redactor.redact_bytes(body)          # JSON, SSE, WebSocket frames, binary
    headers = redactor.redact_headers(headers)
    url = redactor.redact_url(url)
    redactor.counts                             # placeholder kind -> replacements

Each secret becomes `[REDACTED:<kind>:<6 hex>]`; see `KINDS` for the kinds (ctxtap's own,
plus the ids of the vendored gitleaks rules in `redaction/rules/gitleaks.toml` and the
`kingfisher-*` kinds of the Kingfisher catalogue in `redaction/rules/kingfisher.json`).
"""

from ctxtap.redaction.assignments import ASSIGNMENT_KINDS
from ctxtap.redaction.detectors import CONTEXT_KINDS, TOKEN_KINDS
from ctxtap.redaction.gitleaks import rule_ids
from ctxtap.redaction.headers import HEADER_KINDS
from ctxtap.redaction.kingfisher import rule_kinds as kingfisher_kinds
from ctxtap.redaction.password_hashes import KIND as PASSWORD_HASH_KIND
from ctxtap.redaction.placeholder import PLACEHOLDER_RE
from ctxtap.redaction.redactor import Redactor
from ctxtap.redaction.seed_phrases import KIND as SEED_PHRASE_KIND
from ctxtap.redaction.urls import URL_KINDS
from ctxtap.redaction.vendor_tokens import KIND as VENDOR_TOKEN_KIND
from ctxtap.redaction.version import RULESET_VERSION

# Every placeholder kind the redactor can write ("unscannable": a value that
# made the redactor fail internally, replaced whole rather than kept).
KINDS: tuple[str, ...] = tuple(
    dict.fromkeys(
        [*TOKEN_KINDS, *CONTEXT_KINDS, PASSWORD_HASH_KIND, SEED_PHRASE_KIND, VENDOR_TOKEN_KIND, *ASSIGNMENT_KINDS, *HEADER_KINDS, *URL_KINDS, *rule_ids(), *kingfisher_kinds(), "unscannable"]
    )
)

__all__ = ["KINDS", "PLACEHOLDER_RE", "RULESET_VERSION", "Redactor"]
