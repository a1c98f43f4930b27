"""Errors by layer: who can repair the problem.

A 403 needs configuration, an exhausted quota needs the account owner, a 529 needs
only a retry. The layer comes from the provider's error code when it has one, then
from the message, then from the HTTP status; `x-should-retry` overrides the
retryable default; Retry-After comes from `retry-after-ms`, `retry-after`
(seconds or HTTP date), then from what a protocol module reads in its own error
objects (`Protocol.error_hints`, e.g. a structured retry delay), then from a
"try again in Ns" message.
"""

from __future__ import annotations

import email.utils
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ctxtap.analysis.parsing.canonical import loads
from ctxtap.analysis.parsing.models import ErrorInfo, ErrorLayer
from ctxtap.capture.headers import lower_headers


@dataclass(frozen=True)
class ErrorHints:
    """Provider-specific facts about an error that the generic classification cannot read."""

    retry_after_s: float | None = None  # e.g. Gemini RetryInfo.retryDelay
    quota_exhausted: bool = False  # an allowance is used up (not a per-minute limit)
    retryable: bool | None = None  # overrides the layer's default when set


HintSource = Callable[[dict[str, Any], dict[str, str]], ErrorHints]
_hint_source: list[HintSource] = []


def read_hints_with(source: HintSource) -> None:
    """The protocol registry hands in its reader of family-specific error facts as it loads: errors
    sit below the protocols, which classify their errors here, so this module cannot import them."""
    _hint_source[:] = [source]

# Provider error codes / types / statuses -> layer. Lower-case keys.
ERROR_CODES: dict[str, ErrorLayer] = {
    # rate limits
    "rate_limit_error": "rate_limit",
    "rate_limit_exceeded": "rate_limit",
    "rate_limited": "rate_limit",
    "engine_overloaded_error": "rate_limit",
    "too_many_requests": "rate_limit",
    "resource_exhausted": "rate_limit",
    "websocket_connection_limit_reached": "model_service",
    "rate_limit_reached_error": "rate_limit",
    # quota / billing
    "insufficient_quota": "quota",
    "billing_error": "quota",
    "usage_limit_reached": "quota",
    "usage_not_included": "quota",
    "exceeded_current_quota_error": "quota",
    "insufficient_balance": "quota",
    "payment_required": "quota",
    "credit_balance_too_low": "quota",
    # auth / organisation
    "authentication_error": "auth",
    "permission_error": "auth",
    "invalid_api_key": "auth",
    "unauthenticated": "auth",
    "permission_denied": "auth",
    "invalid_authentication": "auth",
    "invalid_authentication_error": "auth",
    "organization_not_found": "auth",
    "account_deactivated": "auth",
    # context length
    "context_length_exceeded": "context_length",
    "model_context_window_exceeded": "context_length",
    "string_above_max_length": "context_length",
    # validation
    "invalid_request_error": "validation",
    "invalid_argument": "validation",
    "not_found_error": "validation",
    "not_found": "validation",
    "request_too_large": "validation",
    "invalid_prompt": "validation",
    "failed_precondition": "validation",
    # model service
    "overloaded_error": "model_service",
    "api_error": "model_service",
    "server_error": "model_service",
    "timeout_error": "model_service",
    "internal": "model_service",
    "internal_error": "model_service",
    "unavailable": "model_service",
    "deadline_exceeded": "model_service",
    "service_unavailable": "model_service",
    "server_is_overloaded": "model_service",
    # Amazon Bedrock exception types (`:exception-type` of a stream's exception frame, `x-amzn-ErrorType`)
    "throttlingexception": "rate_limit",
    "servicequotaexceededexception": "quota",
    "accessdeniedexception": "auth",
    "unrecognizedclientexception": "auth",
    "expiredtokenexception": "auth",
    "validationexception": "validation",
    "resourcenotfoundexception": "validation",
    "modelerrorexception": "model_service",
    "modelnotreadyexception": "model_service",
    "modelstreamerrorexception": "model_service",
    "modeltimeoutexception": "model_service",
    "internalserverexception": "model_service",
    "serviceunavailableexception": "model_service",
}

# Message patterns that refine a generic code (e.g. invalid_request_error "prompt is too long").
MESSAGE_RULES: list[tuple[str, re.Pattern[str], ErrorLayer]] = [
    (
        "message.context-length",
        re.compile(
            r"prompt is too long|context length|context window|maximum context|too many tokens|"
            r"exceeds? the (?:model'?s? )?(?:maximum )?(?:context|token limit)|input is too long",
            re.I,
        ),
        "context_length",
    ),
    (
        "message.quota",
        re.compile(r"quota|billing|credit balance|insufficient (?:funds|balance)|usage limit", re.I),
        "quota",
    ),
    ("message.rate-limit", re.compile(r"rate.?limit|too many requests", re.I), "rate_limit"),
    (
        "message.auth",
        re.compile(r"api key|unauthori[sz]ed|authenticat|organi[sz]ation|permission", re.I),
        "auth",
    ),
    (
        "message.overloaded",
        re.compile(r"overloaded|temporarily unavailable|internal server error", re.I),
        "model_service",
    ),
]

RETRYABLE_LAYERS: frozenset[str] = frozenset({"rate_limit", "model_service", "protocol"})
GENERIC_CODES = frozenset({"invalid_request_error", "invalid_argument", "error", "api_error", "unknown"})

_TRY_AGAIN = re.compile(r"try again in\s+([\d.]+)\s*(ms|s|sec|seconds?|m|min|minutes?)\b", re.I)
# RESOURCE_EXHAUSTED is usually a per-minute limit ("check quota" is boilerplate); these mean an allowance is gone
_HARD_QUOTA = re.compile(r"per ?day|daily|billing|current quota|credits?", re.I)


