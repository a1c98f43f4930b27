"""Decode the client's own telemetry into flat records: OTLP logs, metrics and traces
(protobuf or JSON, via `opentelemetry-proto`) and the vendor formats known endpoints carry
(Claude Code's `event_logging` batches).

The capture writer calls this before redacting, then redacts the decoded document and the
records as text, so a value a client base64-encoded is redacted too. Nothing here raises
on bad input: a payload that does not decode gets a parse status that says why.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from datetime import datetime

# The OTLP/JSON top-level key of each signal (proto3 JSON mapping, camelCase).
_ROOTS = {"logs": "resourceLogs", "metrics": "resourceMetrics", "traces": "resourceSpans"}
_ID_FIELDS = ("traceId", "spanId", "parentSpanId")


@dataclass
class Decoded:
    status: str  # ok | empty | error: ... (then `document` is None)
    payload_format: str  # protobuf | json | unknown
    document: dict | None = None  # the payload as OTLP/JSON (ids in hex), or the vendor JSON
    records: list[dict] = field(default_factory=list)


def _is_json(content_type: str | None, body: bytes) -> bool:
    if content_type and "json" in content_type.lower():
        return True
    if content_type and "protobuf" in content_type.lower():
        return False
    return body[:1] in (b"{", b"[")


def _proto_class(signal: str):
    if signal == "logs":
        from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest as cls
    elif signal == "metrics":
        from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
            ExportMetricsServiceRequest as cls,
        )
    else:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest as cls
    return cls


def _b64_to_hex(value: str) -> str:
    try:
        return base64.b64decode(value).hex()
    except (binascii.Error, ValueError):
        return value


def _ids_to_hex(node: object) -> None:
    """protobuf's JSON form writes bytes ids in base64; OTLP/JSON writes them in hex."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in _ID_FIELDS and isinstance(value, str):
                node[key] = _b64_to_hex(value)
            else:
                _ids_to_hex(value)
    elif isinstance(node, list):
        for item in node:
            _ids_to_hex(item)


def _guess_signal(document: dict) -> str | None:
    for signal, root in _ROOTS.items():
        if root in document:
            return signal
    return None


def decode_otlp(signal: str, content_type: str | None, body: bytes) -> Decoded:
    """An OTLP/HTTP export request -> its OTLP/JSON document and flat records."""
    if not body:
        return Decoded("empty", "unknown")
    if _is_json(content_type, body):
        try:
            document = json.loads(body)
        except ValueError as exc:
            return Decoded(f"error: not JSON ({exc})", "json")
        if not isinstance(document, dict):
            return Decoded("error: OTLP/JSON must be an object", "json")
        found = _guess_signal(document)
        if found is None:
            return Decoded(f"error: no {'/'.join(_ROOTS.values())} in the JSON", "json")
        return Decoded("ok", "json", document, _records(found, document))
    if signal not in _ROOTS:
        return Decoded("error: protobuf payload on a path that names no OTLP signal", "protobuf")
    try:
        from google.protobuf import json_format
        from google.protobuf.message import DecodeError

        message = _proto_class(signal)()
        message.ParseFromString(body)
    except DecodeError as exc:
        return Decoded(f"error: not OTLP protobuf ({exc})", "protobuf")
    except Exception as exc:  # protobuf raises other types for some corrupt inputs
        return Decoded(f"error: not OTLP protobuf ({type(exc).__name__}: {exc})", "protobuf")
    document = json_format.MessageToDict(message)
    _ids_to_hex(document)
    return Decoded("ok", "protobuf", document, _records(signal, document))


# --- OTLP/JSON -> records -------------------------------------------------------------------


def any_value(value: object) -> object:
    """An OTLP AnyValue as a plain JSON value."""
    if not isinstance(value, dict):
        return value
    if "stringValue" in value:
        return value["stringValue"]
    if "intValue" in value:
        try:
            return int(value["intValue"])
        except (TypeError, ValueError):
            return value["intValue"]
    if "doubleValue" in value:
        return value["doubleValue"]
    if "boolValue" in value:
        return value["boolValue"]
    if "arrayValue" in value:
        return [any_value(v) for v in (value["arrayValue"] or {}).get("values", [])]
    if "kvlistValue" in value:
        return attributes((value["kvlistValue"] or {}).get("values", []))
    if "bytesValue" in value:
        return value["bytesValue"]
    return None


def attributes(items: object) -> dict:
    if not isinstance(items, list):
        return {}
    return {kv.get("key"): any_value(kv.get("value")) for kv in items if isinstance(kv, dict)}


