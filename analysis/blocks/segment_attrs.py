"""A block's segments and the attributes they give it.

After the rules have read a text block as a whole, the detectors read its sections
(`analysis.segments.read_pieces`). Sections the detectors recognise get the attributes of
what they are; the rest keep the block's own. A block whose sections differ gets
`Block.segments` and attributes that summarise them (`mixed` where they differ); a block
that the detectors read as one thing keeps its client rule, or — where only a generic
fallback had labelled it — takes the detectors' reading.
"""

from __future__ import annotations

from ctxtap.analysis.blocks.segments import Piece, byte_offsets, read_pieces
from ctxtap.analysis.parsing.models import Block, Segment
from ctxtap.analysis.threads import constancy, runfacts

SEGMENTED_KINDS = frozenset({"instruction_text", "message_text"})
MIN_BYTES = 40
ATTRS = ("source", "authority", "scope", "lifetime", "content_type")

# what each detected source means for the other attributes (the study's presets)
PRESETS: dict[str, dict[str, str]] = {
    "runtime_environment": dict(source="runtime_environment", authority="platform", scope="session",
                                lifetime="session", content_type="data"),
    "project_instructions": dict(source="project_instructions", authority="project", scope="repository",
                                 lifetime="project", content_type="instruction"),
    "system_reminder": dict(source="system_reminder", authority="platform", scope="session", lifetime="turn",
                            content_type="instruction"),
    "tool_catalogue": dict(source="tool_catalogue", authority="platform", scope="global",
                           lifetime="client_version", content_type="instruction"),
    "plugin_catalogue": dict(source="plugin_catalogue", authority="platform", scope="global", lifetime="session",
                             content_type="instruction"),
    "summary": dict(source="summary", authority="data", scope="session", lifetime="session", content_type="data"),
    # the text a client wraps around the task it was given: the client's own, for this turn
    "platform_rules": dict(source="platform_rules", authority="platform", scope="turn", lifetime="turn",
                           content_type="instruction"),
}
TASK_RULE = "argv.task"
# blocks read whole: a turn the client wrote before the model answered is its own, files and all (the
# "files" of a canned example exchange are examples, not the workspace)
WHOLE_RULES = frozenset({"argv.canned-turn"})
TEMPLATE_RULE = "argv.task-template"
# plain user and assistant turns, as placed by position: what constancy over runs can read better
TASK_RULES = frozenset({"generic.first-user-text-task", "generic.user-text-task"})
TURN_RULES = TASK_RULES | {"generic.assistant-text", "argv.not-the-task"}
MAX_VARYING_LINES = 8  # a longer run of lines that varies between runs is another mode's text, not the environment


# generic rules that judged a whole block by a part of its content: the rest of such a block is
# what its role says (rules in a system or developer message)
CONTENT_GUESSES = frozenset({"generic.environment", "generic.project-file", "generic.date-reminder"})
ROLE_DEFAULTS: dict[str, tuple[dict[str, str], str]] = {
    role: (dict(source="platform_rules", authority="platform", scope="global", lifetime="client_version",
                content_type="instruction"), "generic.system-text") for role in ("system", "developer")}


def _generic(rule_id: str) -> bool:
    """A fallback that guessed from position or role, not a rule that knows the client."""
    return rule_id.startswith("generic.")


_CACHE: dict[tuple, dict | None] = {}
CACHE_SIZE = 4096  # distinct (text, rule, role) readings remembered: system prompts repeat on every request


def with_segments(block: Block) -> Block:
    """The block with its segments (a new object only when the detectors change something).

    Reading a block depends only on its text, role and what the rule said, so the reading of
    a text seen before (the same system prompt on every request) is reused."""
    if block.kind not in SEGMENTED_KINDS or block.rule_id in WHOLE_RULES or (
            block.bytes < MIN_BYTES and not (constancy.digest() and block.rule_id in TURN_RULES)):
        return block
    key = (block.content_hash, block.role, block.rule_id, *(getattr(block, a) for a in ATTRS), runfacts.current(),
           runfacts.tasks() if block.rule_id == TASK_RULE else (), constancy.digest())
    if key in _CACHE:
        update = _CACHE[key]
    else:
        update = _reading(block)
        if len(_CACHE) >= CACHE_SIZE:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = update
    return block if update is None else block.model_copy(update=update)


def _task_pieces(text: str) -> list[Piece] | None:
    """A text holding the known task: the task's span as the task, what is around it read by the
    detectors, and what they do not recognise as the client's template (None: no task in it)."""
    span = runfacts.find_task(text)
    if span is None:
        return None
    start, end = span
    if not text[:start].strip():
        start = 0
    if not text[end:].strip():
        end = len(text)
    out: list[Piece] = []
    for lo, hi in ((0, start), (end, len(text))):
        if hi <= lo:
            continue
        for p in read_pieces(text[lo:hi]):
            source, rule = (p.source, p.rule_id) if p.source else ("platform_rules", TEMPLATE_RULE)
            out.append(Piece(lo + p.start, lo + p.end, source, rule, p.evidence or "around the task", p.label))
        if lo == 0:
            out.append(Piece(start, end, "user_task", TASK_RULE, "the task the run was given"))
    if start == 0:
        out.insert(0, Piece(start, end, "user_task", TASK_RULE, "the task the run was given"))
    return out


