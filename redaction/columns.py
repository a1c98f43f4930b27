"""Credentials in a table's column whose header names them: Markdown tables and CSV/TSV files.

A README lists its test accounts (`| user | password |`, then `| alice | Xk9!... |`), an agent
reads `users.csv` (`email,password` then one row a user) or a spreadsheet export: the name is in
the header, the values rows below it, so no rule that reads a name beside its value sees them.
The header row is found by a cell that is a credential's name (as the name rules read names:
`password`, `db_password`, `api_key`, `client secret`, `token`; `pass` and `pwd` when a user's
column is beside them), and each row below, while it has the header's shape (a Markdown row; a
delimited line of as many cells), gives that column's cell. A strong name's cell is redacted
unless it is clearly no secret (`is_non_secret_value`: a reference, a mask, a word such as
`required`); a weak name's (`token`, `key`) only when it looks generated.

Tables are read in the raw bytes, a JSON string's escaped line ends (`\\n`) and tabs (`\\t`) as
their own: a trigger opening every JSON string whose prose said "username, password," cost the scan a
quarter more.
"""

from __future__ import annotations

import re

from ctxtap.redaction.detector import Detector, TriggerHits, samples
from ctxtap.redaction.engine import Trigger
from ctxtap.redaction.false_positives import is_non_secret_value, looks_random
from ctxtap.redaction.json_escapes import string_end, unescaped_quote
from ctxtap.redaction.names import name_kind, strong_name_kind
from ctxtap.redaction.spans import PRIORITY_ASSIGNMENT, Span

_KEYWORDS = rb"(?:pass(?:word|wd|phrase)?|pwd|secret|token|api[ _\-]?key|credentials?)"
# A header cell's credential keyword and the cell's end (a delimiter or the line's, raw or JSON-escaped:
# `\\n`, `\\t`); where the cell begins is read back in Python (a delimiter and a word before the keyword
# in the pattern cost the engine twice as much)
TRIGGERS: tuple[Trigger, ...] = (
    Trigger(_KEYWORDS + rb"(?:\\?[\"'`*])?[ \t]*(?:[,;\t|]|\r?\n|\\[rnt])",
            literals=(b"pass", b"pwd", b"secret", b"token", b"key", b"credential"), window=24, caseless=True,
            opens=False),
)
_MAX_LINE = 4096
_MAX_HEADER = 1024
_BREAK_RE = re.compile(rb"\r?\n|(?:\\r)?\\n")  # a line's end, raw or escaped in a JSON string
_USER_HEADERS = frozenset(b"user username user_name login email e-mail mail account uid userid user_id".split())
_SEPARATOR_ROW_RE = re.compile(rb"[ \t]*\|?(?:[ \t]*:?-{3,}:?[ \t]*\|)+(?:[ \t]*:?-{3,}:?[ \t]*)?[ \t]*\Z")
# A header cell is a column's name: a word or a few (`Client Secret`, `db_password`), emphasis and quotes aside
_HEADER_NAME_RE = re.compile(rb"[A-Za-z_][A-Za-z0-9 _.\-]{0,47}")
# `cat -n` and an agent's file reader number the lines they show: `     3\t`, `     3→` (raw or escaped)
_LINE_NUMBER_RE = re.compile(rb"[ \t]*[0-9]{1,7}(?:\t|\\t|\xe2\x86\x92|\\u2192)")
_QUOTE_RE = re.compile(rb"\\?([\"'`])")
_CELL_END = (b",", b";", b"\t", b"|", b"\n")


def _cells(data: bytes, start: int, end: int, delimiter: bytes) -> list[tuple[int, int]]:
    """(start, end) of each cell between `start` and `end`, quotes kept; a delimiter inside a
    double-quoted CSV cell belongs to it."""
    if data.find(b'"', start, end) < 0:  # no quoted cell: split at every delimiter
        out, cell = [], start
        for part in data[start:end].split(delimiter):
            out.append((cell, cell + len(part)))
            cell += len(part) + len(delimiter)
        return out
    out, cell, quoted, i = [], start, False, start
    while i < end:
        c = data[i]
        if c == 0x22:
            quoted = not quoted
        elif not quoted and data.startswith(delimiter, i):
            out.append((cell, i))
            i += len(delimiter)
            cell = i
            continue
        i += 1
    out.append((cell, end))
    return out


def _table_cells(data: bytes, start: int, end: int, delimiter: bytes) -> list[tuple[int, int]] | None:
    """The cells of one line: a Markdown row's between its outer pipes, a delimited line's all (after
    the line's number, where a file reader put one)."""
    numbered = _LINE_NUMBER_RE.match(data, start, end)
    if numbered is not None and delimiter not in (b"\t", b"\\t"):
        start = numbered.end()
    if delimiter == b"|":
        first, last = data.find(b"|", start, end), data.rfind(b"|", start, end)
        if first < 0 or last - first < 2 or data[start:first].strip(b" \t") or data[last + 1 : end].strip(b" \t"):
            return None
        return _cells(data, first + 1, last, delimiter)
    return _cells(data, start, end, delimiter)


