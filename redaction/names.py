"""What a credential's name says, and where a name begins: the helpers the name-reading detectors share.

A name decides whether its value is a secret (`db_password`, `apiKey`, `SERVICE_TOKEN`) and how
sure that is: strong names redact any value that is not clearly a non-secret, weak ones (`key`,
`token`, `auth`) only values that look random (`redaction.false_positives`). The name rules
(`redaction.assignments`), configuration formats, prose and comparisons read names the same
way, and find where a name starts and whether it begins a line (raw, or escaped inside a JSON
string) with the same helpers.
"""

from __future__ import annotations

import re

from ctxtap.redaction.false_positives import NOT_SECRET_NAMES, secret_tail

# Keywords a secret's name ends with, searched in the lower-cased body, each
# with its own regex: one literal prefix per regex is what lets `re` skip
# ahead quickly (a single alternation is tried at nearly every byte).
KEYWORD_PATTERNS = (
    rb"key",
    rb"token",
    rb"secrete?",
    rb"pass(?:word|wd|phrase|code)?",
    rb"pwd?",
    rb"auth(?:orization)?",
    rb"credentials?",
    rb"signature",
    rb"pat",  # a personal access token (`GITHUB_PAT`, `ado_pat`)
    rb"psk",  # a pre-shared key (wpa_supplicant's `psk="…"`, ipsec.secrets' `: PSK "…"`, `wpa_psk=`)
)
# Words after the keyword (`password_super_secure`, `apikey_myservice`).
NAME_TAIL = rb"(?:[_\-][A-Za-z0-9]{1,24}){1,3}"

_STRONG_KEY_SUFFIXES = (
    "apikey",
    "secretkey",
    "privatekey",
    "accesskey",
    "accountkey",
    "storagekey",
    "masterkey",
    "signingkey",
    "encryptionkey",
    "authkey",
    "licensekey",
    "clientkey",
    "appkey",
    "adminkey",
    "servicekey",
    "subscriptionkey",
    "webhookkey",
    "hmackey",
    "jwtkey",
    "consumerkey",
    "deploykey",
)
_STRONG_TOKEN_SUFFIXES = (
    "accesstoken",
    "authtoken",
    "refreshtoken",
    "apitoken",
    "idtoken",
    "bearertoken",
    "sessiontoken",
    "securitytoken",
    "oauthtoken",
    "bottoken",
)


def name_kind(name: bytes, kw: bytes, camel: bool, env_style: bool = False) -> tuple[str, bool] | None:
    """(placeholder kind, strong?) for a name ending in `kw`, or None if not a secret's name.

    `env_style` names (`SERVICE_KEY`, all capitals) make `*_KEY` strong: in env
    files and settings modules they hold keys, unlike `sort_key` in JSON.
    """
    norm = name.replace(b"_", b"").replace(b"-", b"").replace(b".", b"").decode("ascii")
    if norm in NOT_SECRET_NAMES:
        return None
    bare = name == kw
    boundary = bare or camel or name[-len(kw) - 1 : -len(kw)] in (b"_", b"-", b".")
    word = kw.decode("ascii")
    if word in ("password", "passwd", "passphrase", "passcode"):
        return "password", True
    if word in ("pwd", "pw", "pass"):
        if bare:
            return "password", False  # `pass = ...`, `PWD=/home/me`: the value must look random
        if norm == "oldpwd":
            return None
        # glued to the word before (`DBPASS`, `rootpw`, `smtppass`), not a word that only ends so (`bypass`)
        glued = not boundary and glued_password_name(name.replace(b"-", b"_").replace(b".", b"_").rsplit(b"_", 1)[-1])
        return ("password", True) if boundary or glued else None
    if word in ("secret", "secrete"):
        return "generic-secret", True
    if word == "authorization":
        return "authorization", True
    if word == "signature":
        return ("signature", False) if boundary else None
    if word == "key":
        strong = norm.endswith(_STRONG_KEY_SUFFIXES)
        if not (boundary or strong):
            return None  # monkey, turkey, hotkey
        if norm.endswith("secretaccesskey") or norm == "awssecretkey":
            return "aws-secret-key", True
        if norm.endswith("sharedaccesskey"):
            return "azure-connection-string", True
        if norm == "accountkey" or (norm.endswith(("accountkey", "storagekey")) and "azure" in norm):
            return "azure-storage-key", True
        return "generic-secret", strong or (env_style and not bare)
    if word == "token":
        strong = norm.endswith(_STRONG_TOKEN_SUFFIXES)
        if not (boundary or strong):
            return None
        return "generic-secret", not bare
    if word == "pat":
        # a personal access token (`GITHUB_PAT`, `ado_pat`, `devopsPat`, `PAT` alone as Azure DevOps' docs write
        # it); its value must look random: `pat` alone names a pattern as often (`pat = re.compile(...)`)
        return ("generic-secret", False) if boundary else None
    if word == "psk":
        return ("password", True) if boundary else None
    if not boundary:
        return None  # oauth, bauth
    return "generic-secret", False  # auth, credential(s): values must look random


