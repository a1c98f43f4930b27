"""Credentials given in a sentence or a table: "my password is P@ssw0rd!42", `| DB_PASSWORD | x |`.

A user tells the agent a password in the prompt, a README writes one out, a
chat log repeats it. No `name = value`, no format: only a credential's name,
a verb or a colon, and a value that reads as no word. Only strong names count
(password, passphrase, API key, secret key, access token...), and the value
must hold a digit or a symbol beside its letters, eight characters or more,
and be nothing `is_non_secret_value` recognises (a word, a path, a reference,
a placeholder), so "the password is required" and "the token is invalid"
stay as written. A Markdown table row naming a secret in one cell (`DB_PASSWORD`,
`` `api_key` ``) gives its value in the next, as one word checked the same way. A word ending in a
credential's name followed by a value that looks generated (`acme SECRET 9fQ2…`, `boxTOKEN 4kZ…`,
`lokalise ACCESS_KEY a1b2…`) is read the same way, with `looks_random`'s stricter test. A user and
password pair after a word that says it is a login's ("default credentials: admin / Xk9!…", "log in as
alice:Xk9!…") gives its password when that reads as one. After a name written as code
(`aws_secret_access_key`, `npmAuthToken`), a shorter value shaped as a password, a symbol in it, is read too.
"""

from __future__ import annotations

import re

from ctxtap.redaction.detector import Detector, TriggerHits, samples
from ctxtap.redaction.engine import Trigger
from ctxtap.redaction.false_positives import is_non_secret_value, looks_random
from ctxtap.redaction.names import strong_name_kind
from ctxtap.redaction.spans import PRIORITY_ASSIGNMENT, Span

# Names as a sentence writes them (`API key`, `api-key`); `api_key` is code, the name rules' business.
_NAMES = (
    rb"pass(?:word|phrase|wd)|api[ -]?key|secret[ -]?key|access[ -]?key|access[ -]?token|auth[ -]?token"
    rb"|bearer[ -]?token|client[ -]?secret|private[ -]?key|token"
)
# "is", "was", a colon or a dash; not `=` (an assignment, read by the name rules with code in mind)
_LINK = (rb"(?:[ \t]+(?:is|was|will[ \t]+be|would[ \t]+be|is[ \t]+now|(?:set[ \t]+|changed[ \t]+)?to"
         rb"|for[ \t]+[^\s\"'`\\]{1,64}[ \t]+(?:is|was))[ \t]+"
         rb"|[ \t]*(?::|\xe2\x80\x94|\xe2\x80\x93|\\u201[34]|-{1,2})[ \t]+)")  # em and en dashes, raw or escaped

_CELL_NAME = rb"[A-Za-z0-9_.\-]*(?:pass|pwd|secret|key|token|credential|auth)[A-Za-z0-9_.\-]*"

# "log in with password Xy7!pq2z": a password's name followed by the value alone
_BARE_PASSWORD = rb"pass(?:word|phrase|wd)"
# SQL's `IDENTIFIED BY 'Xy7!pq2z'` (MySQL, MariaDB, Oracle: `CREATE USER`, `ALTER USER`, `GRANT`) is one too
_IDENTIFIED_BY = rb"identified[ \t]+(?:with[ \t]+[A-Za-z0-9_]{1,40}[ \t]+)?by"
_BARE_NAME = _BARE_PASSWORD + rb"|" + _IDENTIFIED_BY
# "the service's SECRET 9fQ2…", `boxTOKEN 4kZ…`, `lokalise ACCESS_KEY a1b2…`, `acmeACCESS:X1Y2…`: a word
# ending in a credential's name (a vendor's name may be glued before it), a space or a colon, and a
# value that looks generated (16 characters or more, see `looks_random`)
_BARE_SECRET_WORDS = rb"(?:secret|token|key|access|private|passw(?:or)?d|pwd)"
_BARE_SECRET_NAME = rb"[A-Za-z0-9_.\-]*" + _BARE_SECRET_WORDS + rb"[A-Za-z0-9_]*"
# Words that introduce a login's user and password: "credentials", "creds", "log in (with|as|using)"
_PAIR_LEAD = rb"(?:credentials?|creds|log(?:ged)?[ \t-]?in(?:[ \t]+(?:with|as|using))?|sign(?:ed)?[ \t-]?in(?:[ \t]+(?:with|as|using))?)"
_PAIR_RE = re.compile(rb"(?i)" + _PAIR_LEAD + rb"[ \t]*:?[ \t]+(?P<q>[\"'`]?)(?P<u>[A-Za-z0-9._@\-]{1,64})"
                      rb"(?:[ \t]*/[ \t]*|:)(?P<p>[^\s\"'`]{6,64})(?P=q)")

