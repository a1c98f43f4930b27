"""Credential literals in code: one compared with a credential's variable (`if ("hunter2" == password)`),
and the password of a user and password pair handed to an auth call (`HTTPBasicAuth("alice", "pw")`).

Code that checks a hard-coded password writes the literal on either side of
the comparison. `password == "x"` is an assignment-like form (see
`redaction.assignments`); this module covers the literal written first, as
in Yoda conditions and in tests: the name after the operator says the
literal is a secret.

The pair is a class, not a list of libraries: a call or keyword whose name ends in `auth`,
`credential(s)` or `login` given two string literals (`auth=("alice", "pw")`, `BasicAuth(...)`,
`SetBasicAuth(...)`, `NetworkCredential(...)`, `UsernamePasswordCredentials(...)`, `ftp.login(...)`,
`imap.login(...)`) holds a user and a password, in that order.

A database connection's is a class of its own: a call named for a connection (`connect`, `getConnection`, `PDO`,
`mysqli`) whose second and third arguments are string literals takes a user and a password after its host, URL or
DSN (`DriverManager.getConnection(url, "sa", "pw")`, `new PDO($dsn, 'root', 'pw')`, `mysqli_connect("db", "root",
"pw", "app")`, `MySQLdb.connect("db", "app", "pw", "app")`).

A credential's fallback is a class too: a lookup by a credential's name given a literal default
(`os.getenv("DB_PASSWORD", "pw")`, `os.environ.get(...)`, `ENV.fetch(...)`, `getOrDefault(...)`,
`config.get("api_key", "k")`: the name and the literal are the call's only arguments), and a credential's
variable or field or-ed with a literal (`process.env.DB_PASS || "pw"`, `opts.apiKey ?? "k"`,
`os.environ.get("GH_TOKEN") or "t"`).
"""

from __future__ import annotations

import re

from ctxtap.redaction.detector import Detector, TriggerHits, samples
from ctxtap.redaction.engine import Trigger
from ctxtap.redaction.false_positives import is_non_secret_literal
from ctxtap.redaction.names import strong_name_kind
from ctxtap.redaction.spans import PRIORITY_ASSIGNMENT, Span

# A closing quote (the literal's), a comparison, the first character of a name.
TRIGGERS: tuple[Trigger, ...] = (
    Trigger(rb"[\"'`][ \t]{0,4}[!=]==?[ \t]{0,4}[A-Za-z_$]", literals=(b"==", b"!="), window=12),
    # an auth call or keyword given a literal: `HTTPBasicAuth("alice", ...`, `auth=('alice', ...`
    Trigger(rb"(?:auth|credentials?|login)[ \t]*(?:=[ \t]*)?[(\[][ \t]*\\*[\"'`]",
            literals=(b"auth", b"credential", b"login"), window=40, caseless=True),
    # a connection's call: its arguments are read after the parenthesis (`getConnection(url, "sa", "pw")`)
    Trigger(rb"(?:connect|connection|pdo|mysqli)[ \t]*\(", literals=(b"connect", b"pdo", b"mysqli"), window=20,
            caseless=True, opens=False),
    # a lookup's name argument ending in a credential's word, a comma, the default's opening quote
    Trigger(rb"(?:pass|pwd|secret|token|key|auth|credentials?)[A-Za-z0-9_]*\\*[\"'][ \t]*,[ \t]*\\*[\"'`]",
            literals=(b"pass", b"pwd", b"secret", b"token", b"key", b"auth", b"credential"), window=80, caseless=True,
            opens=False),
    # a credential's name, then `|| "`, `?? "` or ` or "`: its value or-ed with a literal (`||` alone is in
    # every shell line and script: the name's word anchors the trigger)
    Trigger(rb"(?:pass|pwd|secret|token|key|auth|credentials?)[A-Za-z0-9_]*(?:\\*[\"'][\])])?[ \t]*(?:\|\||\?\?|or)"
            rb"[ \t]*\\*[\"'`]", literals=(b"pass", b"pwd", b"secret", b"token", b"key", b"auth", b"credential"),
            window=80, caseless=True, opens=False),
)
# (`opens=False`: both read escaped quotes themselves, so code inside a JSON string needs no opening; these
# shapes are in every model API's bodies, and opening each string they are in cost a scan a string)

