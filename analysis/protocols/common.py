"""Pieces every protocol parser shares: the request draft and tolerant accessors.

Bodies come from real clients and from our own mutation tests; any field can be
missing or have the wrong type. The accessors here return None/empty instead of
raising, and the parsers record a warning so the result says what was skipped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from analysis.blocks import BlockDraft
from analysis.canonical import loads
from analysis.models import ParseStatus, Role


@dataclass
class RequestDraft:
    """A parsed request before attribution; `facts` feed purpose and identity rules."""

    model: str | None = None
    stream: bool | None = None
    max_output_tokens: int | None = None
    blocks: list[BlockDraft] = field(default_factory=list)
    tool_names: list[str] = field(default_factory=list)
    previous_response_id: str | None = None
    top_level_cache_control: str | None = None
    status: ParseStatus = "ok"
    error: str | None = None
    warnings: list[str] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)

    def warn(self, message: str) -> None:
        """Record something skipped; a request with warnings is only partially parsed."""
        if len(self.warnings) < 50:
            self.warnings.append(message)
        if self.status == "ok":
            self.status = "partial"


def load_json(raw: bytes | str | None) -> tuple[Any, str | None]:
    """(value, error) of a JSON body."""
    if raw is None or raw == b"" or raw == "":
        return None, "empty body"
    try:
        value = loads(raw)
    except ValueError as e:  # includes UnicodeDecodeError and absurd nesting
        return None, f"invalid JSON: {str(e)[:200]}"
    return value, (None if value is not None else "body is JSON null")


def as_dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list:
    return value if isinstance(value, list) else []


def as_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def as_bool(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


_ROLES: dict[str, Role] = {
    "system": "system",
    "developer": "developer",
    "user": "user",
    "assistant": "assistant",
    "model": "assistant",
    "tool": "tool",
    "function": "tool",
    "ipython": "tool",
}


def norm_role(value: Any, default: Role = "user") -> Role:
    return _ROLES.get(value, default) if isinstance(value, str) else default


def text_kind(role: Role) -> str:
    return "instruction_text" if role in ("system", "developer") else "message_text"


def looks_like_sse(content_type: str | None, raw: bytes | None) -> bool:
    if content_type and "event-stream" in content_type.lower():
        return True
    head = (raw or b"")[:64].lstrip()
    return head.startswith((b"event:", b"data:", b":"))
