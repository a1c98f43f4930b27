"""The vocabulary client modules write their rules in.

Three kinds of rule, each run by its engine in stage order (ties broken by
client order, then by the order a module lists them):

* attribution `Rule`: a named predicate over one block draft; the first that
  matches sets the block's six attributes (`analysis.attribution`);
* `PurposeRule`: a function of the request's `Facts` that may name its purpose
  (`analysis.purpose`);
* `IdentityStep`: fills session / thread / turn identifiers of a request
  (`analysis.identity`).

The stage constants below fix where each rule runs; they reproduce the order
the rules had when they lived in one table, so adding a client never reorders
another's rules.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ctxtap.analysis.blocks.blockscan import BlockKey, BlockScan
from ctxtap.analysis.blocks.drafts import BlockDraft
from ctxtap.analysis.parsing.models import Block, CallIdentity, ParsedRequest, Purpose, PurposeInfo
from ctxtap.capture.bodies import BodyView

# --- attribution -----------------------------------------------------------------------------

# Stages of the attribution table (first match wins).
KIND_PLUGIN = 10  # structured blocks that belong to a plugin catalogue (MCP tools)
KIND_CLIENT = 20  # a client's own structured shapes (e.g. Codex `additional_tools`)
KIND = 30  # structured blocks: their kind says what they are
TEXT_CLIENT = 40  # client text markers (billing header, identity lines, environment blocks...)
TEXT_GENERIC = 50  # client-independent text fallbacks, ending in `generic.unknown`


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


# attribute presets
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
    # user text parts that share their message with a later text part: context, not the task
    leading_parts: frozenset[int] = frozenset()
    # the id of the first user text holding the task the run was given (None: no known task in it)
    task_part: Any = None
    # ids of user texts before that task which a client-written assistant turn answers (canned examples)
    canned_users: frozenset[int] = frozenset()


Match = Callable[[BlockDraft, Context], bool]
AttrsFn = Callable[[BlockDraft, Context], Attrs]


@dataclass(frozen=True)
class Rule:
    id: str
    doc: str
    match: Match
    attrs: Attrs | AttrsFn
    clients: frozenset[str] | None = None  # None: any client
    stage: int = TEXT_CLIENT
    compaction_request: bool = False  # the block asks the model to compact: the request is a compaction
    cache_transparent: bool = False  # the provider drops the block before caching: it never breaks a prefix

    def applies(self, draft: BlockDraft, ctx: Context) -> bool:
        if self.clients is not None and ctx.client not in self.clients:
            return False
        return self.match(draft, ctx)

    def resolve(self, draft: BlockDraft, ctx: Context) -> Attrs:
        return self.attrs(draft, ctx) if callable(self.attrs) else self.attrs


# predicate helpers

TEXT_KINDS = frozenset({"instruction_text", "message_text"})


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


_WRAPPED = re.compile(r"^\s*<([A-Za-z][\w.:-]*)[^<>]*>.*</\1>\s*$", re.S)


def wrapped_in_tag(text: str) -> bool:
    """`<something>...</something>` and nothing else: text a client wrapped, not what a user typed."""
    return bool(_WRAPPED.match(text))


def leading_user_parts(drafts: list[BlockDraft]) -> frozenset[int]:
    """Ids of user text parts followed by another text part of the same message."""
    last: dict[int, int] = {}
    for d in drafts:
        if d.kind == "message_text" and d.role == "user" and d.item_index is not None:
            last[d.item_index] = id(d)
    return frozenset(id(d) for d in drafts if d.kind == "message_text" and d.role == "user"
                     and d.item_index is not None and last[d.item_index] != id(d))


def user_context_part(d: BlockDraft, ctx: Context) -> bool:
    """Before the task: a tag-wrapped user text, or a part that comes before the message's last text part."""
    return (d.kind == "message_text" and d.role == "user" and not ctx.user_task_seen
            and (id(d) in ctx.leading_parts or wrapped_in_tag(d.text)))


def holds_known_task(d: BlockDraft, ctx: Context) -> bool:
    """The user text that holds the task the run was given (command line, `import --prompt`)."""
    return d.kind == "message_text" and d.role == "user" and not ctx.user_task_seen and ctx.task_part == id(d)


def before_known_task(d: BlockDraft, ctx: Context) -> bool:
    """User text before the known task, in a request that holds it: the client added it, it is not the task."""
    return (d.kind == "message_text" and d.role == "user" and not ctx.user_task_seen
            and ctx.task_part not in (None, id(d)))


def canned_exchange_before_task(d: BlockDraft, ctx: Context) -> bool:
    """User text before the known task that an assistant turn answers before the task: the model has not
    answered yet, so the client wrote the exchange (an example request, its own `I switched to ...`)."""
    return d.kind == "message_text" and d.role == "user" and not ctx.user_task_seen and id(d) in ctx.canned_users


def canned_before_task(d: BlockDraft, ctx: Context) -> bool:
    """Assistant text before the known task: the model has not answered yet, so the client wrote it
    (a canned example exchange, an `Ok.` to its own instructions)."""
    return (d.kind == "message_text" and d.role == "assistant" and not ctx.user_task_seen
            and ctx.task_part is not None)


