"""`ctxtap push`: a finished, redacted capture and its analysis dataset into the store.

Idempotent and resumable: each object is compared with what the store already holds (size, and
the ETag where it is a digest of the same bytes) and skipped when equal, so a push that was
interrupted completes when run again and a second push of the same capture uploads nothing. The
capture's index object is written last: readers (`ls`, queries, `pull`) see a capture only once all
its objects are there. Only a capture whose manifest says it was finalized and redacted leaves.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pyarrow.parquet as pq
from pyarrow import fs

from ctxtap import __version__
from ctxtap.capture.manifest_file import MANIFEST_NAME
from ctxtap.store.layout import Entry, safe_value
from ctxtap.store.location import StoreError, StoreURL, s3_filesystem

INDEX_FORMAT = "ctxtap-store-index"
WORKERS = 8
# what stays on the recording machine: its facts (user, host, working directory, git remote) are
# personal data, never exported (ctxtap.capture.environment)
PRIVATE_MANIFEST_KEYS = ("environment",)


@dataclass
class PushResult:
    capture_id: str
    url: str  # where the capture's objects are
    client: str
    day: str
    uploaded: int = 0
    skipped: int = 0
    deleted: int = 0  # objects of an earlier push of this capture that it no longer has
    bytes_uploaded: int = 0
    bytes_total: int = 0
    pseudonymised: bool = False
    seconds: float = 0.0
    left_out: list[str] = field(default_factory=list)  # files not pushed (pseudonymised pushes leave bodies)


@dataclass
class _Object:
    rel: str  # key below the capture's prefix
    local: str  # path below the capture directory it is pulled back to
    data: bytes

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


def refusal(manifest) -> str | None:
    """Why this capture may not leave the machine, or None."""
    if manifest.status != "finalized":
        return (f"capture {manifest.capture_id} is still being recorded or was not finalized "
                f"(status {manifest.status}); push it once `ctxtap record` has ended")
    if not (manifest.redaction_ruleset or "").startswith("creds-"):
        return (f"capture {manifest.capture_id}'s manifest does not say it was redacted (no credential ruleset "
                "recorded): it may hold clear credentials, and nothing unredacted leaves the machine")
    return None


def capture_client(manifest) -> str:
    clients = sorted((manifest.counts or {}).get("by_client") or {})
    return "+".join(safe_value(c) for c in clients) or "unknown"


def capture_day(manifest) -> str:
    return datetime.fromtimestamp(manifest.started_at, UTC).date().isoformat()


def schema_digest(schema) -> str:
    """Eight hex digits naming a table file's columns and types: a query reads one footer per digest."""
    return hashlib.sha256(schema.remove_metadata().to_string(show_schema_metadata=False).encode()).hexdigest()[:8]


def _objects(capture_dir: Path, capture_id: str, transform: Callable[[str, bytes], bytes | None] | None,
             left_out: list[str]) -> list[_Object]:
    """The capture's files as store objects: the manifest without the machine's facts, the Parquet
    at the top, the dataset's `_meta.json` and one file per analysis table."""
    out: list[_Object] = []
    manifest = json.loads((capture_dir / MANIFEST_NAME).read_text())
    for key in PRIVATE_MANIFEST_KEYS:
        manifest.pop(key, None)
    if transform is not None:
        manifest["pseudonymised"] = True
    out.append(_Object(MANIFEST_NAME, MANIFEST_NAME, json.dumps(manifest, indent=2, sort_keys=True).encode()))
    for path in sorted(capture_dir.iterdir()):
        if path.is_file() and (path.suffix == ".parquet" or (path.suffix == ".json" and path.name != MANIFEST_NAME)):
            out.append(_Object(path.name, path.name, path.read_bytes()))
    analysis = capture_dir / "analysis"
    meta = analysis / "_meta.json"
    if meta.is_file():
        out.append(_Object("analysis/_meta.json", "analysis/_meta.json", meta.read_bytes()))
    for table_dir in sorted(p for p in analysis.iterdir() if p.is_dir()) if analysis.is_dir() else []:
        part_dir = table_dir / f"capture_id={capture_id}"
        for part in sorted(part_dir.glob("*.parquet")):
            digest = schema_digest(pq.read_schema(part))
            local = f"analysis/{table_dir.name}/capture_id={capture_id}/{part.name}"
            stem = part.stem.replace("part-", "")
            out.append(_Object(f"analysis/{table_dir.name}/part-{stem}-{digest}.parquet", local, part.read_bytes()))
    if transform is not None:
        kept = []
        for obj in out:
            data = transform(obj.local, obj.data)
            if data is None:
                left_out.append(obj.local)
            else:
                obj.data = data
                kept.append(obj)
        out = kept
    return out


