"""The content-addressed block tables: each distinct text once, each placement once, requests as runs.

`block_content` holds each distinct block once (text and token estimate); `block_occurrences`
each distinct placement (path and attributes); `block_segments` the sections of each placement; `request_block_runs` maps a request's positions
onto ranges of occurrences, so a request that resends its predecessor's history costs one run,
not one row per block; `request_breakpoints` the cache breakpoints per request. The `blocks`
view expands the runs.
"""

from __future__ import annotations

from ctxtap.analysis.rules.evidence import evidence_kind
from ctxtap.analysis.tables.base import I64, B, BuildContext, Columns, Row, S, Table

BLOCK_CONTENT: Columns = [
    ("content_hash", S, "SHA-256 of the block's canonical content (cache markers excluded)."),
    ("kind", S, "Block kind (tool_definition, instruction_text, message_text, tool_call, tool_result, reasoning, image, ...)."),
    ("bytes", I64, "UTF-8 size of the text."),
    ("tokens_estimated", I64, "tiktoken estimate of the text (tokenised once per distinct content)."),
    ("text", S, "The block's text as parsed (credential-redacted; binary replaced by placeholders)."),
]

BLOCK_OCCURRENCES: Columns = [
    ("occurrence_id", I64, "Id of a distinct (path, content, attributes) placement, unique within the capture."),
    ("content_hash", S, "Content in block_content."),
    ("path", S, "Position path in the request body (`tools[3]`, `system[1]`, `messages[4].content[0]`, `input[7]`)."),
    ("kind", S, "Block kind."),
    ("wire_type", S, "The protocol's own type (`tool_result`, `function_call_output`, `functionResponse`, ...)."),
    ("role", S, "Protocol role: system, developer, user, assistant, tool."),
    ("source", S, "Business source: platform_rules, tool_catalogue, plugin_catalogue, project_instructions, runtime_environment, system_reminder, user_task, assistant_output, tool_call, tool_result, summary, unknown."),
    ("authority", S, "Instruction authority: platform, project, user, data."),
    ("scope", S, "global, repository, directory, session, turn."),
    ("lifetime", S, "client_version, project, session, turn."),
    ("content_type", S, "instruction or data."),
    ("rule_id", S, "Attribution rule that set source..content_type."),
    ("tool_name", S, "Tool name for tool definitions, calls and results."),
    ("call_id", S, "Call id linking a tool call and its result."),
    ("is_error", B, "Tool result flagged as an error by the client."),
    ("first_request_id", S, "First request that carried this occurrence."),
]

REQUEST_BLOCK_RUNS: Columns = [
    ("request_id", S, "Request."),
    ("position_start", I64, "First block position covered by the run."),
    ("n", I64, "Number of consecutive positions."),
    ("occurrence_start", I64, "Occurrence id of the first position; position p maps to occurrence_start + (p - position_start)."),
]

BLOCK_SEGMENTS: Columns = [
    ("occurrence_id", I64, "The occurrence (block placement) the segment belongs to."),
    ("segment_index", I64, "0-based order of the segment in its block."),
    ("byte_start", I64, "UTF-8 byte offset of the segment in the block's text."),
    ("byte_end", I64, "End offset (exclusive); a block's segments tile its text."),
    ("bytes", I64, "byte_end - byte_start."),
    ("tokens_estimated", I64, "The block's estimate shared out by bytes (a block's segments add up to it)."),
    ("source", S, "Business source of the segment (as block_occurrences.source, never `mixed`)."),
    ("authority", S, "Instruction authority."),
    ("scope", S, "Scope."),
    ("lifetime", S, "Lifetime."),
    ("content_type", S, "instruction or data."),
    ("rule_id", S, "Rule or detector that read the segment (`detect.environment-section`, `kimi.system-prompt`...)."),
    ("label", S, "The heading or tag that starts the segment, if any (`Environment`, `system-reminder`)."),
    ("evidence", S, "What the label rests on, from rule_id: `client-rule` (a client's own rule), `recorded-fact` "
                    "(a line states, as its value, a fact `record` kept of the machine: cwd, user, host, date, git "
                    "branch...), `argv` (the task the run was given, found verbatim; the template around it; a canned "
                    "turn before it), `pattern` (a detector or a client-independent text pattern), `structure` (the block's kind on the wire), "
                    "`position` (where the text sits: system text, a user's plain text), `unattributed`."),
]

REQUEST_BREAKPOINTS: Columns = [
    ("request_id", S, "Request."),
    ("position", I64, "Position of a block carrying a cache_control breakpoint in this request."),
    ("cache_breakpoint", S, "`ephemeral`, `5m` or `1h`."),
]


def _content(ctx: BuildContext) -> list[Row]:
    return list(ctx.store.content.values())


def _occurrences(ctx: BuildContext) -> list[Row]:
    return ctx.store.occurrences


def _segments(ctx: BuildContext) -> list[Row]:
    rows = []
    for row, tokens in zip(ctx.store.segments, ctx.store.segment_tokens(), strict=True):
        rows.append({**row, "bytes": row["byte_end"] - row["byte_start"], "tokens_estimated": tokens,
                     "evidence": evidence_kind(row["rule_id"])})
    return rows


def _runs(ctx: BuildContext) -> list[Row]:
    return [
        {"request_id": rec.request_id, "position_start": s, "n": n, "occurrence_start": o}
        for rec in ctx.recs for s, n, o in rec.blocks.runs
    ]


def _breakpoints(ctx: BuildContext) -> list[Row]:
    return [
        {"request_id": rec.request_id, "position": pos, "cache_breakpoint": value}
        for rec in ctx.recs for pos, value in rec.blocks.breakpoints
    ]


TABLES = [
    Table("block_content", "each distinct block text once, with its token estimate", BLOCK_CONTENT, _content),
    Table("block_occurrences", "each distinct placement of a block (path and six attributes)", BLOCK_OCCURRENCES,
          _occurrences),
    Table("block_segments", "the segments of each occurrence: sections with attributes of their own",
          BLOCK_SEGMENTS, _segments),
    Table("request_block_runs", "request positions as runs of occurrences", REQUEST_BLOCK_RUNS, _runs),
    Table("request_breakpoints", "cache breakpoints per request and position", REQUEST_BREAKPOINTS, _breakpoints),
]
