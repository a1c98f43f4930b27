"""`run_conditions`: one row per session — what the run was allowed and given, each with its evidence.

The rules of `analysis/rules/conditions.py` read the recorded command line (the manifest's `command`),
the recorded machine facts (`ctxtap record`: working directory, git commit, dirty work tree) and the
session's first main request (its text, its rules and its tool definitions). `ctxtap diff` and
`ctxtap experiment report` compare these columns and say which differ.
"""

from __future__ import annotations

from typing import Any

from ctxtap.analysis.rules import conditions as cond
from ctxtap.analysis.tables.base import I64, B, BuildContext, CallRec, Columns, Row, S, Table

COLUMNS: Columns = [
    ("session_id", S, "Session."),
    ("request_id", S, "The session's first main request with context blocks: rules, tools and the request's "
                      "statements are read from it."),
    ("request_number", I64, "Its #N in the session."),
    ("client", S, "Client."),
    ("client_version", S, "Client version (`unknown` when nothing states it)."),
    ("model", S, "Model the first main request asked for."),
    ("working_dir", S, "The run's working directory as `ctxtap record` kept it (personal data: `publish` leaves it "
                       "out and `push --pseudonymise` replaces it), else as the request states it (Codex's "
                       "`<cwd>`), else `unknown`."),
    ("working_dir_source", S, "Where working_dir was read: `manifest environment.cwd`, `request #N PATH`."),
    ("git_head", S, "Commit checked out when the run started (`ctxtap record`), else `unknown`."),
    ("git_branch", S, "Branch checked out when the run started, else `unknown`."),
    ("git_dirty", B, "The work tree had changes or untracked files when the run started (null: unknown, "
                     "e.g. not a repository, or not recorded by `ctxtap record`)."),
    ("sandbox", S, "Sandbox mode in the client's words (`read-only`, `workspace-write`, `danger-full-access`, "
                   "`none`, `container`, `on`), `unknown` without evidence."),
    ("sandbox_source", S, "Where sandbox was read: `command line: --sandbox read-only`, or the request, its "
                          "place, the words quoted and the rule (`codex.permissions-instructions`)."),
    ("approval", S, "Approval (permission) mode in the client's words (Codex `never`/`on-request`/...; Claude "
                    "Code `plan`/`acceptEdits`/`bypassPermissions`; Gemini CLI `auto_edit`/`yolo`), `unknown` "
                    "without evidence."),
    ("approval_source", S, "Where approval was read, as sandbox_source."),
    ("rules_digest", S, "Digest of the rules: the first main request's system and developer text blocks and any "
                        "block holding platform rules (not those that are all environment), whole, after dates, "
                        "times, ids, hashes, absolute paths and the recorded machine facts are masked: equal for "
                        "two runs of the same client version."),
    ("rules_blocks", I64, "Blocks the rules digest covers."),
    ("tools_digest", S, "Digest of the tool definitions offered (sorted by name), masked alike."),
    ("n_tools", I64, "Tools offered by the first main request."),
    ("tool_names", S, "Their names, comma-separated, sorted."),
    ("mcp_servers", S, "MCP servers offered, comma-separated, sorted (`none` when no tool comes from one)."),
    ("mcp_source", S, "What each server was read from (`tool name mcp__github__create_issue`, a Responses "
                      "`mcp` tool's server_label), `; `-separated."),
]

_SKIP_KINDS = ("tool_definition", "tool_call", "tool_result", "reasoning", "image")


def _first_requests(ctx: BuildContext) -> dict[str, tuple[dict[str, Any], CallRec]]:
    """Session -> (its requests row, its call) of the first main request with blocks (else the first with any)."""
    recs = {rec.request_id: rec for rec in ctx.recs}
    best: dict[str, tuple[tuple, dict[str, Any]]] = {}
    for row in ctx.tables["requests"]:
        if not row.get("n_blocks") or row["request_id"] not in recs:
            continue
        key = (row["thread_kind"] != "main", row["seq_in_session"])
        if row["session_id"] not in best or key < best[row["session_id"]][0]:
            best[row["session_id"]] = (key, row)
    return {sid: (row, recs[row["request_id"]]) for sid, (_, row) in best.items()}


