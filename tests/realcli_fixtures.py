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