_NAME_RE = re.compile(rb"[A-Za-z_$][A-Za-z0-9_$]*(?:\.[A-Za-z_$][A-Za-z0-9_$]*)*")
# The literal before the operator, quotes possibly escaped (code inside a JSON string), anchored at its end.
_LITERAL_RE = re.compile(rb"(?P<esc>\\*)(?P<q>[\"'`])(?P<v>[^\s\"'`\\]{4,256})(?P=esc)(?P=q)[ \t]{0,4}[!=]==?[ \t]{0,4}\Z")
_REACH = 300
# After the first literal's opening quote: the user, its closing quote, a comma, the password literal, the end.
_PAIR_RE = re.compile(rb"(?P<user>[^\s\"'`\\]{1,64})\\*[\"'`][ \t]*,[ \t]*(?P<esc>\\*)(?P<q>[\"'`])"
                      rb"(?P<v>[^\s\"'`\\]{4,256})(?P=esc)(?P=q)[ \t]*[,)\]]")


# `getenv(  "DB_PASSWORD"  ,  "`: a call's first argument, a credential's name (quotes possibly escaped), anchored at
# the default's opening quote
_LOOKUP_RE = re.compile(rb"[A-Za-z0-9_]\([ \t]*(?P<esc>\\*)(?P<q>[\"'])(?P<name>[A-Za-z0-9_.\-]{1,80})(?P=esc)(?P=q)[ \t]*,[ \t]*\\*[\"'`]\Z")
# A variable's name, not a word (`("password", "<hash>")` is a test vector's pair): words joined by `_`, `-`
# or `.`, capitals throughout, or camelCase
_VARIABLE_NAME_RE = re.compile(rb"[A-Za-z0-9][_.\-][A-Za-z]|^[A-Z0-9]+$|[a-z][A-Z]")
# the literal from its first character: its closing quote, then the call's end
_DEFAULT_RE = re.compile(rb"(?P<v>[^\s\"'`\\]{4,256})\\*[\"'`][ \t]*\)")
# the literal from its first character to its closing quote
_ORED_VALUE_RE = re.compile(rb"(?P<v>[^\s\"'`\\]{4,256})\\*[\"'`]")
_SPACES = b" \t"
_QUOTES_AND_ESCAPES = b"\"'\\"
_NAME_RUN = bytes(sorted(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_$"))


def _ored_name(data: bytes, end: int) -> bytes | None:
    """The variable, field or lookup's name before `||`, `??` or `or` and the literal's opening quote (which
    ends at `end`): `process.env.DB_PASS`'s `DB_PASS`, `opts["apiKey"]`'s `apiKey`, `getenv("X")`'s `X`.
    Walked back in C (`rstrip`), not searched for: `||` and ` or "` are everywhere in code and prose."""
    lo = max(0, end - 120)
    head = data[lo : end - 1].rstrip(b"\\").rstrip(_SPACES)  # the quote's escapes, the spaces before it
    for op in (b"||", b"??", b" or", b"\tor"):  # `or` a word of its own (`key_color "x"` is no or-ed value)
        if head.endswith(op):
            head = head[: -len(op)]
            break
    else:
        return None
    head = head.rstrip(_SPACES)
    if head.endswith((b"]", b")")):  # `opts["apiKey"]`, `getenv("X")`: the key's closing quote before it
        head = head[:-1]
        if not head.endswith((b"'", b'"')):
            return None
        head = head.rstrip(_QUOTES_AND_ESCAPES)
    name = head[len(head.rstrip(_NAME_RUN)) :]
    return name if name and not name[:1].isdigit() else None


def _credential_default(data: bytes, end: int, named: tuple[str, bytes] | None, value_re: re.Pattern[bytes],
                        out: list[Span]) -> None:
    """The literal starting at `end` when `named` (a strong name's kind and keyword) says it is a credential's."""
    if named is None:
        return
    m = value_re.match(data, end)
    if m is not None and not is_non_secret_literal(m.group("v"), named[1]):
        out.append(Span(m.start("v"), m.end("v"), named[0], PRIORITY_ASSIGNMENT))


# A connection call's arguments from its parenthesis: the host, URL or DSN (a literal, or an expression with no
# parenthesis or quote), then the user's and the password's literals (quotes possibly escaped), then `,` or `)`.
_CONNECTION_ARGS_RE = re.compile(
    rb"[ \t]*(?:(?P<e1>\\*)(?P<q1>[\"'`])[^\"'`\\\n]{0,256}(?P=e1)(?P=q1)|[^,()\"'`\n]{1,200})[ \t]*,[ \t]*"
    rb"(?P<e2>\\*)(?P<q2>[\"'`])[^\s\"'`\\]{1,64}(?P=e2)(?P=q2)[ \t]*,[ \t]*"
    rb"(?P<esc>\\*)(?P<q>[\"'`])(?P<v>[^\s\"'`\\]{4,256})(?P=esc)(?P=q)[ \t]*[,)]")


def find_comparison_spans(data: bytes, hits: TriggerHits, out: list[Span]) -> None:
    """Append spans of literals compared with a strong name, of auth calls' and connection calls' passwords and
    of credentials' literal fallbacks; `hits[i]` are where `TRIGGERS[i]` matched."""
    for _, end in hits[2]:
        if data[max(0, end - 16) : end].lower().rstrip(b" \t(").endswith(b"disconnect"):
            continue
        m = _CONNECTION_ARGS_RE.match(data, end)
        if m is not None and not is_non_secret_literal(m.group("v"), b"pass"):
            out.append(Span(m.start("v"), m.end("v"), "password", PRIORITY_ASSIGNMENT))
    for _, end in hits[3]:
        paren = data.rfind(b"(", max(0, end - 100), end)  # the call's: the regex is matched from there, once
        m = _LOOKUP_RE.match(data, paren - 1, end) if paren > 0 else None
        if m is not None and _VARIABLE_NAME_RE.search(m.group("name")):
            _credential_default(data, end, strong_name_kind(m.group("name").rsplit(b".", 1)[-1]), _DEFAULT_RE, out)
    for _, end in hits[4]:
        name = _ored_name(data, end)
        if name is not None:
            _credential_default(data, end, strong_name_kind(name), _ORED_VALUE_RE, out)
    for _, end in hits[1]:
        m = _PAIR_RE.match(data, end)
        if m is not None and not is_non_secret_literal(m.group("v"), b"pass"):
            out.append(Span(m.start("v"), m.end("v"), "password", PRIORITY_ASSIGNMENT))
    for _, end in hits[0]:
        name_start = end - 1
        name = _NAME_RE.match(data, name_start)
        if name is None or (name.end() < len(data) and data[name.end()] in b"(["):
            continue  # `"x" == get_password()`: a call, not the variable
        named = strong_name_kind(name.group().rsplit(b".", 1)[-1])
        if named is None:
            continue
        lo = max(0, name_start - _REACH)
        m = _LITERAL_RE.search(data[lo:name_start])
        if m is None or is_non_secret_literal(m.group("v"), named[1]):
            continue
        out.append(Span(lo + m.start("v"), lo + m.end("v"), named[0], PRIORITY_ASSIGNMENT))


DETECTOR = Detector(
    "comparisons",
    TRIGGERS,
    find_comparison_spans,
    examples=samples(
        'if ("<mixed:14>" == password) {',
        'if ("<mixed:14>" !== my_password_sec) {',
        'HTTPBasicAuth("alice", "<mixed:14>")',
        "requests.get(url, auth=('alice', '<mixed:14>'))",
        "SECRET_KEY = os.environ.get('DJANGO_SECRET_KEY', '<mixed:20>')",  # a credential's literal fallback
        "const pass = process.env.DB_PASS || '<mixed:14>';",
        "token = os.environ.get('GH_TOKEN') or '<mixed:16>'",
        "ftp.login('alice', '<mixed:14>')",  # a login call's user and password
        'Connection c = DriverManager.getConnection(url, "sa", "<mixed:14>");',  # a connection's user and password
        "$db = new PDO('mysql:host=db;dbname=app', 'root', '<mixed:14>');",
        'conn = MySQLdb.connect("db.internal", "app", "<mixed:14>", "app")',
    ),
    near_misses=(
        "if (name == password) {",
        'if ("expected" == get_password()) {',
        'requests.get(u, auth=("alice", "password"))',
        "req.SetBasicAuth(user, pass)",
        'auth("login", "Please sign in")',
        "required: ['api_key', 'model'], x = config.get('password', 'default'), t('password', 'Enter it')",
        "test -f token || echo 'missing file'; os.getenv('DB_PASSWORD', '') or 'unset'",
        'sock.connect(("db", 5432)); sqlite3.connect("app.db"); button.connect("clicked", "on_click")',
        'getConnection(url, user, password); new PDO($dsn, $user, $pass); connect(host, "app", "")',
    ),
)