TRIGGERS: tuple[Trigger, ...] = (
    Trigger(rb"(?:" + _NAMES + rb")" + _LINK, literals=(b"pass", b"key", b"token", b"secret"), window=40,
            caseless=True),
    # `| DB_PASSWORD | value |`: a cell that is a secret's name, then the next cell's start
    # (cells padded with spaces, as Markdown writes them: `|A_KEY|B(?:x)|` is a regex's alternation)
    Trigger(rb"\|[ \t]+`?" + _CELL_NAME + rb"`?[ \t]+\|", literals=(b"|",), window=100, caseless=True),
    Trigger(rb"(?:^|[^A-Za-z0-9_.\-])" + _BARE_PASSWORD + rb"[ \t]+[^\s]", literals=(b"pass",), window=30, caseless=True),
    # read in a JSON string's raw bytes (`opens=False`): "token" is in every model API's bodies, and opening
    # each string it is in cost a third of the scan
    Trigger(_BARE_SECRET_WORDS + rb"[A-Za-z0-9_]*(?:[ \t]+|:[ \t]*)[\"'`]?[A-Za-z0-9]",
            literals=(b"secret", b"token", b"key", b"access", b"private", b"passw", b"pwd"), window=40,
            caseless=True, opens=False),
    # "default credentials: admin / Xk9!…", "log in as admin:Xk9!…": a user and password pair after a word
    # that says the pair is a login's
    Trigger(_PAIR_LEAD + rb"[ \t]*:?[ \t]+[\"'`]?[A-Za-z0-9._@\-]{1,64}(?:[ \t]*/[ \t]*|:)[^\s/]",
            literals=(b"credential", b"creds", b"log", b"sign"), window=100, caseless=True),
    # SQL's `IDENTIFIED BY '…'` (any case, the value quoted), or `IDENTIFIED BY x` in capitals (Oracle's unquoted
    # form): "a path identified by the path" in a tool's description stays out (read raw, `opens=False`: that
    # description is in every request, and opening its string for each cost 3 % of the scan)
    Trigger(rb"(?i:" + _IDENTIFIED_BY + rb")[ \t]+\\{0,3}[\"'`]|IDENTIFIED[ \t]+(?:WITH[ \t]+[A-Za-z0-9_]{1,40}[ \t]+)?BY[ \t]+[^\s]",
            literals=(b"identified", b"IDENTIFIED"), window=80, opens=False),
)
_ROW_RE = re.compile(rb"\|[ \t]+`?(?P<name>" + _CELL_NAME + rb")`?[ \t]+\|[ \t]+(?P<q>`?)(?P<v>[^\s|`\\]{8,256})(?P=q)[ \t]+\|",
                     re.I)

_PROSE_RE = re.compile(rb"(?i)(?P<name>" + _NAMES + rb")(?P<link>" + _LINK + rb")"
                       + rb"(?:(?P<q>\\{0,3}[\"'`])(?P<qv>[^\"'`\s\\]{8,256})(?P=q)|(?P<bv>[^\s\"'`\\()\[\]{}]{8,256}))")
_BARE_RE = re.compile(rb"(?i)(?P<name>" + _BARE_NAME + rb")[ \t]+(?:(?P<q>\\{0,3}[\"'`])(?P<qv>[^\"'`\s\\]{8,128})(?P=q)"
                      rb"|(?P<bv>[^\s\"'`\\()\[\]{}]{8,128}))")
