"""The capture manifest: what produced a capture and whether it is complete."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from ctxtap import __version__
from ctxtap.capture.ids import new_capture_id  # noqa: F401 - re-exported for callers
from ctxtap.capture.manifest_file import FORMAT_VERSION, MANIFEST_NAME, iso, write_manifest  # noqa: F401


class Manifest(BaseModel):
    format: Literal["ctxtap-capture"] = "ctxtap-capture"
    format_version: int = FORMAT_VERSION
    capture_id: str
    ctxtap_version: str = __version__
    mitmproxy_version: str | None = None
    status: Literal["recording", "finalized"] = "recording"
    recovered: bool = False
    started_at: float = Field(default_factory=time.time)
    ended_at: float | None = None
    command: list[str] | None = None  # the wrapped command (`ctxtap record -- ...`)
    source: str = "proxy"  # proxy | import
    options: dict[str, Any] = Field(default_factory=dict)
    redaction_ruleset: str = ""
    counts: dict[str, Any] = Field(default_factory=dict)
    # `record --telemetry`: the receiver, what was injected into the client (the receiver's
    # token shown as `<token>`), the user's own OTEL_* settings that won
    telemetry: dict[str, Any] = Field(default_factory=dict)
    spool_bytes_dropped: int = 0  # torn tail found on recovery
    # `ctxtap replay` runs: {"source_capture_id", "source" (directory name), "mode" ("cassette" or "send"),
    # "trace_id" (new for each run), ...}; None for an ordinary recording.
    replay: dict[str, Any] | None = None
    # the machine the run was recorded on (`ctxtap.capture.environment.RunEnvironment`): personal data,
    # never published or exported
    environment: dict[str, Any] = Field(default_factory=dict)

    def save(self, directory: Path) -> None:
        """Atomic write: a crash leaves either the old or the new manifest."""
        write_manifest(self.model_dump(mode="json"), directory)

    @classmethod
    def load(cls, directory: Path) -> Manifest:
        data = json.loads((directory / MANIFEST_NAME).read_text())
        data.pop("started_at_iso", None)
        data.pop("ended_at_iso", None)
        return cls.model_validate(data)
