"""A table whose header names a credential column loses every row's value, however long the table is."""

from __future__ import annotations

import json
import random

import pytest

from ctxtap.redaction import Redactor
from ctxtap.redaction.engine import hyperscan_available

BACKENDS = ["python"] + (["hyperscan"] if hyperscan_available() else [])
_CHARS = "abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"


def _passwords(n: int) -> list[str]:
    rng = random.Random(n)
    return ["".join(rng.choice(_CHARS) for _ in range(10)) + "7!" for _ in range(n)]


def _markdown(passwords: list[str]) -> str:
    return "| user | password |\n|---|---|\n" + "".join(f"| user{i} | {p} |\n" for i, p in enumerate(passwords))


def _csv(passwords: list[str]) -> str:
    return "email,password,role\n" + "".join(f"u{i}@example.com,{p},admin\n" for i, p in enumerate(passwords))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("table", [_markdown, _csv])
@pytest.mark.parametrize("in_json", [False, True], ids=["raw", "json-string"])
def test_a_long_table_loses_every_rows_password(backend: str, table, in_json: bool) -> None:
    """A database dump in a tool result runs to thousands of rows: the last is as secret as the first."""
    passwords = _passwords(1_500)
    text = table(passwords)
    body = json.dumps({"type": "tool_result", "content": text}) if in_json else text
    after = Redactor(b"k" * 32, "columns", backend=backend).redact_bytes(body.encode()).decode()
    left = [p for p in passwords if p in after]
    assert not left, f"{len(left)} of {len(passwords)} rows kept their password, first {left[:3]}"
    assert "user1499" in after or "u1499@example.com" in after  # the other columns stay


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_table_ends_at_a_blank_line(backend: str) -> None:
    """Below the table, a line of the same shape is no row of it."""
    text = "user,password\nalice,Xk9mP2qR7v!\n\nname,value\ncolour,Tz8Qm2Vx9Lp\n"
    after = Redactor(b"k" * 32, "columns", backend=backend).redact_bytes(text.encode()).decode()
    assert "Xk9mP2qR7v!" not in after
    assert "colour,Tz8Qm2Vx9Lp" in after
