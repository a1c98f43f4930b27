"""`captures`: one row per capture — where it came from and when it was recorded."""

from __future__ import annotations

from ctxtap.analysis.tables.base import F64, BuildContext, Columns, Row, S, Table

COLUMNS: Columns = [
    ("name", S, "The capture folder's name."),
    ("source", S, "`proxy` (recorded live) or `import` (flow files, HAR)."),
    ("status", S, "`recording` or `finalized`."),
    ("started_at", F64, "Unix time recording started."),
    ("ended_at", F64, "Unix time recording ended (null while recording or after a crash)."),
    ("ctxtap_version", S, "ctxtap version that recorded the capture."),
]


def build(ctx: BuildContext) -> list[Row]:
    m = ctx.capture.manifest
    return [{"name": ctx.capture.directory.name, "source": m.source, "status": m.status,
             "started_at": m.started_at, "ended_at": m.ended_at, "ctxtap_version": m.ctxtap_version}]


TABLE = Table("captures", "one row per capture: its source and recording times", COLUMNS, build)
