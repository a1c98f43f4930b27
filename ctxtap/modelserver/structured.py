"""Answers for side requests that force a JSON schema (routers, classifiers, titles, checks).

Clients validate such answers (Gemini CLI's router parses `{"complexity_reasoning",
"complexity_score"}` with zod and falls back to its default model when that fails),
so the fake model answers with a value that satisfies the schema it was given: known
property names get a meaningful value, everything else the simplest valid one.
"""

from __future__ import annotations

from typing import Any

# Property name -> a plausible value for the basic read-only task (used when its type fits).
_KNOWN: dict[str, Any] = {
    "title": "Explore the demo repository",
    "reasoning": "The model gave a complete answer.",
    "next_speaker": "user",
    "complexity_reasoning": "A single read-only listing of the current directory.",
    "complexity_score": 10,
}
_MAX_DEPTH = 8


def requested_schema(family: str, body: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON schema the request forces on the answer, in each API's own field, or None.

    Gemini `generationConfig.responseJsonSchema`/`responseSchema`, Anthropic
    `output_format` (structured outputs), Responses `text.format`, Chat `response_format`.
    """
    schema: Any = None
    if family == "gemini":
        config = body.get("generationConfig") or {}
        if isinstance(config, dict):
            schema = config.get("responseJsonSchema") or config.get("responseSchema")
    elif family == "anthropic":
        fmt = body.get("output_format") or {}
        schema = fmt.get("schema") if isinstance(fmt, dict) and fmt.get("type") == "json_schema" else None
    elif family == "responses":
        fmt = (body.get("text") or {}).get("format") if isinstance(body.get("text"), dict) else None
        schema = fmt.get("schema") if isinstance(fmt, dict) and fmt.get("type") == "json_schema" else None
    elif family == "chat":
        fmt = body.get("response_format") or {}
        if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
            inner = fmt.get("json_schema") or {}
            schema = inner.get("schema") if isinstance(inner, dict) else None
    return schema if isinstance(schema, dict) else None


def _type(schema: dict[str, Any]) -> str | None:
    kind = schema.get("type")
    if isinstance(kind, list):  # ["string", "null"]
        kind = next((k for k in kind if k != "null"), None)
    if kind is None:
        if "properties" in schema:
            return "object"
        if "items" in schema:
            return "array"
    return kind.lower() if isinstance(kind, str) else None  # Gemini writes OBJECT, STRING, ...


def _fits(value: Any, kind: str | None) -> bool:
    if kind in ("integer", "number"):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "string":
        return isinstance(value, str)
    return kind is None


def example_for(schema: dict[str, Any], name: str | None = None, depth: int = 0) -> Any:
    """A value that satisfies SCHEMA (enums, const, min/max, required properties, nested objects)."""
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        options = schema.get(key)
        if isinstance(options, list) and options and isinstance(options[0], dict):
            return example_for(options[0], name, depth + 1)
    kind = _type(schema)
    if name in _KNOWN and _fits(_KNOWN[name], kind):
        value = _KNOWN[name]
        if kind in ("integer", "number"):
            if "minimum" in schema:
                value = max(value, schema["minimum"])
            if "maximum" in schema:
                value = min(value, schema["maximum"])
        return value
    if kind == "object" and depth < _MAX_DEPTH:
        props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        return {key: example_for(sub if isinstance(sub, dict) else {}, key, depth + 1) for key, sub in props.items()}
    if kind == "array":
        items = schema.get("items") if isinstance(schema.get("items"), dict) else {}
        return [example_for(items, name, depth + 1) for _ in range(int(schema.get("minItems", 0) or 0))]
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0))
        return int(low) + (1 if "exclusiveMinimum" in schema and "minimum" not in schema else 0)
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return "ok"
