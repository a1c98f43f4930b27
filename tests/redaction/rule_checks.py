"""The rule tests' key and engines, and their check that a secret is gone raw and JSON-escaped with no
fragment left (a support module, no tests: test_redaction_rules.py and test_redaction_fail_closed.py use
it)."""

from __future__ import annotations

import json
import re

from ctxtap.redaction import PLACEHOLDER_RE, Redactor
from ctxtap.redaction.engine import hyperscan_available

KEY = b"\x07" * 32
BACKENDS = ["hyperscan", "python"] if hyperscan_available() else ["python"]


def _kinds(text: str) -> set[str]:
    return {m.group().decode().split(":")[1] for m in PLACEHOLDER_RE.finditer(text.encode())}


def _assert_redacted(redactor: Redactor, text: str, secret: str, kind: str | None = None) -> str:
    """`secret` gone from `text` in raw and JSON-escaped placements, no fragment of 8+ chars left."""
    for body in (text, json.dumps({"content": text})):
        out = redactor.redact_text(body)
        pieces = [p for p in re.split(r"[|:@/%]", secret) if len(p) >= 8]
        outside = PLACEHOLDER_RE.sub(b"", out.encode()).decode()
        assert secret not in out and json.dumps(secret)[1:-1] not in out, out
        assert not [p for p in pieces if p in outside], out
        assert "[REDACTED:" in out, out
        if kind is not None:
            assert kind in _kinds(out), out
        assert redactor.redact_text(out) == out  # idempotent
    return redactor.redact_text(text)
