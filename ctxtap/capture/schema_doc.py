"""Render docs/capture-format.md from the schema lists (run this module to regenerate)."""

from __future__ import annotations

from pathlib import Path

from ctxtap.capture.schema import BODY_COLUMNS, FLOW_COLUMNS, WS_COLUMNS

INTRO = """# Capture format

A capture directory holds `manifest.json` and, once finalized, three Parquet
files. Read them with any Parquet tool; bodies are zstd deltas, so read bodies
through ctxtap (`ctxtap.capture.store.Capture.body`) or export HAR
(`ctxtap export CAPTURE --har FILE`).

While a recorder is running (or after it was killed), the data is in
`spool/spool.ctxs`: frames of `MAGIC "CTXS" | u32 header length | u64 payload
length | u32 CRC32 | JSON header | payload`. Record types: `req`, `resp`, `err`
(flow facts, merged by `flow_id`), `ws` (one WebSocket message), `wsend`,
`body` (payload = encoded body), `chunk1` (when a streamed response's first
piece reached the writer, `ts_first_chunk`: live views show the stream under way;
not kept in Parquet) and `writer_error`. The next command that opens
the capture finalizes it into Parquet (`recovered: true` in the manifest).

Everything stored has passed through the redactor: header values, URLs and
decoded bodies. Sizes and SHA-256 digests describe the bytes on the wire.
"""


def _table(title: str, columns) -> str:
    lines = [f"## {title}", "", "| column | type | meaning |", "|---|---|---|"]
    for name, dtype, doc in columns:
        lines.append(f"| `{name}` | {dtype} | {doc} |")
    return "\n".join(lines) + "\n"


def render() -> str:
    return "\n".join([
        INTRO,
        _table("flows.parquet — one row per HTTP flow or WebSocket connection", FLOW_COLUMNS),
        _table("ws_messages.parquet — one row per WebSocket message", WS_COLUMNS),
        _table("bodies.parquet — decoded, redacted bodies, delta-compressed", BODY_COLUMNS),
    ])


if __name__ == "__main__":
    target = Path(__file__).resolve().parents[2] / "docs" / "capture-format.md"
    target.write_text(render())
    print(f"wrote {target}")
