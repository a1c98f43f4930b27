"""Render docs/capture-format.md from the schema lists (run this module to regenerate)."""

from __future__ import annotations

from pathlib import Path

from ctxtap.capture.schema import (
    BODY_COLUMNS,
    EFFECT_COLUMNS,
    EFFECT_ROOT_COLUMNS,
    FLOW_COLUMNS,
    TELEMETRY_COLUMNS,
    TELEMETRY_RECORD_COLUMNS,
    WS_COLUMNS,
)

INTRO = """# Capture format

A capture directory holds `manifest.json` and, once finalized, five Parquet
files (`telemetry.parquet` and `telemetry_records.parquet` only in captures made since
they exist; readers treat them as empty when absent). Read them with any Parquet tool; bodies are zstd deltas, so read bodies
through ctxtap (`ctxtap.capture.store.Capture.body`) or export HAR
(`ctxtap export CAPTURE --har FILE`). `manifest.json`'s `format_version` is 2 since bodies may be
`zstd-tail` deltas (1 before); ctxtap refuses to read a capture in a newer format than its own.

While a recorder is running (or after it was killed), the data is in
`spool/spool.ctxs`: frames of `MAGIC "CTXS" | u32 header length | u64 payload
length | u32 CRC32 | JSON header | payload`. Record types: `req`, `resp`, `err`
(flow facts, merged by `flow_id`), `ws` (one WebSocket message), `wsend`,
`body` (payload = encoded body), `tel` (one telemetry payload with its decoded records),
`chunk1` (when a streamed response's first piece reached the writer, `ts_first_chunk`: live
views show the stream under way; not kept in Parquet) and `writer_error`. The next command that opens
the capture finalizes it into Parquet (`recovered: true` in the manifest).

Everything stored has passed through the redactor: header values, URLs,
decoded bodies, proxy error messages, the short wire strings kept in columns
of their own (reason phrase, content type and encoding, client version, user
agent, a message's `type`), and the manifest's `command` and
`options.routes` (the user's own words, which can hold keys). Sizes and
SHA-256 digests describe the bytes on the wire.

`manifest.json`'s `telemetry` object (`ctxtap record --telemetry`) holds `receiver` (its
endpoint, the per-run token shown as `<token>`, and the payload size it keeps), `receiver_stats`
(payloads received, requests refused for want of the token) and `client` (the client, whether
telemetry was switched on and why not, `injected_env` and `injected_args` exactly as given to
the client, and `user_settings_seen`: the names, never the values, of the user's own telemetry
variables).

`ctxtap record` also leaves an effect receipt: `effects.parquet` and `effect_roots.parquet`
(only in captures `record` made since receipts exist; readers treat them as empty when absent). The
working directory (ignored files included, `.git/` internals left out) and every `--watch` place are
snapshotted before and after the run, stat first, contents hashed only where needed and never kept;
what changed is one row each. Places not snapshotted are not seen. The root paths are personal data:
`publish` and `export` leave both files out. `record --check "..."` and `ctxtap check --save` also write
`gates.json`: the conditions the run was judged by (`no_writes`, `allow_write`, `no_network`, `allow_host`,
`no_secrets_sent`, `no_outside_workspace`, `workspace`), so a report can say which of them it breaks.
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
        _table("telemetry.parquet — one row per telemetry payload the client exported (OTLP to "
               "ctxtap's receiver, or a known vendor telemetry endpoint through the proxy)", TELEMETRY_COLUMNS),
        _table("telemetry_records.parquet — one row per decoded log record, metric data point, span "
               "or vendor event", TELEMETRY_RECORD_COLUMNS),
        _table("effects.parquet — one row per path the run created, modified, deleted or renamed "
               "(`record`'s effect receipt)", EFFECT_COLUMNS),
        _table("effect_roots.parquet — one row per place the receipt snapshotted", EFFECT_ROOT_COLUMNS),
    ])


if __name__ == "__main__":
    target = Path(__file__).resolve().parents[1] / "docs" / "capture-format.md"
    target.write_text(render())
    print(f"wrote {target}")
