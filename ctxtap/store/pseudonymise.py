"""`push --pseudonymise`: publish's personal-data pass over what a push sends, for stores shared
beyond the user.

The same pass as `ctxtap publish` (`ctxtap.reports.publish.publisher`): the user's identity is learnt
from the whole capture first (its request headers, every string of the analysis dataset, the
recorded machine's facts), then every distinct string is handed once to `PiiRedactor` with numbered
placeholders. What is
pushed is the analysis dataset (every string column pseudonymised) and the manifest (every string
value pseudonymised); the raw capture files (flows, bodies, WebSocket messages, telemetry) hold
compressed bodies and header lists that no column-wise pass can vouch for, so they stay on the
machine and the index says so (`left_out`). The store then answers queries, `stats` and reports;
`pull` brings back the dataset alone.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ctxtap.redaction.personal.identity import Identity
from ctxtap.redaction.personal.pii import PiiRedactor


def _string_columns(table: pa.Table) -> list[int]:
    return [i for i, f in enumerate(table.schema) if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)]


def _strings(value: Any):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


class Pseudonymiser:
    def __init__(self, pii: PiiRedactor) -> None:
        self.pii = pii
        self._done: dict[str, str] = {}

    @classmethod
    def for_capture(cls, capture_dir: Path, manifest) -> Pseudonymiser:
        identity = Identity()
        flows = Path(capture_dir) / "flows.parquet"
        if flows.is_file():  # the request headers, as publish learns them (user agents, hosts, accounts)
            for value in pc.unique(pq.read_table(flows, columns=["request_headers"]).column(0)).to_pylist():
                try:
                    identity.learn_headers([(str(k), str(v)) for k, v in json.loads(value or "[]")])
                except (ValueError, TypeError):
                    continue
        for part in sorted((Path(capture_dir) / "analysis").glob("*/capture_id=*/*.parquet")):
            table = pq.read_table(part)
            for i in _string_columns(table):
                for value in pc.unique(table.column(i)).to_pylist():
                    if value:
                        identity.learn_text(value)
        env = manifest.environment or {}
        identity.learn_facts(env.get("user"), env.get("host"),
                             [str(env[k]) for k in ("cwd", "home", "shell_prompt") if env.get(k)])
        for text in _strings(manifest.command or []):
            identity.learn_text(text)
        identity.refresh_accounts()
        return cls(PiiRedactor(numbered=True, identity=identity, learn=False))

    def text(self, value: str) -> str:
        out = self._done.get(value)
        if out is None:
            out = self._done[value] = self.pii.redact_text(value)
        return out

    def _json(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {k: self._json(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._json(v) for v in value]
        return value

    def table(self, table: pa.Table) -> pa.Table:
        for i in _string_columns(table):
            column = table.column(i).combine_chunks()
            dictionary = pc.dictionary_encode(column)
            values = [None if v is None else self.text(v) for v in dictionary.dictionary.to_pylist()]
            mapped = pc.take(pa.array(values, type=column.type), dictionary.indices)
            table = table.set_column(i, table.schema.field(i), mapped)
        return table

    def transform(self, local: str, data: bytes) -> bytes | None:
        """The pseudonymised bytes of one object to push, or None for one that stays on the machine."""
        if local == "manifest.json":
            return json.dumps(self._json(json.loads(data)), indent=2, sort_keys=True).encode()
        if local == "analysis/_meta.json":
            return data  # versions, fingerprints of files and stats: nothing personal
        if not local.startswith("analysis/"):
            return None
        source = pq.ParquetFile(io.BytesIO(data))
        table = self.table(source.read())
        out = io.BytesIO()
        pq.write_table(table, out, compression="zstd")
        return out.getvalue()
