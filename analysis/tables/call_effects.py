"""`call_effects` and `call_effect_paths`: the effect class of every proposed tool call, and the paths it names.

The classifier is `analysis/threads/effectclass.py` (the tool's name, offered schema and description,
its arguments; shell commands parsed with tree-sitter's Bash grammar). Paths are resolved against the
working directory `record` kept in the manifest (else the effect receipt's workspace root); the
`effect_calls` view joins the proposed writes to the receipt.
"""

from __future__ import annotations

import json
from typing import Any

from ctxtap.analysis.tables.base import B, BuildContext, Columns, Row, S, Table
from ctxtap.analysis.threads.effectclass import CallEffect, classify_call, tool_description
from ctxtap.analysis.threads.toolcheck import offered_schemas

COLUMNS: Columns = [
    ("session_id", S, "Session."),
    ("request_id", S, "Request whose response proposed the call."),
    ("call_id", S, "Call id (tool_calls.call_id)."),
    ("name", S, "Tool name."),
    ("effect_class", S, "Primary class: the first of `destructive`, `write`, `network`, `execute`, `read` the call "
                        "has; `unknown` when nothing in the call says what it does (never guessed)."),
    ("effect_classes", S, "Every class that applies, comma-separated (`read,write`): a shell command's simple "
                          "commands and redirections each add theirs. `execute` means running code whose effects "
                          "its name does not tell (interpreters, build tools, scripts, unlisted programs)."),
    ("effect_rules", S, "The rules that decided, comma-separated (`tool.shell-command`, `shell.destructive.rm`, "
                        "`shell.redirect-write`, `name.write`, `arg.url`, `arg.content-with-path`, `patch.add-file`, "
                        "`description.read`, `shell.wrapper.sudo`, `shell.unparsed`, ...)."),
    ("workspace_scope", S, "Where the named paths are: `inside` the working directory, `outside` it, `mixed`, "
                           "`unknown` (a path could not be placed: a `$VAR`, or no working directory recorded), "
                           "`none` (no path named)."),
    ("parse_status", S, "`parsed` (a shell command the parser read), `unparsed` (it could not: see parse_detail; "
                        "the call is then only `execute`), `not_shell`."),
    ("parse_detail", S, "Why a shell command is unparsed (the syntax error and where)."),
    ("commands", S, "Each simple command of a shell command with its classes, `; `-separated "
                    "(`cat:read; rm:destructive; git push:network`)."),
    ("paths_json", S, "Paths the call names, as JSON: [{path, access, inside}] (access: read, write, destructive, "
                   "execute, cwd, unknown)."),
    ("writes_inside", B, "The call proposes a write or deletion of a path inside the working directory."),
    ("writes_outside", B, "The call proposes a write or deletion of a path outside the working directory."),
]

PATH_COLUMNS: Columns = [
    ("session_id", S, "Session."),
    ("request_id", S, "Request whose response proposed the call."),
    ("call_id", S, "Call id."),
    ("name", S, "Tool name."),
    ("path", S, "The path as the call names it (a shell word, a redirection target, an argument's value)."),
    ("access", S, "`read`, `write`, `destructive`, `execute` (a script run), `cwd` (the directory a shell tool "
                  "runs in), `unknown` (a path argument of a tool whose class is unknown)."),
    ("rule", S, "Rule that found the path (`shell.redirect-write`, `arg.path.file_path`, `patch.delete-file`, ...)."),
    ("resolved_path", S, "Absolute path after `~`, `..`, `cd` and the working directory (null when it cannot be "
                         "resolved: a `$VAR`, another user's `~`, no working directory recorded); personal data."),
    ("inside_workspace", B, "Inside the working directory (null when unknown or a device such as /dev/null)."),
    ("is_glob", B, "The path holds a glob (`*`, `?`, `[`): the `effect_calls` view matches it as a pattern."),
]

_CACHE: dict[tuple, CallEffect] = {}
_MAX_CACHE = 65_536


def _workspace(ctx: BuildContext) -> tuple[str | None, str | None]:
    env = ctx.capture.manifest.environment or {}
    cwd, home = env.get("cwd"), env.get("home")
    if not cwd:
        roots = ctx.capture.effect_roots().to_pylist()
        cwd = next((r["root"] for r in roots if r.get("root_kind") == "workspace"), None)
    return (cwd if isinstance(cwd, str) else None), (home if isinstance(home, str) else None)