_NAME_KEYWORD = rb"(?i)(?P<kw>" + b"|".join(KEYWORD_PATTERNS) + rb")"
_NAME_ENDS_RE = re.compile(_NAME_KEYWORD + rb"\Z")  # the keyword ends the name (`token_password`)
_NAME_TAIL_RE = re.compile(_NAME_KEYWORD + rb"(?P<tail>" + NAME_TAIL + rb")\Z")  # or words follow it


# Words that end in `pass` and name no password (`--bypass`, `--twopass`, `compass north`).
NOT_GLUED_PASS = (b"bypass", b"compass", b"surpass", b"overpass", b"underpass", b"trespass", b"renderpass",
                  b"subpass", b"multipass", b"firstpass", b"secondpass", b"singlepass", b"onepass", b"twopass")
_GLUED_PASSWORD_RE = re.compile(rb"(?i)[a-z0-9]{2,20}(?:pass(?:word|wd|phrase)?|pwd|pw)")


def glued_password_name(name: bytes) -> bool:
    """A password's word glued to the word before it (`requirepass`, `rootpw`, `masterpassword`), not a word
    that only ends like one (`bypass`, `compass`)."""
    return _GLUED_PASSWORD_RE.fullmatch(name) is not None and not name.lower().endswith(NOT_GLUED_PASS)


def strong_name_kind(name: bytes) -> tuple[str, bytes] | None:
    """(placeholder kind, keyword) of a name that says it holds a secret (`db_password`, `privateKey`,
    `my_password_sec`), else None."""
    m = _NAME_ENDS_RE.search(name) or _NAME_TAIL_RE.search(name)
    if m is None:
        return None
    at, kw_end = m.span("kw")
    kw = m.group("kw").lower()
    camel = at > 0 and name[at] in b"ABCDEFGHIJKLMNOPQRSTUVWXYZ" and name[at - 1] in b"abcdefghijklmnopqrstuvwxyz0123456789"
    named = name_kind(name[:kw_end].lower().lstrip(b"-."), kw, camel, name.isupper() and b"-" not in name)
    tail = m.groupdict().get("tail")
    if named is None or not named[1] or (tail is not None and not secret_tail(tail)):
        return None
    return named[0], kw


