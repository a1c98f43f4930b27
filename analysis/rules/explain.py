"""`ctxtap layout --explain`: the segments of a session's first main request, each with the label
the analyzer gave it and what that label rests on, so a reader can check a layout against the text.

Excerpts come from `block_content.text`, which is stored redacted: nothing here reads raw bodies.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from ctxtap.analysis.threads.requestref import resolve_session, sessions_of

EXCERPT_CHARS = 72


class ExplainedSegment(BaseModel):
    position: int
    segment_index: int
    path: str
    source: str
    evidence: str
    rule_id: str
    label: str | None
    tokens: int
    excerpt: str


class ExplainedRequest(BaseModel):
    session_id: str
    client: str
    client_evidence: str | None
    request_number: int
    request_id: str
    segments: list[ExplainedSegment]


def excerpt(text: str, byte_start: int, byte_end: int, limit: int = EXCERPT_CHARS) -> str:
    """The segment's text on one line, cut to `limit` characters."""
    piece = text.encode()[byte_start:byte_end].decode(errors="ignore")
    flat = " ".join(piece.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _first_main(con: Any, capture_id: str, session_id: str) -> tuple | None:
    return con.execute(
        "SELECT request_id, request_number, client, client_evidence FROM requests WHERE capture_id = ? "
        "AND session_id = ? ORDER BY purpose = 'main' DESC, thread_kind = 'main' DESC, seq_in_session LIMIT 1",
        [capture_id, session_id]).fetchone()


def explain(con: Any, capture_id: str, session: str | None = None) -> list[ExplainedRequest]:
    """The first main request of each session (or of `session`, an id or a unique start of one)."""
    ids = [resolve_session(con, capture_id, session)] if session else sessions_of(con, capture_id)
    out = []
    for session_id in ids:
        first = _first_main(con, capture_id, session_id)
        if first is None:
            continue
        request_id, number, client, client_evidence = first
        rows = con.execute(
            "SELECT s.position, s.segment_index, s.path, s.source, s.evidence, s.rule_id, s.label, "
            "s.tokens_estimated, s.byte_start, s.byte_end, c.text FROM segments s "
            "JOIN t_block_content c ON c.capture_id = s.capture_id AND c.content_hash = s.content_hash "
            "WHERE s.capture_id = ? AND s.request_id = ? ORDER BY s.position, s.segment_index",
            [capture_id, request_id]).fetchall()
        segments = [ExplainedSegment(position=r[0], segment_index=r[1], path=r[2], source=r[3], evidence=r[4],
                                     rule_id=r[5], label=r[6], tokens=r[7] or 0,
                                     excerpt=excerpt(r[10] or "", r[8], r[9])) for r in rows]
        out.append(ExplainedRequest(session_id=session_id, client=client, client_evidence=client_evidence,
                                    request_number=number, request_id=request_id, segments=segments))
    return out
