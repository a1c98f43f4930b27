"""Secrets recognisable by their name: `DB_PASSWORD=...`, `"api_key": "..."`.

Agents read `.env` files, configs and shell history and send them to the model
inside tool results, so a body carries assignments in every syntax: env and
shell (`export X="v"`), INI/TOML/YAML, JSON (plain, escaped inside a JSON
string, or escaped twice), HTTP header lines in curl commands, URL query
parameters, connection strings.

The name decides, the value confirms:

* strong names (`*password`, `*secret`, `api_key`, `*_TOKEN`, `access_token`...)
  redact any value that is not obviously a non-secret;
* weak names (`*_key`, bare `key`, `token`, `auth`, `credential`) redact only
  values that look random (UUIDs and digit-poor random strings included), so
  `"sort_key": "name"` and `"token": "<s>"` stay;
* under a strong name a quoted value may hold spaces (`"password": "correct
  horse battery"`), and a bare value runs to the real end of the token
  (`|` does not end it);
* names the analysis needs (`prompt_cache_key`, `idempotency_key`,
  `next_page_token`, tokenizer `*_token`s...) are never redacted.
  `max_tokens`, `input_tokens` and friends are plural and never match.

Code is the main source of false positives (`password = get_password()`,
`token: str`, `apiKey: process.env.KEY`), hence the value checks (`redaction.false_positives`);
what a name says is `redaction.names`'.
"""

from __future__ import annotations

import bisect
import re

from ctxtap.redaction.detector import Detector, TriggerHits, samples
from ctxtap.redaction.engine import Trigger
from ctxtap.redaction.false_positives import (
    IDENTIFIER_RE,
    REFERENCE_RE,
    REJECT_LIMIT,
    REJECTED,
    basic_credential_b64,
    is_non_secret,
    looks_random,
    passphrase,
    secret_tail,
)
from ctxtap.redaction.names import (
    ESCAPED_LINE,
    KEYWORD_PATTERNS,
    NAME_BYTES,
    NAME_TAIL,
    at_line_start,
    name_kind,
    name_start,
)
from ctxtap.redaction.spans import PRIORITY_ASSIGNMENT, PRIORITY_GITLEAKS, Span

# keyword, words after it (`password_super_secure`, strong names only), an index (`secret[25]`),
# optional closing quote of a quoted name (possibly escaped), separator; or, under a strong name,
# no separator before a quoted value (`password "..."`).
_INDEX = rb"\[[0-9]{0,4}\]"
_ASSIGN_RES = tuple(
    re.compile(
        rb"(?i)(?P<kw>" + kw + rb")(?P<tail>" + NAME_TAIL + rb")?(?P<idx>" + _INDEX + rb")?(?P<close>\\*[\"'`])?[ \t]*"
        rb"(?P<sep>:=|=>|=(?!=)|:(?!:)|[!=]==?|(?<=[ \t])(?=\\*[\"'`]))"
    )
    for kw in KEYWORD_PATTERNS
)
# The same without lookaheads, for the engine; the Python regex confirms each hit.
# A keyword that is weak as a whole name (`"key": "status"` is in every telemetry
# attribute list) has two triggers: after a name character (`api_key`, `apiKey`:
# any value may follow) and alone, where only a value that can look random
# (16 characters of a token alphabet) is worth a look.
_SEP = rb"(?:" + _INDEX + rb")?(?:\\*[\"'`])?[ \t]*!?(?::=|=>|=|:)"
_NO_SEP = rb"[ \t]+\\*[\"'`]"  # `password "..."`: strong names only
_NAME_CHAR = rb"[A-Za-z0-9_.\-]"
# A bare `pass`/`pw`/`pwd` may hold a short password when a user name is assigned beside it (judged later).
_PAIRED_VALUE = rb"[ \t]*(?:\\*[\"'`])?[^\s\"'`\\]{6}"
_RANDOM_VALUE = (
    rb"[ \t]*(?:[bBrRuUfF]{1,2})?(?:\\*[\"'`])?(?:(?:bearer|basic|token|bot)[ \t]+)?[A-Za-z0-9+/=_.~:%\-]{16}"
)


