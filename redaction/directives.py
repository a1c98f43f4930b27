"""A password written as a configuration directive: its name, spaces, the value, and nothing more on the line.

redis' `requirepass x`, slapd's `rootpw x`, nslcd's `bindpw x`, keepalived's `auth_pass x`, a Dockerfile's
`ENV DB_PASSWORD x`: files an agent reads all day, where the name rules see no `name = value` and no
`name: value`. The line is the format, so it is checked whole: the name begins it (after indentation, a
tool's line number, a diff's `+`, `ENV` or `export`), one value follows and ends it. A word there is the
password (`requirepass foobared`), as in any field that holds only a password.

The name says password and is no English word: one the name rules call a password's
(`names.strong_name_kind`: `auth_pass`, `DB_PASSWORD`), or a password's word glued to the one before
(`requirepass`, `rootpw`; `bypass`, `compass` and the like are words). A line of prose may begin with
`password` or `pass` (a wrapped sentence, a heading: `Password hashing`), so those names alone are left to
the formats that give them context (`.netrc`'s `login`, in `config_fields`).
"""

from __future__ import annotations

import re

from ctxtap.redaction.detector import Detector, TriggerHits, samples
from ctxtap.redaction.engine import Trigger
from ctxtap.redaction.false_positives import is_non_secret_password
from ctxtap.redaction.names import at_line_start, glued_password_name, name_start, strong_name_kind
from ctxtap.redaction.spans import PRIORITY_ASSIGNMENT, Span

# A password's word in a name, then spaces and the first character a value may begin with.
TRIGGERS = (Trigger(rb"(?:pass|pw)[A-Za-z0-9_.\-]{0,30}[ \t]+[^ \t\r\n\\#=:]", literals=(b"pass", b"pw"),
                    window=40, caseless=True, opens=False),)  # it reads escaped line ends itself
# The value (bare, or in quotes of its own), then the line's end: raw, escaped in a JSON string, or the string's.
# (A quote ends the line only as a JSON string's end, before what may follow one.) A value in backticks is
# code in a document (`Pass ``SERVER``.`, ``Pass `how="row"` ...``).
_VALUE_RE = re.compile(rb"(?P<q>[\"']?)(?P<v>[^\s\"'\\`]{1,256})(?P=q)[ \t]*"
                       rb"(?:\r?\n|(?:\\+r)?\\+n|\\*\"(?=[\s,}\]]|\Z)|\Z)")
_ASSIGNMENT_RE = re.compile(rb"[A-Za-z_][A-Za-z0-9_]{2,}=[^=]")  # `accept_downloads=True`: code, not a value
_NAME_REACH = 64
_ENGLISH_NAMES = frozenset((b"password", b"pass", b"passphrase", b"passcode"))


def _password_name(name: bytes) -> bool:
    """A password's name that is no English word: a line of prose may begin with `password` or `pass` (a
    wrapped sentence, a heading: `Password hashing`), never with `requirepass`, `auth_pass` or `DB_PASSWORD`."""
    if name.lower() in _ENGLISH_NAMES:
        return False
    named = strong_name_kind(name)
    if named is not None:
        return named[0] == "password"
    return glued_password_name(name)


def find_directive_spans(data: bytes, hits: TriggerHits, out: list[Span]) -> None:
    """Append the value of each password directive; `hits[0]` end one past the value's first character."""
    for _, end in hits[0]:
        at = end - 1
        m = _VALUE_RE.match(data, at)  # first the cheapest test: prose goes on after a word, a directive ends
        if m is None:
            continue
        value = m.group("v")
        if _ASSIGNMENT_RE.match(value) or (value[-1:] in b".,;!?" and value[:-1].isalpha()):
            continue  # code, or a sentence's last word
        gap = at
        while gap > 0 and data[gap - 1] in b" \t":
            gap -= 1
        start = name_start(data, gap, max(0, gap - _NAME_REACH))
        name = data[start:gap]
        if name and _password_name(name) and at_line_start(data, start) and not is_non_secret_password(value):
            out.append(Span(*m.span("v"), "password", PRIORITY_ASSIGNMENT))


DETECTOR = Detector(
    "directives",
    TRIGGERS,
    find_directive_spans,
    examples=samples(
        "# redis.conf\nbind 127.0.0.1\nrequirepass <mixed:14>\n",
        "database mdb\nrootpw <mixed:12>\n",  # slapd.conf
        "uri ldap://ldap.example.com\nbindpw whiteduke\n",  # a word: the password
        "vrrp_instance VI_1 {\n  authentication {\n    auth_type PASS\n    auth_pass <alnum:8>\n  }\n}\n",
        "FROM postgres:16\nENV POSTGRES_PASSWORD <mixed:12>\n",  # a Dockerfile's older ENV form
        '{"content": "# redis\\nmasteruser repl\\nrequirepass <mixed:12>\\n"}',  # in a tool result
        "     3\u2192requirepass whiteduke\n",  # as Claude Code's Read shows the file
    ),
    near_misses=(
        "Password hashing\n================\n",  # a heading
        "account work\nuser bob\npassword whiteduke\n",  # `password` alone: an English word, prose's too
        "password required\n",  # a word about the password
        "the username and\n    password combination.\n",  # a sentence wrapped before `password`
        "requirepass ${REDIS_PASSWORD}\n",
        "bypass mode\ncompass north\n",  # words ending in pass
        "    pass\n",  # Python's statement
        "Set the password whiteduke in the form below.\n",  # more words on the line: prose
        "PassCmd \"pass show mail\"\n",  # a command that prints the password
        "message.replace(\"Pass { acceptDownloads: true }\", \"Pass 'accept_downloads=True'\")",  # code
    ),
)
