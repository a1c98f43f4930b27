"""Capture ids: sortable by start time, unique enough for one machine (no heavy imports)."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime


def new_capture_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(3)