def _triggers() -> list[tuple[int, Trigger]]:
    out: list[tuple[int, Trigger]] = []

    def add(index: int, pattern: bytes, literal: bytes) -> None:
        out.append((index, Trigger(pattern, literals=(literal,), window=60, som=True, caseless=True)))

    def split(index: int, kw: bytes, value: bytes = _RANDOM_VALUE) -> None:
        add(index, _NAME_CHAR + kw + _SEP, kw)
        add(index, rb"(?:^|[^A-Za-z0-9_.\-])" + kw + _SEP + value, kw)

    def strong(index: int, pattern: bytes, literal: bytes) -> None:
        add(index, pattern + _SEP, literal)
        add(index, pattern + NAME_TAIL + _SEP, literal)  # `password_super_secure = `
        add(index, pattern + _NO_SEP, literal)

    split(0, b"key")
    add(0, b"key" + NAME_TAIL + _SEP, b"key")  # `apikey_myservice:` (the name before `key` must be strong)
    split(1, b"token")
    strong(2, b"secrete?", b"secret")
    strong(3, rb"pass(?:word|wd|phrase|code)", b"pass")
    split(3, b"pass", _PAIRED_VALUE)
    add(3, _NAME_CHAR + b"pass" + NAME_TAIL + _SEP, b"pass")  # `db_pass_secure :=`
    split(4, b"pwd", _PAIRED_VALUE)
    add(4, _NAME_CHAR + b"pwd" + NAME_TAIL + _SEP, b"pwd")
    split(4, b"pw", _PAIRED_VALUE)
    add(5, b"authorization" + _SEP, b"authorization")
    split(5, b"auth")
    # Docker's and npm's `auth` may be base64 of a short `user:password` (`dTpwNHNz`); `looks_random` decodes it
    add(5, rb"(?:^|[^A-Za-z0-9_.\-])auth" + _SEP + rb"[ \t]*(?:\\*[\"'`])?[A-Za-z0-9+/]{6}[A-Za-z0-9+/=]{2}", b"auth")
    add(6, _NAME_CHAR + rb"credentials?" + _SEP, b"credential")
    add(6, rb"(?:^|[^A-Za-z0-9_.\-])credentials?" + _SEP + _RANDOM_VALUE, b"credential")
    split(7, b"signature")
    split(8, b"pat")  # `GITHUB_PAT=`, `adoPat:`; `PAT=` alone when a random value follows (`pat` names a pattern too)
    strong(9, b"psk", b"psk")  # a pre-shared key: Wi-Fi's and IPsec's password
    return out


_TRIGGER_TABLE = _triggers()
ASSIGNMENT_TRIGGERS: tuple[Trigger, ...] = tuple(t for _, t in _TRIGGER_TABLE)
ASSIGNMENT_KINDS: tuple[str, ...] = (
    "generic-secret",
    "password",
    "aws-secret-key",
    "azure-storage-key",
    "azure-connection-string",
    "authorization",
    "basic-auth",
    "signature",
)
_MAX_NAME = 80

# What may follow the separator before the value proper: spaces, a string
# prefix (`b"..."`, C#'s `@"..."` and `$"..."`), an opening quote (possibly escaped), an auth scheme.
_VALUE_HEAD_RE = re.compile(
    rb"[ \t]*(?:(?:[bBrRuUfF]{1,2}|\$?@|@?\$)(?=\\*[\"'`]))?(?P<q>\\*[\"'`])?(?P<scheme>(?i:bearer|basic|token|bot)[ \t]+)?"
)
_MAX_VALUE = 4096


# Where values end.
# The same as runs to `match` from a value's start (no copy of the body).
_QUOTED_RUN_RE = re.compile(rb"[^ \t\n\r\x0b\x0c\"'`\\]*")
_BARE_RUN_RE = re.compile(rb"[^ \t\n\r\x0b\x0c\"'`\\&;,<>(){}\[\]]*")
# A quoted value with spaces (a passphrase) under a strong name: up to the closing quote.
_SPACED_RUN_RE = re.compile(rb"[^\n\r\"'`\\]{1,256}")


