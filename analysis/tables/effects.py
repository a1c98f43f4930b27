"""`effects` and `effect_roots`: what the run changed on disk, from `record`'s effect receipt.

A task that said "modify nothing" is judged on this, whatever the client: the receipt is two
snapshots of the working directory and the `--watch` places, taken by ctxtap itself. Places that
were not snapshotted are not seen; `effect_roots` says which were, and whether in full.
"""

from __future__ import annotations

from ctxtap.analysis.rules.constraints import Gates
from ctxtap.analysis.tables.base import F64, I64, B, BuildContext, Columns, Row, S, Table

COLUMNS: Columns = [
    ("root", S, "The place the path is in (absolute; personal data, never published)."),
    ("root_kind", S, "`workspace` (the working directory of the run) or `watched` (`record --watch`)."),
    ("inside_workspace", B, "The path is in the working directory (false: in a watched place)."),
    ("rel_path", S, "Path relative to its root, `/`-separated (the new path of a rename)."),
    ("change", S, "`created`, `modified`, `deleted` or `renamed`."),
    ("renamed_from", S, "For a rename: the old relative path."),
    ("entry_type", S, "`file` or `symlink`."),
    ("size_before", I64, "Size in bytes before the run (null when created)."),
    ("size_after", I64, "Size in bytes after the run (null when deleted)."),
    ("sha256_before", S, "Content hash before the run, where it was hashed then; never the content."),
    ("sha256_after", S, "Content hash after the run (null when deleted or past the hash budget)."),
    ("mtime_after", F64, "Modification time after the run (Unix seconds)."),
]

ROOT_COLUMNS: Columns = [
    ("root", S, "Absolute path of the place snapshotted (personal data, never published)."),
    ("root_kind", S, "`workspace` or `watched`."),
    ("files_before", I64, "Entries seen before the run (`.git/` internals left out)."),
    ("files_after", I64, "Entries seen after the run."),
    ("hashed_bytes", I64, "Bytes read to hash contents, both snapshots."),
    ("seconds_before", F64, "Time the snapshot before the run took."),
    ("seconds_after", F64, "Time the snapshot after the run took."),
    ("complete", B, "Both snapshots walked the whole place (false: a bound stopped one; see `stopped`)."),
    ("stopped", S, "Why a snapshot stopped early, else null."),
]


def build(ctx: BuildContext) -> list[Row]:
    rows = ctx.capture.effects().drop_columns(["capture_id"]).to_pylist()
    for row in rows:
        row["inside_workspace"] = row["root_kind"] == "workspace"
    return rows


GATE_COLUMNS: Columns = [
    ("flags", S, "The gates as `ctxtap check` spells them (`--no-writes --allow-write *.log --no-network`)."),
    ("gates_json", S, "The same as JSON (`ctxtap.analysis.rules.constraints.Gates`), for the report to judge the run by."),
]


def build_gates(ctx: BuildContext) -> list[Row]:
    stored = ctx.capture.gates()
    if stored is None:
        return []
    gates = Gates.model_validate(stored)
    return [{"flags": " ".join(gates.flags()), "gates_json": gates.model_dump_json()}]


def build_roots(ctx: BuildContext) -> list[Row]:
    return ctx.capture.effect_roots().drop_columns(["capture_id"]).to_pylist()


TABLES = [
    Table("effects", "one row per path the run created, modified, deleted or renamed (record's effect receipt: "
          "sizes and hashes, never contents)", COLUMNS, build),
    Table("effect_roots", "one row per place the effect receipt snapshotted, with its bounds; places not listed "
          "were not seen", ROOT_COLUMNS, build_roots),
    Table("run_gates", "the conditions `record --check` (or `check --save`) judged the run by, one row per "
          "capture that has them", GATE_COLUMNS, build_gates),
]
