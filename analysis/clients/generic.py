"""Client-independent rules: what a block's kind or text says whoever sent it.

They give an unseen client a sensible layout: structured blocks by their kind,
then text fallbacks (reminders, project files, environment facts, system text,
the user's task), and `generic.unknown` only when nothing can be inferred.
"""

from __future__ import annotations

import re

from ctxtap.analysis.blocks.blockscan import BlockKey
from ctxtap.analysis.blocks.drafts import BlockDraft
from ctxtap.analysis.clients.registry import Client
from ctxtap.analysis.clients.rules import (
    ASSISTANT,
    COMPACT_ENDPOINT,
    COMPACTION_TEXT,
    COUNT_ENDPOINT,
    ENVIRONMENT,
    GENERIC_PROBE,
    KIND,
    KIND_PLUGIN,
    PLATFORM,
    PLUGINS,
    REMINDER,
    SHAPE,
    SIDE_CALL,
    STRUCTURED_OUTPUT,
    SUMMARY,
    TEXT_GENERIC,
    TITLE,
    TOOL_CALL,
    TOOL_RESULT,
    TOOLS,
    UNKNOWN,
    USER_MEDIA,
    USER_TASK,
    Context,
    Facts,
    IdentityContext,
    IdentityStage,
    IdentityStep,
    PurposeRule,
    Rule,
    before_known_task,
    canned_before_task,
    canned_exchange_before_task,
    first_user_text,
    holds_known_task,
    info,
    is_date_reminder,
    is_reminder,
    kind_is,
    looks_like_environment,
    max_tokens_evidence,
    mentions_project_file,
    project_attrs,
    system_text,
    tools_evidence,
    user_context_part,
    user_text,
)
from ctxtap.analysis.parsing.models import PurposeInfo

# --- attribution -----------------------------------------------------------------------------


def is_mcp_tool(d: BlockDraft, _: Context) -> bool:
    return d.kind == "tool_definition" and (d.tool_name or "").startswith("mcp__")


RULES = (
    Rule("generic.mcp-tool", "MCP tool definitions come from a plugin/server catalogue", is_mcp_tool, PLUGINS,
         stage=KIND_PLUGIN),
    Rule("generic.tool-definition", "tool definitions are the client's tool catalogue", kind_is("tool_definition"),
         TOOLS, stage=KIND),
    Rule("generic.tool-call", "a call the model made, replayed as history", kind_is("tool_call"), TOOL_CALL,
         stage=KIND),
    Rule("generic.tool-result", "tool output is data, never an instruction", kind_is("tool_result"), TOOL_RESULT,
         stage=KIND),
    Rule("generic.reasoning", "replayed reasoning is the model's own output", kind_is("reasoning"), ASSISTANT,
         stage=KIND),
    Rule("generic.compaction-item", "provider compaction items summarise history", kind_is("compaction"),
         SUMMARY, stage=KIND),
    Rule("argv.task", "the user text holding the task the run was given (its command line or `import --prompt`): "
         "that span is the task, the text wrapped around it is read apart", holds_known_task, USER_TASK,
         stage=TEXT_GENERIC),
    Rule("argv.canned-exchange", "user text before the known task that a turn the client wrote answers: a "
         "canned example exchange, read by the detectors", canned_exchange_before_task, PLATFORM, stage=TEXT_GENERIC),
    Rule("argv.not-the-task", "user text before the known task: context the client added, unattributed unless a "
         "detector reads it", before_known_task, UNKNOWN, stage=TEXT_GENERIC),
    Rule("argv.canned-turn", "assistant text before the known task: the model had not answered yet, the client "
         "wrote it (a canned example exchange)", canned_before_task, PLATFORM, stage=TEXT_GENERIC),
    Rule("generic.date-reminder", "date-only `<system-reminder>`", is_date_reminder, ENVIRONMENT,
         stage=TEXT_GENERIC),
    Rule("generic.system-reminder", "`<system-reminder>` text", is_reminder, REMINDER, stage=TEXT_GENERIC),
    Rule("generic.project-file", "text quoting AGENTS.md / CLAUDE.md / GEMINI.md", mentions_project_file,
         project_attrs, stage=TEXT_GENERIC),
    Rule("generic.environment", "short text with cwd / OS / shell / date / git facts", looks_like_environment,
         ENVIRONMENT, stage=TEXT_GENERIC),
    Rule("generic.system-text", "system / developer text is platform rules", system_text, PLATFORM,
         stage=TEXT_GENERIC),
    Rule("generic.assistant-text", "assistant text is model output", lambda d, _: d.role == "assistant",
         ASSISTANT, stage=TEXT_GENERIC),
    Rule("generic.user-context-part", "before the task, a tag-wrapped user text or an earlier part of a message "
         "with several parts is context the client added: unknown unless a detector reads it",
         user_context_part, UNKNOWN, stage=TEXT_GENERIC),
    Rule("generic.first-user-text-task", "the first plain user text is the typed task", first_user_text,
         USER_TASK, stage=TEXT_GENERIC),
    Rule("generic.user-text-task", "later plain user text: a follow-up task", user_text, USER_TASK,
         stage=TEXT_GENERIC),
    Rule("generic.user-media", "images / documents in user messages are attachments",
         lambda d, _: d.role == "user" and d.kind in ("image", "document"), USER_MEDIA, stage=TEXT_GENERIC),
    Rule("generic.unknown", "nothing could be inferred", lambda d, _: True, UNKNOWN, stage=TEXT_GENERIC),
)