def find_assignment_spans(
    data: bytes, hits: TriggerHits, out: list[Span], stops: list[int] | None = None
) -> None:
    """Append spans of values assigned to names that say they are secrets.

    `hits[i]` are where `ASSIGNMENT_TRIGGERS[i]` matched. `stops` are starts
    of secrets already found by format. A bare value ends at the next secret,
    as it will once that secret is a placeholder, so a second redaction pass
    sees the same values as the first (idempotence). Assignments are read
    last to first so later findings are known stops.
    """
    # where each assignment starts -> its regex (the match itself is made again when read: a body
    # of `key=key=...` holds a quarter of a million, 200 bytes each as match objects)
    by_start: dict[int, re.Pattern[bytes]] = {}
    for (index, _), starts in zip(_TRIGGER_TABLE, hits, strict=True):
        regex = _ASSIGN_RES[index]
        for start, _ in starts:
            # The trigger may start one byte early (the name character or delimiter before).
            m = regex.match(data, start) or regex.match(data, start + 1)
            if m is not None and m.start() not in by_start:
                by_start[m.start()] = regex
    if not by_start:
        return
    try:
        _values(data, by_start, out, stops)
    finally:
        _last_runs.clear()  # holds the body


def _values(data: bytes, by_start: dict[int, re.Pattern[bytes]], out: list[Span], stops: list[int] | None) -> None:
    sorted_stops = sorted(stops or ())
    n = len(data)
    for start in sorted(by_start, reverse=True):
        m = by_start[start].match(data, start)
        assert m is not None  # matched from there when collected
        # Bodies repeat the same lines (`"key": "status",` in every telemetry attribute):
        # a rejection decided entirely inside a window of text is remembered for that text.
        lo = max(0, m.start() - _MAX_NAME - 2)
        hi = min(n, m.end() + _REJECT_TAIL)
        tail = data[m.end() : hi]
        cacheable = (hi == n or b"\n" in tail or b"\\" in tail) and _next_stop(sorted_stops, m.end(), hi) == hi
        key = (data[lo:hi], m.start() - lo, m.re.pattern) if cacheable else None
        if key is not None and key in REJECTED:
            continue
        span = _assignment_value(data, m, sorted_stops)
        if span is not None:
            out.append(span)
            bisect.insort(sorted_stops, span.start)
        elif key is not None:
            if len(REJECTED) >= REJECT_LIMIT:
                REJECTED.clear()
            REJECTED.add(key)


_CLASS_RUNS = frozenset({_QUOTED_RUN_RE, _BARE_RUN_RE})  # `[^...]*`: one class, no escapes
_last_runs: dict[re.Pattern[bytes], tuple[bytes, int, int]] = {}  # (body, start, end) per run regex

_REJECT_TAIL = 320


def _run_end(regex: re.Pattern[bytes], data: bytes, start: int) -> int | None:
    """End of the value starting at `start`, or None when it is empty or too long."""
    if regex in _CLASS_RUNS:
        # A run of one class ends where it ends from any byte inside it: measured once to its
        # real end and reused (`key=key=key=...` had each hit scan 4 KB of the same run).
        # Values are read last to first: a run measured before starts at or after this one's.
        known = _last_runs.get(regex)
        if known is not None and known[0] is data and start <= known[2]:
            if start >= known[1]:
                end = known[2]
            else:  # up to the known run's start; if the class holds to there, on to its end
                end = regex.match(data, start, known[1]).end()  # type: ignore[union-attr]
                if end == known[1]:
                    end = known[2]
        else:
            end = regex.match(data, start).end()  # type: ignore[union-attr]
        _last_runs[regex] = (data, start, end)
    else:
        end = regex.match(data, start, start + _MAX_VALUE + 1).end()  # type: ignore[union-attr]
    if end == start or end - start > _MAX_VALUE:
        return None
    return end


_QUOTED_STATEMENT_RE = re.compile(rb"[ \t]*(\\*)([\"'`])([^\s\"'`\\]{1,256})\1\2[ \t]*(?:[;,)]|\\[nr]|\r?\n|$)")


def _quoted_word_ends_statement(data: bytes, pos: int) -> bool:
    """After `password` and a space: one quoted word that ends a statement (`password "x";`)."""
    return _QUOTED_STATEMENT_RE.match(data, pos) is not None