def _etag_matches(etag: str, data: bytes) -> bool | None:
    """Whether an S3 ETag is the digest of `data` (plain MD5, or a one-part multipart upload's MD5 of
    the part's MD5); None where it cannot tell (a multipart upload of several parts, an encrypted object)."""
    etag = etag.strip('"')
    md5 = hashlib.md5(data, usedforsecurity=False)
    if etag == md5.hexdigest():
        return True
    if etag.endswith("-1"):
        return etag[:-2] == hashlib.md5(md5.digest(), usedforsecurity=False).hexdigest()
    if "-" in etag or len(etag) != 32:
        return None
    return False


def _same(filesystem, path: str, size: int | None, obj: _Object) -> bool:
    if size != len(obj.data):
        return False
    try:
        with filesystem.open_input_file(path) as f:
            etag = (f.metadata() or {}).get("ETag", b"").decode()
    except OSError:
        return False
    return _etag_matches(etag, obj.data) is not False


def _put(filesystem, path: str, data: bytes) -> None:
    with filesystem.open_output_stream(path) as f:
        f.write(data)


def push_capture(capture_dir: Path, url: str, *, pseudonymise: bool = False, endpoint_url: str | None = None,
                 filesystem: fs.FileSystem | None = None, analyse: bool = True) -> PushResult:
    """Push one finished capture (analysed first if its dataset is missing or stale) to `url`
    (`s3://bucket/prefix`). Raises `StoreError` for a capture that may not leave or a store that
    cannot be written; `pseudonymise` applies publish's personal-data pass to every string first."""
    from ctxtap.capture.store import Capture, CaptureError

    start = time.perf_counter()
    store = StoreURL.parse(url)
    capture_dir = Path(capture_dir)
    try:
        capture = Capture.open(capture_dir)
    except CaptureError as exc:
        raise StoreError(str(exc)) from exc
    manifest = capture.manifest
    problem = refusal(manifest)
    if problem:
        raise StoreError(problem)
    if analyse:
        from ctxtap.analysis.build import ensure_analysis

        ensure_analysis(capture_dir)
    entry = Entry(capture_day(manifest), capture_client(manifest), manifest.capture_id)
    result = PushResult(manifest.capture_id, f"s3://{entry.capture_path(store)}", entry.client, entry.day,
                        pseudonymised=pseudonymise)
    transform = None
    if pseudonymise:
        from ctxtap.store.pseudonymise import Pseudonymiser

        transform = Pseudonymiser.for_capture(capture_dir, manifest).transform
    objects = _objects(capture_dir, manifest.capture_id, transform, result.left_out)
    result.bytes_total = sum(len(o.data) for o in objects)
    filesystem = filesystem or s3_filesystem(endpoint_url)
    base = entry.capture_path(store)
    index_path = entry.index_path(store)
    try:
        present = {i.path[len(base) + 1:]: i.size for i in filesystem.get_file_info(
            fs.FileSelector(base, recursive=True, allow_not_found=True)) if i.type == fs.FileType.File}
        index_info = filesystem.get_file_info(index_path)
        if index_info.type == fs.FileType.File:
            with filesystem.open_input_stream(index_path) as f:
                previous = json.loads(f.read())
            listed = {(o["key"], o["size"], o["sha256"]) for o in previous.get("objects", [])}
            if listed == {(o.rel, len(o.data), o.sha256) for o in objects} and \
                    all(present.get(o.rel) == len(o.data) for o in objects):
                result.skipped = len(objects)
                result.seconds = time.perf_counter() - start
                return result
            filesystem.delete_file(index_path)  # changed: the capture is incomplete until the new index

        def upload(obj: _Object) -> bool:
            path = f"{base}/{obj.rel}"
            if obj.rel in present and _same(filesystem, path, present[obj.rel], obj):
                return False
            _put(filesystem, path, obj.data)
            return True

        with ThreadPoolExecutor(WORKERS) as pool:
            for obj, sent in zip(objects, pool.map(upload, objects), strict=True):
                if sent:
                    result.uploaded += 1
                    result.bytes_uploaded += len(obj.data)
                else:
                    result.skipped += 1
        wanted = {o.rel for o in objects}
        for rel in present:
            if rel not in wanted:
                filesystem.delete_file(f"{base}/{rel}")
                result.deleted += 1
        index = {"format": INDEX_FORMAT, "capture_id": manifest.capture_id, "client": entry.client,
                 "day": entry.day, "started_at": manifest.started_at, "ended_at": manifest.ended_at,
                 "ctxtap_version": __version__, "pushed_at": time.time(), "pseudonymised": pseudonymise,
                 "left_out": result.left_out, "model_requests": (manifest.counts or {}).get("model_requests", 0),
                 "objects": [{"key": o.rel, "path": o.local, "size": len(o.data), "sha256": o.sha256}
                             for o in objects]}
        _put(filesystem, index_path, json.dumps(index, indent=2).encode())
    except OSError as exc:
        raise StoreError(f"pushing {manifest.capture_id} to {store} failed: {exc}. Run the same push again "
                         "to complete it (objects already there are skipped)") from exc
    result.seconds = time.perf_counter() - start
    return result
