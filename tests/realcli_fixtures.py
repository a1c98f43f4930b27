"""The real-CLI tier's committed recordings (tests/fixtures/realcli/) as exchanges, offline.

Each recording is a gzipped HAR exported from a capture; `load_fixture` imports it through
ctxtap's own importer into a temporary capture (redacted like live traffic) and reads it back.
"""

from __future__ import annotations

import gzip
import tempfile
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "realcli"


def load_fixture(path: Path, variant: str = "basic") -> list:
    """Exchanges of `<cli dir>/<variant>.har.gz` (path may also name the variant: `opencode/instructions`)."""
    from ctxtap.capture.store import Capture
    from ctxtap.ingest.importer import import_files

    path = Path(path)
    if not path.is_dir() and path.parent.is_dir():
        path, variant = path.parent, path.name
    har = gzip.decompress((path / f"{variant}.har.gz").read_bytes())
    with tempfile.TemporaryDirectory(prefix="ctxtap-fixture-") as tmp:
        (Path(tmp) / "capture.har").write_bytes(har)
        import_files([Path(tmp) / "capture.har"], Path(tmp) / "cap", b"fixture-redaction-key-000000000000", {})
        return list(Capture.open(Path(tmp) / "cap").exchanges())


def fixture_entries(cli: str, variant: str = "basic") -> list[dict]:
    """The HAR entries of a committed recording, as exported (not yet redacted again)."""
    import json

    return json.loads(gzip.decompress((FIXTURES / cli / f"{variant}.har.gz").read_bytes()))["log"]["entries"]


def otlp_event(seq: int, ts: float, body: bytes, signal: str = "logs",
               content_type: str = "application/x-protobuf"):
    """A payload as the capture's OTLP receiver hands it to the writer (the client's own telemetry)."""
    from ctxtap.capture.events import TelemetryEvent

    return TelemetryEvent(seq=seq, ts=ts, source="otlp-receiver", flow_id=None, path=f"/v1/{signal}", signal=signal,
                          content_type=content_type, content_encoding=None, user_agent="OTel-OTLP-Exporter-JavaScript",
                          body=body)


def write_capture(out: Path, entries: list[dict], capture_id: str, telemetry=()) -> Path:
    """`out`: a finalized capture of HAR entries, plus telemetry events, through the real capture writer."""
    from ctxtap.capture.finalize import finalize
    from ctxtap.capture.manifest import Manifest
    from ctxtap.capture.paths import redaction_key
    from ctxtap.capture.writer import CaptureWriter
    from ctxtap.ingest.importer import har_events

    writer = CaptureWriter(out, redaction_key(), Manifest(capture_id=capture_id, source="import"))
    for seq, entry in enumerate(entries):
        for event in har_events(entry, seq, f"har-{seq}", {}, False):
            writer.submit(event)
    for event in telemetry:
        writer.submit(event)
    writer.flush()
    writer.close()
    finalize(out)
    return out