def _next_stop(stops: list[int], start: int, end: int) -> int:
    i = bisect.bisect_right(stops, start)
    return stops[i] if i < len(stops) and stops[i] < end else end


# A user's name assigned beside a weak password name (`pass`, `pw`, `pwd`): the pair says it is a password.
_USER_NAME_RE = re.compile(
    rb"(?i)(?:^|(?<=[\s{,;(&?\"'`]))(?:\\*[\"'`])?(?:user(?:[ _-]?(?:name|id))?|login|uid|usr|account)(?:\\*[\"'`])?"
    rb"[ \t]*(?::(?!//)|=(?!=))"
)
_PAIR_REACH = 160  # bytes before the password's name and after its separator


def _user_named_near(data: bytes, name_start: int, sep_end: int) -> bool:
    """A user name is assigned within a short reach of a password name (the same record or the line before)."""
    return _USER_NAME_RE.search(data, max(0, name_start - _PAIR_REACH), min(len(data), sep_end + _PAIR_REACH)) is not None


def _shell_word_starts(data: bytes, start: int) -> bool:
    """Does a word of a command line begin at `start`: after a space that follows a command's word (not a
    call's `,` or `(`: `f(a, PASSWORD=pw)` is code), or right after a quote that opens it (`echo 'NAME=...'`)?"""
    before = data[start - 1 : start]
    if before in (b"'", b'"'):
        return True
    if before not in (b" ", b"\t"):
        return False
    i = start - 1
    while i > 0 and data[i - 1] in b" \t":
        i -= 1
    return i > 0 and data[i - 1] not in b",(=+*/<>!|"


