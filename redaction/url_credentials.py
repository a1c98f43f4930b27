"""`scheme://user:password@host` in text, read as a credential rather than parsed as a URL.

A URL parser ends the authority at the first `#`, `/` or `?`, so a password holding one
(`postgres://app:Vk7#q/x?@db.internal:5432/app`) is cut there and its tail taken for a
fragment or path: that is how such a password reached disk in clear. A credential in text
is not a well-formed URL. Here the password runs from the colon after the user to the last
`@` on the same run that is followed by a host-like name (an optional port, then the end of
the authority); whatever lies between is the password: `#`, `/`, `?`, `:`, `@`,
percent-escapes, and single spaces where the closing host is plainly a URL's (a port or a
path follows it). A host may be a pseudonym (`@<host-2>`): publish's final scan reads text whose
host names were replaced.

Not credentials: `https://unpkg.com/@scope/pkg@1.2.3` (the user part holds no colon),
`https://host:8443/a?mail=a@b.example` (the "password" is a port), `git@github.com:org/repo`
and e-mail addresses (no `://`), templates (`:${DB_PASSWORD}@`, `:<password>@`).
"""

from __future__ import annotations

import re

from ctxtap.redaction.placeholder import PLACEHOLDER_RE

MAX_USER = 256
MAX_PASSWORD = 256
# Hyperscan and `re` syntax: a scheme's `://`, a user, a colon and, within reach on the same
# line, an `@`. Reported where it ends; the start is the last `://` before (a user holds no `/`).
TRIGGER = rb"://[^\s/?#@:\"'\\<>()\[\]{}]{0,256}:[^\r\n\t\f\v\"']{1,256}@"
REACH = 3 + MAX_USER + 1 + MAX_PASSWORD + 1
# `re` reports one match per start: the lazy form ends at the first `@`, so no URL's `://` is
# hidden behind a later one on the same line.
PY_TRIGGER = TRIGGER[:-len(b"{1,256}@")] + b"{1,256}?@"

_PSEUDONYM = rb"<[a-z]{1,12}(?:-[a-z]{1,12})?-[0-9a-f]{1,6}>"
_USER_RE = re.compile(rb"://(?P<user>" + _PSEUDONYM + rb"|[^\s/?#@:\"'\\<>()\[\]{}]{0,%d}):" % MAX_USER)
_PORT_RE = re.compile(rb"[0-9]{1,5}(?:[/?#\s\"'\\,;)\]>]|$)")
# A run of backslashes before one of these is a JSON line end or closing quote: the text ends.
_ENDS_AFTER_BACKSLASH = frozenset(b"nrt\"'")
_LABEL = rb"[A-Za-z0-9_][A-Za-z0-9_-]{0,62}"  # compose service names hold `_`
_HOST_RE = re.compile(
    rb"(?P<host>\[[0-9A-Fa-f:.]{2,45}\]|" + _PSEUDONYM + rb"|" + _LABEL + rb"(?:\." + _LABEL
    + rb")*)(?P<port>:[0-9]{1,5})?"
    rb"(?P<next>[/?#\s\"'\\,;)\]>|`]|$)"
)
_TEMPLATE_RE = re.compile(
    rb"\$\{[^{}\s]{1,80}\}|\$[A-Z_][A-Z0-9_]{0,80}|<[A-Za-z][^<>\s]{0,60}>|\{\{?\s*[A-Za-z_][^{}\s]{0,60}\s*\}?\}"
    rb"|\[[A-Za-z_][A-Za-z0-9_ -]{0,60}\]|%\([A-Za-z0-9_]{1,60}\)s|[*xX]+|\.{3,}|\xe2\x80\xa6"
)
# Only templates are kept: a word like `password` or `changeme` may be the real (weak)
# password, so a URL's userinfo fails closed on it.
_TEMPLATE_WORDS = frozenset(b"your-password yourpassword your_password".split())


def is_template_password(password: bytes) -> bool:
    """`${DB_PASS}`, `<pw>`, `{{ password }}`, `****`, `your-password`: a template or mask in
    docs, or ctxtap's own placeholder; a password that merely starts with `$` or `<` is not."""
    if password.lower() in _TEMPLATE_WORDS or PLACEHOLDER_RE.fullmatch(password):
        return True
    return _TEMPLATE_RE.fullmatch(password) is not None


def _password_region_end(data: bytes, start: int) -> int:
    """Where the run that may hold the password ends: whitespace other than a single space,
    a quote, a JSON line end or closing quote (`\\n`, `\\"` at any depth), or the reach."""
    limit = min(len(data), start + MAX_PASSWORD + 1 + 300)
    i = start
    while i < limit:
        b = data[i]
        if b in b"\r\n\t\f\v\"'":
            return i
        if b == 0x20 and (i + 1 >= len(data) or data[i + 1] in b" \r\n\t"):
            return i
        if b == 0x5C:  # a backslash: skip the run, see what it escapes
            j = i
            while j < limit and data[j] == 0x5C:
                j += 1
            if j < len(data) and data[j] in _ENDS_AFTER_BACKSLASH:
                return i
            i = j
            continue
        i += 1
    return limit