# --- purpose -----------------------------------------------------------------------------------


def count_tokens(f: Facts) -> PurposeInfo | None:
    if f.endpoint == "count_tokens":
        return info("count_tokens", "endpoint.count-tokens", "endpoint=count_tokens")
    return None


def compact_endpoint(f: Facts) -> PurposeInfo | None:
    if f.endpoint == "compact":
        return info("compaction", "endpoint.compact", "endpoint=/responses/compact")
    return None


def compaction_text(f: Facts) -> PurposeInfo | None:
    block = f.block(lambda k: k.rule_id in f.compaction_rules)
    if block is not None:
        return info("compaction", "text.compaction", f"{block.path} matched {block.rule_id}")
    return None


def max_tokens_1(f: Facts) -> PurposeInfo | None:
    if f.request.max_output_tokens == 1:
        return info("probe", "generic.max-tokens-1", "max_tokens=1")
    return None


def title(f: Facts) -> PurposeInfo | None:
    for block in instructions_and_last_user(f):
        if block.kind != "instruction_text" and f.request.n_tools:
            continue  # a user asking for a title in a tool-using turn is a main turn
        head = block.text[:600].lower()
        for marker in f.title_markers:
            if marker.lower() in head:
                return info("title", "text.title", f"{block.path} contains {marker!r}", tools_evidence(f))
    return None


def side_call(f: Facts) -> PurposeInfo | None:
    for block in instructions_and_last_user(f):
        head = block.text[:600]
        for marker in f.side_markers:
            if marker in head:
                return info("structured_side", "text.side-call", f"{block.path} contains {marker!r}")
    return None


_SIDE_WORDS = re.compile(
    r"(?i)\b(?:(?P<title>title|headline|name (?:the|this) (?:conversation|session|chat|thread)|short (?:label|name)"
    r"|topic)|summar(?:y|ise|ize)|classif(?:y|ier|ication)|categor(?:y|ise|ize)|route|router|routing"
    r"|rephrase|rewrite the (?:query|question)|commit message|next speaker|which (?:agent|tool|model))\b")
SIDE_BUDGET = 1024  # output tokens: a side call answers in a line, not a tool loop
SIDE_INSTRUCTION_CHARS = 2000


def side_shape(f: Facts) -> PurposeInfo | None:
    """No tools, a small output budget or a short instruction, and a single purpose named in it:
    a title, summary, router or classifier call, whichever client sends it."""
    if f.request.n_tools:
        return None
    instructions = f.blocks_where(_is_instruction)
    text = "\n".join(b.text for b in instructions)
    small = f.request.max_output_tokens is not None and f.request.max_output_tokens <= SIDE_BUDGET
    short = bool(instructions) and len(text) <= SIDE_INSTRUCTION_CHARS
    if not (small or short):
        return None
    last_user = f.index.last(_is_user_text)
    where = text if instructions else (f.request.blocks[last_user].text[:SIDE_INSTRUCTION_CHARS]
                                       if last_user is not None else "")
    match = _SIDE_WORDS.search(where)
    if not match:
        return None
    purpose = "title" if match.group("title") else "structured_side"
    budget = max_tokens_evidence(f) if small else f"instructions {len(text)} chars"
    return info(purpose, "generic.side-shape", f"no tools; {budget}; names {match.group(0)!r}")


def structured_output(f: Facts) -> PurposeInfo | None:
    if f.body_facts.get("json_schema_output") and not f.request.n_tools:
        return info("structured_side", "generic.json-schema-no-tools", "JSON schema output", "tools=0")
    return None


def tools_present(f: Facts) -> PurposeInfo | None:
    if f.request.n_tools:
        return info("main", "generic.tools-present", tools_evidence(f), max_tokens_evidence(f))
    return None