def _assignment_value(data: bytes, m: re.Match[bytes], stops: list[int]) -> Span | None:
    kw_start, kw_end = m.span("kw")
    kw = m.group("kw").lower()
    tail = m.group("tail")
    name_end = max(kw_end, m.end("tail"), m.end("idx"))
    if name_end < len(data) and data[name_end] in NAME_BYTES:
        return None  # `tokens`, `keyboard`: the keyword is not the end of the name
    start = name_start(data, kw_start, max(0, kw_end - _MAX_NAME))
    name = data[start:kw_end].lower().lstrip(b"-.")
    if b"." in name:
        name = name.rsplit(b".", 1)[1]  # `config.api_key = ...`
    if not name:
        return None
    camel = (
        kw_start > 0
        and data[kw_start] in b"ABCDEFGHIJKLMNOPQRSTUVWXYZ"
        and (data[kw_start - 1] in b"abcdefghijklmnopqrstuvwxyz0123456789")
    )
    original = data[kw_end - len(name) : kw_end]
    env_style = original.isupper() and b"-" not in original
    named = name_kind(name, kw, camel, env_style)
    if named is None:
        return None
    kind, strong = named
    paired = not strong and kind == "password" and _user_named_near(data, start, m.end())
    if paired:
        strong = True  # `user=alice pass=...`, `{"username": ..., "pw": ...}`: a pair names what `pass` holds
    if tail is not None and not (strong and secret_tail(tail)):
        return None  # `key_name`, `password_length`: the words after the keyword say what it is
    sep = m.group("sep")
    if not sep and not (strong and _quoted_word_ends_statement(data, m.end())):
        return None  # `print("Enter password " + x)`: a space before a quote is not an assignment
    comparison = sep in (b"==", b"!=", b"===", b"!==")
    if comparison and not strong:
        return None  # `if token == other`: only a strong name compared with a literal gives a secret away
    if kw == b"signature" and sep != b"=":
        return None  # `"signature": "..."` is a thinking-block signature, not a credential
    tight = m.group("close") is None and name_end == m.start("sep")

    pos = m.end()
    head = _VALUE_HEAD_RE.match(data, pos)
    if head is None:  # cannot happen (everything in it is optional); keeps type checkers honest
        return None
    quote = head.group("q")
    v_start = head.end()
    data_line = False  # a bare value filling an env or YAML line: data, not code
    line_start = 0
    if quote is not None:
        v_end = _run_end(_QUOTED_RUN_RE, data, v_start)
        if v_end is not None and data[v_end : v_end + len(quote)] != quote and strong:
            # `"password": "correct horse battery"`: under a strong name spaces belong to the value.
            spaced = _SPACED_RUN_RE.match(data, v_start)
            if spaced is not None and data[spaced.end() : spaced.end() + len(quote)] == quote:
                v_end = spaced.end()
        if strong and (v_end is None or data[v_end : v_end + len(quote)] != quote):
            # `"password": "p\\u00e4ss\\\\w\\"rd"`: JSON escapes inside the string are part of the value
            escaped_end = _escaped_string_end(data, v_start, quote)
            if escaped_end is not None:
                v_end = escaped_end
        if v_end is None or data[v_end : v_end + len(quote)] != quote:
            return None  # empty, too long, or spaces/escapes inside: prose, not a credential
        quoted = True
    elif comparison:
        return None  # `password == expected`: a comparison with a variable, not a literal
    else:
        line_start = at_line_start(data, start) if strong else 0
        if strong and ((line_start or env_style) and tight and sep == b"=" or line_start and sep in (b"=", b":=")):
            # `DB_PASS=a,b.c` in an env file or a shell command, `secret = a,b.c` in an INI file: to the space
            v_end = _run_end(_ENV_RUN_RE, data, v_start)
            if v_end is not None:
                v_end = _past_operators(data, v_start, v_end)
            while v_end is not None and v_end > v_start and data[v_end - 1] == 0x2C:
                v_end -= 1  # `f(API_KEY=value, ...)`
            data_line = tight  # `password = user_password` with spaces may be code: judged as code
        elif line_start and sep == b":" and v_start > pos and m.group("close") is None:
            # `db_pass: p\4ss w0rd` in YAML: to the line's end
            v_end = _yaml_value_end(data, v_start, escaped=line_start == ESCAPED_LINE)
            data_line = True
        else:
            v_end = _run_end(_BARE_RUN_RE, data, v_start)
            if strong and v_end is not None:
                v_end = _past_operators(data, v_start, v_end, _VALUE_FOLLOWER_RE)
        if v_end is None:
            return None
        if strong and data[v_end : v_end + 1] in (b")", b"]", b"}") and data[v_end + 1 : v_end + 2].isalnum():
            # a closer with a letter or digit right after it (`]` in a generated `4nXYKv]mHDe…`) closes no
            # expression (`f(api_key=x)` ends at its closer): the value's own character; cut there, the rest leaked
            v_end = _word_end(data, v_end)
        v_end = _next_stop(stops, v_start, v_end)
        while v_end > v_start and data[v_end - 1] in b".:|":
            v_end -= 1  # sentence punctuation (or a pipe) after a bare value
        nxt = data[v_end : v_end + 1]
        if nxt in (b"(", b"[", b"{"):
            word_end = _unbalanced_run_end(data, v_start) if strong else None
            if word_end is None:
                return None  # a call or an index: code
            v_end = word_end  # `apikey = m{{h}o)p${e]n`: brackets no expression closes are part of the value
        if sep == b":" and nxt in (b",", b")", b"=") and IDENTIFIER_RE.fullmatch(data[v_start:v_end]):
            return None  # `private_key: PKCS7PrivateKeyTypes,`: a type annotation
        quoted = False
        tight = tight and v_start == pos and nxt not in (b",", b")")
    value = data[v_start:v_end]
    # `password = "rootpasswd"`, a YAML line's `password: "rootpasswd"` (a name, not a JSON key, given a
    # string): a literal
    # and `DB_PASSWORD=postgres`, `POSTGRES_PASSWORD: postgres`, my.cnf's `password=whiteduke`: a bare value that
    # fills an env, properties or YAML line after a password's name is data, as a quoted string is (a variable would
    # be `$NAME`; not `f(KEY=v)`; after a lower-case name a capital may be code's type, `password: SecretStr`),
    # and so is a long flag's (`--password=whiteduke`), a connection string's field's (`;Pwd=whiteduke;`), a
    # query parameter's (`?user=app&password=whiteduke`) and an environment variable's set inside a command
    # (`cd app && DB_PASSWORD=whiteduke npm start`, `heroku config:set DB_PASSWORD=...`, `echo 'DB_PASSWORD=...'`)
    literal = strong and (quoted and m.group("close") is None
                          and (sep in (b"=", b":=") or sep == b":" and at_line_start(data, start) > 0)
                          or kind == "password" and not quoted
                          and ((env_style or value == value.lower()) and data_line and line_start > 0
                               or tight and data.startswith(b"--", start)
                               or tight and sep == b"=" and start > 0 and data[start - 1] in b";?&"
                               or tight and sep == b"=" and env_style and _shell_word_starts(data, start)))
    if quoted and b"\\" in value:
        value = value.replace(b"\\", b"")  # judged without its escapes
    if paired and b" " in value:
        return None  # `pass: Skipped because flaky`: a weak name's value with spaces is prose, pair or not
    if not strong and not looks_random(value):
        return None  # the common case (`"key": "status"`), decided before the slower checks
    if b" " in value:
        if len(kw) >= 4 and kw in value.lower():
            return None  # `- password: password to use with username`: words about the name describe it
        if is_non_secret(value.replace(b" ", b""), quoted, kw, code_context=False) and not passphrase(value):
            return None
    elif (is_non_secret(value, quoted, kw, code_context=not (tight or data_line), strong=strong, literal=literal)
          and not basic_credential_b64(value)):  # `dTpwNHNz` reads as a word, and is `u:p4ss`
        return None
    scheme = head.group("scheme")
    if scheme is not None and kind == "authorization" and scheme.strip().lower() == b"basic":
        kind = "basic-auth"
    return Span(v_start, v_end, kind, PRIORITY_ASSIGNMENT)