def _texts(ctx: BuildContext, rec: CallRec, segments: dict[int, list[dict]], number: int):
    """(where, text) of the request's non-tool text blocks, and the texts of its rules blocks: the system and
    developer text, and any block with a platform_rules segment, whole (the segment reader may take a
    paragraph that states a date for environment in one run and not in another; masking does not vary)."""
    store = ctx.store
    texts: list[tuple[str, str]] = []
    rules: list[str] = []
    for occ_id in rec.blocks.occurrences:
        occ = store.occurrences[occ_id]
        if occ["kind"] in _SKIP_KINDS or occ["role"] == "assistant":
            continue
        text = store.content[occ["content_hash"]]["text"] or ""
        texts.append((f"request #{number} {occ['path']}", text))
        sources = {seg["source"] for seg in segments.get(occ_id, ())} or {occ["source"]}
        if sources == {"runtime_environment"}:
            continue  # a block that is all environment (Codex's <environment_context>) is no rule
        if occ["role"] in ("system", "developer") or "platform_rules" in sources:
            rules.append(text)
    return texts, rules


def _tools(ctx: BuildContext, rec: CallRec) -> list[tuple[str | None, str]]:
    store = ctx.store
    out = []
    for occ_id in rec.blocks.occurrences:
        occ = store.occurrences[occ_id]
        if occ["kind"] == "tool_definition":
            out.append((occ["tool_name"], store.content[occ["content_hash"]]["text"] or ""))
    return sorted(out, key=lambda t: (t[0] or "", t[1]))


def _cwd_from(texts: list[tuple[str, str]]) -> cond.Evidence | None:
    for where, text in texts:
        cwd = cond.stated_cwd(text)
        if cwd:
            return cond.Evidence(cwd.rstrip("/") or "/", where)
    return None


def build(ctx: BuildContext) -> list[Row]:
    manifest = ctx.capture.manifest
    env = manifest.environment or {}
    facts = [str(env[k]) for k in ("cwd", "home", "user", "host") if env.get(k)]
    command = cond.from_command(manifest.command)
    segments: dict[int, list[dict]] = {}
    for seg in ctx.store.segments:
        segments.setdefault(seg["occurrence_id"], []).append(seg)
    out = []
    for session_id, (row, rec) in sorted(_first_requests(ctx).items()):
        number = row["seq_in_session"] + 1
        texts, rules = _texts(ctx, rec, segments, number)
        stated = cond.from_texts(texts)
        sandbox, approval = cond.merge(command, stated, "sandbox"), cond.merge(command, stated, "approval")
        cwd = cond.Evidence(env["cwd"], "manifest environment.cwd") if env.get("cwd") else _cwd_from(texts)
        mask_facts = facts + ([cwd.value] if cwd else [])
        tools = _tools(ctx, rec)
        servers, evidence = cond.mcp_servers(tools)
        out.append({
            "session_id": session_id, "request_id": row["request_id"], "request_number": number,
            "client": row["client"], "client_version": row["client_version"] or cond.UNKNOWN, "model": row["model"],
            "working_dir": cwd.value if cwd else cond.UNKNOWN, "working_dir_source": cwd.source if cwd else None,
            "git_head": env.get("git_head") or cond.UNKNOWN, "git_branch": env.get("git_branch") or cond.UNKNOWN,
            "git_dirty": env.get("git_dirty"),
            "sandbox": sandbox.value, "sandbox_source": sandbox.source,
            "approval": approval.value, "approval_source": approval.source,
            "rules_digest": cond.digest(cond.mask(t, mask_facts) for t in rules), "rules_blocks": len(rules),
            "tools_digest": cond.digest(f"{name}\0{cond.mask(text, mask_facts)}" for name, text in tools),
            "n_tools": len(tools), "tool_names": ", ".join(sorted({n for n, _ in tools if n})) or None,
            "mcp_servers": ", ".join(servers) or "none", "mcp_source": "; ".join(evidence) or None,
        })
    return out


TABLE = Table("run_conditions", "one row per session: the run's conditions (client, sandbox and approval modes, "
              "repository state, rules and tool-schema digests, MCP servers), each with where it was read",
              COLUMNS, build)