def first_user_text(d: BlockDraft, ctx: Context) -> bool:
    return d.kind == "message_text" and d.role == "user" and not ctx.user_task_seen


def user_text(d: BlockDraft, _: Context) -> bool:
    return d.kind == "message_text" and d.role == "user"


def system_text(d: BlockDraft, _: Context) -> bool:
    return is_text(d) and d.role in ("system", "developer")


# --- purpose ---------------------------------------------------------------------------------

# Stages of the purpose rules (first match wins): explicit signals, then text markers, then shape.
COUNT_ENDPOINT = 10
WARMUP = 20
COMPACT_ENDPOINT = 30
CLIENT_HEADERS = 40
COMPACTION_TEXT = 50
PROBE = 60
GENERIC_PROBE = 65
TITLE = 70
SIDE_CALL = 80
REQUEST_CLASS = 90
STRUCTURED_OUTPUT = 100
TURN_KIND = 110
SHAPE = 120


@dataclass
class Facts:
    """Everything the purpose rules may look at for one request."""

    endpoint: str
    api: str
    client: str
    headers: dict[str, str]  # lower-case names; frame metadata merged in for WebSocket frames
    request: ParsedRequest
    body_facts: dict[str, Any]
    # filled in by the purpose engine from the enabled clients
    compaction_rules: frozenset[str] = frozenset()  # attribution rules that mark a compaction request
    title_markers: tuple[str, ...] = ()
    side_markers: tuple[str, ...] = ()
    scan: BlockScan | None = None  # where the blocks are by kind / role / source / rule (built if not given)

    @property
    def index(self) -> BlockScan:
        """The scan of the request's blocks: rules look blocks up instead of walking them all
        (a long session's request would otherwise cost time in its whole history)."""
        if self.scan is None:
            self.scan = BlockScan.of(self.request.blocks)
        return self.scan

    def block(self, match: Callable[[BlockKey], bool]) -> Block | None:
        """The first block whose key matches."""
        position = self.index.first(match)
        return self.request.blocks[position] if position is not None else None

    def blocks_where(self, match: Callable[[BlockKey], bool]) -> list[Block]:
        """Every block whose key matches, in position order."""
        blocks = self.request.blocks
        return [blocks[p] for p in self.index.all(match)]


@dataclass(frozen=True)
class PurposeRule:
    stage: int
    decide: Callable[[Facts], PurposeInfo | None]


def info(purpose: Purpose, rule_id: str, *evidence: str) -> PurposeInfo:
    return PurposeInfo(purpose=purpose, rule_id=rule_id, evidence=[e for e in evidence if e])


def tools_evidence(f: Facts) -> str:
    return f"tools={f.request.n_tools}"


def max_tokens_evidence(f: Facts) -> str:
    return f"max_tokens={f.request.max_output_tokens}" if f.request.max_output_tokens is not None else ""


# --- identity --------------------------------------------------------------------------------


class IdentityStage:
    """Stages of the identity steps. An identifier is set by the first step that finds it, so the
    stage order is the priority order of the sources (and the order evidence is noted in)."""

    CLIENT = 10  # the recorder's client when headers name none
    BODY_CLIENT = 20  # a client recognised by a body field
    VERSION = 30  # a client version found in the body
    SESSION_HEADER = 100  # a client's dedicated session header
    SESSION_CLIENT = 110  # other client session ids: headers, turn metadata, client metadata
    SESSION_USER_ID = 140  # a session id inside a user id
    SESSION_BODY = 150  # a session id in the body
    SESSION_GENERIC = 160  # x-session-id
    THREAD_GENERIC = 200  # thread-id headers
    THREAD_CLIENT = 210  # client thread ids: turn metadata, client metadata
    THREAD_CONVERSATION = 220  # a conversation id that names the thread
    PARENT_THREAD = 230
    TURN_CLIENT = 300  # client turn ids: turn metadata, client metadata
    TURN_PROMPT = 310  # a prompt id header
    TURN_BODY = 320  # a prompt id in the body
    CACHE_KEY = 400  # the body's prompt cache key
    SESSION_FROM_CACHE_KEY = 410  # a cache key that is the session id
    SESSION_FROM_CONVERSATION = 420  # a conversation id that is the session id
    USER_DEVICE = 430  # a device id header
    USER_GENERIC = 440  # the body's user / safety identifier


@dataclass
class IdentityContext:
    """One request's identity being filled in, and what the steps may read."""

    ident: CallIdentity
    headers: dict[str, str]  # lower-case names
    facts: dict[str, Any]  # the protocol parser's body facts
    raw_body: bytes | BodyView | None  # read by slices and `in`
    recorded_client: str | None = None
    recorded_version: str | None = None

    def put(self, field_name: str, value: Any, source: str) -> None:
        """Set an identifier unless an earlier step already did; note where it came from."""
        if isinstance(value, str) and value and getattr(self.ident, field_name) is None:
            setattr(self.ident, field_name, value)
            self.ident.evidence[source] = value


@dataclass(frozen=True)
class IdentityStep:
    stage: int  # steps run in stage order; see the table in `analysis.identity`
    fill: Callable[[IdentityContext], None]