_BARE_SECRET_NAME_RE = re.compile(rb"(?i)" + _BARE_SECRET_NAME)
_CODE_NAME_RE = re.compile(rb"[A-Za-z0-9][_\-][A-Za-z]|[a-z][A-Z]")  # words joined as code joins them
# (a bare value is taken whole, `{m,n}+`: a run that fails the test after it is no value, and no shorter
# piece of it is one either, or redacting twice would find one once part of the run is a placeholder)
_BARE_RE_VALUE = re.compile(rb"(?:(?P<q>\\{0,3}[\"'`])(?P<qv>[^\"'`\s\\]{8,128})(?P=q)|(?P<bv>[^\s\"'`\\()\[\]{},;]{8,128}+))"
                            rb"(?![(\[{,;])")  # not a call, an index or minified code's next field
_BARE_SECRET_VALUE_RE = re.compile(
    rb"(?:(?P<q>[\"'`])(?P<qv>[^\"'`\s\\]{16,256})(?P=q)|(?P<bv>[^\s\"'`\\()\[\]{}<>|,;]{16,256}+))(?![^\s.,;:)\]}\"'`\\])")
_NAME_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_DIGITS_RE = re.compile(rb"[0-9]")
_UPPER_RE = re.compile(rb"[A-Z]")
_LOWER_RE = re.compile(rb"[a-z]")
_PASSWORD_SYMBOL_RE = re.compile(rb"[!@#$%^&*?~]")
_INNER_DOT_OR_SLASH_RE = re.compile(rb"[./](?=.)")  # `file2.txt`, `v1.2.3`, `docs/pass1`: no password alone
_LETTER_RE = re.compile(rb"[A-Za-z]")
_DIGIT_OR_SYMBOL_RE = re.compile(rb"[0-9!#$%&*+=?@^~|/]")
_ENTITY_RE = re.compile(rb"&(?:[A-Za-z]{2,8}|#x?[0-9A-Fa-f]{1,6});")  # HTML source: `&quot;`, `&#x3C;`
_TRAILING = b".,;:"  # sentence punctuation after a bare value (`!` and `?` may belong to a password)


def find_prose_spans(data: bytes, hits: TriggerHits, out: list[Span]) -> None:
    """Append spans of credentials given in a sentence or a table row; `hits[i]` are where `TRIGGERS[i]`
    matched."""
    sentences, rows, bare, bare_secrets, pairs, identified = hits
    for _, end in pairs:
        _pair_value(data, end, out)
    for _, end in rows:
        _row_value(data, end, out)
    for _, end in (*bare, *identified):
        _bare_value(data, end, out)
    for _, end in bare_secrets:
        _bare_secret(data, end, out)
    n = len(data)
    for _, end in sentences:
        m = next((m for m in _PROSE_RE.finditer(data, max(0, end - 48), min(n, end + 260))
                  if m.end("link") == end), None)
        if m is None:
            continue
        start = m.start()
        if start > 0 and (data[start - 1 : start].isalnum() or data[start - 1] in b"_."):
            continue  # inside a longer word (`mypassword is`) or a name in code (`db_password:`, `cfg.token:`)
        quoted = m.group("qv") is not None
        group = "qv" if quoted else "bv"
        v_start, v_end = m.span(group)
        if not quoted:
            tag = data.find(b"</", v_start, v_end)  # `token was supplied.</p>`: markup ends the sentence
            if tag >= 0:
                v_end = tag
            while v_end > v_start and data[v_end - 1] in _TRAILING:
                v_end -= 1
            if data[v_end : v_end + 1] in (b"(", b"[", b"{"):
                continue  # a call or an index (`private key: load_key(path)`): code
        if _reads_as_secret(data[v_start:v_end], m.group(group), quoted, b"password"):
            kind = "password" if m.group("name").lower().startswith(b"pass") else "generic-secret"
            out.append(Span(v_start, v_end, kind, PRIORITY_ASSIGNMENT))


