"""Credentials in configuration formats that name them without `name = value`.

`<password>s3cr3t</password>` (Maven's settings.xml, Tomcat, Spring, .NET; the element's whole text, so a
passphrase's words and Jenkins' stored `{AQAAAB…}` go with it), `define(
'DB_PASSWORD', 's3cr3t' );` (WordPress' wp-config.php, its salts too), `...;User
ID=svc;Password=p&ss<w>rd;` in a connection string (`;` ends the value there, so `&`,
`<` and `>` belong to it), `.netrc`'s `login bot password s3cr3t` and `.pgpass`'s
`db.internal:5432:app:svc:s3cr3t`, and a list of environment variables as name and value
fields (Kubernetes' `- name: DB_PASSWORD` then `value: s3cr3t`, ECS task definitions'
`{"name": "DB_PASSWORD", "value": "s3cr3t"}`, Terraform's `{ name = ..., value = ... }`, .NET's
`<add key="ApiKey" value="..." />`),
a YAML value on the lines after its name (`password:` or `password: |` / `>-`, then the value
indented below it; also as a tool shows the file numbered, or on a diff's added lines), and `Cookie:` / `Set-Cookie:` lines of an HTTP exchange printed as text (`curl -v`, a log):
an agent reads such files all day, and the name rules, which look for `name = value`,
miss them or cut the value at its first symbol.

A `.pgpass` line has no name at all, only its shape, and a trigger for that shape cost
a tenth of the engine's pass over every body; so such lines are looked for only near a
mention of the file (`cat ~/.pgpass`, a Read of `.pgpass`, grep's `.pgpass:` prefix,
`PGPASSFILE`), which is how its content comes into a conversation.
"""

from __future__ import annotations

import re

from ctxtap.redaction.detector import Detector, TriggerHits, samples
from ctxtap.redaction.engine import Trigger
from ctxtap.redaction.false_positives import is_non_secret_password, is_non_secret_value, passphrase
from ctxtap.redaction.names import after_line_number, name_start, numbered_line, starts_line, strong_name_kind
from ctxtap.redaction.spans import PRIORITY_ASSIGNMENT, Span

_WORDS = (b"pass", b"pwd", b"secret", b"key", b"salt", b"token")
_NAME = rb"[A-Za-z0-9_.:\-]{0,60}"
_QUOTE = rb"\\{0,3}['\"]"  # a quote, escaped when the file sits in a JSON string
_KEY_QUOTE = rb"(?:\\{0,3}['\"])?"  # the same, where a key or value may have none (YAML, HCL)
_GAP = rb"(?:[ \t]|\\[nrt]|[\r\n])+"  # spaces and line ends, raw or escaped in a JSON string
_LINE_START = rb"(?:^|[\n\"]|\\n)"  # a line's start, raw or in a JSON string (which may begin with it)
_PG_FIELD = rb"(?:[^:\s\\\"']{1,128})"
_PGPASS_REACH = 65536  # how far from a mention of the file its lines are looked for, either side

# Simple triggers (a keyword, then what must follow it): a bounded run before the keyword would
# make every `<` of a body start a search in the engine; the rest is checked in Python.
TRIGGERS: tuple[Trigger, ...] = (
    Trigger(rb"(?:pass|pwd|secret|key|salt|token)" + _NAME + rb">[^<>\s\\]", literals=_WORDS, window=80,
            caseless=True),
    Trigger(rb"define[ \t]*\([ \t]*" + _QUOTE, literals=(b"define",), window=20, som=True, caseless=True),
    Trigger(rb";[ \t]*(?:password|pwd)[ \t]*=", literals=(b"password", b"pwd"), window=20, som=True, caseless=True),
    Trigger(rb"password[ \t]+[^ \t\r\n\\\"']", literals=(b"password",), window=10, caseless=True),
    Trigger(rb"pgpass", literals=(b"pgpass",), window=0, caseless=True),
    # `name: DB_PASSWORD` (YAML, JSON, HCL; quotes escaped in a JSON string): its value field is looked
    # for in Python
    Trigger(rb"(?:name|key)" + _KEY_QUOTE + rb"[ \t]*[:=][ \t]*" + _KEY_QUOTE + rb"[A-Za-z0-9_.:\-]*"
            rb"(?:pass|pwd|secret|key|token|credential|auth)", literals=(b"name", b"key"), window=100, caseless=True),
    # `Cookie:` / `Set-Cookie:` at a line's start (after curl's `> ` / `< `): its line is read in Python
    Trigger(rb"cookie:", literals=(b"cookie:",), window=0, caseless=True),
    # Terraform: `variable "db_password" {` ... `default = "..."`
    Trigger(rb"variable[ \t]+" + _QUOTE + rb"[A-Za-z0-9_\-]*(?:pass|pwd|secret|key|token|credential|auth)",
            literals=(b"variable",), window=100, caseless=True),
    # YAML: `password:` (or a block scalar's `password: |`, `>-`) ending its line: the value is below it.
    # Its rule reads escaped line ends at any depth, so its hits (code's `except KeyError:` too) open
    # no JSON string.
    Trigger(rb"(?:pass|pwd|secret|key|token|credential|auth)[A-Za-z0-9_.\-]{0,40}:[ \t]*(?:[|>][+\-]?[1-9]?[ \t]*)?"
            rb"(?:\r?\n|(?:\\+r)?\\+n)", opens=False,
            literals=(b"pass", b"pwd", b"secret", b"key", b"token", b"credential", b"auth"), window=100, caseless=True),
)

