"""Unit tests for SSE framing, error classification and usage status rules."""

from __future__ import annotations

from ctxtap.analysis.parsing.errors import classify_error, retry_after
from ctxtap.analysis.parsing.models import TokenCount
from ctxtap.analysis.parsing.usage import derived
from ctxtap.analysis.protocols.anthropic import anthropic_usage
from ctxtap.analysis.protocols.chat_completions import chat_usage
from ctxtap.analysis.protocols.openai_responses import responses_usage
from ctxtap.wire.sse import parse_sse


def test_sse_framing():
    raw = b': comment\r\nevent: a\r\ndata: line1\r\ndata: line2\r\n\r\ndata:no-space\n\n\n\nid: 7\ndata: {"x":1}\n\n'
    stream = parse_sse(raw)
    assert stream.complete
    assert [(e.event, e.data, e.id) for e in stream.events] == [
        ("a", "line1\nline2", None),
        (None, "no-space", None),
        (None, '{"x":1}', "7"),
    ]


def test_sse_truncated_tail_is_kept_and_flagged():
    stream = parse_sse('data: one\n\ndata: {"partial": tr')
    assert not stream.complete
    assert [e.data for e in stream.events] == ["one", '{"partial": tr']
    assert parse_sse(None).complete is False
    assert parse_sse(b"").events == []


def test_retry_after_forms():
    assert retry_after([("Retry-After", "12")]) == 12.0
    assert retry_after([("retry-after-ms", "1500"), ("retry-after", "9")]) == 1.5
    dated = [("Retry-After", "Sun, 29 Nov 2026 19:23:00 GMT"), ("Date", "Sun, 29 Nov 2026 19:22:30 GMT")]
    assert retry_after(dated) == 30.0
    assert retry_after([("Retry-After", "Sun, 29 Nov 2026 19:23:00 GMT")], now=1795980150.0) == 30.0
    assert retry_after([("Retry-After", "soon")]) is None
    assert retry_after(None) is None


def test_error_layers_by_status_and_headers():
    assert classify_error(401).layer == "auth"
    assert classify_error(402).layer == "quota"
    assert classify_error(503).layer == "model_service"
    assert classify_error(422).layer == "validation"
    no_retry = classify_error(
        429, {"error": {"type": "rate_limit_error", "message": "x"}}, [("x-should-retry", "false")]
    )
    assert no_retry.layer == "rate_limit" and no_retry.retryable is False
    kimi = classify_error(
        429,
        {
            "error": {
                "message": "Your account is suspended, please check your billing",
                "type": "exceeded_current_quota_error",
            }
        },
    )
    assert kimi.layer == "quota"
    gemini_daily = classify_error(
        429,
        {
            "error": {
                "code": 429,
                "status": "RESOURCE_EXHAUSTED",
                "message": "Quota exceeded",
                "details": [
                    {
                        "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                        "violations": [{"quotaId": "GenerateRequestsPerDayPerProject"}],
                    }
                ],
            }
        },
    )
    assert gemini_daily.layer == "quota" and not gemini_daily.retryable


def test_derived_status_rules():
    a, b = TokenCount(value=10, status="reported"), TokenCount(value=3, status="reported")
    assert derived(a, b, sign=(1, -1)) == TokenCount(value=7, status="reported")
    assert derived(a, TokenCount(), sign=(1, -1)).status == "not_available"
    assert derived(a, TokenCount(), assume_zero=True) == TokenCount(value=10, status="estimated")
    assert derived(TokenCount(), b, assume_zero=True).status == "not_available"


def test_usage_never_silent_zero():
    assert anthropic_usage(None).input_total.status == "not_available"
    assert chat_usage({}).cache_semantics == "unknown"
    u = responses_usage({"input_tokens": 100})
    assert u.cache_read.status == "not_available" and u.cache_read.value is None
    assert u.input_uncached.status == "estimated"
    bad = chat_usage({"prompt_tokens": "many", "completion_tokens": 3.0})
    assert bad.input_total.status == "not_available"
    assert bad.output.value == 3