def user_task_no_tools(f: Facts) -> PurposeInfo | None:
    has_task = f.index.any(lambda k: k.source == "user_task")
    big = f.request.max_output_tokens is None or f.request.max_output_tokens > 1024
    if has_task and big:
        return info("main", "generic.user-task-no-tools", "tools=0", "user task present", max_tokens_evidence(f))
    return None


def _is_instruction(key: BlockKey) -> bool:
    return key.kind == "instruction_text"


def _is_user_text(key: BlockKey) -> bool:
    return key.kind == "message_text" and key.role == "user"


def instructions_and_last_user(f: Facts) -> list:
    """The first four instructions and every text part of the last user message (a title request
    may put its instruction in one part and the conversation in the next), looked up in the
    request's scan rather than by walking its history."""
    blocks = f.request.blocks
    out = [blocks[p] for p in f.index.first_n(_is_instruction, 4)]
    message, tail = None, []
    for p in f.index.backwards(_is_user_text):  # the last message's parts are the last user texts
        here = blocks[p].path.split(".content", 1)[0]
        if message is not None and here != message:
            break
        message = here
        tail.append(blocks[p])
    out.extend(reversed(tail))
    return out


PURPOSES = (
    PurposeRule(COUNT_ENDPOINT, count_tokens),
    PurposeRule(COMPACT_ENDPOINT, compact_endpoint),
    PurposeRule(COMPACTION_TEXT, compaction_text),
    PurposeRule(GENERIC_PROBE, max_tokens_1),
    PurposeRule(TITLE, title),
    PurposeRule(SIDE_CALL, side_call),
    PurposeRule(STRUCTURED_OUTPUT, structured_output),
    PurposeRule(STRUCTURED_OUTPUT, side_shape),
    PurposeRule(SHAPE, tools_present),
    PurposeRule(SHAPE, user_task_no_tools),
)

# --- identity ----------------------------------------------------------------------------------


def recorded_client(c: IdentityContext) -> None:
    """Headers name no client, but the recorder did (e.g. from the body): keep the recorder's."""
    ident, recorded = c.ident, c.recorded_client
    if ident.client.startswith("unknown") and recorded and not recorded.startswith("unknown"):
        ident.client, ident.client_version, ident.client_rule = recorded, c.recorded_version, "recorded"


_SESSION_NAME = re.compile(r"^(?:x-)?(?:[a-z0-9]+[-_])*(?:session|conversation|chat)[-_]?id$")
_PER_REQUEST = re.compile(r"request|trace|span|message|turn|prompt|idempotency|correlation|call")


def session_header(c: IdentityContext) -> None:
    """A session id an unseen client sends: `x-session-id` first, then any header named for a
    session or conversation id (`session_id`, `x-conversation-id`, `x-acme-session-id`), then the
    body's `metadata.session_id` / `conversation_id`. Names of per-request ids (request, trace,
    message, turn, prompt) never qualify: the session must stay constant over the run."""
    c.put("session_id", c.headers.get("x-session-id"), "header.x-session-id")
    for name in sorted(c.headers):
        if _SESSION_NAME.match(name) and not _PER_REQUEST.search(name):
            c.put("session_id", c.headers[name], f"header.{name}")
    for field in ("metadata", "client_metadata"):
        meta = c.facts.get(field) or {}
        if isinstance(meta, dict):
            for key in ("session_id", "sessionId", "conversation_id", "conversationId"):
                c.put("session_id", meta.get(key), f"body.{field}.{key}")


def thread_headers(c: IdentityContext) -> None:
    for name in ("thread-id", "thread_id"):
        c.put("thread_id", c.headers.get(name), f"header.{name}")


def prompt_cache_key(c: IdentityContext) -> None:
    c.put("prompt_cache_key", c.facts.get("prompt_cache_key"), "body.prompt_cache_key")


def body_user(c: IdentityContext) -> None:
    c.put("user_id", c.facts.get("user"), "body.user")


IDENTITY_STEPS = (
    IdentityStep(IdentityStage.CLIENT, recorded_client),
    IdentityStep(IdentityStage.SESSION_GENERIC, session_header),
    IdentityStep(IdentityStage.THREAD_GENERIC, thread_headers),
    IdentityStep(IdentityStage.CACHE_KEY, prompt_cache_key),
    IdentityStep(IdentityStage.USER_GENERIC, body_user),
)

CLIENT = Client(
    name="generic",
    ids=frozenset(),
    order=0,
    rules=RULES,
    purposes=PURPOSES,
    identity=IDENTITY_STEPS,
    title_markers=("Generate a concise title", "generate a short title", "Generate a title for this conversation"),
)
