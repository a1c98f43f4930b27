"""Clients as data: a TOML profile says what ctxtap knows of one client, without code.

A profile names the client (its ids, how a capture recognises it when the recorder did not), its
text markers (a rule per marker: where the text sits, what it starts with or contains, what source
it is), where its session, thread and turn ids are, and which requests are its side calls. The
built-in profiles sit beside the Python client modules (`analysis/clients/*.toml`); Python stays
only where a profile cannot say it (Claude Code's and Codex's wire shapes). A user's own profiles
in `~/.config/ctxtap/clients/` (under `CTXTAP_CONFIG_DIR` or `XDG_CONFIG_HOME` when set) are loaded
too and replace a built-in one of the same name, so a user fixes a new client without code.
`ctxtap clients suggest CAPTURE` drafts one from a capture.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ctxtap.analysis.blocks.drafts import BlockDraft
from ctxtap.analysis.clients.registry import Client
from ctxtap.analysis.clients.rules import (
    ASSISTANT,
    BILLING,
    ENVIRONMENT,
    KIND_CLIENT,
    PERMISSIONS,
    PLATFORM,
    PLATFORM_SESSION,
    PLATFORM_TURN,
    PLUGINS,
    PROJECT,
    REMINDER,
    SUMMARY,
    TEXT_CLIENT,
    TOOLS,
    USER_TASK,
    Attrs,
    Context,
    IdentityContext,
    IdentityStage,
    IdentityStep,
    Rule,
    is_date_reminder,
    is_reminder,
    is_text,
)
from ctxtap.capture.classify import client_evidence

SOURCES: dict[str, Attrs] = {
    "platform_rules": PLATFORM, "platform_session": PLATFORM_SESSION, "platform_turn": PLATFORM_TURN,
    "billing": BILLING, "tool_catalogue": TOOLS, "plugin_catalogue": PLUGINS, "project_instructions": PROJECT,
    "runtime_environment": ENVIRONMENT, "permissions": PERMISSIONS, "system_reminder": REMINDER,
    "user_task": USER_TASK, "assistant_output": ASSISTANT, "summary": SUMMARY,
}
SHAPES = {"reminder": is_reminder, "date-reminder": is_date_reminder}
ID_FIELDS = ("session_id", "thread_id", "turn_id", "user_id")
# where an id read from a header or a body field ranks among the other sources (analysis.identity)
_STAGES = {
    ("session_id", "header"): IdentityStage.SESSION_HEADER, ("session_id", "body"): IdentityStage.SESSION_BODY,
    ("session_id", "cache_key"): IdentityStage.SESSION_FROM_CACHE_KEY,
    ("thread_id", "header"): IdentityStage.THREAD_CLIENT, ("thread_id", "body"): IdentityStage.THREAD_CLIENT,
    ("turn_id", "header"): IdentityStage.TURN_CLIENT, ("turn_id", "body"): IdentityStage.TURN_BODY,
    ("user_id", "header"): IdentityStage.USER_DEVICE, ("user_id", "body"): IdentityStage.USER_DEVICE,
}
PROFILE_STAGE = IdentityStage.BODY_CLIENT  # a profile's naming runs where body markers name a client


class ProfileError(ValueError):
    """A profile that cannot be read, with the file and what is wrong in it."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RuleSpec(_Model):
    """One attribution rule: which text it matches, and the source it gives that text."""

    id: str
    doc: str = ""
    source: str
    starts: list[str] = Field(default_factory=list)  # the text (stripped) starts with one of these
    contains: list[str] = Field(default_factory=list)  # or holds one of these
    regex: str | None = None  # or matches this (Python `re`, searched)
    shape: Literal["reminder", "date-reminder"] | None = None  # or has this shape
    head: int | None = None  # `contains`/`regex` look at the first N characters only
    roles: list[Literal["system", "developer", "user", "assistant"]] = Field(default_factory=list)
    only_this_client: bool = False  # match only in this client's requests (shapes other clients share)
    compaction_request: bool = False  # the text asks the model to compact: the request is a compaction
    scope: str | None = None  # override the source's default attributes
    lifetime: str | None = None
    stage: Literal["text", "kind"] = "text"  # `kind`: before the structured blocks' own rules (tool lists)

    @field_validator("source")
    @classmethod
    def _known_source(cls, value: str) -> str:
        if value not in SOURCES:
            raise ValueError(f"unknown source {value!r}; one of {', '.join(sorted(SOURCES))}")
        return value

    @field_validator("regex")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            re.compile(value)
        return value


