"""The writer child stays lean: its manifest needs no pydantic, and the file it writes is the reader's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ctxtap.capture.manifest import Manifest
from ctxtap.capture.manifest_file import MANIFEST_NAME, ManifestRecord

ROOT = Path(__file__).resolve().parents[2]

# What the recorder hands the writer child (see proxy_addons/recorder.py).
FIELDS = {
    "capture_id": "20261201-abc",
    "mitmproxy_version": "11.0.2",
    "command": ["claude", "-p", "hi"],
    "started_at": 1764600000.123456,
    "options": {"routes": ["api.anthropic.com=http://127.0.0.1:9"], "model_hosts": [], "record_all": False,
                "redact": ["pii"], "listen_host": "127.0.0.1", "listen_port": 8080, "pid": 4242},
    "replay": {"source_capture_id": "x", "mode": "cassette"},
}


def test_the_record_writes_the_same_file_as_the_pydantic_model(tmp_path: Path) -> None:
    lean, full = tmp_path / "lean", tmp_path / "full"
    lean.mkdir()
    full.mkdir()
    record, model = ManifestRecord.from_fields(dict(FIELDS, unknown="ignored")), Manifest(**FIELDS)
    for m in (record, model):  # what the writer does to it while recording
        m.redaction_ruleset = "creds-1"
        m.telemetry["receiver"] = {"endpoint": "http://127.0.0.1:1/<token>"}
        m.ended_at = FIELDS["started_at"] + 60
    record.save(lean)
    model.save(full)
    assert (lean / MANIFEST_NAME).read_bytes() == (full / MANIFEST_NAME).read_bytes()
    loaded = Manifest.load(lean)
    assert loaded.model_dump() == model.model_dump()
    assert json.loads((lean / MANIFEST_NAME).read_text())["ended_at_iso"].endswith("+00:00")


def test_defaults_match_the_model(tmp_path: Path) -> None:
    record, model = ManifestRecord(capture_id="c"), Manifest(capture_id="c")
    record.started_at = model.started_at
    assert json.loads(json.dumps(record.__dict__)) == model.model_dump(mode="json")


_CHILD = """
import sys
from pathlib import Path
from ctxtap.capture.manifest_file import ManifestRecord
from ctxtap.capture.writer import CaptureWriter
from ctxtap.capture.events import RequestEvent
w = CaptureWriter(Path(sys.argv[1]), b"k" * 32, ManifestRecord(capture_id="lean"))
w.submit(RequestEvent(flow_id="f", seq=0, record_full=True, is_model=True, provider="anthropic", api="messages",
    endpoint="generate", websocket=False, method="POST", scheme="https", host="api.anthropic.com", port=443,
    path="/v1/messages", url="https://api.anthropic.com/v1/messages", upstream_url=None, http_version="HTTP/1.1",
    headers=[("x-api-key", "sk-ant-api03-" + "S" * 80)], body_in=b'{"password": "hunter2hunter2"}',
    body_out=None, ts_start=0.0, ts_end=0.0)).result(60)
w.close()
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("pydantic", "pydantic_core", "duckdb", "pyarrow"))
print(w.stats["requests"], w.stats["writer_errors"], ",".join(heavy))
"""


def test_recording_in_the_writer_imports_no_pydantic_duckdb_or_pyarrow(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", _CHILD, str(tmp_path / "cap")], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", "0"]  # the request was redacted and spooled, nothing heavy loaded
