"""Which statements a user's query may run over the captures, decided before DuckDB runs any of them.

DuckDB's `allowed_directories` governs reads and writes alike, so a sandboxed connection may still
`COPY ... TO` a file inside the captures' datasets and replace what later queries, reports and the
live view read. The guard therefore looks at what each parsed statement is: an allow-list of
statement types, never a deny-list, so a statement type DuckDB adds later is refused until allowed.

Without `allow_external` only reading statements run (SELECT and its forms: WITH, FROM-first,
VALUES, DESCRIBE, SHOW, SUMMARIZE; EXPLAIN of one). With it, statements that write files or databases
run too, but a COPY, EXPORT or ATTACH whose path lies inside a protected directory (the captures
queried, the captures store) is refused, and so is one whose path the guard cannot read.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import duckdb

ST = duckdb.StatementType
READING = frozenset({ST.SELECT})  # DESCRIBE, SHOW, SUMMARIZE, VALUES, PIVOT ... IN are SELECT statements
# With --allow-external: data statements on the in-memory database or an attached file (whose path is
# checked at ATTACH). Never SET/RESET/PRAGMA/CALL (they redirect temp, profiling and log files),
# LOAD/INSTALL (an extension writes where it likes), PREPARE/EXECUTE (a prepared COPY runs unchecked).
EXTERNAL = READING | {ST.COPY, ST.EXPORT, ST.ATTACH, ST.DETACH, ST.CREATE, ST.INSERT, ST.UPDATE, ST.DELETE,
                      ST.DROP, ST.ALTER, ST.CREATE_FUNC, ST.TRANSACTION}
PATH_STATEMENTS = {ST.COPY: "COPY", ST.EXPORT: "EXPORT DATABASE", ST.ATTACH: "ATTACH"}
SHOWN = "SELECT, WITH, VALUES, DESCRIBE, SHOW, SUMMARIZE, EXPLAIN"
_NOT_A_PATH = {"", ":memory:"}


class SqlRefused(Exception):
    """A statement the query may not run; the message is one line for the terminal."""


def check_statements(sql: str, allow_external: bool = False, protected: Sequence[Path] = ()) -> None:
    """Raise `SqlRefused` unless every statement in `sql` may run.

    A query DuckDB cannot parse passes: running it fails with DuckDB's own message, and nothing runs.
    """
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error:
        return
    roots = _identities(protected)
    for statement in statements:
        _check(statement.query, _kind(statement, allow_external), allow_external, roots)


def _kind(statement: duckdb.Statement, allow_external: bool) -> duckdb.StatementType:
    try:
        return statement.type
    except ValueError:  # a statement type this duckdb module has no name for (UPDATE EXTENSIONS in 2.0)
        raise SqlRefused(_denied("a statement of a kind ctxtap does not know", allow_external)) from None


def _check(text: str, kind: duckdb.StatementType, allow_external: bool, roots: set[tuple[int, int]]) -> None:
    if kind == ST.EXPLAIN:  # EXPLAIN ANALYZE runs the statement it explains
        inner = _explained(text)
        if inner is None:
            raise SqlRefused(_denied("an EXPLAIN whose statement ctxtap cannot read", allow_external))
        _check(inner.query, _kind(inner, allow_external), allow_external, roots)
        return
    if kind in READING:
        return
    name = kind.name.replace("_", " ")
    if not allow_external or kind not in EXTERNAL:
        hint = " (SELECT * FROM a table function reads what a PRAGMA or CALL would)" \
            if kind in (ST.PRAGMA, ST.CALL) else ""
        raise SqlRefused(_denied(f"a {name} statement", allow_external) + hint)
    if kind in PATH_STATEMENTS:
        verb = PATH_STATEMENTS[kind]
        path = _target(text, kind)
        if path is None:
            raise SqlRefused(f"Permission denied: the path of this {verb} is not one quoted '...' path, so "
                             "ctxtap cannot tell whether it lies inside a capture")
        if path is not _READS and _inside(path, roots):
            raise SqlRefused(f"Permission denied: {verb} '{path}' would write inside a capture or the captures "
                             "store; --allow-external writes only outside them")


def _denied(what: str, allow_external: bool) -> str:
    if allow_external:
        return (f"Permission denied: ctxtap sql does not run {what}, even with --allow-external "
                "(it runs reading statements, COPY, EXPORT, ATTACH and table statements)")
    return (f"Permission denied: ctxtap sql runs reading statements only ({SHOWN}), not {what}; "
            "--allow-external lets a query read and write files outside the captures")


def _explained(text: str) -> duckdb.Statement | None:
    """The one statement after `EXPLAIN [ANALYZE] [(options)]`, or None."""
    tokens = _tokens(text)
    i = 0
    if i < len(tokens) and _word(tokens[i]) == "EXPLAIN":
        i += 1
    else:
        return None
    if i < len(tokens) and _word(tokens[i]) in ("ANALYZE", "ANALYSE"):
        i += 1
    if i < len(tokens) and tokens[i][1] == "operator" and tokens[i][2].startswith("("):
        depth = 0
        while i < len(tokens):
            depth += _nesting(tokens[i][1], tokens[i][2])
            i += 1
            if depth == 0:
                break
    if i >= len(tokens):
        return None
    try:
        inner = duckdb.extract_statements(text[tokens[i][0]:])
    except (duckdb.Error, ValueError):
        return None
    return inner[0] if len(inner) == 1 else None


_READS = "<reads>"  # a COPY ... FROM: it reads a file into a table, no path to check


def _target(text: str, kind: duckdb.StatementType) -> str | None:
    """The file a COPY ... TO, EXPORT DATABASE or ATTACH writes (`_READS` for COPY ... FROM); None when it
    is not one plain quoted string at the place the statement's grammar puts it."""
    tokens = _tokens(text)
    if kind != ST.COPY:  # ATTACH [DATABASE] [IF NOT EXISTS] 'path', EXPORT DATABASE [name TO] 'path'
        i = 1
        while i < len(tokens) and tokens[i][1] == "keyword":
            i += 1
        if kind == ST.EXPORT and i + 1 < len(tokens) and tokens[i][1] == "identifier" \
                and _word(tokens[i + 1]) == "TO":
            i += 2
        return _string(tokens, i)
    depth = 0  # COPY table|(query) TO|FROM 'path': the first TO or FROM outside parentheses
    for i, (_, typ, tok) in enumerate(tokens[1:], start=1):
        depth += _nesting(typ, tok)
        if depth == 0 and _word(tokens[i]) == "FROM":
            return _READS
        if depth == 0 and _word(tokens[i]) == "TO":
            return _string(tokens, i + 1)
    return None


