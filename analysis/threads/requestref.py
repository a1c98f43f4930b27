"""Which request or session a user means, read alike by `ctxtap diff`, `ctxtap replay` and the live view.

A request is named by its number, the 1-based `request_number` of the requests view that the
report and the live view print as `#N` (`13`, `#13`; `SESSION#13` where the capture holds several
sessions), or by its id or the start of one. A session is named by its id or the start of one.
Whatever does not name exactly one is refused in words that list the candidates, so a short
prefix never silently picks the wrong request.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_NUMBER = re.compile(r"#?(\d+)")
MAX_LISTED = 5


class RefError(LookupError):
    """A reference that names no request or session, or more than one, in words."""


@dataclass(frozen=True)
class RequestRef:
    request_id: str
    session_id: str
    request_number: int


def _listing(values: list[str], total: int) -> str:
    more = f", … {total - len(values)} more" if total > len(values) else ""
    return ", ".join(values) + more


def resolve_session(con: Any, capture_id: str, text: str) -> str:
    """The session whose id is `text` or starts with it, with or without its client prefix (exactly one)."""
    rows = [r[0] for r in con.execute(  # `claude-code:5f1c...` is also `5f1c`
        "SELECT DISTINCT session_id FROM requests WHERE capture_id = ? AND (starts_with(session_id, ?) "
        "OR starts_with(substr(session_id, strpos(session_id, ':') + 1), ?)) ORDER BY 1",
        [capture_id, text, text]).fetchall()]
    if text in rows:
        return text
    if not rows:
        raise RefError(f"no session {text!r} (list them: SELECT session_id FROM sessions)")
    if len(rows) > 1:
        raise RefError(f"{text!r} starts {len(rows)} sessions ({_listing(rows[:MAX_LISTED], len(rows))}); "
                       "give more of the id")
    return rows[0]


def sessions_of(con: Any, capture_id: str) -> list[str]:
    return [r[0] for r in con.execute("SELECT session_id FROM sessions WHERE capture_id = ? ORDER BY first_ts",
                                      [capture_id]).fetchall()]


def by_number(con: Any, capture_id: str, number: int, session: str | None = None) -> RequestRef:
    """Request #`number` of `session` (an id or a start of one), or of the capture's only session."""
    if session is None:
        sessions = sessions_of(con, capture_id)
        if len(sessions) > 1:
            raise RefError(f"#{number}: the capture holds {len(sessions)} sessions, each numbering its requests "
                           f"from #1; say which as SESSION#{number} (sessions: "
                           f"{_listing(sessions[:MAX_LISTED], len(sessions))})")
        if not sessions:
            raise RefError("the capture holds no model requests")
        session = sessions[0]
    else:
        session = resolve_session(con, capture_id, session)
    row = con.execute("SELECT request_id FROM requests WHERE capture_id = ? AND session_id = ? AND request_number = ?",
                      [capture_id, session, number]).fetchone()
    if row is None:
        n = con.execute("SELECT count(*) FROM requests WHERE capture_id = ? AND session_id = ?",
                        [capture_id, session]).fetchone()[0]
        raise RefError(f"session {session} has no request {number} (its requests are #1..#{n})")
    return RequestRef(row[0], session, number)


def by_id(con: Any, capture_id: str, text: str) -> RequestRef:
    """The request whose id is `text` or the one request whose id starts with it."""
    rows = con.execute(
        "SELECT request_id, session_id, request_number FROM requests WHERE capture_id = ? "
        "AND starts_with(request_id, ?) ORDER BY request_id <> ?, session_id, request_number LIMIT ?",
        [capture_id, text, text, MAX_LISTED + 1]).fetchall()
    if rows and rows[0][0] == text:
        return RequestRef(*rows[0])
    if not rows:
        raise RefError(f"no request {text!r} (a request is its number, #N as the report shows it, or its id "
                       "or the start of one)")
    if len(rows) > 1:
        total = con.execute("SELECT count(*) FROM requests WHERE capture_id = ? AND starts_with(request_id, ?)",
                            [capture_id, text]).fetchone()[0]
        names = [f"{rid} (#{num} of {sid})" for rid, sid, num in rows[:MAX_LISTED]]
        raise RefError(f"{text!r} starts {total} request ids: {_listing(names, total)}; give more of the id")
    return RequestRef(*rows[0])


def resolve_request(con: Any, capture_id: str, text: str, session: str | None = None) -> RequestRef:
    """The request `text` names: `N` or `#N` (in `session`, or the capture's only session; digits
    alone are always a number), `SESSION#N`, or a request id or unique start of one (an id wins
    over `SESSION#N`: a WebSocket request's id is `<flow id>#<message index>`)."""
    text = text.strip()
    if not text:
        raise RefError("name a request: its number (#N) or its id")
    number = _NUMBER.fullmatch(text)
    if number:
        return by_number(con, capture_id, int(number.group(1)), session)
    try:
        return by_id(con, capture_id, text)
    except RefError as not_an_id:
        head, sep, tail = text.rpartition("#")
        if not (sep and head and tail.isdigit()):
            raise
        try:
            return by_number(con, capture_id, int(tail), head)
        except RefError as exc:
            if str(exc).startswith("no session"):
                raise not_an_id from None
            raise