def _bare_value(data: bytes, end: int, out: list[Span]) -> None:
    """`password Xy7!pq2z`: the word right after a password's name, when it cannot be a word of the sentence
    (letters and digits, eight or more, no inner dot or slash, nothing `is_non_secret_value` recognises)."""
    m = next((m for m in _BARE_RE.finditer(data, max(0, end - 72), min(len(data), end + 140)) if m.end() > end - 1), None)
    if m is None or m.start() >= end:
        return
    v_start, v_end, quoted = _value_span(data, m)
    value = data[v_start:v_end]
    if _password_shaped(value) and not _INNER_DOT_OR_SLASH_RE.search(value) and _reads_as_secret(
            value, m.group("qv" if quoted else "bv"), quoted, b"password"):
        out.append(Span(v_start, v_end, "password", PRIORITY_ASSIGNMENT))


def _bare_secret(data: bytes, end: int, out: list[Span]) -> None:
    """`SECRET 9fQ2…`: the value right after a word naming a secret or token, when it looks generated (a
    sentence's next word never does: "the token expired", "secret sauce", "token usage 1234").

    Read from the hit outwards (`end`: after the value's first character), not by a regex over a window:
    "token" is in every model API's bodies."""
    at = end - 1  # the value's first character, or its opening quote's
    if data[at - 1] in b"\"'`":
        at -= 1
    name_end = at
    while name_end > 0 and data[name_end - 1] in b" \t":
        name_end -= 1
    if name_end > 0 and data[name_end - 1] == 0x3A:  # `acmeACCESS:…` (a dash joins words of names: `token-0.4.0.whl`)
        name_end -= 1
    if name_end == at:
        return
    start = name_end
    floor = max(0, name_end - 80)
    while start > floor and data[start - 1] in _NAME_BYTES:
        start -= 1
    if (start > 0 and data[start - 1] in _NAME_BYTES) or _BARE_SECRET_NAME_RE.fullmatch(data, start, name_end) is None:
        return
    m = _BARE_SECRET_VALUE_RE.match(data, at, min(len(data), at + 260))
    if m is not None:
        v_start, v_end, quoted = _value_span(data, m)
        value = data[v_start:v_end]
        if looks_random(value) and not is_non_secret_value(value, quoted, b"secret"):
            out.append(Span(v_start, v_end, "generic-secret", PRIORITY_ASSIGNMENT))
            return
    # a name written as code (`aws_secret_access_key`, `npmAuthToken`), then a shorter value shaped as a
    # password: `aws configure set aws_secret_access_key Xy7!…`, `rclone … secret_access_key Xy7!…`
    name = data[start:name_end].rstrip(b":")
    if _CODE_NAME_RE.search(name) is None or strong_name_kind(name) is None:
        return  # a phrase's word, or a name that describes the secret (`token_count`, `secret_key_path`)
    m = _BARE_RE_VALUE.match(data, at, min(len(data), at + 140))
    if m is None:
        return
    v_start, v_end, quoted = _value_span(data, m)
    value = data[v_start:v_end]
    if (_password_shaped(value) and _PASSWORD_SYMBOL_RE.search(value) is not None  # `XXH64_hash_t`: a type
            and not _INNER_DOT_OR_SLASH_RE.search(value) and _reads_as_secret(value, value, quoted, b"secret")):
        out.append(Span(v_start, v_end, "generic-secret", PRIORITY_ASSIGNMENT))


def _pair_value(data: bytes, end: int, out: list[Span]) -> None:
    """`credentials: admin / Xk9!pq2z`: the password of a user and password pair after a login's word
    (`end`: after the password's first character), when it reads as a password."""
    m = next((m for m in _PAIR_RE.finditer(data, max(0, end - 100), min(len(data), end + 64))
              if m.start("p") == end - 1), None)
    if m is None or (m.start() > 0 and data[m.start() - 1 : m.start()].isalnum()):
        return
    v_start, v_end = m.span("p")
    while v_end > v_start and data[v_end - 1] in _TRAILING:
        v_end -= 1
    value = data[v_start:v_end]
    if _password_shaped(value) and not _INNER_DOT_OR_SLASH_RE.search(value) and _reads_as_secret(
            value, value, bool(m.group("q")), b"password"):
        out.append(Span(v_start, v_end, "password", PRIORITY_ASSIGNMENT))


