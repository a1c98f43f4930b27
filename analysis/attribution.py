"""Rule engine for the six attributes of a context block (article 01 of the study).

Protocol role alone does not say where a block came from: Codex sends its
environment as a `user` message, Claude Code its environment as a `system`
message inside `messages`, Kimi its date as a `<system-reminder>` user message.
Each rule below is a small named predicate with an id; the first rule that matches
a block sets its source, authority, scope, lifetime and content type, and its id
is stored on the block so a reader can see why. Client-specific rules come first,
generic fallbacks give an unseen client a sensible layout, and `generic.unknown`
is used only when nothing can be inferred.

Decisions worth knowing:
* Date-only reminders (Kimi's "Today's date is ...") are runtime environment with
  session lifetime: they are re-sent only when the date changes.
* Codex `<permissions instructions>` is runtime environment (it describes the
  sandbox) but content type `instruction`, because it tells the model what to do.
* Claude Code's billing/attribution header is platform data with session
  lifetime: its hash changes per conversation.
* Single system prompts that also carry environment and AGENTS.md sections (Kimi,
  Grok) are platform rules: attribution is per wire block, not per paragraph.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from analysis.blocks import BlockDraft, finalize
from analysis.models import Block


@dataclass(frozen=True)
class Attrs:
    source: str
    authority: str
    scope: str
    lifetime: str
    content_type: str

    def with_(self, **changes: str) -> Attrs:
        data = {**self.__dict__, **changes}
        return Attrs(**data)

    def as_dict(self) -> dict[str, str]:
        return dict(self.__dict__)


# --- attribute presets (article 01 guidance) ------------------------------------

PLATFORM = Attrs("platform_rules", "platform", "global", "client_version", "instruction")
PLATFORM_SESSION = PLATFORM.with_(scope="session", lifetime="session")
PLATFORM_TURN = PLATFORM.with_(scope="turn", lifetime="turn")
BILLING = PLATFORM.with_(scope="session", lifetime="session", content_type="data")
TOOLS = Attrs("tool_catalogue", "platform", "global", "client_version", "instruction")
PLUGINS = Attrs("plugin_catalogue", "platform", "global", "session", "instruction")
PROJECT = Attrs("project_instructions", "project", "repository", "project", "instruction")
ENVIRONMENT = Attrs("runtime_environment", "platform", "session", "session", "data")
PERMISSIONS = ENVIRONMENT.with_(content_type="instruction")
REMINDER = Attrs("system_reminder", "platform", "session", "turn", "instruction")
USER_TASK = Attrs("user_task", "user", "turn", "turn", "instruction")
USER_MEDIA = USER_TASK.with_(content_type="data")
ASSISTANT = Attrs("assistant_output", "data", "turn", "turn", "data")
TOOL_CALL = Attrs("tool_call", "data", "turn", "turn", "data")
TOOL_RESULT = Attrs("tool_result", "data", "turn", "turn", "data")
SUMMARY = Attrs("summary", "data", "session", "session", "data")
UNKNOWN = Attrs("unknown", "data", "turn", "turn", "data")


@dataclass
class Context:
    """Request-level facts a rule may consult, plus state carried across blocks."""

    client: str
    api: str
    cwd: str | None = None
    user_task_seen: bool = False


Match = Callable[[BlockDraft, Context], bool]
AttrsFn = Callable[[BlockDraft, Context], Attrs]


@dataclass(frozen=True)
class Rule:
    id: str
    doc: str
    match: Match
    attrs: Attrs | AttrsFn
    clients: frozenset[str] | None = None  # None: any client

    def applies(self, draft: BlockDraft, ctx: Context) -> bool:
        if self.clients is not None and ctx.client not in self.clients:
            return False
        return self.match(draft, ctx)

    def resolve(self, draft: BlockDraft, ctx: Context) -> Attrs:
        return self.attrs(draft, ctx) if callable(self.attrs) else self.attrs


# --- predicate helpers -------------------------------------------------------------

TEXT_KINDS = frozenset({"instruction_text", "message_text"})
CLAUDE = frozenset({"claude-code"})
KIMI = frozenset({"kimi-code", "kimi-cli"})


def is_text(d: BlockDraft) -> bool:
    return d.kind in TEXT_KINDS


def starts(*prefixes: str, roles: Iterable[str] | None = None) -> Match:
    roles_set = frozenset(roles) if roles else None

    def match(d: BlockDraft, _: Context) -> bool:
        if not is_text(d) or (roles_set and d.role not in roles_set):
            return False
        head = d.text.lstrip()[:400]
        return head.startswith(prefixes)

    return match


def contains(*needles: str, roles: Iterable[str] | None = None, head: int | None = None) -> Match:
    roles_set = frozenset(roles) if roles else None

    def match(d: BlockDraft, _: Context) -> bool:
        if not is_text(d) or (roles_set and d.role not in roles_set):
            return False
        text = d.text if head is None else d.text[:head]
        return any(n in text for n in needles)

    return match


def kind_is(*kinds: str) -> Match:
    return lambda d, _: d.kind in kinds


def reminder(d: BlockDraft) -> str | None:
    """Body of a `<system-reminder>` text block, else None."""
    if not is_text(d):
        return None
    t = d.text.strip()
    if t.startswith("<system-reminder>"):
        return t[len("<system-reminder>") :].removesuffix("</system-reminder>").strip()
    return None


def is_reminder(d: BlockDraft, _: Context) -> bool:
    return reminder(d) is not None


def is_date_reminder(d: BlockDraft, _: Context) -> bool:
    body = reminder(d)
    return body is not None and len(body) < 400 and bool(_DATE.search(body))


_DATE = re.compile(r"(today'?s date|current date|the date) is", re.I)
_ENV_SIGNALS = [
    re.compile(r"working directory|\bcwd\b", re.I),
    re.compile(r"\bplatform\b|operating system|os version|\bos:", re.I),
    re.compile(r"\bshell\b", re.I),
    re.compile(r"today'?s date|current date|\bdate:", re.I),
    re.compile(r"git repo|git status|current branch", re.I),
]


_KEY_VALUE_LINE = re.compile(r"^\s*[-*]?\s*[A-Za-z][\w ]{1,40}:\s*\S", re.M)


def looks_like_environment(d: BlockDraft, _: Context) -> bool:
    """Environment facts: three signals, or two laid out as `key: value` lines (not a user's question)."""
    if not is_text(d) or d.role == "assistant" or len(d.text) > 6000:
        return False
    signals = sum(1 for rx in _ENV_SIGNALS if rx.search(d.text))
    return signals >= 3 or (signals >= 2 and len(_KEY_VALUE_LINE.findall(d.text)) >= 2)


# "Contents of /repo/CLAUDE.md", "Instructions from: /repo/AGENTS.md", "# AGENTS.md instructions for /repo"
_PROJECT_REF = re.compile(
    r"(?:Contents of|Instructions from:?)\s+`?(\S*?(?:AGENTS|CLAUDE|GEMINI|KIMI)\.md)"
    r"|# (?:AGENTS|CLAUDE|GEMINI|KIMI)\.md instructions for\s+`?([^\s`]+)"
)
_PROJECT_NAMES = ("AGENTS.md", "CLAUDE.md", "GEMINI.md", "KIMI.md")


def mentions_project_file(d: BlockDraft, _: Context) -> bool:
    """Text that quotes a project instruction file by path (not merely a user mentioning one)."""
    if not is_text(d) or d.role == "assistant":
        return False
    return _PROJECT_REF.search(d.text[:2000]) is not None


def project_attrs(d: BlockDraft, ctx: Context) -> Attrs:
    """Project instructions: repository scope, directory scope for a nested file, user scope under ~."""
    m = _PROJECT_REF.search(d.text[:2000])
    if not m:
        return PROJECT
    if m.group(1):
        target = m.group(1)
        directory = target.rsplit("/", 1)[0] if "/" in target else ""
    else:
        target = directory = m.group(2).rstrip("/:")
    if "/.claude/" in target and not (ctx.cwd and directory.startswith(ctx.cwd)):
        return PROJECT.with_(authority="user", scope="global")
    if ctx.cwd and directory.startswith(ctx.cwd.rstrip("/") + "/"):
        return PROJECT.with_(scope="directory")
    return PROJECT


def codex_item_kind(d: BlockDraft, _: Context) -> bool:
    return bool(d.hints.get("codex_item_kind")) and _codex_kind_attrs(d.hints["codex_item_kind"]) is not None


_CODEX_KIND_PREFIXES: list[tuple[str, Attrs]] = [
    ("model.", PLATFORM),
    ("host_skills.", PLUGINS),
    ("skills.", PLUGINS),
    ("plugins.", PLUGINS),
    ("apps.", PLUGINS),
    ("connectors.", PLUGINS),
    ("permissions.", PERMISSIONS),
    ("collaboration_mode.", PLATFORM_SESSION),
    ("multi_agent.", PLATFORM_SESSION),
    ("environments.", ENVIRONMENT),
    ("agents_md.", PROJECT),
    ("project_doc.", PROJECT),
    ("user.", USER_TASK),
]


def _codex_kind_attrs(kind: str) -> Attrs | None:
    for prefix, attrs in _CODEX_KIND_PREFIXES:
        if kind.startswith(prefix):
            return attrs
    return None


def first_user_text(d: BlockDraft, ctx: Context) -> bool:
    return d.kind == "message_text" and d.role == "user" and not ctx.user_task_seen


def user_text(d: BlockDraft, _: Context) -> bool:
    return d.kind == "message_text" and d.role == "user"


def system_text(d: BlockDraft, _: Context) -> bool:
    return is_text(d) and d.role in ("system", "developer")


def is_mcp_tool(d: BlockDraft, _: Context) -> bool:
    return d.kind == "tool_definition" and (d.tool_name or "").startswith("mcp__")


def claude_system_array(d: BlockDraft, _: Context) -> bool:
    return is_text(d) and d.path.startswith("system")


def quota_probe(d: BlockDraft, _: Context) -> bool:
    return d.kind == "message_text" and d.role == "user" and d.text.strip().lower() in ("quota", "test")


# --- the rule table (first match wins) ---------------------------------------------------

RULES: list[Rule] = [
    # structured blocks: their kind says what they are
    Rule(
        "generic.mcp-tool", "MCP tool definitions come from a plugin/server catalogue", is_mcp_tool, PLUGINS
    ),
    Rule(
        "codex.additional-tools",
        "Codex code mode sends tools as an `additional_tools` input item",
        lambda d, _: d.kind == "tool_definition" and d.wire_type == "additional_tools",
        TOOLS,
    ),
    Rule(
        "generic.tool-definition",
        "tool definitions are the client's tool catalogue",
        kind_is("tool_definition"),
        TOOLS,
    ),
    Rule("generic.tool-call", "a call the model made, replayed as history", kind_is("tool_call"), TOOL_CALL),
    Rule(
        "generic.tool-result",
        "tool output is data, never an instruction",
        kind_is("tool_result"),
        TOOL_RESULT,
    ),
    Rule(
        "generic.reasoning", "replayed reasoning is the model's own output", kind_is("reasoning"), ASSISTANT
    ),
    Rule(
        "generic.compaction-item",
        "provider compaction items summarise history",
        kind_is("compaction"),
        SUMMARY,
    ),
    # Claude Code
    Rule(
        "claude.billing-header",
        "x-anthropic-billing-header attribution line (per-conversation hash)",
        starts("x-anthropic-billing-header:"),
        BILLING,
    ),
    Rule(
        "claude.identity",
        "Claude Code / Agent SDK identity line",
        starts("You are Claude Code", "You are a Claude agent", roles=("system",)),
        PLATFORM,
    ),
    Rule(
        "claude.env-message",
        "Claude Code `# Environment` message (cwd, platform, shell, OS, date, deferred tools)",
        lambda d, c: (
            starts("# Environment", roles=("system", "user"))(d, c)
            or contains("You have been invoked in the following environment", head=400)(d, c)
        ),
        ENVIRONMENT,
    ),
    Rule(
        "claude.claude-md",
        "`# claudeMd` reminder carrying CLAUDE.md contents",
        lambda d, c: is_reminder(d, c) and ("# claudeMd" in d.text[:1000] or mentions_project_file(d, c)),
        project_attrs,
    ),
    Rule(
        "claude.git-status",
        "`# gitStatus` reminder: git branch, status and recent commits",
        lambda d, c: is_reminder(d, c) and "# gitStatus" in d.text[:1000],
        ENVIRONMENT,
    ),
    Rule(
        "claude.date-reminder",
        "`# currentDate` reminder",
        contains("# currentDate", head=400),
        ENVIRONMENT,
        CLAUDE,
    ),
    Rule(
        "claude.compaction-request",
        "Claude Code's compaction instruction (final user text)",
        contains(
            "Your task is to create a detailed summary of the", "CRITICAL: Respond with TEXT ONLY", head=600
        ),
        PLATFORM_TURN,
    ),
    Rule(
        "claude.compact-summary",
        "summary of an earlier conversation after compaction",
        starts("This session is being continued from a previous conversation"),
        SUMMARY,
    ),
    Rule(
        "claude.quota-probe",
        "startup quota probe (`quota` as the only text)",
        quota_probe,
        PLATFORM_TURN,
        CLAUDE,
    ),
    Rule(
        "claude.system-reminder", "`<system-reminder>` injected by Claude Code", is_reminder, REMINDER, CLAUDE
    ),
    Rule("claude.system-prompt", "Claude Code system[] blocks", claude_system_array, PLATFORM, CLAUDE),
    # Codex
    Rule(
        "codex.base-instructions",
        "Codex base instructions (developer message or `instructions`)",
        lambda d, c: (
            starts("You are Codex", roles=("system", "developer"))(d, c)
            or (c.client == "codex" and d.path == "instructions")
        ),
        PLATFORM,
    ),
    Rule(
        "codex.skills",
        "`<skills_instructions>` skill catalogue",
        starts("<skills_instructions>", "<skill>"),
        PLUGINS,
    ),
    Rule(
        "codex.plugins",
        "plugin / app catalogues and recommendations",
        starts("<plugins_instructions>", "<apps_instructions>", "<recommended_plugins>"),
        PLUGINS,
    ),
    Rule(
        "codex.permissions",
        "`<permissions instructions>` sandbox policy",
        starts("<permissions instructions>"),
        PERMISSIONS,
    ),
    Rule(
        "codex.collaboration-mode",
        "`<collaboration_mode>` / `<multi_agent_*>` harness modes",
        starts("<collaboration_mode>", "<multi_agent_role>", "<multi_agent_mode>", "<personality_spec>"),
        PLATFORM_SESSION,
    ),
    Rule(
        "codex.agents-md",
        "`# AGENTS.md instructions for <dir>` / `<user_instructions>`",
        starts("# AGENTS.md instructions for", "<user_instructions>"),
        project_attrs,
    ),
    Rule(
        "codex.environment-context",
        "`<environment_context>`: cwd, shell, date, timezone, filesystem",
        starts("<environment_context>"),
        ENVIRONMENT,
    ),
    Rule(
        "codex.compaction-request",
        "inline compaction prompt",
        contains("You are performing a CONTEXT CHECKPOINT COMPACTION", head=400),
        PLATFORM_TURN,
    ),
    Rule(
        "codex.compaction-summary",
        "handoff summary after compaction",
        starts("Another language model started to solve this problem"),
        SUMMARY,
    ),
    Rule(
        "codex.harness-notice",
        "harness notices injected as user messages",
        starts("<turn_aborted>", "<subagent_notification>", "<user_shell_command>"),
        REMINDER,
    ),
    Rule(
        "codex.item-kind",
        "Codex content_item_kinds metadata on the item",
        codex_item_kind,
        lambda d, _: _codex_kind_attrs(d.hints["codex_item_kind"]) or UNKNOWN,
    ),
    # Kimi
    Rule(
        "kimi.system-prompt",
        "Kimi Code / Kimi CLI system prompt",
        starts("You are Kimi", roles=("system",)),
        PLATFORM,
    ),
    Rule(
        "kimi.compaction-request",
        "Kimi compaction prompt",
        contains(
            "You are a helpful assistant that compacts conversation context",
            "You are now given a task to compact",
            head=4000,
        ),
        PLATFORM_TURN,
    ),
    Rule(
        "kimi.compaction-summary",
        "summary after Kimi compaction",
        contains("Previous context has been compacted", head=300),
        SUMMARY,
    ),
    Rule("kimi.date-reminder", "date-only `<system-reminder>`", is_date_reminder, ENVIRONMENT, KIMI),
    Rule("kimi.system-reminder", "`<system-reminder>` user message", is_reminder, REMINDER, KIMI),
    # Grok, Gemini, opencode
    Rule(
        "grok.system-prompt",
        "Grok CLI system prompt",
        starts("You are Grok", roles=("system", "developer")),
        PLATFORM,
    ),
    Rule(
        "gemini.system-prompt",
        "Gemini CLI system instruction",
        starts("You are Gemini CLI", "You are an interactive CLI agent", roles=("system",)),
        PLATFORM,
    ),
    Rule(
        "gemini.session-context",
        "Gemini CLI's first user message with date, OS and directory",
        starts("This is the Gemini CLI. We are setting up the context"),
        ENVIRONMENT,
    ),
    Rule(
        "gemini.compression-request",
        "Gemini chat compression prompt",
        contains("Generate a new <state_snapshot>", head=2000),
        PLATFORM_TURN,
    ),
    Rule("gemini.state-snapshot", "Gemini `<state_snapshot>` summary", starts("<state_snapshot>"), SUMMARY),
    Rule(
        "opencode.system-prompt",
        "opencode system prompt",
        starts("You are opencode", roles=("system",)),
        PLATFORM,
    ),
    Rule("opencode.env", "opencode `<env>` block", contains("<env>", head=200), ENVIRONMENT),
    # generic fallbacks
    Rule("generic.date-reminder", "date-only `<system-reminder>`", is_date_reminder, ENVIRONMENT),
    Rule("generic.system-reminder", "`<system-reminder>` text", is_reminder, REMINDER),
    Rule(
        "generic.project-file",
        "text quoting AGENTS.md / CLAUDE.md / GEMINI.md",
        mentions_project_file,
        project_attrs,
    ),
    Rule(
        "generic.environment",
        "short text with cwd / OS / shell / date / git facts",
        looks_like_environment,
        ENVIRONMENT,
    ),
    Rule("generic.system-text", "system / developer text is platform rules", system_text, PLATFORM),
    Rule(
        "generic.assistant-text",
        "assistant text is model output",
        lambda d, _: d.role == "assistant",
        ASSISTANT,
    ),
    Rule(
        "generic.first-user-text-task",
        "the first plain user text is the typed task",
        first_user_text,
        USER_TASK,
    ),
    Rule("generic.user-text-task", "later plain user text: a follow-up task", user_text, USER_TASK),
    Rule(
        "generic.user-media",
        "images / documents in user messages are attachments",
        lambda d, _: d.role == "user" and d.kind in ("image", "document"),
        USER_MEDIA,
    ),
    Rule("generic.unknown", "nothing could be inferred", lambda d, _: True, UNKNOWN),
]

RULE_IDS: frozenset[str] = frozenset(r.id for r in RULES)

_CWD_PATTERNS = [
    re.compile(r"<cwd>([^<\n]+)</cwd>"),
    re.compile(r"Primary working directory:\s*(\S+)"),
    re.compile(r"[Cc]urrent working directory(?: is)?:?\s*`?([^\s`]+)`?"),
    re.compile(r"Working directory:\s*(\S+)"),
    re.compile(r"I'm currently working in the directory:?\s*(\S+)"),
]


def draft_cwd(d: BlockDraft) -> str | None:
    """The working directory one draft states, if any."""
    if not is_text(d) or d.role == "assistant":
        return None
    for rx in _CWD_PATTERNS:
        m = rx.search(d.text)
        if m:
            return m.group(1).rstrip("/.,")
    return None


def find_cwd(drafts: list[BlockDraft], memo: Any = None) -> str | None:
    """The working directory the client told the model about, if any."""
    if memo is None:
        return next((cwd for d in drafts if (cwd := draft_cwd(d))), None)
    start, found = memo.cwd_prefix(drafts)
    if found is not None:
        return found
    for index in range(start, len(drafts)):
        cwd = memo.cwd_of(drafts[index], draft_cwd)
        if cwd:
            memo.remember_cwd(drafts, index, cwd)
            return cwd
    memo.remember_cwd(drafts, None, None)
    return None


def attribute(drafts: list[BlockDraft], client: str, api: str, memo: Any = None) -> list[Block]:
    """Run the rule table over drafts in order; return finished blocks.

    With a memo, a draft seen before at the same position and in the same
    context (client, cwd, whether a user task came earlier) reuses its block.
    """
    ctx = Context(client=client, api=api, cwd=find_cwd(drafts, memo))
    blocks: list[Block] = []
    start = 0
    if memo is not None:
        # Fast path: the leading drafts are the very objects of the previous call in this
        # context, so their blocks are too (history resent unchanged).
        start, blocks, ctx.user_task_seen = memo.attributed_prefix((client, api, ctx.cwd), drafts)
    seen_after: list[bool] = []
    for position in range(start, len(drafts)):
        draft = drafts[position]
        key = (id(draft), position, client, api, ctx.cwd, ctx.user_task_seen)
        if memo is not None:
            hit = memo.attributed(key, draft)
            if hit is not None:
                block, ctx.user_task_seen = hit
                blocks.append(block)
                seen_after.append(ctx.user_task_seen)
                continue
        for rule in RULES:
            if rule.applies(draft, ctx):
                attrs = rule.resolve(draft, ctx)
                break
        else:  # pragma: no cover - generic.unknown always matches
            rule, attrs = RULES[-1], UNKNOWN
        if attrs.source == "user_task" and draft.kind == "message_text":
            ctx.user_task_seen = True
        block = finalize(draft, position, attrs.as_dict(), rule.id)
        if memo is not None:
            memo.put_attributed(key, draft, (block, ctx.user_task_seen))
        blocks.append(block)
        seen_after.append(ctx.user_task_seen)
    if memo is not None:
        memo.remember_attributed((client, api, ctx.cwd), drafts, blocks, start, seen_after)
    return blocks
