"""A draft profile for a client, from what a capture of it shows (`ctxtap clients suggest`).

A user who meets a client ctxtap has no profile for gets a starting point written from the
capture rather than from scratch: the name the wire gives it, a marker from the start of its
system prompt that names it in later captures, one rule per whole text block the reader already
recognised (its first line as the marker, the source it was read as), the header or body field its
session id came from, and the first line of each side request's instruction. Every rule is a
suggestion for the user to check; nothing is installed until the user saves the file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from ctxtap.analysis.clients.profiles import SOURCES, Profile
from ctxtap.analysis.parsing.models import Block, ModelCall
from ctxtap.analysis.threads.sessions import SIDE_PURPOSES
from ctxtap.capture.classify import client_name

MARKER_CHARS = 60  # a rule's `starts`: long enough to be the client's, short enough to survive edits
MAX_CALLS = 400
CONTAINS_HEAD = 400  # a block rule's marker is looked for near the block's start
_SAFE_MARKER = re.compile(r"[^\"\\\n\r\t]{12,}")  # text that appears unescaped in a JSON body
_BLOCK_SOURCES = frozenset(SOURCES) - {"user_task", "assistant_output", "platform_rules"}


_TAG_ONLY = re.compile(r"^</?[A-Za-z][\w.:-]*(?:\s[^<>]*)?>$")


def _first_line(text: str) -> str:
    return next((ln.strip() for ln in text.strip().splitlines() if ln.strip()), "")[:MARKER_CHARS]


# where a line starts to say what changes from run to run: a number, a path, a day or a month
_VOLATILE = re.compile(r"\d|/|~|\b(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day\b|\b(?:January|February|March|April|May"
                       r"|June|July|August|September|October|November|December)\b")


def _content_line(text: str) -> str:
    """The first line that says something (a wrapping tag such as `<system-reminder>` does not), up to
    where it names what changes from run to run (a date, a path, a number)."""
    line = next((ln.strip() for ln in text.strip().splitlines() if ln.strip() and not _TAG_ONLY.match(ln.strip())),
                "")
    m = _VOLATILE.search(line)
    return (line[: m.start()] if m else line).rstrip(" ,")[:MARKER_CHARS]


def _name_for(client: str) -> str:
    """`unknown (ai-sdk/anthropic)` -> `my-client`; `qwen-code` stays."""
    return "my-client" if client.startswith("unknown") else client_name(client)


def _marker(text: str) -> str | None:
    """A stretch of the system prompt's first line that a raw body holds as written."""
    m = _SAFE_MARKER.search(_first_line(text))
    return m.group(0).strip() if m else None


def draft(calls: Iterable[ModelCall], name: str | None = None) -> Profile:
    """The profile a capture suggests (see the module docstring)."""
    main: ModelCall | None = None
    sides: list[ModelCall] = []
    for i, call in enumerate(calls):
        if i >= MAX_CALLS:
            break
        if call.purpose.purpose == "main" and main is None:
            main = call
        elif call.purpose.purpose in SIDE_PURPOSES:
            sides.append(call)
    if main is None:
        raise ValueError("no main request in this capture: nothing to draft a profile from")
    ident = main.identity
    profile_name = name or _name_for(ident.client)
    rules: list[dict] = []
    system = next((b for b in main.request.blocks if b.kind == "instruction_text" and b.text.strip()), None)
    identify: dict = {}
    if system is not None and _first_line(system.text):
        rules.append({"id": f"{profile_name}.system-prompt", "doc": "the client's system prompt",
                      "starts": [_first_line(system.text)], "roles": [system.role], "source": "platform_rules"})
        marker = _marker(system.text)
        if marker:
            identify["body_markers"] = [marker]
    rules += _block_rules(main.request.blocks, profile_name, {_first_line(system.text)} if system else set())
    identity = [_id_source(key) for key in ident.evidence if _id_source(key)]
    side_markers = sorted({line for c in sides for b in c.request.blocks[:3]
                           if b.kind in ("instruction_text", "message_text") and (line := _first_line(b.text))})
    return Profile.model_validate({
        "name": profile_name, "ids": [profile_name], "order": 100,
        "doc": f"drafted from a capture of {ident.client}" + (f" {ident.client_version}" if ident.client_version
                                                               else ""),
        "identify": identify or None, "rule": rules,
        "identity": [dict(t) for t in dict.fromkeys(tuple(sorted(x.items())) for x in identity if x)],
        "side_markers": side_markers[:8],
    })


def _block_rules(blocks: list[Block], name: str, taken: set[str]) -> list[dict]:
    """A rule per whole text block the reader recognised by its words (not by a client's rule)."""
    out = []
    for block in blocks:
        if block.kind not in ("instruction_text", "message_text") or block.segments:
            continue
        if block.source not in _BLOCK_SOURCES or not block.rule_id.startswith(("detect.", "generic.")):
            continue
        line = _content_line(block.text)
        if len(line) < 12 or line in taken:
            continue
        taken.add(line)
        slug = re.sub(r"[^a-z0-9]+", "-", block.source.replace("_", "-")).strip("-")
        out.append({"id": f"{name}.{slug}-{len(out) + 1}", "doc": f"read as {block.source} by {block.rule_id}",
                    "contains": [line], "head": CONTAINS_HEAD, "roles": [block.role], "source": block.source})
    return out


_ID_FIELDS = {"session": "session_id", "conversation": "session_id", "thread": "thread_id", "turn": "turn_id"}


def _id_source(evidence_key: str) -> dict | None:
    """`header.x-foo-session-id` -> {field: session_id, header: x-foo-session-id}: an id the reader found
    in a field named for what it is."""
    kind, _, key = evidence_key.partition(".")
    field = next((f for word, f in _ID_FIELDS.items() if word in key.lower()), None)
    if field is None or kind not in ("header", "body") or not key:
        return None
    return {"field": field, kind: key}


def to_toml(profile: Profile, source: str) -> str:
    """The profile as a TOML file a user can read, edit and save in the profiles folder."""
    out = [f"# Drafted by `ctxtap clients suggest` from {source}. Check every rule before you rely on it:",
           "# each marker is a line of this capture, and a rule labels every block that starts with it.",
           f"name = {_q(profile.name)}", f"ids = {_list(profile.ids)}", f"order = {profile.order}",
           f"doc = {_q(profile.doc)}"]
    if profile.side_markers:
        out.append(f"side_markers = {_list(profile.side_markers)}")
    if profile.identify is not None and profile.identify.body_markers:
        out += ["", "[identify]", f"body_markers = {_list(profile.identify.body_markers)}"]
    for rule in profile.rule:
        out += ["", "[[rule]]", f"id = {_q(rule.id)}", f"doc = {_q(rule.doc)}"]
        out += [f"starts = {_list(rule.starts)}"] if rule.starts else []
        out += [f"contains = {_list(rule.contains)}", f"head = {rule.head}"] if rule.contains else []
        out += [f"roles = {_list(rule.roles)}", f"source = {_q(rule.source)}"]
    for spec in profile.identity:
        out += ["", "[[identity]]", f"field = {_q(spec.field)}"]
        out += [f"{k} = {_q(v)}" for k, v in (("header", spec.header), ("body", spec.body)) if v]
    return "\n".join(out) + "\n"


def _q(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # a TOML basic string is a JSON string


def _list(items: Iterable[str]) -> str:
    return "[" + ", ".join(_q(i) for i in items) + "]"
