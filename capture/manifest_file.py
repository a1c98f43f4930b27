"""The manifest file as the writer child writes it: a plain dataclass, no pydantic.

Every recording has a writer child process, and pydantic (with the model it
builds) is 8-12 MB of its resident memory. The child only fills in and saves
what the proxy handed it; `ctxtap.capture.manifest.Manifest` (pydantic) is
the reader's model, which validates the same file. Both write through
`write_manifest`, so the file format is defined once.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ctxtap import __version__
from ctxtap.capture.private import FILE_MODE

MANIFEST_NAME = "manifest.json"
FORMAT_VERSION = 2  # 2: bodies may be `zstd-tail` deltas; a reader refuses a newer format than its own


def iso(ts: float | None) -> str | None:
    return None if ts is None else datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds")


def write_manifest(data: dict[str, Any], directory: Path) -> None:
    """Atomic write of a manifest's fields (plus the ISO dates): a crash leaves the old or the new file."""
    data = dict(data)
    data["started_at_iso"] = iso(data.get("started_at"))
    data["ended_at_iso"] = iso(data.get("ended_at"))
    tmp = directory / (MANIFEST_NAME + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    os.fchmod(fd, FILE_MODE)  # a leftover .tmp keeps its mode through O_CREAT
    with os.fdopen(fd, "w") as fh:
        json.dump(data, fh, indent=2, sort_keys=True)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, directory / MANIFEST_NAME)


@dataclasses.dataclass
class ManifestRecord:
    """The fields of `Manifest`, same names, defaults and order; see there for what they mean."""

    capture_id: str
    format: str = "ctxtap-capture"
    format_version: int = FORMAT_VERSION
    ctxtap_version: str = __version__
    mitmproxy_version: str | None = None
    status: str = "recording"
    recovered: bool = False
    started_at: float = dataclasses.field(default_factory=time.time)
    ended_at: float | None = None
    command: list[str] | None = None
    source: str = "proxy"
    options: dict[str, Any] = dataclasses.field(default_factory=dict)
    redaction_ruleset: str = ""
    counts: dict[str, Any] = dataclasses.field(default_factory=dict)
    telemetry: dict[str, Any] = dataclasses.field(default_factory=dict)
    spool_bytes_dropped: int = 0
    replay: dict[str, Any] | None = None
    environment: dict[str, Any] = dataclasses.field(default_factory=dict)

    @classmethod
    def from_fields(cls, fields: dict[str, Any]) -> ManifestRecord:
        """From the dict the proxy sends (unknown keys ignored, as the pydantic model does)."""
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in fields.items() if k in known})

    def save(self, directory: Path) -> None:
        # JSON values as pydantic's json mode gives them (tuples as lists); anything odd as text
        write_manifest(json.loads(json.dumps(dataclasses.asdict(self), default=str)), directory)
