"""Block drafts: what a protocol parser knows about one wire part before attribution.

Protocol modules emit drafts in the protocol's effective order; the attribution
engine adds the six attributes; `finalize` turns each into a `Block` with its
position, size and content hash.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from analysis.canonical import (
    base64_size,
    cache_breakpoint,
    canonical_content,
    canonical_json,
    content_hash,
    data_url_placeholder,
    safe_text,
    scrub_binary,
    sha256_text,
    strip_cache_markers,
    utf8_len,
)
from analysis.models import Block, BlockKind, Role


@dataclass
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


def media_placeholder(kind: str, media_type: str | None, data: Any) -> str:
    size = base64_size(data) if isinstance(data, str) else 0
    return f"[{kind} {media_type or 'application/octet-stream'} {size} bytes]"


def anthropic_source_text(kind: str, source: Any) -> str:
    """Placeholder (or text) for an Anthropic image/document source."""
    if not isinstance(source, dict):
        return f"[{kind}]"
    stype = source.get("type")
    if stype == "base64":
        return media_placeholder(kind, source.get("media_type"), source.get("data"))
    if stype == "url":
        return data_url_placeholder(kind, str(source.get("url", "")))
    if stype == "text":
        return str(source.get("data", ""))
    if stype == "file":
        return f"[{kind} file {source.get('file_id', '')}]"
    if stype == "content":
        return parts_text(source.get("content"))
    return f"[{kind} {stype}]"


def parts_text(content: Any) -> str:
    """Tokenised text of a content value: a string, or a list of text/media parts joined."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return json_text(content)
    out: list[str] = []
    all_text = True
    for part in content:
        if isinstance(part, str):
            out.append(part)
            continue
        if not isinstance(part, dict):
            all_text = False
            out.append(json_text(part))
            continue
        ptype = part.get("type")
        if "text" in part and isinstance(part.get("text"), str):
            out.append(part["text"])
            continue
        all_text = False
        if ptype == "image":
            out.append(anthropic_source_text("image", part.get("source")))
        elif ptype == "document":
            out.append(anthropic_source_text("document", part.get("source")))
        elif ptype in ("input_image", "image_url"):
            url = part.get("image_url")
            if isinstance(url, dict):
                url = url.get("url")
            if isinstance(url, str):
                out.append(data_url_placeholder("image", url))
            else:
                out.append(f"[image file {part.get('file_id', '')}]")
        elif ptype == "input_file":
            out.append(f"[file {part.get('filename') or part.get('file_id') or ''}]")
        else:
            out.append(json_text(part))
    # consecutive text parts reach the tokenizer back to back; placeholders get their own line
    return "".join(out) if all_text else "\n".join(out)


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
