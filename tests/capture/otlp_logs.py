"""OTLP logs as Claude Code exports them: a `claude_code.tool_result` event as protobuf, its tool input
holding a key (a support module, no tests: the telemetry receiver's tests, the recorded run's telemetry and
effects tests and the events view's tests send or read it)."""

from __future__ import annotations

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, ResourceLogs, ScopeLogs
from opentelemetry.proto.resource.v1.resource_pb2 import Resource

SECRET = "sk-ant-api03-" + "Q" * 86 + "AA"  # an Anthropic key shape the redactor knows


def _kv(key: str, value) -> KeyValue:
    if isinstance(value, bool):
        return KeyValue(key=key, value=AnyValue(bool_value=value))
    if isinstance(value, int):
        return KeyValue(key=key, value=AnyValue(int_value=value))
    return KeyValue(key=key, value=AnyValue(string_value=str(value)))


def claude_tool_result_logs(ts_ns: int, secret: str = SECRET) -> bytes:
    """An ExportLogsServiceRequest shaped like Claude Code's `claude_code.tool_result` event."""
    record = LogRecord(
        time_unix_nano=ts_ns, body=AnyValue(string_value="claude_code.tool_result"),
        attributes=[_kv("event.name", "tool_result"), _kv("tool_name", "Bash"), _kv("tool_use_id", "toolu_01"),
                    _kv("duration_ms", "42"), _kv("success", "true"), _kv("tool_input", f"echo {secret}")],
        trace_id=bytes.fromhex("0af7651916cd43dd8448eb211c80319c"),
    )
    req = ExportLogsServiceRequest(resource_logs=[ResourceLogs(
        resource=Resource(attributes=[_kv("service.name", "claude-code")]),
        scope_logs=[ScopeLogs(log_records=[record])],
    )])
    return req.SerializeToString()