# an element's text on one line: spaces may be the password's (`correct horse battery staple`), braces a
# stored secret's (Jenkins' `{AQAAAB…}`); a backslash ends it (a JSON string's escape: the file's line break)
_XML_RE = re.compile(rb"<(?P<tag>" + _NAME + rb")>(?P<v>[^<>\r\n\\]{1,512})</(?P=tag)>")
# a template's reference in braces (`{password}`, `{{ db.password }}`, `{env:DB_PASS}`): no value yet
_BRACED_REFERENCE_RE = re.compile(rb"\{+[ \t]*[A-Za-z_][A-Za-z0-9_.:\-]*[ \t]*\}+")
_DEFINE_RE = re.compile(rb"(?i)define[ \t]*\([ \t]*(?P<q1>" + _QUOTE + rb")(?P<name>[A-Za-z0-9_]{1,80})(?P=q1)[ \t]*,"
                        rb"[ \t]*(?P<q2>" + _QUOTE + rb")(?P<v>[^'\"\\\n]{1,512})(?P=q2)")
_CONN_RE = re.compile(rb"(?i);[ \t]*(?:password|pwd)[ \t]*=[ \t]*(?P<v>\{[^}\n]{1,256}\}|[^;\"'\\\n\r]{1,256})")
_NETRC_RE = re.compile(rb"(?i)password[ \t]+(?P<v>[^ \t\r\n\\\"']{1,256})")
# `.netrc`: `login <name>` right before `password` (on its line or the one before; in a JSON string after `\\n`)
_NETRC_LOGIN_RE = re.compile(rb"(?i)(?:\b|(?<=\\[nt]))login" + _GAP + rb"[^ \t\r\n\\]{1,128}" + _GAP + rb"\Z")
# host:port:database:user:password on its own line (after grep's `path/.pgpass:` prefix, if any)
_PGPASS_RE = re.compile(
    _LINE_START + rb"(?:[^\s:\"\\]{0,256}pgpass:)?(?P<host>[A-Za-z0-9.\-]{1,253}|\*):(?P<port>[0-9]{1,5}|\*):(?P<db>" + _PG_FIELD
    + rb"):(?P<user>" + _PG_FIELD + rb"):(?P<v>[^:\s\\\"'][^\r\n\\\"]{0,255}?)[ \t]*(?=$|[\r\n\"]|\\+[nr\"])"
)
# `name: DB_PASSWORD` and its `value` field, after it (up to the entry's end) or before it in the same
# JSON object; the field's value is quoted (to the same quote) or bare (to a space, comma or bracket)
_PAIR_NAME_RE = re.compile(rb"(?i)(?:name|key)(?P<kq>" + _KEY_QUOTE + rb")[ \t]*[:=][ \t]*(?P<q>" + _KEY_QUOTE
                           + rb")(?P<name>[A-Za-z0-9_.:\-]{1,80})(?P=q)(?![A-Za-z0-9_.:\-])")
_PAIR_VALUE_RE = re.compile(rb"(?<![A-Za-z0-9_])value" + _KEY_QUOTE + rb"[ \t]*[:=][ \t]*(?:(?P<q>" + _QUOTE
                            + rb")(?P<qv>[^'\"\\\r\n]{1,512})(?P=q)|(?P<bv>[^\s'\"\\,;{}\[\]]{1,512}))")