def _past_operators(data: bytes, start: int, end: int, follower: re.Pattern[bytes] | None = None) -> int:
    """`DB_PASSWORD=Xk9&mP2<qR7>vL4!`: the value runs on past `&`, `<`, `>` and `;` to the space
    (a shell would read them as operators, but cutting a generated password at its first symbol
    leaves the rest of it on disk: fail closed). An operator followed by a space or the line's end
    (`PASS=x; make`, `TOKEN=x &`) still ends it, and so does a `follower` match: in prose, a log or
    a chat (`the new password: Qz&8mP2<vL4!x`) what follows a value (`&next=`, `;user=`, `</td>`)."""
    while end < len(data) and data[end] in b"&<>;" and end - start <= _MAX_VALUE:
        if follower is not None and follower.match(data, end) is not None:
            break
        after = end + 1
        while after < len(data) and data[after] in b"&<>;":
            after += 1
        nxt = _ENV_RUN_RE.match(data, after).end()  # type: ignore[union-attr]
        if nxt == after:
            break
        end = nxt
    return end


# What may follow a bare value without belonging to it: another parameter (`&user=`, `;user=`) or a tag.
_VALUE_FOLLOWER_RE = re.compile(
    rb"(?:&amp;|&)[A-Za-z_][A-Za-z0-9_.\-]*=|;[A-Za-z_][A-Za-z0-9_. \-]{0,40}=|</?[A-Za-z][A-Za-z0-9]*(?:[ /]|>)")


# An env line's bare value runs to whitespace or a shell operator; `,` `|` `{}` `[]` belong to it.
# In a file inside a JSON string, `\\u00e4` and `\\\\` are characters of the value; `\\n` ends it.
_ENV_RUN_RE = re.compile(rb"(?:[^ \t\n\r\x0b\x0c\"'`\\;&<>()\[\]{}]|\\u[0-9a-fA-F]{4}|\\\\)*")
_LINE_TAIL_RE = re.compile(rb"[^\n\r]{0,257}")
# What a YAML scalar running to the line's end must not hold: code, quotes, sentence punctuation, a comment.
_NOT_YAML_SCALAR_RE = re.compile(rb"[(){}\[\];,\"'`]|[.:] |\.$| #| = ")


