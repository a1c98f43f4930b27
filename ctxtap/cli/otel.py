"""`ctxtap export CAPTURE --otlp URL | --otlp-json FILE`: the capture as OpenTelemetry GenAI spans.

The spans come from the analysis views (reports/otel). With `--content`, every text passes the
credential redactor and the personal-data pseudonymiser before it is put in a span: the capture
is credential-redacted already, and this keeps the promise even for a capture recorded without
`--redact pii`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import click


def _headers(pairs: Sequence[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise click.UsageError(f"--otlp-header {pair!r}: expected NAME=VALUE")
        out[name.strip()] = value.strip()
    return out


def _redactor(capture_dir: Path):
    from ctxtap.capture.paths import redaction_key
    from ctxtap.capture.store import Capture
    from ctxtap.redaction import Redactor
    from ctxtap.redaction.personal.pii import PiiRedactor

    capture_id = Capture.open(capture_dir).manifest.capture_id
    cred = Redactor(redaction_key(), capture_id)
    pii = PiiRedactor(numbered=True)
    return lambda text: pii.redact_text(cred.redact_text(text))


def export_otel(capture_dir: Path, url: str | None, json_path: Path | None, header_pairs: Sequence[str],
                content: bool) -> Iterator[str]:
    from ctxtap.analysis.db import connect
    from ctxtap.reports.otel.otlp import ExportError, send, traces_url, write_json
    from ctxtap.reports.otel.spans import build_spans

    headers = _headers(header_pairs)
    if url:
        try:
            traces_url(url)
        except ExportError as exc:
            raise click.UsageError(f"--otlp: {exc}") from None
    con = connect([capture_dir])
    try:
        spans = build_spans(con, content=content, redact=_redactor(capture_dir) if content else None)
    finally:
        con.close()
    kinds = {}
    for s in spans:
        op = s.attributes.get("gen_ai.operation.name")
        kinds[op] = kinds.get(op, 0) + 1
    counted = ", ".join(f"{n} {op}" for op, n in sorted(kinds.items())) or "no spans"
    if json_path:
        write_json(json_path, spans)
        yield f"wrote {len(spans)} spans ({counted}) to {json_path}"
    if url:
        try:
            n = send(url, spans, headers)
        except ExportError as exc:
            step = ("the receiver refused the spans: if it needs a token, pass it with --otlp-header "
                    "'Authorization=Bearer ...'" if exc.refused else
                    "check that an OTLP/HTTP receiver listens there (e.g. port 4318)")
            raise click.ClickException(f"{exc}. {step[0].upper() + step[1:]}; or write the spans to a file with "
                                       f"--otlp-json.") from None
        yield f"sent {len(spans)} spans ({counted}) to {traces_url(url)} in {n} request(s)"