_PAIR_REACH = 256  # how far apart a name field and its value field may be
_ENTRY_END_RE = re.compile(rb"[{}]|(?:\n|\\n)[ \t]*-[ \t]|(?<![A-Za-z0-9_])(?:name|key)" + _KEY_QUOTE + rb"[ \t]*[:=]",
                           re.I)
_COOKIE_HEADER_RE = re.compile(rb"(?i)(?P<set>set-)?cookie:")
_COOKIE_PAIR_RE = re.compile(rb"[ \t]*(?P<n>[^=;\s\\\"]{1,128})=(?P<v>[^;\s\\\"]{1,4096})(?P<sep>;?)")
_COOKIE_LINE = 16384  # how far a Cookie line is read
# a Terraform variable's label, then its default (up to the block's end: a `}` that starts a line)
_TF_VARIABLE_RE = re.compile(rb"variable[ \t]+(?P<q>" + _QUOTE + rb")(?P<name>[A-Za-z0-9_\-]{1,80})(?P=q)[ \t]*\{")
_TF_DEFAULT_RE = re.compile(rb"(?<![A-Za-z0-9_])default[ \t]*=[ \t]*(?P<q>" + _QUOTE + rb")(?P<v>[^'\"\\\r\n]{1,512})(?P=q)")
_TF_BLOCK_END_RE = re.compile(rb"(?:\n|\\n)\}")
_TF_REACH = 1024
# an HTML form's anti-forgery field (`<input name="authenticity_token" value="...">`): not a credential
_FORM_TOKEN_RE = re.compile(rb"(?i)(?:authenticity|csrf|xsrf|csrfmiddleware|requestverification)[_\-]?token\Z")
# a YAML key ending its line, and the lines below it (raw, or escaped in a JSON string)
_YAML_TAIL_RE = re.compile(rb":[ \t]*(?P<block>[|>][+\-]?[1-9]?[ \t]*)?(?:\r?\n|(?:\\+r)?\\+n)")
_YAML_LINE_RE = re.compile(rb"(?P<indent>[ \t]*)(?P<v>(?:[^\r\n\\]|\\+[^nr\\])*)(?P<end>\r?\n|(?:\\+r)?\\+n|\Z)")
_YAML_NOT_SCALAR_RE = re.compile(rb"(?:-(?:[ \t]|\Z)|#|[A-Za-z0-9_.\-\"']{1,80}:(?:[ \t]|\Z)|[\[{&*!%@`|>])")
_YAML_QUOTED_RE = re.compile(rb"(?P<q>\\*[\"'])(?P<v>[^\"'\\]{1,512})(?P=q)")
_YAML_MAX_LINES = 32
_HAS_LETTER_RE = re.compile(rb"[A-Za-z]")
_PG_PORT_RE = re.compile(rb":(?:[0-9]{1,5}|\*):")


def find_config_spans(data: bytes, hits: TriggerHits, out: list[Span]) -> None:
    """Append spans of the credentials above; `hits[i]` are the (start, end) matches of `TRIGGERS[i]`."""
    xml, define, conn, netrc, pgpass, pairs, cookies, variables, yaml_keys = hits
    for _, end in yaml_keys:
        _find_yaml_block(data, end, out)
    for _, end in xml:
        open_at = data.rfind(b"<", max(0, end - 80), end)
        m = _XML_RE.match(data, open_at) if open_at >= 0 else None
        if m is not None and m.end("tag") < end <= m.end("v") + 1:
            _add_element(out, m)
    for start, _ in define:
        m = _DEFINE_RE.match(data, start)
        if m is not None:
            _add(out, m, m.group("name"), salts=True)
    for start, _ in conn:
        m = _CONN_RE.match(data, start)
        if m is not None:
            value = m.group("v").rstrip(b" \t")
            if not is_non_secret_password(value.strip(b"{}")):
                out.append(Span(m.start("v"), m.start("v") + len(value), "password", PRIORITY_ASSIGNMENT))
    for _, end in netrc:
        lo = max(0, end - 40)
        found = data[lo:end].lower().rfind(b"password")  # the trigger is caseless
        at = lo + found if found >= 0 else -1
        m = _NETRC_RE.match(data, at) if at >= 0 else None
        if (m is not None and _NETRC_LOGIN_RE.search(data, max(0, at - 160), at) is not None
                and not is_non_secret_password(m.group("v"))):
            out.append(Span(*m.span("v"), "password", PRIORITY_ASSIGNMENT))
    if pgpass:
        _find_pgpass_lines(data, pgpass, out)
    for _, end in pairs:
        _find_pair_value(data, end, out)
    for _, end in cookies:
        _find_cookie_values(data, end, out)
    for _, end in variables:
        _find_variable_default(data, end, out)