def _string(tokens: list[tuple[int, str, str]], i: int) -> str | None:
    """The value of the standard '...' string at `tokens[i]` when no second string follows it."""
    if i >= len(tokens) or tokens[i][1] != "string_const":
        return None
    tok = tokens[i][2]
    if len(tok) < 2 or tok[0] != "'" or tok[-1] != "'":
        return None  # E'...' escapes, $$...$$ quoting: refused rather than interpreted
    if i + 1 < len(tokens) and tokens[i + 1][1] == "string_const":
        return None
    return tok[1:-1].replace("''", "'")


def _tokens(text: str) -> list[tuple[int, str, str]]:
    """(offset, type, text) of each token, comments left out."""
    raw = duckdb.tokenize(text)
    out = []
    for n, (start, typ) in enumerate(raw):
        end = raw[n + 1][0] if n + 1 < len(raw) else len(text)
        if typ.name != "comment":
            out.append((start, typ.name, text[start:end].strip()))
    return out


def _nesting(typ: str, tok: str) -> int:
    return tok.count("(") - tok.count(")") if typ == "operator" else 0


def _word(token: tuple[int, str, str]) -> str:
    return token[2].upper() if token[1] == "keyword" else ""


def _identities(dirs: Sequence[Path]) -> set[tuple[int, int]]:
    """(device, inode) of each existing protected directory: compared with a target's ancestors, this
    sees through symlinks, `..` and case-insensitive file systems alike."""
    out = set()
    for d in dirs:
        try:
            st = os.stat(d)
        except OSError:
            continue
        out.add((st.st_dev, st.st_ino))
    return out


def _inside(path: str, roots: set[tuple[int, int]]) -> bool:
    """Whether `path` (as DuckDB would open it: `~` expanded, relative to the working directory) lies in
    one of the directories; a URL of another file system (s3://, https://) lies in none."""
    if path in _NOT_A_PATH:
        return False
    if path[:7].lower() == "file://":
        path = path[7:]
    elif "://" in path:
        return False
    target = Path(os.path.expanduser(path))
    target = (target if target.is_absolute() else Path.cwd() / target).resolve()
    for place in (target, *target.parents):
        try:
            st = os.stat(place)
        except OSError:
            continue
        if (st.st_dev, st.st_ino) in roots:
            return True
    return False
