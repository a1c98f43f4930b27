"""Which hosts carry model calls: exact names, regional names, and look-alikes that must not count."""

from __future__ import annotations

import pytest

from ctxtap.capture.classify import classify_flow, provider_for_host


@pytest.mark.parametrize(("host", "provider"), [
    ("api.anthropic.com", "anthropic"),
    ("myresource.openai.azure.com", "azure-openai"),
    ("us-central1-aiplatform.googleapis.com", "google-vertex"),
    # Bedrock names its region in the middle of the host: the old `.bedrock-runtime.amazonaws.com`
    # suffix matched no real host, so Claude Code on Bedrock was recorded as metadata only
    ("bedrock-runtime.us-east-1.amazonaws.com", "aws-bedrock"),
    ("bedrock-runtime-fips.us-gov-west-1.amazonaws.com", "aws-bedrock"),
    ("bedrock-runtime.cn-north-1.amazonaws.com.cn", "aws-bedrock"),
    ("vpce-0a1b2c-d3e4.bedrock-runtime.eu-west-1.vpce.amazonaws.com", "aws-bedrock"),
    ("BEDROCK-RUNTIME.US-EAST-1.AMAZONAWS.COM.", "aws-bedrock"),
    ("bedrock.us-east-1.amazonaws.com", None),  # the control plane: model lists, not calls
    ("s3.us-east-1.amazonaws.com", None),
    ("notbedrock-runtime.us-east-1.amazonaws.com", None),
    ("bedrock-runtime.us-east-1.amazonaws.com.example.net", None),
    ("anthropic.com.example.net", None),
])
def test_provider_for_host(host: str, provider: str | None) -> None:
    assert provider_for_host(host) == provider


def test_a_bedrock_call_is_recorded_in_full_and_a_model_list_is_not() -> None:
    host = "bedrock-runtime.us-west-2.amazonaws.com"
    for op in ("invoke", "invoke-with-response-stream", "converse", "converse-stream"):
        flow = classify_flow(host, f"/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/{op}")
        assert flow.is_model and flow.provider == "aws-bedrock" and flow.endpoint == "generate", op
    assert not classify_flow(host, "/foundation-models", "GET").is_model


def test_claude_on_vertex_is_recorded_in_full():
    """`:streamRawPredict` named no model operation the table knew: Claude Code on Vertex AI was
    recorded as metadata only, its bodies gone."""
    base = "/v1/projects/p/locations/us-east5/publishers/anthropic/models"
    host = "us-east5-aiplatform.googleapis.com"
    for path, endpoint in ((f"{base}/claude-sonnet-4-5@20250929:streamRawPredict", "generate"),
                           (f"{base}/claude-haiku-4-5@20251001:rawPredict", "generate"),
                           (f"{base}/count-tokens:rawPredict", "count_tokens")):
        flow = classify_flow(host, path)
        assert flow.is_model and flow.provider == "google-vertex" and flow.endpoint == endpoint, path


@pytest.mark.parametrize(("host", "provider"), [
    ("alice.services.ai.azure.com", "azure-foundry"),
    ("claude.googleapis.com", "anthropic-google-cloud"),
    ("bedrock-mantle.us-east-1.api.aws", "aws-bedrock"),
    ("aws-external-anthropic.eu-west-1.api.aws", "anthropic-aws"),
    ("bedrock-mantle.us-east-1.api.aws.example.net", None),
    ("s3.us-east-1.api.aws", None),
])
def test_claude_codes_other_platforms_are_model_hosts(host: str, provider: str | None) -> None:
    """Each platform Claude Code 2.1 can send its Messages calls to (read off its binary): none was
    in the table, so those calls were recorded as metadata only."""
    assert provider_for_host(host) == provider
    if provider:
        flow = classify_flow(host, "/anthropic/v1/messages?beta=true")
        assert flow.is_model and flow.api == "messages"
