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
        return ("password", True) if boundary and norm != "oldpwd" else None
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
        # a personal access token (`GITHUB_PAT`, `ado_pat`, `devopsPat`); its value must look random.
        # `pat` alone is a pattern's name far more often (`pat = re.compile(...)`)
        return ("generic-secret", False) if boundary and not bare else None
    if not boundary:
        return None  # oauth, bauth
    return "generic-secret", False  # auth, credential(s): values must look random


_NAME_KEYWORD = rb"(?i)(?P<kw>" + b"|".join(KEYWORD_PATTERNS) + rb")"
_NAME_ENDS_RE = re.compile(_NAME_KEYWORD + rb"\Z")  # the keyword ends the name (`token_password`)
_NAME_TAIL_RE = re.compile(_NAME_KEYWORD + rb"(?P<tail>" + NAME_TAIL + rb")\Z")  # or words follow it


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
    in C; a JSON escape's letter before it (`\\nAPI_KEY=`, a file in a JSON string) is not part of it."""
    run = data[limit:pos]
    start = pos - (len(run) - len(run.rstrip(_NAME_RUN)))
    if start > 0 and start < len(data) and data[start - 1] == 0x5C and data[start] in b"ntr":
        start += 1
    return start


_LINE_PREFIX = (b"export", b"-", b"set", b"ENV", b"ARG")  # shell, YAML lists, cmd, Dockerfiles
RAW_LINE, ESCAPED_LINE = 1, 2
_JSON_VALUE_OPEN_RE = re.compile(rb"[:\[,][ \t]*\\*$")


def starts_line(data: bytes, start: int) -> bool:
    """Does what is at `start` begin its line (raw, escaped in a JSON string, or a JSON string's first)?"""
    return at_line_start(data, start) > 0


def at_line_start(data: bytes, start: int) -> int:
    """Does the name at `start` begin its line (after indentation, `export `, a YAML `- `, `set `, `ENV `, `ARG `)?

    0 if not, `RAW_LINE`, or `ESCAPED_LINE` after an escaped `\\n` (a file inside a JSON string).
    """
    i = start
    while i > 0 and data[i - 1] in b" \t":
        i -= 1
    for prefix in _LINE_PREFIX:  # the space after it was skipped above
        if i >= len(prefix) and data[i - len(prefix) : i] == prefix:
            i -= len(prefix)
            while i > 0 and data[i - 1] in b" \t":
                i -= 1
            break
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