_NAME_CHARS = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789_.-")
NAME_BYTES = frozenset(_NAME_CHARS | frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ"))
_NAME_RUN = bytes(sorted(NAME_BYTES))


def name_start(data: bytes, pos: int, limit: int = 0) -> int:
    """Where the name whose characters run back from `pos` begins (not before `limit`): one rstrip
    in C; a JSON escape's letter before it (`\\nAPI_KEY=`, a file in a JSON string) or an escaped arrow's
    digits (a line number of Claude Code's Read) are not part of it."""
    run = data[limit:pos]
    start = pos - (len(run) - len(run.rstrip(_NAME_RUN)))
    if start > 0 and start < len(data) and data[start - 1] == 0x5C:
        if data[start] in b"ntr":
            start += 1
        elif data.startswith(b"u2192", start):  # Read's line-number arrow, JSON-escaped (`1\\u2192API_KEY=`)
            start += 5
    return start


_LINE_PREFIX = (b"export", b"-", b"+", b"set", b"ENV", b"ARG")  # shell, YAML lists and diffs, cmd, Dockerfiles
RAW_LINE, ESCAPED_LINE = 1, 2
_JSON_VALUE_OPEN_RE = re.compile(rb"[:\[,][ \t]*\\*$")


def starts_line(data: bytes, start: int) -> bool:
    """Does what is at `start` begin its line (raw, escaped in a JSON string, or a JSON string's first)?"""
    return at_line_start(data, start) > 0


def at_line_start(data: bytes, start: int) -> int:
    """Does the name at `start` begin its line (after indentation, `export `, a YAML `- `, a diff's `+`, `set `, `ENV `, `ARG `,
    and a tool's line number: Claude Code's Read `    12→`, `cat -n`'s tab, `grep -n`'s `12:` or `path:12:`)?

    0 if not, `RAW_LINE`, or `ESCAPED_LINE` after an escaped `\\n` (a file inside a JSON string).
    """
    i = _before_prefixes(data, start)
    kind = _line_kind(data, i)
    if kind or i == 0:
        return kind
    before = _before_line_number(data, i)
    return _line_kind(data, before) if before >= 0 else 0


def after_line_number(data: bytes, pos: int) -> int:
    """Past a tool's number at the start of a line at `pos` (`    12→`, `    12\t`, `12:`, `path:12:`), or -1."""
    m = _NUMBER_AT_RE.match(data, pos)
    return m.end() if m is not None else -1


def numbered_line(data: bytes, start: int) -> int:
    """Where the text of a numbered line holding the name at `start` begins (right after its number), or -1
    if the name's line has no tool's number before it (`at_line_start` says whether it begins its line)."""
    i = _before_prefixes(data, start)
    if i == 0 or _line_kind(data, i):
        return -1
    before = _before_line_number(data, i)
    return after_line_number(data, before) if before >= 0 and _line_kind(data, before) else -1


def _before_line_number(data: bytes, i: int) -> int:
    """Where a tool's line number before `i` starts (with its indentation, or the file's path before it), or -1.

    The number ends in Read's arrow (raw or JSON-escaped), a tab (raw: the caller skipped it; or escaped), a
    colon (`grep -n`, opencode's `12: `) or a bar (`00012| `); digits before it, then up to eight spaces, or a
    path and a colon (`grep -n` over files)."""
    if data[i - 1] == 0x92 and data[max(0, i - 3) : i] == _ARROW:
        i -= 3
    elif data[i - 1] in _NUMBER_MARKS or (i < len(data) and data[i] == 0x09 and 48 <= data[i - 1] <= 57):
        i -= data[i - 1] in _NUMBER_MARKS  # a colon or a bar, or the digits before a raw tab
    elif data[max(0, i - 6) : i] == b"\\u2192":
        i -= 6
    elif data[max(0, i - 2) : i] == b"\\t":
        i -= 2
    else:
        return -1
    digits_end = i
    while i > 0 and digits_end - i < 7 and 48 <= data[i - 1] <= 57:
        i -= 1
    if i == digits_end:
        return -1
    if i > 0 and data[i - 1] == 0x3A:  # `path:12:`
        floor = max(0, i - 1 - _PATH_MAX)
        j = i - 1
        while j > floor and data[j - 1] not in _NOT_PATH:
            j -= 1
        if data[j - 1 : j] == b"\\" and data[j : j + 1] in (b"n", b"r"):
            j += 1  # the path begins after an escaped line end (`\\nconfig/app.env:3:`)
        return j if j < i - 1 and (j == 0 or data[j - 1] != 0x3A) else -1  # `a:b:12:` is a time or an address
    floor = max(0, i - 8)
    while i > floor and data[i - 1] in b" \t":
        i -= 1
    return i


def _before_prefixes(data: bytes, start: int) -> int:
    """Back from a name at `start` over indentation and up to two of `_LINE_PREFIX` (a diff's `+export NAME=`)."""
    i = start
    while i > 0 and data[i - 1] in b" \t":
        i -= 1
    for _ in range(2):
        prefix = next((p for p in _LINE_PREFIX if i >= len(p) and data[i - len(p) : i] == p), None)
        if prefix is None:
            break
        i -= len(prefix)
        while i > 0 and data[i - 1] in b" \t":
            i -= 1
    return i


def _line_kind(data: bytes, i: int) -> int:
    """`RAW_LINE` if a line begins at `i`, `ESCAPED_LINE` after an escaped line end or as a JSON string's first, else 0."""
    if i == 0 or data[i - 1] in b"\n\r":
        return RAW_LINE
    if data[max(0, i - 2) : i] in (b"\\n", b"\\r"):
        return ESCAPED_LINE
    # the first line of a JSON string value (`"text": "DB_PASS=..."`), escaped or not
    j = i
    while j > 0 and data[j - 1] == 0x5C:
        j -= 1
    if i > 0 and data[i - 1] == 0x22 and _JSON_VALUE_OPEN_RE.search(data, max(0, j - 1 - 8), j - 1):
        return ESCAPED_LINE
    return 0


_ARROW = "\u2192".encode()  # Read's line-number arrow, raw
_PATH_MAX = 200
_NUMBER_MARKS = (0x3A, 0x7C)  # a line number's colon or bar
_NOT_PATH = frozenset(b" \t\r\n\"'\\:")  # a path before `:12:` holds none of these
# A tool's number at a line's start: indentation or a file's path and a colon, digits, then the marker.
_NUMBER_HEAD = rb"(?:[ \t]{0,8}|[^\s:\"'\\]{1,%d}:)[0-9]{1,7}" % _PATH_MAX
_NUMBER_AT_RE = re.compile(_NUMBER_HEAD + rb"(?:\xe2\x86\x92|\\u2192|\t|\\t|:|\|)")
# The same in text whose escapes are decoded (a file's lines, as a detector reading lines sees them).
LINE_NUMBER = _NUMBER_HEAD + rb"(?:\xe2\x86\x92|\t|:|\|)"
# The same at every line of a text whose escaped line ends and tabs were turned back into whitespace (a JSON
# string as a line-spanning rule reads it; the arrow may still be `\\u2192`).
_NUMBERED_LINE_RE = re.compile(rb"(?m)^" + _NUMBER_HEAD + rb"(?:\xe2\x86\x92|\\u2192|\t|:|\|)")


def without_line_numbers(text: bytes) -> tuple[bytes, list[tuple[int, int]]] | None:
    """`text` as its file was, when two or more of its lines show a tool's number (Claude Code's Read, `cat -n`,
    `grep -n`): each number cut out; and, per cut, (where it was in the text returned, how many bytes were cut
    up to there), for `shown_offset`. None when the text is no numbered listing. A rule that spans lines
    (`kind: Secret` ... `data:` ...) reads the file, not the listing."""
    cuts = list(_NUMBERED_LINE_RE.finditer(text))
    if len(cuts) < 2:
        return None
    out, where, removed, pos = [], [], 0, 0
    for m in cuts:
        out.append(text[pos : m.start()])
        where.append((m.start() - removed, removed + m.end() - m.start()))
        removed += m.end() - m.start()
        pos = m.end()
    out.append(text[pos:])
    return b"".join(out), where


def shown_offset(where: list[tuple[int, int]], offset: int) -> int:
    """An offset in `without_line_numbers`' text, back in the listing it was made from."""
    shift = 0
    for at, removed in where:
        if at > offset:
            break
        shift = removed
    return offset + shift