def _find_cookie_values(data: bytes, end: int, out: list[Span]) -> None:
    """The values of a `Cookie:` line (all of them) or a `Set-Cookie:` line (the first: the rest are
    attributes) printed as text, where the header starts its line; words and numbers stay."""
    m = _COOKIE_HEADER_RE.search(data, max(0, end - 16), end)
    if m is None or m.end() != end or not _header_starts_line(data, m.start()):
        return
    first_only = m.group("set") is not None
    for pair in _COOKIE_PAIR_RE.finditer(data, end, min(len(data), end + _COOKIE_LINE)):
        value = pair.group("v")
        if len(value) >= 8 and not is_non_secret_value(value, True, b"cookie"):
            out.append(Span(*pair.span("v"), "cookie", PRIORITY_ASSIGNMENT))
        if first_only or pair.group("sep") != b";":
            break  # Set-Cookie's attributes, or the line's end


def _header_starts_line(data: bytes, at: int) -> bool:
    """Does the header at `at` begin its line, after curl's `> ` or `< ` if any?"""
    i = at
    while i > 0 and data[i - 1] in b" \t":
        i -= 1
    if i > 0 and data[i - 1] in b"<>":
        i -= 1
    return starts_line(data, i)


def _find_variable_default(data: bytes, end: int, out: list[Span]) -> None:
    """The default of a Terraform variable whose label names a secret (`variable "db_password" {`)."""
    lo = max(0, end - 120)
    at = data[lo:end].lower().rfind(b"variable")
    m = _TF_VARIABLE_RE.match(data, lo + at) if at >= 0 else None
    named = strong_name_kind(m.group("name")) if m is not None else None
    if m is None or named is None:
        return
    hi = min(len(data), m.end() + _TF_REACH)
    close = _TF_BLOCK_END_RE.search(data, m.end(), hi)
    v = _TF_DEFAULT_RE.search(data, m.end(), close.start() if close is not None else hi)
    if v is not None and not is_non_secret_value(v.group("v"), True, named[1]):
        out.append(Span(*v.span("v"), named[0], PRIORITY_ASSIGNMENT))


def _find_pair_value(data: bytes, end: int, out: list[Span]) -> None:
    """The value field of the entry whose name field ends in a secret's name at `end` (the trigger's)."""
    lo = max(0, end - 160)  # `name` or `key`, quotes, spaces and a name of up to 80 characters
    lowered = data[lo:end].lower()
    m, right = None, len(lowered)
    while m is None:  # the nearest field to the left whose name holds the trigger's keyword
        at = max(lowered.rfind(b"name", 0, right), lowered.rfind(b"key", 0, right))
        if at < 0:
            return
        field = _PAIR_NAME_RE.match(data, lo + at)
        if field is not None and field.start("name") < end <= field.end("name"):
            m = field
        right = at
    named = strong_name_kind(m.group("name"))
    if named is None or _FORM_TOKEN_RE.search(m.group("name")):
        return
    kind, kw = named
    # after the name, to the entry's end (a bracket, the next list item, the next name field)
    hi = min(len(data), m.end() + _PAIR_REACH)
    stop = _ENTRY_END_RE.search(data, m.end(), hi)
    v = _PAIR_VALUE_RE.search(data, m.end(), stop.start() if stop is not None else hi)
    if v is None:  # before it, in the same JSON object: `{"value": "...", "name": "DB_PASSWORD"}`
        brace = data.rfind(b"{", max(0, m.start() - _PAIR_REACH), m.start())
        if brace >= 0 and b"}" not in data[brace : m.start()]:
            v = _PAIR_VALUE_RE.search(data, brace, m.start())
    if v is None:
        return
    group = "qv" if v.group("qv") is not None else "bv"
    if not is_non_secret_value(v.group(group), True, kw):
        out.append(Span(*v.span(group), kind, PRIORITY_ASSIGNMENT))