def _definition(text: str, name: str) -> tuple[dict | None, str | None]:
    """(schema, description) of `name` in one offered definition's JSON text."""
    try:
        tool: Any = json.loads(text)
    except ValueError:
        return None, None
    if not isinstance(tool, dict):
        return None, None
    tools = [t for t in tool.get("tools") or [] if isinstance(t, dict)] if tool.get("type") == "namespace" else [tool]
    for t in tools:
        holder = t.get("toolSpec") if isinstance(t.get("toolSpec"), dict) else t.get("function") \
            if isinstance(t.get("function"), dict) else t
        if holder.get("name") not in (name, None) and len(tools) > 1:
            continue
        schema = holder.get("input_schema") or holder.get("parameters") or holder.get("parametersJsonSchema")
        if isinstance(holder.get("inputSchema"), dict):
            schema = holder["inputSchema"].get("json", holder["inputSchema"])
        return (schema if isinstance(schema, dict) else None), tool_description(holder)
    return None, None


def effect_of(name: str | None, arguments: str | None, definition: tuple[str, str] | None,
              workspace: str | None, home: str | None) -> CallEffect:
    """`classify_call`, remembered by its inputs (a live view rebuilds the tables after every update)."""
    key = (name, arguments, definition[0] if definition else None, workspace, home)
    found = _CACHE.get(key)
    if found is None:
        schema, description = _definition(definition[1], name or "") if definition else (None, None)
        if len(_CACHE) >= _MAX_CACHE:
            _CACHE.clear()
        found = _CACHE[key] = classify_call(name, arguments, schema=schema, description=description,
                                            workspace=workspace, home=home)
    return found


def _classified(ctx: BuildContext) -> list[tuple[Row, CallEffect]]:
    if "_call_effects" in ctx.tables:
        return ctx.tables["_call_effects"]  # type: ignore[return-value]
    workspace, home = _workspace(ctx)
    recs = {rec.request_id: rec for rec in ctx.recs}
    offered: dict[str, dict[str, str | None]] = {}
    out = []
    for row in ctx.tables["tool_calls"]:
        if row["request_id"] is None:
            continue
        rec = recs.get(row["request_id"])
        definition = None
        if rec is not None:
            if row["request_id"] not in offered:
                offered[row["request_id"]] = offered_schemas(rec.call, rec.blocks, ctx.store)
            content_hash = offered[row["request_id"]].get(row["name"])
            if content_hash and content_hash in ctx.store.content:
                definition = (content_hash, ctx.store.content[content_hash]["text"])
        out.append((row, effect_of(row["name"], row["arguments"], definition, workspace, home)))
    ctx.tables["_call_effects"] = out  # type: ignore[assignment]
    return out


def build(ctx: BuildContext) -> list[Row]:
    rows = []
    for call, e in _classified(ctx):
        writes = [p for p in e.paths if p.access in ("write", "destructive") and not p.device]
        rows.append({
            "session_id": call["session_id"], "request_id": call["request_id"], "call_id": call["call_id"],
            "name": call["name"], "effect_class": e.primary, "effect_classes": ",".join(
                c for c in ("read", "write", "execute", "network", "destructive") if c in e.classes) or "unknown",
            "effect_rules": ",".join(e.rules) or None, "workspace_scope": e.scope,
            "parse_status": e.parse_status, "parse_detail": e.parse_detail,
            "commands": "; ".join(e.commands) or None,
            "paths_json": json.dumps([{"path": p.path, "access": p.access, "inside": p.inside} for p in e.paths])
            if e.paths else None,
            "writes_inside": any(p.inside is True for p in writes),
            "writes_outside": any(p.inside is False for p in writes),
        })
    return rows


def build_paths(ctx: BuildContext) -> list[Row]:
    rows = []
    for call, e in _classified(ctx):
        for p in e.paths:
            rows.append({
                "session_id": call["session_id"], "request_id": call["request_id"], "call_id": call["call_id"],
                "name": call["name"], "path": p.path, "access": p.access, "rule": p.rule,
                "resolved_path": p.resolved, "inside_workspace": None if p.device else p.inside,
                "is_glob": any(ch in p.path for ch in "*?["),
            })
    ctx.tables.pop("_call_effects", None)
    return rows


TABLES = [
    Table("call_effects", "the effect class of every proposed tool call (read, write, execute, network, "
          "destructive; unknown without evidence), with its rules and where its paths are", COLUMNS, build),
    Table("call_effect_paths", "one row per path a proposed tool call names, with its access and whether it "
          "is inside the working directory", PATH_COLUMNS, build_paths),
]