class IdentitySpec(_Model):
    """Where one of the client's ids is: a header, a body fact (the protocol parser's name for it),
    or the prompt cache key when it starts with a prefix."""

    field: Literal["session_id", "thread_id", "turn_id", "user_id"]
    header: str | None = None
    body: str | None = None
    cache_key_prefix: str | None = None
    # where it ranks among other sources, as an `IdentityStage` name (`session_from_conversation`);
    # by default from the field and where it is read
    stage: str | None = None

    @field_validator("stage")
    @classmethod
    def _known_stage(cls, value: str | None) -> str | None:
        if value is not None and not isinstance(getattr(IdentityStage, value.upper(), None), int):
            raise ValueError(f"unknown identity stage {value!r}")
        return value


class Identify(_Model):
    """How a capture recognises the client when its recorder named it otherwise (an SDK, `unknown`)."""

    user_agent: str | None = None  # a regex on the User-Agent; its first group, if any, is the version
    body_markers: list[str] = Field(default_factory=list)  # text in the request body
    headers: list[str] = Field(default_factory=list)  # a header present by name
    body_fact: str | None = None  # a body fact the protocol parser found (e.g. Gemini's user_prompt_id)


class Profile(_Model):
    name: str
    ids: list[str]
    order: int = 100
    doc: str = ""
    identify: Identify | None = None
    title_markers: list[str] = Field(default_factory=list)
    side_markers: list[str] = Field(default_factory=list)
    rule: list[RuleSpec] = Field(default_factory=list)
    identity: list[IdentitySpec] = Field(default_factory=list)


def _matcher(spec: RuleSpec, ids: frozenset[str]):  # noqa: ANN202 - a rules.Match
    roles = frozenset(spec.roles)
    starts = tuple(spec.starts)
    pattern = re.compile(spec.regex) if spec.regex else None
    shape = SHAPES.get(spec.shape or "")

    def match(d: BlockDraft, ctx: Context) -> bool:
        if not is_text(d) or (roles and d.role not in roles):
            return False
        if shape is not None and not shape(d, ctx):
            return False
        text = d.text if spec.head is None else d.text[: spec.head]
        if starts and not d.text.lstrip()[:400].startswith(starts):
            return False
        if spec.contains and not any(n in text for n in spec.contains):
            return False
        return not (pattern is not None and pattern.search(text) is None)

    return match


def _rule(spec: RuleSpec, ids: frozenset[str]) -> Rule:
    if not (spec.starts or spec.contains or spec.regex or spec.shape):
        raise ValueError(f"rule {spec.id!r} matches nothing: give starts, contains, regex or shape")
    attrs = SOURCES[spec.source]
    changes = {k: v for k, v in (("scope", spec.scope), ("lifetime", spec.lifetime)) if v}
    return Rule(spec.id, spec.doc or spec.id, _matcher(spec, ids), attrs.with_(**changes) if changes else attrs,
                ids if spec.only_this_client else None, stage=KIND_CLIENT if spec.stage == "kind" else TEXT_CLIENT,
                compaction_request=spec.compaction_request)


def _named(fill, client: str, name: str):  # noqa: ANN001, ANN202 - a step's function, named for what it reads
    fill.__module__, fill.__name__, fill.__qualname__ = f"profile.{client}", name, name
    return fill