def _host_ok(host: bytes) -> bool:
    """A name or address, not a version number (`pkg@1.2.3`)."""
    if host.startswith(b"["):
        return True
    labels = host.split(b".")
    if all(label.isdigit() for label in labels):
        return len(labels) == 4
    return True


def password_at(data: bytes, start: int) -> tuple[int, int] | None:
    """The (start, end) of the password of a `://user:password@host` that begins at `start`
    (the `://`), or None: no colon after the user, a port rather than a password, no `@`
    closing it with a host, or a template."""
    m = _USER_RE.match(data, start)
    if m is None:
        return None
    pw_start = m.end()
    if _PORT_RE.match(data, pw_start):
        return None  # `https://host:8443/...`: a port
    if data.startswith(b"//", pw_start):
        return None  # `x://u:pw@h`: the colon begins another URL
    region_end = _password_region_end(data, pw_start)
    nested = data.find(b"://", pw_start, region_end)
    if nested >= 0:
        region_end = nested  # a password holds no `://`: the next URL starts there
    best: int | None = None
    at = data.find(b"@", pw_start + 1, region_end)
    while at >= 0 and at - pw_start <= MAX_PASSWORD:
        h = _HOST_RE.match(data, at + 1)
        if h is not None and _host_ok(h.group("host")):
            spaced = b" " in data[pw_start:at]
            # With a space inside, only a URL's plain shape closes it: a port or a path after the host,
            # a user, and no space right after the colon (`see https://host: mail ops@x.example`).
            if not spaced or (m.group("user") and data[pw_start] != 0x20 and (h.group("port") or h.group("next") == b"/")):
                best = at
        at = data.find(b"@", at + 1, region_end)
    if best is None or is_template_password(data[pw_start:best]):
        return None
    return pw_start, best


def find_url_passwords(data: bytes, ends: list[int] | None = None) -> list[tuple[int, int]]:
    """Every URL password in `data`: at the last `://` before each of `ends` (a trigger's
    hits), or at every `://` when `ends` is None."""
    if ends is None:
        starts: set[int] = set()
        at = data.find(b"://")
        while at >= 0:
            starts.add(at)
            at = data.find(b"://", at + 1)
    else:
        starts = {data.rfind(b"://", max(0, end - REACH), end) for end in ends} - {-1}
    out = []
    for start in sorted(starts):
        span = password_at(data, start)
        if span is not None:
            out.append(span)
    return out


# --- an authority without a scheme: `[domain/]user:password@host` ----------------------------------
# Remote-execution tools take their target so (Impacket's `corp/admin:pw@10.0.0.9`), and proxies their
# address (`pip --proxy user:pw@proxy:8080`, `HTTPS_PROXY=user:pw@proxy.corp:3128`, `curl -x ...`).
# Reported from the byte before the `@`; the word is read back from there.
# (an `@` between a word's character and a host's: a colon-led run before it in the pattern cost the
# engine a seventh more, every `a:b` starting one; e-mail addresses are far fewer, and read back cheaply)
AUTHORITY_TRIGGER = rb"[^\s\"'`@]@[A-Za-z0-9\[]"
QUOTED_AUTHORITY_TRIGGER = rb"[\"']@[A-Za-z0-9\[]"  # `'corp/admin:P@ss'@dc01` (one class with the above cost more)
AUTHORITY_REACH = 64 + 1 + 64 + 1 + 128 + 2
_AUTHORITY_RE = re.compile(  # (after a JSON string's `\\n` or `\\t` when the word begins with one)
    rb"(?:\\[ntr])?(?P<domain>[A-Za-z0-9._\-]{1,64}[/\\](?:\\)?)?(?P<user>[A-Za-z0-9._\-$]{1,64}):(?P<pw>[^\s\"'`]{4,128})\Z"
)
# `'corp.local/admin:P@ss'@dc01` (Impacket quotes the user part when the password holds `@` or a space)
_QUOTED_AUTHORITY_RE = re.compile(
    rb"(?P<domain>[A-Za-z0-9._\-]{1,64}[/\\])?(?P<user>[A-Za-z0-9._\-$]{1,64}):(?P<pw>[^\r\n]{4,128})\Z"
)
_WORD_BEFORE_QUOTE = frozenset(b" \t\r\n=([{,;|>")
# `mailto:ops@example.com`, `sip:alice@pbx`, `pkg:npm/left-pad@1.3.0`: URI schemes written without `//`
_NO_SLASH_SCHEMES = frozenset(b"mailto sip sips tel xmpp im pres acct pkg urn news nntp geo cid mid".split())
_WORD_START_TO_SPACE = bytes(0x20 if c in b" \t\r\n\"'`=(,;[{<>|" else c for c in range(256))
_EMAIL_LOCAL_RE = re.compile(rb"[A-Za-z0-9._+\-]+")  # what an e-mail's local part is made of
_IPV4_RE = re.compile(rb"[0-9]{1,3}(?:\.[0-9]{1,3}){3}")


