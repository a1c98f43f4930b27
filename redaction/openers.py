"""Escape-tolerant forms of the triggers: which JSON string literals are worth opening.

`json_escapes` decodes a string literal whose escapes could hide a rule's
delimiters and scans it again. Decoding every literal with an escaped quote
scans most of an agent's request twice (tool results quote code), though few
hold anything a rule matches. A trigger matches a decoded literal only where
its escape-tolerant form matches the raw one: each atom of the pattern that can
match a byte JSON writes as an escape (`"`, `\\`, control characters, non-ASCII)
also takes that escape (`\\"`, `\\n`, `\\u00e9`; any number of backslashes, for
JSON inside JSON), and anchors also take the quotes around the literal.
Gitleaks' triggers are replaced by these forms (a hit there is only a place to
verify the rule's own regex); the other detectors' triggers get them as openers
of their own beside them. Only literals where one matched are opened, and those
holding an escape these forms leave out (`UNMODELLED`).
"""

from __future__ import annotations

import re
from functools import cache

# Bytes of a decoded literal that stood for an escape in the raw one, and how the escape ends.
_ESCAPED = {b'"': b'"', b"\\": b"\\\\", b"\n": b"n", b"\r": b"r", b"\t": b"t", b"\x08": b"b", b"\x0c": b"f"}
_OTHER = (b"\x00", b"\x1b", b"\x80", b"\xc3", b"\xff")  # control and non-ASCII bytes: `\uXXXX`
_POSIX = {
    b"[:alnum:]": b"a-zA-Z0-9", b"[:alpha:]": b"a-zA-Z", b"[:digit:]": b"0-9", b"[:xdigit:]": b"0-9a-fA-F",
    b"[:lower:]": b"a-z", b"[:upper:]": b"A-Z", b"[:space:]": rb"\s", b"[:word:]": rb"\w",
    b"[:punct:]": rb"!-/:-@\[-`{-~", b"[:print:]": rb"\x20-\x7e", b"[:graph:]": rb"\x21-\x7e",
    b"[:blank:]": rb" \t", b"[:cntrl:]": rb"\x00-\x1f\x7f",
}
_TOKEN = re.compile(
    rb"""\\x[0-9a-fA-F]{2}        # a byte by its code
    | \\.                         # an escaped character or a class like \s
    | \[\^?\]?(?:\[:[a-z]+:\]|\\.|[^\]])*\]   # a character class
    | \(\?(?:[a-zA-Z-]+\)|[a-zA-Z-]*:|P?<[A-Za-z_][A-Za-z0-9_]*>|=|!|<=|<!)  # a group opener, inline flags
    | [()|*+?^$.]                 # structure, quantifiers, anchors, any
    | \{[0-9]*,?[0-9]*\}          # a counted repetition
    | .                           # a literal byte
    """,
    re.S | re.X,
)
# Escapes no form takes, found as openers of their own: an escaped printable character
# (`p\\u0026ss`) can stand for any byte of a match, and an escaped slash (PHP's `https:\\/\\/`)
# for any `/` of one (taking it in the forms would slow every scan by a sixth). A literal is opened
# where two escaped slashes stand together (a URL's, `json_escapes._HIDING_RUN`), not for one alone.
UNMODELLED = (rb"\\u00[2-7][0-9a-fA-F]", rb"\\/")
_LONG = 32  # counts above this of a widened atom become `*`
_STRUCTURE = frozenset([b"(", b")", b"|", b"*", b"+", b"?"])


def opener(pattern: bytes) -> bytes | None:
    """The escape-tolerant form of a trigger's pattern, or None where the pattern itself
    matches the raw literal wherever it matches the decoded one.

    That holds where no atom can match an escaped byte (the pattern then matches the same
    bytes in the raw literal), but for a last group that takes a backslash and a quote:
    where the decoded byte after a match was an escape (or the literal's end), the raw
    one is a backslash (or the closing quote). Gitleaks' rules end so.
    """
    form = tolerant(pattern)
    if form == pattern:
        return None
    head, tail = _last_group(pattern)
    if tail is not None and tolerant(head) == head:
        try:
            last = re.compile(re.sub(rb"\\[zZ]|\$", b"", tail))
        except re.error:
            last = None
        if last is not None and last.fullmatch(b"\\") and last.fullmatch(b'"'):
            return None
    return form