def _yaml_value_end(data: bytes, start: int, escaped: bool) -> int | None:
    """End of a plain YAML scalar that fills the rest of its line, else of its first word."""
    word_end = _run_end(_BARE_RUN_RE, data, start)
    tail = _LINE_TAIL_RE.match(data, start).group()  # type: ignore[union-attr]
    if escaped:  # a line inside a JSON string ends at an escaped newline or at the string's end
        cut = min((c for c in (tail.find(b"\\n"), tail.find(b'"')) if c >= 0), default=len(tail))
        tail = tail[:cut].rstrip(b"\\")
    tail = tail.rstrip(b" \t")
    if len(tail) > 256 or not tail or _NOT_YAML_SCALAR_RE.search(tail) or REFERENCE_RE.match(tail):
        return word_end
    if b" " in tail and (len(tail.split()) > 8 or not passphrase(tail)):
        return word_end
    return start + len(tail)


_CLOSERS = {0x29: 0x28, 0x5D: 0x5B, 0x7D: 0x7B}  # ) ] }
_RUN_ENDERS = frozenset(b" \t\n\r\x0b\x0c\"'`\\,;")


def _unbalanced_run_end(data: bytes, start: int) -> int | None:
    """End of a bare value whose brackets no expression could close (`m{{h}o)p$`), else None.

    Inside brackets anything goes (`get(a, b)`, `env["X"]`, a call over lines);
    outside them the value ends at a space, quote or `,`. Only a closer that
    does not match its opener makes the run a value rather than code, and only
    on the value's line: a call over lines is code whatever its strings hold
    (`TOKEN_RE = re.compile(` then a regex with `[^\\]]` on the next line).
    """
    stack: list[int] = []
    i, n = start, min(len(data), start + _MAX_VALUE)
    while i < n:
        c = data[i]
        if not stack and c in _RUN_ENDERS:
            break
        if c in (0x0A, 0x0D) or c == 0x5C and data[i + 1 : i + 2] in (b"n", b"r"):
            return None  # inside brackets (outside them a line break ends the run): a call over lines
        if c in (0x28, 0x5B, 0x7B):
            stack.append(c)
        elif c in _CLOSERS:
            if not stack:
                break  # the enclosing expression's closer: `f(api_key=g(x))`
            if stack.pop() != _CLOSERS[c]:
                while i < n and data[i] not in _RUN_ENDERS:
                    i += 1
                return i
        i += 1
    return None


def _word_end(data: bytes, start: int) -> int:
    """Where a run of anything but spaces, quotes, escapes, `,` and `;` from `start` ends (within a value's reach)."""
    i, n = start, min(len(data), start + _MAX_VALUE)
    while i < n and data[i] not in _RUN_ENDERS:
        i += 1
    return i


_MAX_ESCAPED = 512
_ESCAPED_STOP_RE = re.compile(rb"[ \t\n\r]|\\+[nrt]")


def _line_ends(data: bytes, start: int, end: int, level: int) -> bool:
    """Is there whitespace, or a newline/tab escaped at this level (not an escaped backslash before `n`)?

    At level 0 (a JSON string, a string literal) an escaped newline is part of the value: the string
    closes on this line. One level down (a file inside a JSON string) it is where the file's line ends.
    """
    for m in _ESCAPED_STOP_RE.finditer(data, start, end):
        run = m.end() - m.start() - 1
        if run <= 0 or level and run % (2 * (level + 1)) == level + 1:
            return True
    return False


def _escaped_string_end(data: bytes, start: int, quote: bytes) -> int | None:
    """End of a quoted string whose value holds escapes, or None (a newline, too long, never closed).

    The closing quote is `quote` itself: for `"` one preceded by an even number
    of backslashes; for `\\"` (JSON inside a JSON string) one preceded by
    4k+1 backslashes, and so on for each level of escaping.
    """
    level = len(quote) - 1  # backslashes in the opening quote: 0, 1, 3, 7...
    char = quote[-1:]
    pos = start
    limit = min(len(data), start + _MAX_ESCAPED)
    while pos < limit:
        i = data.find(char, pos, limit)
        if i < 0 or _line_ends(data, pos, i, level):
            return None  # a line ends (raw or escaped) or a space comes first: not one value
        j = i
        while j > start and data[j - 1] == 0x5C:
            j -= 1
        if (i - j) % (2 * (level + 1)) == level and j > start:
            return j
        pos = i + 1
    return None


