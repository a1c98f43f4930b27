"""Open a capture for reading, recovering it first if its recorder died.

This is the only way the analyzer and the exporters read a capture, so an
interrupted capture is finalized by whichever command touches it first.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from ctxtap import __version__
from ctxtap.capture.bodies import BodyDecoder, BodyView
from ctxtap.capture.effects import EFFECT_ROOTS_FILE, EFFECTS_FILE, GATES_FILE
from ctxtap.capture.exchange import Exchange, WsMessage
from ctxtap.capture.finalize import (
    BODIES_FILE,
    FLOWS_FILE,
    TELEMETRY_FILE,
    TELEMETRY_RECORDS_FILE,
    WS_FILE,
    TelemetrySink,
    _table,
    assemble,
    finalize,
)
from ctxtap.capture.manifest import FORMAT_VERSION, MANIFEST_NAME, Manifest
from ctxtap.capture.private import tighten
from ctxtap.capture.schema import (
    EFFECT_ROOTS_SCHEMA,
    EFFECTS_SCHEMA,
    FLOWS_SCHEMA,
    TELEMETRY_RECORDS_SCHEMA,
    TELEMETRY_SCHEMA,
    WS_SCHEMA,
)
from ctxtap.capture.spool import SPOOL_NAME, iter_frames, writer_alive


class CaptureError(Exception):
    """A path that is not a readable ctxtap capture."""


REQUIRED_FILES = (FLOWS_FILE, WS_FILE, BODIES_FILE)  # what a finalized capture always holds
SHOWN_CAPTURES = 3  # captures named when a command is pointed at the folder that holds them


def not_a_capture(directory: Path) -> str:
    """Why `directory` is no capture, naming the captures inside it when it is a folder of captures
    (`captures/`): pointing a command at the store instead of one capture is a first-hour mistake."""
    try:
        inside = [p for p in directory.iterdir() if (p / MANIFEST_NAME).is_file()]
    except OSError:
        inside = []
    if not inside:
        return f"{directory} is not a ctxtap capture (no {MANIFEST_NAME})"
    inside.sort(key=lambda p: (p.stat().st_mtime, p.name), reverse=True)  # the newest first
    shown = ", ".join(str(p) for p in inside[:SHOWN_CAPTURES])
    more = f" ({len(inside)} in all)" if len(inside) > SHOWN_CAPTURES else ""
    return f"{directory} holds captures, not a capture: e.g. {shown}{more}. Give one of them."


def _pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _wait_for_orphaned_writer(directory: Path, manifest, timeout: float = 30.0) -> bool:
    """True once the writer lock is free. When the recording proxy is dead but its writer
    process still holds the lock, it is draining what it received: wait for it."""
    import time

    if _pid_alive(manifest.options.get("pid")):
        return False
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not writer_alive(directory):
            return True
        time.sleep(0.05)
    return False


def _rows(table: pa.Table) -> list[dict]:
    return table.to_pylist()


class Capture:
    """A finalized (or live, read-only) capture directory."""

    def __init__(self, directory: Path, manifest: Manifest, live: bool = False, tightened: int = 0) -> None:
        self.directory = directory
        self.manifest = manifest
        self.live = live
        self.tightened = tightened  # files and folders made private when opened (a capture of an earlier version)
        self._bodies: dict[int, tuple[str, int | None, bytes]] | None = None
        self._flows: pa.Table | None = None
        self._ws: pa.Table | None = None
        self._telemetry: pa.Table | None = None
        self._telemetry_records: pa.Table | None = None
        self._decoder = BodyDecoder(self._lookup)

    @classmethod
    def open(cls, path: str | Path, recover: bool = True) -> Capture:
        directory = Path(path)
        if not (directory / MANIFEST_NAME).exists():
            raise CaptureError(not_a_capture(directory))
        # Every command reads a capture through here, so one made before captures were private
        # (0644/0755) is tightened by whichever command opens it next.
        tightened = tighten(directory)
        try:
            manifest = Manifest.load(directory)
        except (OSError, ValueError) as exc:  # bad JSON, or JSON that is not a manifest (pydantic)
            reason = ": ".join(line.strip() for line in str(exc).splitlines()[:2])
            raise CaptureError(f"{directory / MANIFEST_NAME} is damaged ({reason}). Restore it from a copy, "
                               f"or record or import the traffic again.") from None
        if manifest.format_version > FORMAT_VERSION:  # its bodies may be stored in a way unknown here
            raise CaptureError(f"{directory} is in capture format {manifest.format_version}, newer than this "
                               f"ctxtap ({__version__}) reads ({FORMAT_VERSION}): upgrade ctxtap to open it.")
        if manifest.status == "finalized":
            return cls(directory, manifest, tightened=tightened)
        if writer_alive(directory) and not _wait_for_orphaned_writer(directory, manifest):
            capture = cls(directory, manifest, live=True, tightened=tightened)
            capture._load_spool()
            return capture
        if not recover:
            raise CaptureError(f"{directory} was interrupted; open it with recover=True to finalize it")
        manifest = finalize(directory, recovered=True)
        return cls(directory, manifest, tightened=tightened)

    # --- tables -------------------------------------------------------------------------

    def _load_spool(self) -> None:
        bodies: dict[int, tuple[str, int | None, bytes]] = {}

        def keep(row: dict) -> None:
            bodies[row["body_id"]] = (row["codec"], row["base_id"], row["data"])

        frames = ((h, p) for h, p, _ in iter_frames(self.directory / "spool" / SPOOL_NAME))
        telemetry = TelemetrySink()
        flows, ws_rows = assemble(frames, self.manifest.capture_id, keep, telemetry)
        self._flows = _table(flows, FLOWS_SCHEMA)
        self._ws = _table(ws_rows, WS_SCHEMA)
        self._telemetry = _table(telemetry.payloads, TELEMETRY_SCHEMA)
        self._telemetry_records = _table(telemetry.records, TELEMETRY_RECORDS_SCHEMA)
        self._bodies = bodies

    def missing_files(self) -> list[str]:
        """Files a finalized capture always holds that are not there (deleted, or not copied)."""
        if self.live:
            return []
        return [name for name in REQUIRED_FILES if not (self.directory / name).exists()]

    def _read(self, name: str, **kwargs) -> pa.Table:
        if not self.live and not (self.directory / name).exists():
            raise CaptureError(
                f"{self.directory / name} is missing: the capture is incomplete (the file was deleted or not "
                f"copied). Restore it from a copy, or record or import the traffic again (`ctxtap info` still "
                f"shows its manifest).")
        try:
            return pq.read_table(self.directory / name, **kwargs)
        except (OSError, pa.ArrowException) as exc:
            reason = str(exc).rstrip(".").rsplit("': ", 1)[-1]  # pyarrow repeats the path first
            raise CaptureError(
                f"cannot read {self.directory / name}: {reason}. The capture is damaged: restore the file from "
                f"a copy, or record or import the traffic again (`ctxtap info` still shows its manifest)."
            ) from None

    def set_tables(self, flows: list[dict], ws_rows: list[dict], telemetry: list[dict],
                   telemetry_records: list[dict]) -> None:
        """The capture's tables from spool rows read elsewhere (a live view following the writer)."""
        self._flows = _table(flows, FLOWS_SCHEMA)
        self._ws = _table(ws_rows, WS_SCHEMA)
        self._telemetry = _table(telemetry, TELEMETRY_SCHEMA)
        self._telemetry_records = _table(telemetry_records, TELEMETRY_RECORDS_SCHEMA)

    def flows(self) -> pa.Table:
        if self._flows is None:
            self._flows = self._read(FLOWS_FILE)
        return self._flows

    def ws_messages(self) -> pa.Table:
        if self._ws is None:
            self._ws = self._read(WS_FILE)
        return self._ws

    def telemetry(self) -> pa.Table:
        """Telemetry payloads (empty for captures made before telemetry was recorded)."""
        if self._telemetry is None:
            self._telemetry = (self._read(TELEMETRY_FILE) if (self.directory / TELEMETRY_FILE).exists()
                               else TELEMETRY_SCHEMA.empty_table())
        return self._telemetry

    def telemetry_records(self) -> pa.Table:
        """Decoded telemetry records, one per log record, data point, span or vendor event."""
        if self._telemetry_records is None:
            path = self.directory / TELEMETRY_RECORDS_FILE
            self._telemetry_records = self._read(TELEMETRY_RECORDS_FILE) if path.exists() \
                else TELEMETRY_RECORDS_SCHEMA.empty_table()
        return self._telemetry_records

    def effects(self) -> pa.Table:
        """The run's effect receipt (`record`'s snapshots): empty when the capture has none."""
        path = self.directory / EFFECTS_FILE
        return pq.read_table(path, schema=EFFECTS_SCHEMA) if path.exists() else EFFECTS_SCHEMA.empty_table()

    def effect_roots(self) -> pa.Table:
        """The places the receipt snapshotted (none: the capture was not made by `record`, or before receipts)."""
        path = self.directory / EFFECT_ROOTS_FILE
        return pq.read_table(path, schema=EFFECT_ROOTS_SCHEMA) if path.exists() \
            else EFFECT_ROOTS_SCHEMA.empty_table()

    def gates(self) -> dict | None:
        """The conditions `record --check` (or `check --save`) judged the run by, as stored; None if none."""
        path = self.directory / GATES_FILE
        return json.loads(path.read_text()) if path.exists() else None

    def _lookup(self, body_id: int) -> tuple[str, int | None, bytes]:
        if self._bodies is None:
            table = self._read(BODIES_FILE, columns=["body_id", "codec", "base_id", "data"])
            self._bodies = {
                r["body_id"]: (r["codec"], r["base_id"], r["data"]) for r in table.to_pylist()
            }
        try:
            return self._bodies[body_id]
        except KeyError:
            raise CaptureError(f"body {body_id} missing from {self.directory}") from None

    def body(self, body_id: int | None) -> bytes | None:
        """The decoded, redacted bytes of a stored body (exactly as recorded)."""
        if body_id is None:
            return None
        return self._decoder.get(body_id)

    def body_view(self, body_id: int | None) -> BodyView | None:
        """`body` as a `BodyView`: its pieces are joined only where they are read."""
        if body_id is None:
            return None
        return self._decoder.view(body_id)

    # --- exchanges for the parsers -----------------------------------------------------

    def exchanges(self, model_only: bool = True, views: bool = False) -> Iterator[Exchange]:
        """Flows in request order as parser inputs (bodies decoded and redacted).

        `views`: request bodies as `BodyView`s (the analyzer: a long session's resent
        history is then never joined into each request's bytes); else bytes.
        """
        ws_by_flow: dict[str, list[dict]] = {}
        for msg in _rows(self.ws_messages()):
            ws_by_flow.setdefault(msg["flow_id"], []).append(msg)
        for flow in _rows(self.flows()):
            if model_only and not flow["is_model"]:
                continue
            if flow["record_mode"] != "full":
                continue
            yield self.exchange(flow, ws_by_flow.get(flow["flow_id"], []), views)

    def exchange(self, flow: dict, ws_rows: list[dict], views: bool = False) -> Exchange:
        messages = [
            WsMessage(
                index=m["idx"], from_client=m["from_client"], ts=m["ts"],
                opcode=m["opcode"], content=self.body(m["body_id"]) or b"",
            )
            for m in sorted(ws_rows, key=lambda m: m["idx"])
        ]
        return Exchange(
            flow_id=flow["flow_id"],
            kind="websocket" if flow["kind"] == "websocket" else "http",
            method=flow["method"] or "",
            url=flow["url"] or "",
            host=flow["host"] or "",
            path=flow["path"] or "",
            provider=flow["provider"] or "unknown",
            api=flow["api"] or "other",
            client=flow["client"],
            client_version=flow["client_version"],
            request_headers=[tuple(h) for h in json.loads(flow["request_headers"] or "[]")],
            request_body=self.body_view(flow["request_body_id"]) if views else self.body(flow["request_body_id"]),
            request_body_id=flow["request_body_id"],
            request_body_base=None if flow["request_body_id"] is None
            else self._decoder.prefix(flow["request_body_id"]),
            status=flow["status"],
            response_headers=[tuple(h) for h in json.loads(flow["response_headers"] or "[]")],
            response_body=self.body(flow["response_body_id"]),
            ts_start=flow["ts_request_start"] or 0.0,
            ts_response_headers=flow["ts_response_headers"],
            ts_first_byte=flow["ts_first_byte"],
            ts_end=flow["ts_response_end"] or flow["ts_ws_end"],
            error=flow["error"],
            ws_messages=messages,
        )