def _id_step(spec: IdentitySpec, client: str) -> IdentityStep:
    where = "header" if spec.header else "body" if spec.body else "cache_key" if spec.cache_key_prefix else ""
    if not where:
        raise ValueError(f"identity {spec.field!r} says nowhere to look: give header, body or cache_key_prefix")
    stage = getattr(IdentityStage, spec.stage.upper()) if spec.stage else _STAGES.get((spec.field, where))
    if stage is None:
        raise ValueError(f"identity {spec.field!r} cannot come from {where}")

    def fill(c: IdentityContext) -> None:
        if spec.header:
            c.put(spec.field, c.headers.get(spec.header.lower()), f"header.{spec.header.lower()}")
        elif spec.body:
            value: Any = c.facts
            for part in spec.body.split("."):  # `metadata.sessionId`: a field of a body fact
                value = value.get(part) if isinstance(value, dict) else None
            c.put(spec.field, value if isinstance(value, str) else None, f"body.{spec.body}")
        else:
            key = c.ident.prompt_cache_key or ""
            if key.startswith(spec.cache_key_prefix or ""):
                c.put(spec.field, key, "body.prompt_cache_key")

    return IdentityStep(stage, _named(fill, client, f"{spec.field}_from_{where}"))


def _naming_step(profile: Profile) -> IdentityStep | None:
    spec = profile.identify
    if spec is None:
        return None
    ua = re.compile(spec.user_agent) if spec.user_agent else None
    markers = [m.encode() for m in spec.body_markers]
    headers = [h.lower() for h in spec.headers]
    client_id = profile.ids[0]

    def fill(c: IdentityContext) -> None:
        ident = c.ident
        if ident.client in profile.ids or client_evidence(ident.client_rule or "") not in ("unattributed", "self-name"):
            return  # a client the wire or ctxtap's own rules name is not renamed by a profile
        version = None
        hit = False
        if ua is not None and (m := ua.search(c.headers.get("user-agent", ""))):
            hit, version = True, (m.group(1) if m.groups() else None)
        if not hit and markers and c.raw_body is not None:
            hit = any(marker in c.raw_body for marker in markers)
        if not hit and headers:
            hit = any(h in c.headers for h in headers)
        if not hit and spec.body_fact:
            hit = bool(c.facts.get(spec.body_fact))
        if hit:
            ident.client, ident.client_rule = client_id, f"profile:{profile.name}"
            ident.client_version = version or ident.client_version

    return IdentityStep(PROFILE_STAGE, _named(fill, profile.name, "client_from_profile"))


def to_client(profile: Profile) -> Client:
    ids = frozenset(profile.ids)
    steps = [s for s in (_naming_step(profile),) if s is not None]
    steps += [_id_step(spec, profile.name) for spec in profile.identity]
    return Client(name=profile.name, ids=ids, order=profile.order, rules=tuple(_rule(r, ids) for r in profile.rule),
                  identity=tuple(steps), title_markers=tuple(profile.title_markers),
                  side_markers=tuple(profile.side_markers))


def parse(data: dict[str, Any], where: str) -> Client:
    try:
        profile = Profile.model_validate(data)
        if not profile.ids:
            raise ValueError("ids is empty: name at least one client id")
        return to_client(profile)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg'].removeprefix('Value error, ')}"
                             for e in exc.errors())
        raise ProfileError(f"client profile {where}: {problems}") from exc
    except (ValueError, re.error) as exc:
        raise ProfileError(f"client profile {where}: {exc}") from exc


def load_file(path: Path) -> Client:
    """One profile file as a Client; a clear ProfileError when it cannot be read."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ProfileError(f"client profile {path}: {exc}") from exc
    return parse(data, str(path))


BUILTIN_DIR = Path(__file__).resolve().parent


def builtin_files() -> list[Path]:
    return sorted(BUILTIN_DIR.glob("*.toml"))


def user_dir() -> Path:
    from ctxtap.capture.paths import config_dir

    return config_dir() / "clients"


def user_files() -> list[Path]:
    folder = user_dir()
    return sorted(folder.glob("*.toml")) if folder.is_dir() else []