def _across(rule_id: str | None) -> bool:
    return bool(rule_id) and rule_id.startswith("cross-session.")


def _runs(text: str, lo: int, hi: int, role: str) -> list[tuple[int, int, str | None]]:
    """The lines of text[lo:hi] in runs of one verdict; a line too short to compare joins the run above."""
    out: list[tuple[int, int, str | None]] = []
    for a, b, verdict in constancy.line_states(text[lo:hi], role):
        if out and (verdict is None or verdict == out[-1][2]):
            out[-1] = (out[-1][0], lo + b, out[-1][2])
        else:
            out.append((lo + a, lo + b, verdict))
    return out


def _canned(block: Block, pieces: list[Piece]) -> bool:
    """A turn every run sends whole: an assistant turn in the first request (no model had answered
    yet), or a user turn no detector reads as anything (an example the client shows the model)."""
    if constancy.turn_state(block.text) != constancy.CONSTANT:
        return False
    return block.role == "assistant" or all(p.source is None for p in pieces)


def _across_runs(block: Block, pieces: list[Piece]) -> list[Piece]:
    """Pieces no detector recognised, read by their constancy over runs (analysis.threads.constancy).

    System text: a short run of lines that varies between runs is the run's environment, the
    constant lines are the client's rules. User text: the constant lines are the client's template
    around a task that varies. A turn constant whole is one the client wrote (a canned example)."""
    system = block.role in constancy.SYSTEM_ROLES
    if not system and block.rule_id not in TURN_RULES:
        return pieces
    if not system and _canned(block, pieces):
        return [Piece(0, len(block.text), "platform_rules", "cross-session.canned-turn", "constant across runs")]
    if block.role == "assistant":
        return pieces
    out: list[Piece] = []
    for p in pieces:
        if p.source is not None or p.rule_id is not None:
            out.append(p)
            continue
        for a, b, verdict in _runs(block.text, p.start, p.end, block.role):
            lines = block.text[a:b].rstrip("\n").count("\n") + 1
            if verdict is None:
                out.append(Piece(a, b, None, None, p.evidence, p.label))
            elif system and verdict == constancy.VARIES and lines <= MAX_VARYING_LINES:
                out.append(Piece(a, b, "runtime_environment", "cross-session.varies", "varies across runs", p.label))
            elif system:
                out.append(Piece(a, b, None, "cross-session.constant", f"{verdict} across runs", p.label))
            elif verdict == constancy.CONSTANT:
                out.append(Piece(a, b, "platform_rules", "cross-session.template", "constant across runs", p.label))
            elif block.rule_id in TASK_RULES:  # the task the run was given varies; text before a known task is not it
                out.append(Piece(a, b, None, "cross-session.varies", "varies across runs", p.label))
            else:
                out.append(Piece(a, b, None, None, p.evidence, p.label))
    return out


def _reading(block: Block) -> dict | None:
    """The attribute changes the block's sections call for, or None."""
    pieces = (_task_pieces(block.text) if block.rule_id == TASK_RULE else None) or read_pieces(block.text)
    if constancy.current() and (_generic(block.rule_id) or block.rule_id in TURN_RULES):
        pieces = _across_runs(block, pieces)
    own = {a: getattr(block, a) for a in ATTRS}
    own_rule = block.rule_id
    if block.rule_id in CONTENT_GUESSES and block.role in ROLE_DEFAULTS and len(pieces) > 1:
        own, own_rule = ROLE_DEFAULTS[block.role]
    readings: list[tuple[int, int, dict[str, str], str, str]] = []
    for p in pieces:
        # a section read as what the rule already said keeps the rule's attributes (it knows the scope)
        detected = p.source in PRESETS and p.source != own["source"]
        attrs = PRESETS[p.source] if detected else own
        rule = p.rule_id if detected or (p.source is None and _across(p.rule_id)) else own_rule
        if readings and readings[-1][2] == attrs and readings[-1][3] == rule:
            start, _, a, r, label = readings[-1]
            readings[-1] = (start, p.end, a, r, label)
        else:
            readings.append((p.start, p.end, attrs, rule, p.label if detected else ""))
    if len(readings) == 1:
        _, _, attrs, rule, _ = readings[0]
        if rule == block.rule_id or attrs["source"] == block.source or not (
                _generic(block.rule_id) or block.source == "unknown"):
            return None  # one reading: the client rule (or a generic rule that agrees) stands
        return {**attrs, "rule_id": rule}
    offsets = byte_offsets(block.text, [r[0] for r in readings] + [len(block.text)])
    segments = [Segment(start=offsets[i], end=offsets[i + 1], rule_id=rule, label=label, **attrs)
                for i, (_, _, attrs, rule, label) in enumerate(readings)]
    return {**_summary(segments), "segments": segments}


def _summary(segments: list[Segment]) -> dict[str, str]:
    """Each attribute the segments share, `mixed` where they differ."""
    out = {}
    for a in ATTRS:
        values = {getattr(s, a) for s in segments}
        out[a] = values.pop() if len(values) == 1 else "mixed"
    return out