def _trimmed(data: bytes, start: int, end: int) -> tuple[int, int, bool]:
    """A cell without its padding and quotes (`"x"`, or `\\"x\\"` inside a JSON string): (start, end, quoted)."""
    while start < end and data[start] in b" \t":
        start += 1
    while end > start and data[end - 1] in b" \t":
        end -= 1
    m = _QUOTE_RE.match(data, start, end)
    if m is not None and end - m.end() >= len(m.group()) and data[end - len(m.group()) : end] == m.group():
        return m.end(), end - len(m.group()), True
    return start, end, False


def _column_kind(name: bytes, paired: bool) -> tuple[str, bool, bytes] | None:
    """(placeholder kind, strong?, keyword) of a header cell, or None if it names no credential."""
    norm = re.sub(rb"[ .\-]+", b"_", name.strip().lower())
    strong = strong_name_kind(norm)
    if strong is not None:
        return strong[0], True, strong[1]
    for kw in (b"pass", b"pwd", b"token", b"key", b"credentials", b"credential"):
        if norm.endswith(kw):
            named = name_kind(norm, kw, False)
            if named is not None:
                kind, is_strong = named
                return kind, is_strong or (paired and kind == "password"), kw
    return None


def _line_at(data: bytes, at: int) -> tuple[int, int, bool] | None:
    """The line holding `at` and whether it is inside a JSON string (it ends at an escaped `\\n`: its
    start and end are then bounded by the string's quotes too), or None if longer than a header."""
    floor = max(0, at - _MAX_LINE)
    raw, escaped = data.rfind(b"\n", floor, at), data.rfind(b"\\n", floor, at)
    if raw < 0 and escaped < 0 and floor > 0:
        return None
    start = max(raw + 1, escaped + 2 if escaped >= 0 else 0)
    m = _BREAK_RE.search(data, at, at + _MAX_LINE)
    in_json = m is not None and m.group().startswith(b"\\")
    end = m.start() if m is not None else len(data)
    if m is None and len(data) > at + _MAX_LINE:
        return None
    if in_json:
        quote = _last_bare_quote(data, start, at)
        if quote >= 0:
            start = quote + 1  # the string's opening quote: `{"content": "user,password\\n...`
        end = _bare_quote_or(data, at, end)
    return start, end, in_json


def _last_bare_quote(data: bytes, start: int, end: int) -> int:
    """The last `"` between `start` and `end` that delimits a JSON string (no escape before it), or -1."""
    i = data.rfind(b'"', start, end)
    while i >= 0 and not unescaped_quote(data, i):
        i = data.rfind(b'"', start, i)
    return i


def _bare_quote_or(data: bytes, start: int, end: int) -> int:
    """Where the JSON string holding `start` closes, if before `end`; else `end`."""
    i = string_end(data, start)
    return end if i < 0 or i > end else i


def _cell_inside(data: bytes, end: int) -> int:
    """A byte of the keyword's cell, from the end of a trigger's match (after the delimiter or line end)."""
    end -= 2 if data[end - 2 : end] in (b"\\n", b"\\t", b"\\r") else 1
    if data[end - 2 : end] == b"\\r":
        end -= 2
    while end > 0 and data[end - 1] in b" \t\r\"'`*\\":
        end -= 1
    return end - 1


_NAME_CHARS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789 _.-*`'")
_NAME_MARKS = bytes(1 if c in _NAME_CHARS else 0 for c in range(256))  # 0: a byte no name holds


def _begins_cell(data: bytes, inside: int) -> bool:
    """Does the cell holding `inside` begin a line or follow a delimiter (raw, or JSON-escaped: `\\n`,
    `\\t`, `\\"`), read back over a header name's characters? A cheap test before the line is read:
    an indented line (`    pass`) and a JSON value (`"value": "ApiKey"`) are no header's."""
    floor = max(0, inside - 48)
    i = floor + 1 + data[floor:inside].translate(_NAME_MARKS).rfind(b"\x00")  # after the last non-name byte
    if i > 1 and data[i - 1] == 0x5C and data[i] in b"nt":
        i += 1  # `\\npassword`: the escape's letter is no name's
    if i == 0:
        return data[0] not in b" \t"
    if i == floor:
        return False  # longer than a header's name
    if data[i - 1] == 0x22:  # a quoted cell: what comes before its quote (`\\"` inside a JSON string)
        i -= 2 if i >= 2 and data[i - 2] == 0x5C else 1
        if i == 0:
            return True
    c = data[i - 1]
    if c in b"nt" and i >= 2 and data[i - 2] == 0x5C:  # an escaped line end or tab
        return c == 0x74 or data[i : i + 1] not in (b" ", b"\t")
    if c == 0x0A:
        return data[i : i + 1] not in (b" ", b"\t")
    return c in b",;\t|"