def _value_span(data: bytes, m: re.Match[bytes]) -> tuple[int, int, bool]:
    """Where a bare form's value is (`qv` quoted, `bv` bare without a sentence's trailing punctuation)."""
    quoted = m.group("qv") is not None
    v_start, v_end = m.span("qv" if quoted else "bv")
    while not quoted and v_end > v_start and data[v_end - 1] in _TRAILING:
        v_end -= 1
    return v_start, v_end, quoted


def _password_shaped(value: bytes) -> bool:
    """Not a term with a number in it (`policy2024`, `Argon2id`, `PBKDF2-HMAC`): mixed case with two digits or
    more, or a password symbol beside letters and a digit."""
    digits = len(_DIGITS_RE.findall(value))
    if _UPPER_RE.search(value) and _LOWER_RE.search(value) and digits >= 2:
        return True
    return digits >= 1 and _PASSWORD_SYMBOL_RE.search(value) is not None and _LETTER_RE.search(value) is not None


def _row_value(data: bytes, end: int, out: list[Span]) -> None:
    """The cell after one that names a secret (`end`: after the `|` closing the name's cell)."""
    bar = data.rfind(b"|", max(0, end - 100), end - 1)
    m = _ROW_RE.match(data, bar) if bar >= 0 else None
    if m is None or m.end("name") >= end:
        return
    named = strong_name_kind(m.group("name"))
    if named is not None and _reads_as_secret(m.group("v"), m.group("v"), True, named[1]):
        out.append(Span(*m.span("v"), named[0], PRIORITY_ASSIGNMENT))


def _reads_as_secret(value: bytes, written: bytes, quoted: bool, kw: bytes) -> bool:
    """Eight characters or more, letters with a digit or symbol, no HTML entity where it was
    `written`, nothing `is_non_secret_value` recognises."""
    return (len(value) >= 8 and _LETTER_RE.search(value) is not None and _DIGIT_OR_SYMBOL_RE.search(value) is not None
            and not _ENTITY_RE.search(written) and not is_non_secret_value(value, quoted, kw))


DETECTOR = Detector(
    "prose",
    TRIGGERS,
    find_prose_spans,
    examples=samples(
        "my password is <mixed:14>, can you log in?",
        "the API key: <alnum:16> (keep it safe)",
        "password \u2014 <mixed:11>",
        "| Variable | Value |\n|---|---|\n| PORT | 8080 |\n| DB_PASSWORD | <mixed:12> |\n",
        "log in with password <mixed:10>",
        "acmecloud SECRET <alnum:32>",
        "the service's TOKEN `<mixed:24>` expires in a day",
        "Default credentials: admin / <alnum:10>7!",  # a login's user and password pair
        "then log in as alice:<alnum:8>4# and open the dashboard",
        "CREATE USER 'app'@'%' IDENTIFIED BY '<mixed:14>';",  # SQL's password clause
        "ALTER USER 'root'@'localhost' IDENTIFIED WITH caching_sha2_password BY '<mixed:12>';",
        "aws configure set aws_secret_access_key <mixed:12>!",  # a name written as code, a password's value
    ),
    near_misses=(
        "the password is required",
        "The token is invalid. Please sign in again.",
        "Your password: ********",
        "the password is `$DB_PASSWORD` (from the environment)",
        "The password is correct-horse-battery-staple",
        "| API_KEY | required | string |\n| DB_PASSWORD | ${DB_PASSWORD} |",
        "token usage 12345678 of 200000000; the token expired; secret sauce",
        "refresh the token https://auth.example.com/oauth2/token?grant_type=refresh_token",
        "credentials: admin/admin, or log in with user:password; sign in as docs/v2.1",
        "each user is identified by their email address; IDENTIFIED BY 'password' in the docs",
        "token_count Abc12345 and secret_key_path Abc12345x",  # names that describe, not hold, a secret
    ),
)
