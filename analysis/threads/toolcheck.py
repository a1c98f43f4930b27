"""Checked tool calls: each proposed call against the tools its own request offered.

A model can call a tool the request never offered, or pass arguments its schema refuses; a
client then answers with an error the model reads as the tool failing. Those are told apart from
the tool's own outcome: `unknown_tool`, `invalid_arguments` (JSON Schema validation with
`jsonschema`, naming the failing path), then from the result `denied`, `timed_out`, `error`, `ok`,
or `no_result`. A request whose input could not be fully resolved (an unresolved Responses
continuation) is `unchecked` rather than guessed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from ctxtap.analysis.blocks.blockstore import BlockStore, RequestBlocks
from ctxtap.analysis.parsing.models import ModelCall, ToolCall

TIMED_OUT = re.compile(
    r"\btimed out\b|\btime(?:d)?[- ]?out after\b|\bTimeoutError\b|\bdeadline exceeded\b|"
    r"\bexceeded (?:the )?(?:time|timeout)\b|\bcommand timed out\b", re.I)
_MISSING = object()
_VALIDATORS: dict[str, Draft202012Validator | None] = {}
_MAX_VALIDATORS = 4096
_SCAN_LIMIT = 4096  # positions searched for a request's tool definitions


def _schema_of(tool: dict) -> tuple[str | None, Any]:
    """(name, JSON Schema or None) of one offered tool, whichever protocol's shape it has."""
    if "toolSpec" in tool:  # Bedrock Converse
        spec = tool["toolSpec"] if isinstance(tool["toolSpec"], dict) else {}
        schema = spec.get("inputSchema")
        return spec.get("name"), schema.get("json") if isinstance(schema, dict) else None
    function = tool.get("function")
    if isinstance(function, dict):  # Chat Completions, Ollama
        return function.get("name"), function.get("parameters")
    schema = tool.get("input_schema", tool.get("parametersJsonSchema", tool.get("parameters", _MISSING)))
    if schema is _MISSING:
        return tool.get("name"), None
    if "parametersJsonSchema" not in tool and "parameters" in tool and "input_schema" not in tool:
        schema = _lower_types(schema)  # Gemini's OpenAPI subset spells types OBJECT, STRING, ...
    return tool.get("name"), schema


def _lower_types(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: (v.lower() if k == "type" and isinstance(v, str) else _lower_types(v)) for k, v in schema.items()}
    if isinstance(schema, list):
        return [_lower_types(v) for v in schema]
    return schema


def _definitions(text: str) -> Iterator[tuple[str, Any]]:
    try:
        tool = json.loads(text)
    except ValueError:
        return
    if not isinstance(tool, dict):
        return
    if tool.get("type") == "namespace":
        for inner in tool.get("tools") or []:
            if isinstance(inner, dict):
                yield from ((n, s) for n, s in [_schema_of(inner)] if n)
        return
    name, schema = _schema_of(tool)
    if name:
        yield name, schema


def offered_schemas(call: ModelCall, rb: RequestBlocks, store: BlockStore) -> dict[str, str | None]:
    """Tool name -> content hash of its definition (schemas are read once per distinct definition)."""
    wanted = call.request.n_tools
    found: dict[str, str | None] = {}
    seen = 0
    for position, occ_id in enumerate(rb.occurrences):
        if seen >= wanted or position >= _SCAN_LIMIT:
            break
        occ = store.occurrences[occ_id]
        if occ["kind"] != "tool_definition":
            continue
        seen += 1
        found[occ["tool_name"] or f"#{position}"] = occ["content_hash"]
    return found


def _validator(content_hash: str, text: str, name: str) -> Draft202012Validator | None:
    key = f"{content_hash}:{name}"
    if key in _VALIDATORS:
        return _VALIDATORS[key]
    if len(_VALIDATORS) >= _MAX_VALIDATORS:
        _VALIDATORS.clear()
    validator = None
    for tool_name, schema in _definitions(text):
        if tool_name == name and isinstance(schema, dict):
            try:
                Draft202012Validator.check_schema(schema)
                validator = Draft202012Validator(schema)
            except SchemaError:
                validator = None  # a schema the validator cannot read is not held against the call
    _VALIDATORS[key] = validator
    return validator


def check_call(tc: ToolCall, call: ModelCall, offered: dict[str, str | None], store: BlockStore,
               result_status: str, result_text: str | None) -> tuple[str, str | None]:
    """(check_status, check_detail) of one proposed call."""
    names = set(call.request.tool_names)
    if not call.request.effective_input_complete:
        return "unchecked", "the request's input could not be fully resolved"
    if tc.kind != "server" and tc.name not in names:
        offered_list = ", ".join(sorted(names)[:8]) + (", ..." if len(names) > 8 else "")
        return "unknown_tool", f"{tc.name} was not offered in this request (offered: {offered_list or 'none'})"
    detail = _argument_problem(tc, offered, store)
    if detail:
        return "invalid_arguments", detail
    return _outcome(result_status, result_text)


def _argument_problem(tc: ToolCall, offered: dict[str, str | None], store: BlockStore) -> str | None:
    if tc.kind != "function":
        return None
    content_hash = _hash_for(tc.name, offered, store)
    if content_hash is None:
        return None
    validator = _validator(content_hash, store.content[content_hash]["text"], tc.name)
    if validator is None:
        return None
    try:
        arguments = json.loads(tc.arguments) if tc.arguments.strip() else {}
    except ValueError as exc:
        return f"arguments are not JSON ({exc.msg} at character {exc.pos})"
    error = next(iter(sorted(validator.iter_errors(arguments), key=lambda e: list(e.absolute_path))), None)
    if error is None:
        return None
    where = "/" + "/".join(str(p) for p in error.absolute_path)
    return f"{where}: {error.message}"


def _hash_for(name: str, offered: dict[str, str | None], store: BlockStore) -> str | None:
    if name in offered:
        return offered[name]
    for content_hash in offered.values():  # a namespace holds its tools under its own name
        if content_hash and f'"{name}"' in store.content[content_hash]["text"]:
            return content_hash
    return None


def _outcome(result_status: str, result_text: str | None) -> tuple[str, str | None]:
    if result_status in ("missing", "unknown"):
        return "no_result", "no result was sent" if result_status == "missing" else "empty result, no signal"
    if result_status == "denied":
        return "denied", None
    if result_status == "error":
        if result_text and TIMED_OUT.search(result_text[:4096]):
            return "timed_out", "the result says the call timed out"
        return "error", None
    return "ok", None