def find_assignments(data: bytes, hits: TriggerHits, found: list[Span]) -> None:
    """`find_assignment_spans` with the starts of the secrets found before by their format or a vendored rule
    (`found`, priority up to gitleaks') as stops: a bare value ends where such a secret begins."""
    find_assignment_spans(data, hits, found, [s.start for s in found if s.priority <= PRIORITY_GITLEAKS])


DETECTOR = Detector(
    "assignments",
    ASSIGNMENT_TRIGGERS,
    find_assignments,
    examples=samples(
        "DB_PASSWORD=<mixed:14>",
        '{"api_key": "<alnum:20>"}',
        "[default]\naws_secret_access_key = <b64:40>\n",
        'password_super_secure = "<mixed:16>"',
        "user=alice pass=<mixed:14>",  # a weak name beside a user's: a pair
        '{"password": "<lower:6> horse <lower:8> staple"}',
        'export AZURE_DEVOPS_PAT="<lower:52>"',  # a personal access token's name
        "const githubPat = '<hex:40>';",
        "export PAT=<lower:52>",  # `PAT` alone, a random value after it (Azure DevOps' docs)
        'network={\n    ssid="HomeNet"\n    psk="<mixed:12>"\n}',  # a pre-shared key (wpa_supplicant)
        '10.0.0.1 10.0.0.2 : PSK "<mixed:16>"',  # ipsec.secrets: the name, a space, the quoted key
        "MY_PASSCODE=<mixed:12>",
        "DBPASS=<mixed:12>\nrootpw = <mixed:12>",  # a password's word glued to the one before
        '{"auths": {"registry.example.com": {"auth": "dTpwNHNz"}}}',  # base64 of `u:p4ss` (Docker)
        "_auth=YWI6Yw==",  # npm: base64 of `ab:c`
        "redis_pass = Jm<upper:3>Qa771.bbt<upper:1>\n",  # dotted, but no word to say after the dot: no code
        "REACT_APP_PASSWORD=whiteduke\n",  # a word filling an env line under an upper-case name: data
        "      - POSTGRES_PASSWORD=postgres\n",  # a compose file's environment list
        "cd app && DB_PASSWORD=whiteduke npm start",  # an environment variable set inside a command
        "     3\u2192DB_PASSWORD=whiteduke\n",  # a file's line as Claude Code's Read shows it
        "00003| DB_PASSWORD=whiteduke\n",  # the same after a zero-padded number and a bar
        "+REACT_APP_PASSWORD=whiteduke\n",  # a diff's added line
    ),
    near_misses=samples(
        '{"key": "status", "sort_key": "name"}',
        "password = get_password()",
        "def login(token: str, api_key: Optional[str] = None):",
        'password_length = "12"',
        '{"password": "unreserved"}',
        '"prompt_cache_key": "<alnum:20>"',
        "pass=<mixed:14>",  # a weak name alone: its short word must look random
        "DB_PASSWORD=${DB_PASSWORD}",
        'url_pat = re.compile(r"https?://[^ ]+")',  # `_pat`: a pattern's name, its value no token
        '{"use_pat": true, "glob_pat": "**/*.py"}',
        'pat = re.compile(r"^[a-z_]+$"); pat = "ab12cd34"; pat = pattern_for(name)',  # `pat` alone, no random value
        'psk_identity = "client1"\nuse_psk = True',  # about the key, not the key
        '{"auth": "required", "token": "YWJjZGVmZ2g="}',  # a word; base64 of `abcdefgh`, no `user:password`
        "secret = rfc3279.RSAPublicKey",  # a module and a class: code, a digit or not
        "f(PASSWORD=pw_value, b=1)",  # an upper-case keyword argument: code
        "run(cmd, PASSWORD=pw_value)",  # the same after another argument
        "see the ratio 3:password=whiteduke in the log",  # a number inside a line is no line's number
        "| step | 3| password=whiteduke |",  # a table's cell: no line's number either
        '{"rulesets": {"credentials": "creds-2026.12.10"}}',  # a version after a weak name
        "    - password: password to use with username\n",  # a docstring's list: words about the name
        "bypass=<mixed:12> compass=<mixed:12> renderpass=<mixed:12> OLDPWD=/home/me",  # words that end like one
    ),
    python_starts=True,
    reads_found=True,
)