def _quoted_authority_password(data: bytes, at: int, host: bytes) -> tuple[int, int] | None:
    """The password of `'[domain/]user:password'@host` (the quote before `at`): what the quotes hold must be
    a user and a password, and the opening quote must begin a word. MySQL's `'root'@localhost` holds no
    password; a host that is a version (`'a:b'@1.2`) is none."""
    close = at - 1
    quote = data[close : close + 1]
    if quote == b'"' and close and data[close - 1] == 0x5C:
        close, quote = close - 1, b'\\"'  # inside a JSON string: `\"corp/admin:pw\"@dc01`
    opening = data.rfind(quote, max(0, close - AUTHORITY_REACH), close)
    if opening < 0 or (opening > 0 and data[opening - 1] not in _WORD_BEFORE_QUOTE):
        return None
    m = _QUOTED_AUTHORITY_RE.match(data, opening + len(quote), close)
    if m is None or quote[-1:] in m.group("pw") or (host[:1].isdigit() and not _is_ipv4(host)):
        return None
    if not _could_be_password(m.group("pw")):
        return None
    return m.start("pw"), m.end("pw")


def _could_be_password(password: bytes) -> bool:
    """Not a URL (`reverse:https://a@b`), a port or a time (`12:00:00@host`), or a template."""
    return (b"//" not in password.replace(b"\\/", b"/") and bool(password.strip(b"0123456789:."))
            and not is_template_password(password))


def authority_password_at(data: bytes, at: int) -> tuple[int, int] | None:
    """The (start, end) of the password of a scheme-less `[domain/]user:password@host` whose `@` is at `at`.

    The word must begin at a space, a quote, `=` or a bracket, hold no `://` (a URL's, read by
    `password_at`) and no URI scheme written without `//` (`mailto:a@b`); the host must be an IP
    address, or be followed by a port, or, for a domain name, the password must be no e-mail's local
    part (`author:alice2@example.com` is a label and an address) unless a domain names the user.
    The password must not be a number, and not a template. Go's database DSN names a network and an
    address instead of a host (`user:password@tcp(db:3306)/app`, `@unix(/run/mysqld.sock)/app`)."""
    dsn = _DSN_NETWORK_RE.match(data, at + 1) is not None  # no host to judge: the network names the DSN
    h = None if dsn else _HOST_RE.match(data, at + 1)
    if not dsn and (h is None or not _host_ok(h.group("host"))):
        return None
    if h is not None and at and data[at - 1] in b"\"'":
        return _quoted_authority_password(data, at, h.group("host"))
    floor = max(0, at - AUTHORITY_REACH)
    if data.find(b":", floor, at) < 0:
        return None  # an e-mail address: no colon before its `@` (the common case)
    start = floor + 1 + data[floor:at].translate(_WORD_START_TO_SPACE).rfind(b" ")
    if start == floor and start > 0:
        return None  # longer than any user and password
    m = _AUTHORITY_RE.match(data, start, at)
    if m is None or m.group("user").lower() in _NO_SLASH_SCHEMES and not m.group("domain"):
        return None
    pw_start, password = m.start("pw"), m.group("pw")
    if not _could_be_password(password):
        return None
    if h is None:
        return pw_start, at
    host = h.group("host")
    if host[:1].isdigit() and not _is_ipv4(host):
        return None  # `pkg:pypi/trove-classifiers@2026.9.21.13`: a version
    if not (host[:1].isdigit() or host.startswith(b"[") or h.group("port") or m.group("domain")):
        if b"." not in host or _EMAIL_LOCAL_RE.fullmatch(password):
            return None  # `label:someone@example.com`; `image:tag@sha256`
    return pw_start, at


# Go's DSN after the `@`: a network, its address in parentheses, then the database's `/`
_DSN_NETWORK_RE = re.compile(rb"(?:tcp[46]?|udp[46]?|unix|unixpacket|memory|pipe)\([^()\s\"'`]{0,256}\)/")

def _is_ipv4(host: bytes) -> bool:
    return _IPV4_RE.fullmatch(host) is not None and all(int(octet) <= 255 for octet in host.split(b"."))
