"""Side requests that force a JSON schema get an answer that satisfies it (routers, classifiers, checks)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from ctxtap.modelserver import ModelServer
from ctxtap.modelserver.structured import example_for, requested_schema
from tests.modelserver.model_client import post

# Gemini CLI 0.61's model router (NumericalClassifierStrategy), as recorded by the real-CLI tier.
ROUTER_SCHEMA = {
    "type": "OBJECT",
    "properties": {
        "complexity_reasoning": {"type": "STRING", "description": "Brief explanation for the score."},
        "complexity_score": {"type": "INTEGER", "description": "Complexity score from 1-100."},
    },
    "required": ["complexity_reasoning", "complexity_score"],
}


@pytest.fixture
def srv() -> Iterator[ModelServer]:
    with ModelServer() as server:
        yield server


def test_gemini_router_gets_its_complexity_json(srv: ModelServer) -> None:
    body = {
        "systemInstruction": {"parts": [{"text": "You are a specialized Task Routing AI."}], "role": "user"},
        "contents": [{"role": "user", "parts": [{"text": "list the directory"}]}],
        "generationConfig": {"responseMimeType": "application/json", "responseJsonSchema": ROUTER_SCHEMA},
    }
    status, _, raw = post(srv, "/v1beta/models/gemini-3.5-flash-lite:generateContent", body)
    assert status == 200
    answer = json.loads(json.loads(raw)["candidates"][0]["content"]["parts"][0]["text"])
    assert set(answer) == {"complexity_reasoning", "complexity_score"}
    assert isinstance(answer["complexity_score"], int) and 1 <= answer["complexity_score"] <= 100
    assert isinstance(answer["complexity_reasoning"], str) and answer["complexity_reasoning"]
    assert srv.exchanges[-1].kind == "side"


def test_gemini_next_speaker_check_still_answers_user(srv: ModelServer) -> None:
    schema = {"type": "object", "properties": {"reasoning": {"type": "string"},
                                               "next_speaker": {"type": "string", "enum": ["user", "model"]}},
              "required": ["reasoning", "next_speaker"]}
    body = {"contents": [{"role": "user", "parts": [{"text": "who speaks next?"}]}],
            "generationConfig": {"responseMimeType": "application/json", "responseJsonSchema": schema}}
    raw = post(srv, "/v1beta/models/gemini-2.5-flash:generateContent", body)[2]
    answer = json.loads(json.loads(raw)["candidates"][0]["content"]["parts"][0]["text"])
    assert answer["next_speaker"] == "user" and answer["reasoning"]


def test_chat_response_format_json_schema(srv: ModelServer) -> None:
    schema = {"type": "object", "properties": {"title": {"type": "string"}, "labels": {
        "type": "array", "items": {"type": "string", "enum": ["bug", "feature"]}, "minItems": 1}},
        "required": ["title", "labels"]}
    body = {"model": "kimi-k2", "messages": [{"role": "user", "content": "classify"}],
            "response_format": {"type": "json_schema", "json_schema": {"name": "c", "schema": schema}}}
    raw = post(srv, "/v1/chat/completions", body)[2]
    answer = json.loads(json.loads(raw)["choices"][0]["message"]["content"])
    assert answer == {"title": "Explore the demo repository", "labels": ["bug"]}


def test_requests_with_tools_are_not_side_requests(srv: ModelServer) -> None:
    """A forced schema never turns the main tool loop into a canned answer."""
    body = {"model": "m", "messages": [{"role": "user", "content": "list"}],
            "tools": [{"type": "function", "function": {"name": "bash", "parameters": {
                "type": "object", "properties": {"command": {"type": "string"}}}}}],
            "response_format": {"type": "json_schema", "json_schema": {"schema": ROUTER_SCHEMA}}}
    message = json.loads(post(srv, "/v1/chat/completions", body)[2])["choices"][0]["message"]
    assert message["tool_calls"] and srv.exchanges[-1].kind == "tools"


@pytest.mark.parametrize(("family", "body", "found"), [
    ("gemini", {"generationConfig": {"responseSchema": {"type": "STRING"}}}, {"type": "STRING"}),
    ("anthropic", {"output_format": {"type": "json_schema", "schema": {"type": "object"}}}, {"type": "object"}),
    ("responses", {"text": {"format": {"type": "json_schema", "name": "x", "schema": {"type": "object"}}}},
     {"type": "object"}),
    ("responses", {"text": {"verbosity": "low"}}, None),
    ("chat", {"response_format": {"type": "json_object"}}, None),
])
def test_requested_schema_per_api(family: str, body: dict[str, Any], found: dict[str, Any] | None) -> None:
    assert requested_schema(family, body) == found


def test_example_values_satisfy_their_schema() -> None:
    schema = {
        "type": "object",
        "properties": {
            "score": {"type": "integer", "minimum": 5, "maximum": 9},
            "complexity_score": {"type": "integer", "minimum": 50},
            "ratio": {"type": "number", "exclusiveMinimum": 0},
            "mode": {"enum": ["fast", "slow"]},
            "fixed": {"const": 3},
            "flag": {"type": "boolean"},
            "maybe": {"type": ["string", "null"]},
            "choice": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
            "nested": {"properties": {"items": {"type": "array", "items": {"type": "integer"}, "minItems": 2}}},
        },
    }
    assert example_for(schema) == {
        "score": 5, "complexity_score": 50, "ratio": 1, "mode": "fast", "fixed": 3, "flag": False,
        "maybe": "ok", "choice": 0, "nested": {"items": [0, 0]},
    }
    assert example_for({"type": "object", "properties": {"a": {"$ref": "#/x"}}}) == {"a": "ok"}