def _nanos(value: object) -> float | None:
    try:
        n = int(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return n / 1e9 if n else None


def _record(kind: str, name: str | None, resource: dict, scope: dict, **fields) -> dict:
    row = {"kind": kind, "name": name, "service_name": resource.get("service.name"),
           "scope_name": scope.get("name"), "resource": json.dumps(resource, sort_keys=True)}
    row.update(fields)
    row["attributes"] = json.dumps(row.get("attributes") or {}, sort_keys=True)
    return row


def _records(signal: str, document: dict) -> list[dict]:
    out: list[dict] = []
    for res in document.get(_ROOTS[signal]) or []:
        if not isinstance(res, dict):
            continue
        resource = attributes((res.get("resource") or {}).get("attributes"))
        scopes = res.get({"logs": "scopeLogs", "metrics": "scopeMetrics", "traces": "scopeSpans"}[signal]) or []
        for sc in scopes:
            if not isinstance(sc, dict):
                continue
            scope = sc.get("scope") or {}
            if signal == "logs":
                out += [_log(r, resource, scope) for r in sc.get("logRecords") or [] if isinstance(r, dict)]
            elif signal == "traces":
                out += [_span(s, resource, scope) for s in sc.get("spans") or [] if isinstance(s, dict)]
            else:
                for metric in sc.get("metrics") or []:
                    if isinstance(metric, dict):
                        out += _metric_points(metric, resource, scope)
    return out


def _log(rec: dict, resource: dict, scope: dict) -> dict:
    attrs = attributes(rec.get("attributes"))
    body = any_value(rec.get("body"))
    # `event.name` first: Codex puts its Rust tracing site ("event otel/src/...rs:380") in eventName
    name = attrs.get("event.name") or rec.get("eventName") or (body if isinstance(body, str) else None)
    return _record(
        "log", name, resource, scope, attributes=attrs,
        ts=_nanos(rec.get("timeUnixNano")) or _nanos(rec.get("observedTimeUnixNano")),
        ts_end=None, trace_id=rec.get("traceId") or None, span_id=rec.get("spanId") or None,
        parent_span_id=None, severity=rec.get("severityText") or None,
        body=body if isinstance(body, str) or body is None else json.dumps(body), value=None, unit=None,
    )


def _span(span: dict, resource: dict, scope: dict) -> dict:
    attrs = attributes(span.get("attributes"))
    status = span.get("status") or {}
    if status.get("code"):
        attrs.setdefault("otel.status_code", status.get("code"))
    return _record(
        "span", span.get("name"), resource, scope, attributes=attrs,
        ts=_nanos(span.get("startTimeUnixNano")), ts_end=_nanos(span.get("endTimeUnixNano")),
        trace_id=span.get("traceId") or None, span_id=span.get("spanId") or None,
        parent_span_id=span.get("parentSpanId") or None, severity=None, body=None, value=None, unit=None,
    )


def _metric_points(metric: dict, resource: dict, scope: dict) -> list[dict]:
    rows = []
    for shape in ("sum", "gauge", "histogram", "exponentialHistogram", "summary"):
        data = metric.get(shape)
        if not isinstance(data, dict):
            continue
        for point in data.get("dataPoints") or []:
            if not isinstance(point, dict):
                continue
            attrs = attributes(point.get("attributes"))
            if "asDouble" in point:
                value = point["asDouble"]
            elif "asInt" in point:
                value = point["asInt"]
            else:  # histogram-like: the sum, with the count beside it
                value = point.get("sum")
                attrs["_count"] = point.get("count")
            try:
                value = float(value) if value is not None else None
            except (TypeError, ValueError):
                value = None
            rows.append(_record(
                "metric", metric.get("name"), resource, scope, attributes=attrs,
                ts=_nanos(point.get("timeUnixNano")), ts_end=None, trace_id=None, span_id=None,
                parent_span_id=None, severity=None, body=None, value=value, unit=metric.get("unit") or None,
            ))
    return rows


# --- vendor formats ---------------------------------------------------------------------------


def _iso(value: object) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _unpack_metadata(value: object) -> object:
    """Claude Code base64-encodes a JSON object into `additional_metadata`: show it decoded."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(base64.b64decode(value, validate=True))
    except (binascii.Error, ValueError):
        return value


def decode_claude_event_logging(body: bytes) -> Decoded:
    """`POST api.anthropic.com/api/event_logging/.../batch`: {"events": [{event_type, event_data}]}."""
    try:
        document = json.loads(body)
    except ValueError as exc:
        return Decoded(f"error: not JSON ({exc})", "json")
    events = document.get("events") if isinstance(document, dict) else None
    if not isinstance(events, list):
        return Decoded("error: no `events` list", "json")
    records = []
    for event in events:
        if not isinstance(event, dict):
            continue
        data = dict(event.get("event_data") or {})
        for key in ("additional_metadata", "process"):
            if key in data:
                data[key] = _unpack_metadata(data[key])
        env = data.pop("env", None)
        records.append(_record(
            "vendor-event", data.get("event_name") or event.get("event_type"),
            {"service.name": "claude-code", **({"env": env} if env else {})}, {"name": event.get("event_type")},
            attributes=data, ts=_iso(data.get("client_timestamp")), ts_end=None, trace_id=data.get("session_id"),
            span_id=None, parent_span_id=None, severity=None, body=None, value=None, unit=None,
        ))
    return Decoded("ok", "json", document, records)


def decode_payload(source: str, signal: str, content_type: str | None, body: bytes) -> Decoded:
    """Route a telemetry payload to its decoder by where it came from."""
    try:
        if source == "proxy:claude-event-logging":
            return decode_claude_event_logging(body)
        return decode_otlp(signal, content_type, body)
    except Exception as exc:  # a decoder bug must never lose the payload
        return Decoded(f"error: decoder failed ({type(exc).__name__}: {exc})", "unknown")