def _last_group(pattern: bytes) -> tuple[bytes, bytes | None]:
    """(what comes before, the group) where `pattern` ends with a group, else (pattern, None)."""
    tokens = [m.group() for m in _TOKEN.finditer(pattern)]
    depth = 0
    for k in range(len(tokens) - 1, -1, -1):
        if tokens[k] == b")":
            depth += 1
        elif tokens[k].startswith(b"("):
            depth -= 1
            if depth == 0:
                return b"".join(tokens[:k]), b"".join(tokens[k:])
        if depth == 0:
            break
    return pattern, None


def alternatives(pattern: bytes) -> list[bytes]:
    """A pattern's top-level alternatives (`gh[pousr]_...|github_pat_...`)."""
    out: list[bytes] = []
    current: list[bytes] = []
    depth = 0
    for m in _TOKEN.finditer(pattern):
        tok = m.group()
        if tok.startswith(b"("):
            depth += 1
        elif tok == b")":
            depth -= 1
        elif tok == b"|" and depth == 0:
            out.append(b"".join(current))
            current = []
            continue
        current.append(tok)
    return out + [b"".join(current)]


def tolerant(pattern: bytes) -> bytes:
    """`pattern` with every atom that can match an escaped byte also taking its escape.

    Meant for candidates only: a superset of where the pattern matches the decoded
    literal, not an exact translation (counted repetitions count an escape as one).
    """
    out: list[bytes] = []
    widened = False  # the last atom took escapes
    for m in _TOKEN.finditer(pattern):
        tok = m.group()
        if tok.startswith(b"{"):
            # a long count of a widened atom makes Hyperscan's automaton too large: any number
            out.append(b"*" if widened and max(map(int, re.findall(rb"[0-9]+", tok) or [0])) > _LONG else tok)
            continue
        widened = False
        if tok.startswith(b"(?") or tok in _STRUCTURE:
            out.append(tok)
        elif tok == b"^" or tok == rb"\A":
            out.append(rb'(?:^|\\*")')  # the literal's start: after its (escaped) opening quote
        elif tok == b"$" or tok in (rb"\z", rb"\Z"):
            out.append(rb'(?:$|\\*")')
        elif tok in (rb"\b", rb"\B"):
            continue  # a word boundary next to an escape: `\nAKIA` is `n` then `A` in the raw bytes
        else:
            atom = _atom(tok)
            widened = atom != tok
            out.append(atom)
    return b"".join(out)


@cache
def _atom(tok: bytes) -> bytes:
    try:
        probe = re.compile(_python_class(tok))
    except re.error:
        return tok  # nothing Python can test: left as it is
    ends = [end for byte, end in _ESCAPED.items() if probe.fullmatch(byte)]
    alternatives = []
    if ends:
        alternatives.append(rb"\\+[" + b"".join(re.escape(e) if e != b"\\\\" else e for e in ends) + b"]")
    if any(probe.fullmatch(b) for b in _OTHER):
        alternatives.append(rb"\\+u[0-9a-fA-F]{4}")
    if not alternatives:
        return tok
    return b"(?:" + _plain(tok) + b"|" + b"|".join(alternatives) + b")"


def _plain(tok: bytes) -> bytes:
    """The atom less the backslash where it stands for everything else: a raw literal's
    backslash always begins an escape, so `.` must not run across `\\n` a byte at a time
    (`curl.*` would then reach past every line of a tool result)."""
    if tok == b".":
        return rb"[^\n\\]"
    if tok in (rb"\S", rb"\W", rb"\D"):
        return b"[^" + tok.swapcase() + rb"\\]"
    if tok.startswith(b"[^"):
        return tok[:-1] + rb"\\]"  # before the closing bracket: a leading `]` stays a member
    return tok


def _python_class(tok: bytes) -> bytes:
    """The atom in Python's syntax (POSIX classes spelled out)."""
    if tok.startswith(b"[") and b"[:" in tok:
        for name, spelled in _POSIX.items():
            tok = tok.replace(name, spelled)
    return tok