def find_column_spans(data: bytes, hits: TriggerHits, out: list[Span]) -> None:
    """Append spans of the cells below a header cell that names a credential."""
    (found,) = hits
    done: set[int] = set()
    for _, end in found:
        inside = _cell_inside(data, end)
        if not _begins_cell(data, inside):
            continue  # `import pwd`, `"value": "ApiKey"`, an indented `pass`: no header's cell
        line = _line_at(data, inside)
        if line is None or line[0] in done:
            continue
        done.add(line[0])
        _read_table(data, *line, out, done)


def _delimiter(data: bytes, start: int, end: int) -> bytes | None:
    """`|` for a Markdown row, else the delimiter the header uses most (`,`, `;`, a tab, an escaped tab)."""
    header = data[start:end]
    if header.lstrip(b" \t").startswith(b"|"):
        return b"|"
    numbered = _LINE_NUMBER_RE.match(header)
    if header[numbered.end() if numbered else 0 :][:1] in (b" ", b"\t"):
        return None  # indented: code or prose (`yield token, SYNTAX`), never a delimited file's header
    counts = {d: header.count(d) for d in (b",", b";", b"\t", b"\\t")}
    best = max(counts, key=counts.__getitem__)
    return best if counts[best] else None


def _read_table(data: bytes, line_start: int, line_end: int, in_json: bool, out: list[Span], done: set[int]) -> None:
    """The spans below one header; the rows read go into `done` (a row that looks like a header is not
    read again as one: a body of ten thousand `password,x` lines stays linear)."""
    if line_end - line_start > _MAX_HEADER:
        return  # a paragraph, not a header of names
    delimiter = _delimiter(data, line_start, line_end)
    cells = _table_cells(data, line_start, line_end, delimiter) if delimiter else None
    if delimiter is None or cells is None or len(cells) < 2:
        return
    names = [_header_name(data, a, b) for a, b in cells]
    if not all(_HEADER_NAME_RE.fullmatch(n) and n.count(b" ") < 3 and not n.endswith(b".") for n in names):
        return  # code (`f(password, user)`, a list's `'password',`) or a sentence, not a header of names
    paired = any(n.replace(b" ", b"_") in _USER_HEADERS for n in names)
    columns = {i: k for i, n in enumerate(names) if (k := _column_kind(n, paired)) is not None}
    if not columns:
        return
    pos = _next_line(data, line_end)
    while pos is not None:  # every row, however many: each is read once (`done`), so a dump stays linear
        m = _BREAK_RE.search(data, pos, pos + _MAX_LINE)
        end = m.start() if m is not None else len(data)
        if m is None and len(data) > pos + _MAX_LINE:
            return  # a line longer than a table's row
        if in_json:
            end = _bare_quote_or(data, pos, end)  # the JSON string ends with its last row
        if delimiter == b"|" and _SEPARATOR_ROW_RE.match(data, pos, end):
            pos = _next_line(data, end)
            continue
        row = _table_cells(data, pos, end, delimiter) if data[pos:end].strip(b" \t\r") else None
        if row is None or len(row) != len(cells):
            return  # the table ends: another shape, a blank line, prose
        done.add(pos)
        for i, (kind, strong, kw) in columns.items():
            v_start, v_end, quoted = _trimmed(data, *row[i])
            value = data[v_start:v_end]
            if delimiter != b"|" and b" " in value and not quoted:
                continue  # words in a delimited line: a sentence's clause, not a password
            if value and not is_non_secret_value(value, quoted, kw) and (strong or looks_random(value)):
                out.append(Span(v_start, v_end, kind, PRIORITY_ASSIGNMENT))
        pos = _next_line(data, end)


def _header_name(data: bytes, start: int, end: int) -> bytes:
    return data[start:end].replace(b"\\", b"").strip(b" \t\r\"'`*").lower()


def _next_line(data: bytes, end: int) -> int | None:
    m = _BREAK_RE.match(data, end)
    return m.end() if m is not None and m.end() < len(data) else None


DETECTOR = Detector(
    "columns",
    TRIGGERS,
    find_column_spans,
    examples=samples(
        "| user | password |\n|------|----------|\n| alice | <mixed:12> |\n| bob | <mixed:14> |\n",
        "email,password,role\nalice@example.com,<mixed:12>,admin\n",
        "name\tapi_key\nbilling\t<alnum:32>\n",
        'id;username;pwd\n1;alice;"<mixed:10>"\n',
        '{"content": "user,password\\nalice,<mixed:12>\\n"}',  # in a JSON string: escaped line ends
    ),
    near_misses=(
        "| Variable | Secret | Description |\n|---|---|---|\n| PORT | no | the port |\n| DB_PASSWORD | yes | ${DB_PASSWORD} |\n",
        "name,token_count,password_length\nalpha,1234,12\n",
        "| Key | Action |\n|---|---|\n| Ctrl+Shift+P | command palette |\n",
        "user,password\nalice,${ALICE_PASSWORD}\nbob,********\n",
    ),
)
