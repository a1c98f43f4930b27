"""Checks shared by the redaction tests: a text redacted (or kept) as it is and inside a JSON tool result."""

from __future__ import annotations

import json

from ctxtap.redaction import Redactor


def in_tool_result(redactor: Redactor, text: str) -> str:
    """`text` as a tool result's content, redacted, read back."""
    return json.loads(redactor.redact_bytes(json.dumps({"content": text}).encode()))["content"]


def assert_redacted_everywhere(redactor: Redactor, text: str, secret: str) -> None:
    """`secret` replaced by a placeholder in `text` and in a JSON tool result holding it; redacting again
    changes nothing."""
    raw = redactor.redact_bytes(text.encode()).decode()
    for shown in (raw, in_tool_result(redactor, text)):
        assert secret not in shown and "[REDACTED:" in shown, shown
    assert redactor.redact_bytes(raw.encode()).decode() == raw


def assert_kept_everywhere(redactor: Redactor, text: str) -> None:
    assert redactor.redact_bytes(text.encode()).decode() == text
    assert in_tool_result(redactor, text) == text