def status_layer(status: int) -> tuple[ErrorLayer, str]:
    """Fallback layer from the HTTP status alone."""
    if status == 429:
        return "rate_limit", "status.429"
    if status == 402:
        return "quota", "status.402"
    if status in (401, 403, 407):
        return "auth", f"status.{status}"
    if status == 413:
        return "validation", "status.413"
    if status >= 500 or status in (408, 425):
        return "model_service", "status.5xx" if status >= 500 else f"status.{status}"
    return "validation", "status.4xx"


def retry_after(
    headers: Iterable[tuple[str, str]] | Mapping[str, Any] | None,
    now: float | None = None,
) -> float | None:
    """Seconds to wait, from `retry-after-ms` or `retry-after` (seconds or an HTTP date)."""
    h = lower_headers(headers)
    ms = h.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = h.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    ref = now
    if "date" in h:
        try:
            ref = email.utils.parsedate_to_datetime(h["date"]).timestamp()
        except (TypeError, ValueError, IndexError):
            pass
    if ref is None:
        return None
    return max(0.0, when.timestamp() - ref)


def _retry_from_message(message: str | None) -> float | None:
    if message:
        m = _TRY_AGAIN.search(message)
        if m:
            value, unit = float(m.group(1)), m.group(2).lower()
            if unit == "ms":
                return value / 1000.0
            if unit.startswith("m"):
                return value * 60.0
            return value
    return None


def error_object(body: Any) -> dict | str | None:
    """The error object of a body: `{"error": {...}}`, `{"error": "text"}` or a bare error object."""
    if isinstance(body, list) and body:  # streams of JSON arrays may wrap errors in the array
        body = body[0]
    if not isinstance(body, dict):
        return None
    err = body.get("error", body)
    return err if isinstance(err, dict | str) else None


def error_fields(body: Any) -> tuple[str | None, str | None, Any]:
    """(code, message, details) of the error in a body, whatever the provider's error shape."""
    err = error_object(body)
    if isinstance(err, str):
        return None, err, None
    if not isinstance(err, dict):
        return None, None, None
    code = None
    for key in ("code", "type", "status"):
        value = err.get(key)
        if isinstance(value, str) and value:
            code = value
            # the specific value may sit in "type" or "code" beside a generic one: prefer the specific
            if value.lower() not in GENERIC_CODES:
                break
    message = err.get("message") if isinstance(err.get("message"), str) else None
    return code, message, err.get("details")


def classify_error(
    status: int | None = None,
    body: Any = None,
    headers: Iterable[tuple[str, str]] | Mapping[str, Any] | None = None,
    now: float | None = None,
    rule_prefix: str = "",
) -> ErrorInfo:
    """Layer, retryability and Retry-After of one error (HTTP body, stream event or WS frame)."""
    code, message, _details = error_fields(body)
    h = lower_headers(headers)
    err = error_object(body)
    hints = protocol_error_hints(err if isinstance(err, dict) else {}, h)
    layer: ErrorLayer | None = None
    rule = ""
    if code and code.lower() in ERROR_CODES:
        layer, rule = ERROR_CODES[code.lower()], f"code.{code.lower()}"
        if code.lower() == "resource_exhausted" and (hints.quota_exhausted or _HARD_QUOTA.search(message or "")):
            layer, rule = "quota", "code.resource_exhausted-quota"
    if message and (layer is None or code is None or code.lower() in GENERIC_CODES):
        for rule_id, rx, msg_layer in MESSAGE_RULES:
            if rx.search(message):
                # a message can only refine generic codes or fill in a missing layer
                if layer is None or msg_layer in ("context_length", "quota"):
                    layer, rule = msg_layer, rule_id
                break
    if layer is None and status is not None and status >= 400:
        layer, rule = status_layer(status)
    if layer is None:
        layer, rule = "model_service", "fallback.unclassified"
    retryable = layer in RETRYABLE_LAYERS
    should_retry = h.get("x-should-retry")
    if should_retry in ("true", "false"):
        retryable = should_retry == "true"
    if hints.retryable is not None:
        retryable = hints.retryable
    wait = retry_after(h, now)
    if wait is None:
        wait = hints.retry_after_s
    if wait is None:
        wait = _retry_from_message(message)
    return ErrorInfo(
        layer=layer,
        code=code,
        message=message,
        http_status=status,
        retryable=retryable,
        retry_after_s=wait,
        rule_id=rule_prefix + rule,
    )


def protocol_error_hints(error: dict[str, Any], headers: dict[str, str]) -> ErrorHints:
    """What the registered protocols read in this error (none before the registry has loaded)."""
    return _hint_source[0](error, headers) if _hint_source else ErrorHints()


def protocol_error(message: str, rule_id: str, status: int | None = None) -> ErrorInfo:
    """A parse/stream problem on our side of the wire: the bytes were not what the protocol promises."""
    return ErrorInfo(layer="protocol", message=message, http_status=status, retryable=True, rule_id=rule_id)


def transport_error(message: str) -> ErrorInfo:
    """The proxy saw no usable response (reset, timeout): the model service was unreachable."""
    return ErrorInfo(
        layer="model_service",
        code="transport",
        message=message,
        retryable=True,
        rule_id="transport.no-response",
    )


def parse_json_body(raw: bytes | str | None) -> Any:
    """JSON value of an error body, or None."""
    if raw is None:
        return None
    try:
        return loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
