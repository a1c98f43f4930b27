"""Spans on the wire: OTLP protobuf (`opentelemetry-proto`), OTLP JSON, and an OTLP/HTTP sender.

OTLP/JSON differs from protobuf's own JSON mapping in two ways that matter here: trace and span
ids are hex strings (not base64), and enums are integers. `to_json`/`from_json` handle both, so
a file written with `--otlp-json` can be read back into the same message.
"""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Status
from opentelemetry.proto.trace.v1.trace_pb2 import Span as PbSpan

from ctxtap import __version__
from ctxtap.reports.otel.spans import SERVICE_NAME, Span

_KINDS = {"internal": PbSpan.SPAN_KIND_INTERNAL, "client": PbSpan.SPAN_KIND_CLIENT}
BATCH = 2000  # spans per export request


class ExportError(Exception):
    """The OTLP endpoint could not be reached (`refused` False) or refused the spans (`refused` True)."""

    def __init__(self, message: str, refused: bool = False) -> None:
        super().__init__(message)
        self.refused = refused


def _value(value: Any) -> AnyValue:
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    if isinstance(value, list | tuple):
        out = AnyValue()
        out.array_value.values.extend(_value(v) for v in value)
        return out
    return AnyValue(string_value=str(value))


def _attributes(attrs: Mapping[str, Any]) -> list[KeyValue]:
    return [KeyValue(key=k, value=_value(v)) for k, v in attrs.items() if v is not None]


def to_request(spans: Iterable[Span], resource: Mapping[str, Any] | None = None) -> ExportTraceServiceRequest:
    """One ExportTraceServiceRequest with every span under one resource and scope."""
    scope_spans = ScopeSpans(scope=InstrumentationScope(name="ctxtap.export", version=__version__))
    for s in spans:
        pb = PbSpan(trace_id=s.trace_id, span_id=s.span_id, parent_span_id=s.parent_id or b"", name=s.name,
                    kind=_KINDS[s.kind], start_time_unix_nano=s.start_ns, end_time_unix_nano=max(s.end_ns, s.start_ns),
                    attributes=_attributes(s.attributes))
        if s.error:
            pb.status.CopyFrom(Status(code=Status.STATUS_CODE_ERROR, message=s.error))
        scope_spans.spans.append(pb)
    attrs = {"service.name": SERVICE_NAME, "service.version": __version__, **(resource or {})}
    return ExportTraceServiceRequest(resource_spans=[
        ResourceSpans(resource=Resource(attributes=_attributes(attrs)), scope_spans=[scope_spans])])


def batches(spans: list[Span], resource: Mapping[str, Any] | None = None) -> Iterable[ExportTraceServiceRequest]:
    for i in range(0, len(spans), BATCH):
        yield to_request(spans[i:i + BATCH], resource)


_ID_KEYS = ("traceId", "spanId", "parentSpanId")


def _walk_ids(obj: Any, convert) -> Any:
    if isinstance(obj, dict):
        return {k: (convert(v) if k in _ID_KEYS and isinstance(v, str) else _walk_ids(v, convert)) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_walk_ids(v, convert) for v in obj]
    return obj


def to_json(request: ExportTraceServiceRequest) -> dict:
    """The OTLP/JSON form: protobuf JSON with hex ids and integer enums."""
    from google.protobuf.json_format import MessageToDict

    raw = MessageToDict(request, use_integers_for_enums=True)
    return _walk_ids(raw, lambda v: base64.b64decode(v).hex())


def from_json(data: dict) -> ExportTraceServiceRequest:
    from google.protobuf.json_format import ParseDict

    return ParseDict(_walk_ids(data, lambda v: base64.b64encode(bytes.fromhex(v)).decode()),
                     ExportTraceServiceRequest())


def traces_url(url: str) -> str:
    """An OTLP endpoint as `OTEL_EXPORTER_OTLP_ENDPOINT` gives it (`http://host:4318`) gains `/v1/traces`;
    a URL that already names a path is used as it is."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ExportError(f"{url!r} is not an http(s) URL")
    return url if parts.path not in ("", "/") else url.rstrip("/") + "/v1/traces"


def _opener(url: str) -> urllib.request.OpenerDirector:
    """A loopback endpoint is reached directly, even where HTTP(S)_PROXY is set (inside `ctxtap record`)."""
    from urllib.parse import urlsplit

    if urlsplit(url).hostname in ("127.0.0.1", "localhost", "::1"):
        return urllib.request.build_opener(urllib.request.ProxyHandler({}))
    return urllib.request.build_opener()


def send(url: str, spans: list[Span], headers: Mapping[str, str] | None = None, timeout: float = 30.0,
         resource: Mapping[str, Any] | None = None) -> int:
    """POST the spans as OTLP/HTTP protobuf; returns the number of requests sent."""
    target = traces_url(url)
    n = 0
    for request in batches(spans, resource):
        req = urllib.request.Request(target, data=request.SerializeToString(), method="POST", headers={
            "Content-Type": "application/x-protobuf", "User-Agent": f"ctxtap/{__version__}", **(headers or {})})
        try:
            with _opener(target).open(req, timeout=timeout) as resp:
                resp.read()
        except urllib.error.HTTPError as exc:
            raise ExportError(f"{target} answered {exc.code} {exc.reason}: {exc.read()[:300]!r}", refused=True) from exc
        except (urllib.error.URLError, OSError) as exc:
            raise ExportError(f"could not reach {target}: {getattr(exc, 'reason', exc)}") from exc
        n += 1
    return n


def write_json(path, spans: list[Span], resource: Mapping[str, Any] | None = None) -> None:
    """One OTLP/JSON ExportTraceServiceRequest per line (the OTLP file exporter's JSON Lines form)."""
    with open(path, "w", encoding="utf-8") as f:
        for request in batches(spans, resource) if spans else [to_request([], resource)]:
            f.write(json.dumps(to_json(request), ensure_ascii=False) + "\n")