def _indent(data: bytes, name_start: int, text_start: int) -> int | None:
    """The indentation of the line a YAML key at `name_start` begins (after a list's `- `; after a tool's line
    number ending at `text_start`, when the file is shown numbered), or None if the key does not begin its line."""
    if not starts_line(data, name_start):
        return None
    i = name_start
    while i > max(0, text_start) and data[i - 1] in b" \t-":
        i -= 1
    return name_start - i


def _diff_added(data: bytes, name_start: int) -> bool:
    """Is the key at `name_start` on a diff's added line (`+  password: |`, its block on the `+` lines below)?"""
    i = name_start
    while i > 0 and data[i - 1] in b" \t":
        i -= 1
    return i > 0 and data[i - 1] == 0x2B and starts_line(data, i - 1)


def _find_yaml_block(data: bytes, end: int, out: list[Span]) -> None:
    """A strong name's value written on the lines below it: `password:` then an indented scalar,
    or a block scalar (`password: |`), each line of it redacted; a mapping, list, comment or
    reference below the name is not a value."""
    colon = data.rfind(b":", max(0, end - 64), end)
    tail = _YAML_TAIL_RE.fullmatch(data, colon, end) if colon >= 0 else None
    if tail is None:
        return
    start = name_start(data, colon, max(0, colon - 80))
    named = strong_name_kind(data[start:colon]) if start < colon else None
    numbered = numbered_line(data, start) if named is not None else -1
    key_indent = _indent(data, start, numbered) if named is not None else None
    if named is None or key_indent is None:
        return
    kind, kw = named
    added = _diff_added(data, start)
    pos, first_indent = end, None
    for _ in range(_YAML_MAX_LINES):
        if numbered >= 0:  # the file as a tool shows it: each line after its number
            pos = after_line_number(data, pos)
            if pos < 0:
                return
        if added:  # a diff's added lines: each after its `+`
            if data[pos : pos + 1] != b"+":
                return
            pos += 1
        line = _YAML_LINE_RE.match(data, pos)
        if line is None or line.end() == pos:
            return
        indent, value = len(line.group("indent")), line.group("v").rstrip(b" \t")
        if first_indent is None:
            if not value:  # blank lines before the value
                pos = line.end()
                continue
            if indent <= key_indent or (tail.group("block") is None and _YAML_NOT_SCALAR_RE.match(value)):
                return
            first_indent = indent
        elif indent < first_indent or not value:
            return
        v_start, quoted = line.start("v"), False
        q = _YAML_QUOTED_RE.match(value)
        if q is not None:  # a quoted scalar: its content
            v_start, value, quoted = v_start + q.start("v"), q.group("v"), True
        else:  # a bare one ends at the quote that closes the JSON string holding the file
            value = value.split(b'"', 1)[0].rstrip(b" \t")
        if value and not is_non_secret_value(value, quoted, kw):
            out.append(Span(v_start, v_start + len(value), kind, PRIORITY_ASSIGNMENT))
        if not line.group("end"):
            return
        pos = line.end()


def _find_pgpass_lines(data: bytes, mentions: list[tuple[int, int]], out: list[Span]) -> None:
    """`.pgpass` lines within reach of a mention of the file: each `:port:` there, matched from
    its line's start (no field holds a line end, `"` or `\\`: the last of them before it)."""
    done = 0
    for start, end in mentions:
        lo, hi = max(done, start - _PGPASS_REACH), min(len(data), end + _PGPASS_REACH)
        for port in _PG_PORT_RE.finditer(data, lo, hi):
            at = port.start()
            floor = max(0, at - 512)
            line = max(data.rfind(b"\n", floor, at), data.rfind(b'"', floor, at), data.rfind(b"\\n", floor, at))
            m = _PGPASS_RE.match(data, max(line, 0))
            if m is not None and m.start("port") == at + 1 and _pgpass_line(m):
                out.append(Span(*m.span("v"), "password", PRIORITY_ASSIGNMENT))
        done = max(done, hi)


def _pgpass_line(m: re.Match[bytes]) -> bool:
    """A `.pgpass` line, not a timestamp or an address: a host (`*`, a name or a dotted address),
    a port, database and user names (`*` or a word) and a password that is not a placeholder."""
    host, port, db, user, value = m.group("host", "port", "db", "user", "v")
    if host != b"*" and not (_HAS_LETTER_RE.search(host) or host.count(b".") == 3):
        return False
    if port != b"*" and not 0 < int(port) < 65536:
        return False
    if not all(field == b"*" or _HAS_LETTER_RE.search(field) for field in (db, user)):
        return False
    return len(value) >= 4 and not is_non_secret_value(value, True, b"password")


