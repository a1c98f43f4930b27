"""Block drafts: what a protocol parser knows about one wire part before attribution.

Protocol modules emit drafts in the protocol's effective order; the attribution
engine adds the six attributes; `finalize` turns each into a `Block` with its
position, size and content hash.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ctxtap.analysis.parsing.canonical import (
    cache_breakpoint,
    canonical_content,
    canonical_json,
    content_hash,
    safe_text,
    scrub_binary,
    sha256_text,
    strip_cache_markers,
    utf8_len,
)
from ctxtap.analysis.parsing.models import Block, BlockKind, Role


@dataclass(eq=False)  # identity equality: the memo compares lists of drafts by slices
class BlockDraft:
    path: str
    kind: BlockKind
    role: Role
    wire: Any  # the wire object the path points to (hashed)
    text: str  # what gets tokenised
    wire_type: str = ""
    tool_name: str | None = None
    call_id: str | None = None
    is_error: bool | None = None
    item_index: int | None = None  # index of the message / input item it belongs to
    hints: dict[str, str] = field(default_factory=dict)  # client metadata, e.g. codex item kind
    inherited_from: str | None = None  # response id whose chain supplied this block
    hash_source: str | None = None  # canonical JSON of the wire object, when already computed


def json_text(wire: Any) -> str:
    """Canonical JSON text of a structured block (tool definitions and calls), binary scrubbed."""
    return canonical_json(scrub_binary(strip_cache_markers(wire)))


def structured(wire: Any) -> tuple[str, str | None]:
    """(text, hash source) of a structured block: one encoding serves both unless binary was scrubbed."""
    canon = canonical_content(wire)
    scrubbed = scrub_binary(canon)  # copy-on-write: the same object when nothing was replaced
    text = canonical_json(scrubbed)
    return text, (text if scrubbed is canon and not isinstance(canon, str) else None)


def structured_draft(
    path: str, kind: BlockKind, role: Role, wire: Any, wire_type: str, **extra: Any
) -> BlockDraft:
    """A draft for a tool definition / call / unknown part: canonical JSON text, hashed once."""
    text, source = structured(wire)
    return BlockDraft(path, kind, role, wire, text, wire_type, hash_source=source, **extra)


def finalize(draft: BlockDraft, position: int, attrs: dict[str, str], rule_id: str) -> Block:
    """A finished Block: attributes from the rule engine plus size, hash and breakpoint."""
    text = safe_text(draft.text)
    return Block(
        position=position,
        path=draft.path,
        kind=draft.kind,
        wire_type=draft.wire_type,
        role=draft.role,
        rule_id=rule_id,
        text=text,
        bytes=utf8_len(text),
        content_hash=sha256_text(draft.hash_source)
        if draft.hash_source is not None
        else content_hash(draft.wire),
        cache_breakpoint=cache_breakpoint(draft.wire),
        tool_name=draft.tool_name,
        call_id=draft.call_id,
        is_error=draft.is_error,
        inherited_from=draft.inherited_from,
        **attrs,
    )