def _add_element(out: list[Span], m: re.Match[bytes]) -> None:
    """An XML element named for a secret: its whole text (one token, a passphrase, a secret in braces)."""
    named = strong_name_kind(m.group("tag").rsplit(b":", 1)[-1])
    text = m.group("v")
    if named is None or text != text.strip() or _BRACED_REFERENCE_RE.fullmatch(text):
        return
    kind, kw = named
    inner = text[1:-1].strip() if text[:1] == b"{" and text[-1:] == b"}" else text  # Jenkins' `{AQAAAB…}`
    if any(c in b" \t" for c in inner):
        # words apart: a passphrase under a password's name, else a value with a token among its words
        secret = passphrase(inner) if kind == "password" else any(
            not is_non_secret_value(w, True, kw) and not w.isalpha() for w in inner.split())
    else:
        secret = not (is_non_secret_password(inner) if kind == "password" else is_non_secret_value(inner, True, kw))
    if secret:
        out.append(Span(*m.span("v"), kind, PRIORITY_ASSIGNMENT))


def _add(out: list[Span], m: re.Match[bytes], name: bytes, salts: bool = False) -> None:
    """The value of a field whose name says it holds a secret (`db.password`, `clientSecret`,
    WordPress' `NONCE_SALT`)."""
    named = strong_name_kind(name)
    if named is None and salts and name.upper().endswith(b"_SALT"):
        named = ("generic-secret", b"salt")
    if named is None:
        return
    kind, kw = named
    value = m.group("v")
    # a password's field in these formats holds data, never code: a word is the password (`whiteduke`)
    if not (is_non_secret_password(value) if kind == "password" else is_non_secret_value(value, True, kw)):
        out.append(Span(*m.span("v"), kind, PRIORITY_ASSIGNMENT))


DETECTOR = Detector(
    "config-fields",
    TRIGGERS,
    find_config_spans,
    examples=samples(
        "<connection><user>app</user><password><alnum:14></password></connection>",
        "define('DB_PASSWORD', '<mixed:14>');",
        "Server=tcp:db.example.net;Database=app;User ID=svc;Password=<mixed:12>;",
        "$ cat ~/.pgpass\ndb.internal:5432:appdb:appuser:<mixed:12>\n",
        "env:\n- name: DB_PASSWORD\n  value: <mixed:14>\n- name: LOG_LEVEL\n  value: debug\n",
        "> GET / HTTP/1.1\n> Host: api\n> Cookie: theme=dark; sid=<alnum:16>\n",
        "db:\n  password: >-\n    <alnum:20>\nport: 5432\n",
        "<server><username>deploy</username><password>whiteduke</password></server>",  # a word: data, a password
        "<server><password><lower:7> <lower:6> <lower:8> <lower:6></password></server>",  # a passphrase
        "<scope>GLOBAL</scope><secret>{<b64:44>}</secret>",  # Jenkins' credentials.xml
        "     4\u2192db:\n     5\u2192  password: |\n     6\u2192    <alnum:18>\n",  # a block as Read shows it
        "+db:\n+  password: |\n+    <alnum:18>\n+  port: 5432\n",  # a block on a diff's added lines
    ),
    near_misses=(
        "<password>${DB_PASSWORD}</password>",
        "define('DB_NAME', 'wordpress'); define('DB_PASSWORD', 'changeme');",
        "Server=db;Database=app;Integrated Security=true;",
        "Please log in with your login name and password to continue.",
        "- name: DB_PASSWORD\n  valueFrom:\n    secretKeyRef:\n      name: db\n      key: password\n",
        "Cookie: theme=dark; lang=en-US\n",
        "password:\n  ${DB_PASSWORD}\n",
        "<password>required</password> <password>PASSWORD</password>",  # placeholders
        "<password>{password}</password> <secret>{{ db.secret }}</secret>",  # a template's references
        "<password>Enter your password</password> <token>The token of the session</token>",  # a form's labels
        "+db:\n+  password:\n+    host: db\n+    port: 5432\n",  # a mapping below the name, in a diff
    ),
)
