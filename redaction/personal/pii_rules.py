"""Where personal data sits in a text: e-mail addresses, home and temp paths, identifiers, addresses.

Like the credential detectors, rules only report spans; `redaction.personal.pii`
decides what replaces them, and `redaction.publish_scan` reuses the same rules
to prove an output holds none. Spans are `redaction.spans.Span`s whose kind is
`"<kind>/<rule>"`, settled with the same `merge_spans` (overlaps are fused, so
no fragment of either finding survives; the more specific rule names it):

* priority 0 (context): e-mail, home/temp paths, remotes, prompts, `*_id` fields;
* priority 1 (shape): UUIDs, provider ids (`msg_...`), IPs, MACs, phones, host shapes;
* priority 2 (learned): bare user, host and full names learned by `redaction.personal.identity`.

`escaped=True` reads raw JSON bodies: a `\\n` before a value is a boundary and
never part of the span (replacing from the `n` would break the escape).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable

from ctxtap.redaction.personal.identity import (
    FORGE_HOSTS,
    NAME,
    SLASH,
    Identity,
    is_generic_user,
    iter_host_shapes,
    iter_prompts,
)
from ctxtap.redaction.placeholder import PLACEHOLDER_RE
from ctxtap.redaction.spans import Span, merge_spans
from ctxtap.redaction.url_credentials import find_url_passwords

P_CONTEXT, P_SHAPE, P_LEARNED = 0, 1, 2

# Placeholders this module's caller writes: numbered at publish time, keyed at capture time.
PII_KINDS: tuple[str, ...] = (
    "email", "user", "name", "account", "host", "path-home", "path-tmp", "session", "device",
    "installation", "request", "call", "uuid", "ip", "phone", "unscannable",
)
_KIND_ALT = "|".join(sorted(PII_KINDS, key=len, reverse=True))
NUMBERED_RE = re.compile(rf"<(?:{_KIND_ALT})-\d{{1,5}}>")
KEYED_RE = re.compile(rf"<(?P<kind>{_KIND_ALT})-(?P<hash>[0-9a-f]{{6}})>")
PII_PLACEHOLDER_RE = re.compile(rf"<(?:{_KIND_ALT})-(?:\d{{1,5}}|[0-9a-f]{{6}})>")

_NOT_PERSONAL_LOCALS = frozenset({"git", "hg", "noreply", "no-reply", "donotreply", "do-not-reply"})
_FILE_TLDS = frozenset(
    "png jpg jpeg gif svg webp ico bmp tif tiff js mjs cjs ts tsx jsx py rb go rs java kt css scss less json"
    " yaml yml toml md txt html htm xml map lock log csv pdf zip gz tgz whl so dll exe bin wasm".split()
)
_EMAIL_DOMAIN_RE = re.compile(
    r"(?:@|%40)(?P<dom>(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+(?P<tld>[A-Za-z]{2,24}))(?![A-Za-z0-9-])"
)
_LOCAL_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._%+-")

_HOME_POSIX_RE = re.compile(rf"/(?:home|Users)/(?P<n>{NAME})")
# Regexes below start at a literal (`\\`, `/`, `@`, `://`, `_`) and the part before it is checked
# by hand: a pattern that starts with a name's character class is tried at every letter of a body.
_HOME_WINDOWS_RE = re.compile(rf"(?i:\\{{1,2}}|/)(?i:users|documents and settings){SLASH}(?P<n>{NAME})")
_DRIVE_RE = re.compile(r"[A-Za-z]:")
_TILDE_NAME_RE = re.compile(r"(?P<n>[A-Za-z_][A-Za-z0-9._-]{0,31})(?=/)")
_TMP_RE = re.compile(
    r"/(?:tmp|var/tmp|dev/shm)/(?P<c>[A-Za-z0-9_@+-][A-Za-z0-9._@+-]{0,127})"
    r"|/var/folders/[A-Za-z0-9_+-]{2}/[A-Za-z0-9_+-]{4,64}/[TCX](?![A-Za-z0-9])"
)
_PATH_BEFORE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
_SCP_REMOTE_RE = re.compile(
    r"@(?P<host>[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+):(?P<owner>" + NAME + r")/(?P<repo>[A-Za-z0-9_.-]+)"
)
_SCHEME_RE = re.compile(r"(?:ssh|https?|git)://")
_URL_TAIL_RE = re.compile(
    r"(?:(?P<u>[A-Za-z0-9_.%-]+)@)?(?P<host>[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+)(?::\d+)?/(?P<owner>"
    + NAME + r")/(?P<repo>[A-Za-z0-9_.-]+)"
)
_FORGE_TAIL_RE = re.compile(r"/(?P<owner>" + NAME + r")/(?P<repo>[A-Za-z0-9_.-]+)")
_HOST_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-")
_NOT_FORGE_USERS = frozenset({"git", "oauth2", "x-access-token", "x-oauth-basic", "token", "deploy", "gitlab-ci-token"})

# `"device_id": "..."`, `session-id: ...`, `cc_prompt_id=...;`, `\"installation_id\":\"...\"`.
_ID_WORDS = (
    r"session|device|install(?:ation)?|machine|request|user|account|anonymous|client|thread|conversation"
    r"|trace|window|prompt|turn|org(?:anization)?|tenant|workspace|instance|run|span|correlation|project"
)
# Found from the separator side (`id":`, `uuid=`), then the name before it is checked: a regex
# that starts with the name's free-form part would be tried at every letter of a body.
_ID_FIELD_RE = re.compile(
    r"[dDyY](?![A-Za-z0-9])\\*[\"']?[ \t]*[:=][ \t]*\\*[\"']?(?P<v>[A-Za-z0-9][A-Za-z0-9_:.+/=-]{7,127})"
)
_ID_NAME_BEFORE_RE = re.compile(
    r"(?i)(?:(?:" + _ID_WORDS + r")[_.-]?(?:id|uuid)|(?:prompt[_.-]?)?cache[_.-]?key)$"
)
# From the first `-` of `8-4-4-4-12`; the eight hex digits before it are checked by hand.
_UUID_TAIL_RE = re.compile(r"-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}(?![0-9A-Fa-f-])")
_HEX8_RE = re.compile(r"[0-9a-fA-F]{8}")
_UUID_ANY_RE = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_HEX_CHARS = frozenset("0123456789abcdefABCDEF")
_ID_PREFIXES = frozenset(
    {"msg", "req", "resp", "chatcmpl", "toolu", "srvtoolu", "call", "fc", "ctc", "rs", "sess", "conv", "batch",
     "org", "proj"}
)
_PREFIXED_TAIL_RE = re.compile(r"[_-](?P<v>[A-Za-z0-9]{16,64})(?![A-Za-z0-9_-])")
_LETTERS = frozenset("abcdefghijklmnopqrstuvwxyz")
_CALL_PREFIXES = frozenset({"toolu", "srvtoolu", "call", "fc", "ctc"})
_IPV4_RE = re.compile(r"\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}(?![\w]|\.\w)")
_IPV6_SEED_RE = re.compile(r":[0-9A-Fa-f]{0,4}:")
_IPV6_CHARS = frozenset("0123456789abcdefABCDEF:")
_MAC_RE = re.compile(r"([:-])[0-9A-Fa-f]{2}\1[0-9A-Fa-f]{2}\1[0-9A-Fa-f]{2}\1[0-9A-Fa-f]{2}\1[0-9A-Fa-f]{2}(?![\w:-])")
_PHONE_RE = re.compile(r"\+[1-9]\d{0,2}(?:[ .-]?\(?\d{1,4}\)?){2,6}(?![\w])")
_VERSION_BEFORE_RE = re.compile(r"(?i)\b(?:version|ver|release|v)[ :=]*$")
# Four small numbers (`8.2.4.44`, `7.1.4.34`) are versions and section numbers unless something says address.
_IP_CONTEXT_RE = re.compile(r"(?i)(?:\bip|inet6?|addr(?:ess)?|host|from|\bto|ssh|ping|peer|client|server|://|@)\W{0,4}$")


def id_kind(word: str) -> str:
    """The placeholder kind for an identifier named `word` (a key or header name)."""
    w = word.lower()
    if "install" in w:
        return "installation"
    if "device" in w or "machine" in w or "instance" in w:
        return "device"
    if any(k in w for k in ("request", "trace", "span", "correlation")):
        return "request"
    if any(k in w for k in ("user", "account", "anonymous", "org", "tenant", "client", "workspace", "project")):
        return "account"
    return "session"


def _add(out: list[Span], start: int, end: int, kind: str, rule: str, priority: int) -> None:
    if end > start:
        out.append(Span(start, end, f"{kind}/{rule}", priority))


def _emails(text: str, out: list[Span], escaped: bool) -> None:
    if "@" not in text and "%40" not in text:
        return
    for m in _EMAIL_DOMAIN_RE.finditer(text):
        if m.group("tld").lower() in _FILE_TLDS:
            continue
        start = m.start()
        while start > 0 and text[start - 1] in _LOCAL_CHARS and m.start() - start < 64:
            start -= 1
        while start < m.start() and text[start] in ".%+-":
            start += 1
        if escaped and start > 0 and text[start - 1] == "\\" and text[start] in "nrtbf":
            start += 1  # `\tgit@github.com`: the `t` belongs to the escape
        local = text[start : m.start()]
        if not local or local.lower() in _NOT_PERSONAL_LOCALS:
            continue
        _add(out, start, m.end(), "email", "email", P_CONTEXT)


def _homes(text: str, lowered: str, identity: Identity, out: list[Span]) -> None:
    known = {u.lower() for u in identity.users}
    if "/home/" in text or "/Users/" in text:
        for m in _HOME_POSIX_RE.finditer(text):
            name = m.group("n").rstrip(".-_")
            if name.lower() in known or not is_generic_user(name):
                _add(out, m.start(), m.start("n") + len(name), "path-home", "home-posix", P_CONTEXT)
    if ":" in text and ("users" in lowered or "documents and settings" in lowered):
        for m in _HOME_WINDOWS_RE.finditer(text):
            start = m.start() - 2
            if start < 0 or not _DRIVE_RE.fullmatch(text, start, m.start()):
                continue
            if start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
                continue
            name = m.group("n").rstrip(".-_")
            if name.lower() in known or not is_generic_user(name):
                _add(out, start, m.start("n") + len(name), "path-home", "home-windows", P_CONTEXT)
    pos = text.find("~")
    while pos >= 0:
        before = text[pos - 1] if pos > 0 else " "
        m = _TILDE_NAME_RE.match(text, pos + 1)
        if m is not None and not (before.isalnum() or before in "_~/"):
            name = m.group("n").rstrip(".-_")
            if name.lower() in known or not is_generic_user(name):
                _add(out, pos, m.start("n") + len(name), "path-home", "home-tilde", P_CONTEXT)
        pos = text.find("~", pos + 1)


def _tmps(text: str, identity: Identity, out: list[Span]) -> None:
    if "/tmp/" in text or "/var/" in text or "/dev/shm/" in text:
        for m in _TMP_RE.finditer(text):
            start = m.start()
            if text.endswith("/private", 0, start):
                start -= len("/private")
            if start > 0 and text[start - 1] in _PATH_BEFORE:
                continue
            end = m.end()
            if m.group("c") is not None:
                end = m.start("c") + len(m.group("c").rstrip("."))
            _add(out, start, end, "path-tmp", "tmp-path", P_CONTEXT)
    for tmpdir in identity.tmpdirs:
        start = text.find(tmpdir)
        while start >= 0:
            end = start + len(tmpdir)
            if end >= len(text) or not (text[end].isalnum() or text[end] in "_-."):
                _add(out, start, end, "path-tmp", "tmpdir-learned", P_CONTEXT)
            start = text.find(tmpdir, end)


def _scp_user(text: str, at: int) -> str:
    start = at
    while start > 0 and text[start - 1] in _PATH_BEFORE and at - start < 64:
        start -= 1
    return text[start:at]


def _remotes(text: str, lowered: str, identity: Identity, out: list[Span]) -> None:
    if "@" in text and ":" in text:
        for m in _SCP_REMOTE_RE.finditer(text):
            user = _scp_user(text, m.start()).lower()
            if user in ("git", "hg") or m.group("host").lower() in FORGE_HOSTS:
                owner = m.group("owner").rstrip(".-_")
                _add(out, m.start("owner"), m.start("owner") + len(owner), "account", "git-remote", P_CONTEXT)
    if "/" not in text:
        return
    learned = {o.lower() for o in (*identity.remote_owners, *identity.accounts, *identity.users)}
    seen: set[int] = set()
    if "://" in text:
        for scheme in _SCHEME_RE.finditer(text):
            m = _URL_TAIL_RE.match(text, scheme.end())
            if m is not None:
                seen.add(m.start("owner"))
                _url_owner(text, m, True, learned, out)
    if len(lowered) != len(text):
        return  # offsets would not line up; forge URLs without a scheme are then left to the scan
    for forge in FORGE_HOSTS:
        pos = lowered.find(forge + "/")
        while pos >= 0:
            m = _FORGE_TAIL_RE.match(text, pos + len(forge))
            if m is not None and m.start("owner") not in seen:
                _url_owner(text, m, False, learned, out)
            pos = lowered.find(forge + "/", pos + 1)


def _url_owner(text: str, m: re.Match[str], scheme: bool, learned: set[str], out: list[Span]) -> None:
    groups = m.groupdict()
    host = (groups.get("host") or "github.com").lower()
    owner = m.group("owner").rstrip(".-_")
    forge = host in FORGE_HOSTS or host.endswith(tuple("." + f for f in FORGE_HOSTS))
    if not (forge or scheme):
        return
    repo = m.group("repo")
    is_remote = repo.endswith(".git") and text[m.end() : m.end() + 1] != "/"
    if owner.lower() in learned or (is_remote and not is_generic_user(owner)):
        _add(out, m.start("owner"), m.start("owner") + len(owner), "account", "remote-url", P_CONTEXT)
    user = groups.get("u")
    if user and forge and user.lower() not in _NOT_FORGE_USERS and "%5B" not in user:
        _add(out, m.start("u"), m.end("u"), "account", "remote-userinfo", P_CONTEXT)


def _prompts(text: str, out: list[Span]) -> None:
    if "@" not in text:
        return
    for u0, u1, h0, h1 in iter_prompts(text):
        if not is_generic_user(text[u0:u1]):
            _add(out, u0, u1, "user", "shell-prompt", P_CONTEXT)
        _add(out, h0, h1, "host", "shell-prompt", P_CONTEXT)


def _identifiers(text: str, lowered: str, hint: str | None, out: list[Span]) -> None:
    if "id" in lowered or "cache" in lowered:
        for m in _ID_FIELD_RE.finditer(text):
            key = _ID_NAME_BEFORE_RE.search(text, max(0, m.start() - 24), m.start() + 1)
            if key is None:
                continue
            value = m.group("v").rstrip(".:")
            if not any(c.isdigit() for c in value) or value.isdigit() and len(value) < 12:
                continue
            if value.lower().startswith(("redacted", "http")):
                continue
            inner = _UUID_ANY_RE.search(value)
            if inner is not None:  # `session_<uuid>`: the UUID is the identifier, the prefix is structure
                start = m.start("v") + inner.start()
                _add(out, start, start + len(inner.group()), id_kind(key.group()), "id-field", P_CONTEXT)
            else:
                _add(out, m.start("v"), m.start("v") + len(value), id_kind(key.group()), "id-field", P_CONTEXT)
    if "-" in text:
        for m in _UUID_TAIL_RE.finditer(text):
            start = m.start() - 8
            if start < 0 or not _HEX8_RE.fullmatch(text, start, m.start()):
                continue
            if start > 0 and (text[start - 1] in _HEX_CHARS or text[start - 1] == "-"):
                continue
            if text[start : m.end()].strip("0-") == "":
                continue  # the nil UUID
            _add(out, start, m.end(), hint or "uuid", "uuid", P_SHAPE)
    if "_" in text or "-" in text:
        for m in _PREFIXED_TAIL_RE.finditer(text):
            value = m.group("v")
            start = m.start()
            while start > 0 and text[start - 1] in _LETTERS and m.start() - start < 9:
                start -= 1
            prefix = text[start : m.start()]
            if prefix not in _ID_PREFIXES or (start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_-")):
                continue
            if sum(c.isdigit() for c in value) < 2 or value.isdigit():
                continue
            kind = "call" if prefix in _CALL_PREFIXES else "session" if prefix in ("sess", "conv") else (
                "account" if prefix in ("org", "proj") else "request"
            )
            _add(out, start, m.end(), kind, "provider-id", P_SHAPE)


def _addresses(text: str, out: list[Span]) -> None:
    if "." in text:
        for m in _IPV4_RE.finditer(text):
            ip = m.group()
            if m.start() > 0 and (text[m.start() - 1].isalnum() or text[m.start() - 1] in "_."):
                continue
            if not ipv4_exempt(text, m.start(), ip):
                _add(out, m.start(), m.end(), "ip", "ipv4", P_SHAPE)
    if "::" in text or text.count(":") >= 5:
        _ipv6(text, out)
    if ":" in text or "-" in text:
        for m in _MAC_RE.finditer(text):
            start = m.start() - 2
            if start < 0 or not all(c in _HEX_CHARS for c in text[start : m.start()]):
                continue
            if start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_:-"):
                continue
            if text[start : m.end()].lower().replace("-", ":") not in ("00:00:00:00:00:00", "ff:ff:ff:ff:ff:ff"):
                _add(out, start, m.end(), "device", "mac", P_SHAPE)
    if "+" in text:
        for m in _PHONE_RE.finditer(text):
            if m.start() > 0 and text[m.start() - 1] in "_+":
                continue
            digits = sum(c.isdigit() for c in m.group())
            if 8 <= digits <= 15 and (" " in m.group() or "-" in m.group() or digits >= 10):
                _add(out, m.start(), m.end(), "phone", "phone", P_SHAPE)


def ipv4_exempt(text: str, start: int, ip: str) -> bool:
    """Four dotted numbers that are not an address worth hiding: loopback, masks, versions, sections.

    `python 3.11.4.1`, `version 1.2.3.4` and a bare `8.2.4.44` read as versions and section
    numbers; a first number under 10 counts as an address only after `ip`, `inet`, `from`, `@`...
    """
    parts = ip.split(".")
    octets = [int(o) for o in parts]
    if max(octets) > 255 or any(len(o) > 1 and o[0] == "0" for o in parts):
        return True
    if octets[0] in (0, 127, 255):
        return True
    if _VERSION_BEFORE_RE.search(text, max(0, start - 12), start):
        return True
    return octets[0] < 10 and not _IP_CONTEXT_RE.search(text, max(0, start - 24), start)


def _ipv6(text: str, out: list[Span]) -> None:
    """IPv6 addresses, grown from each `:hex:` seed and checked by `ipaddress`."""
    done = -1
    for seed in _IPV6_SEED_RE.finditer(text):
        if seed.start() < done:
            continue
        start, end = seed.start(), seed.end()
        while start > 0 and text[start - 1] in _IPV6_CHARS and seed.start() - start < 40:
            start -= 1
        while end < len(text) and text[end] in _IPV6_CHARS and end - seed.end() < 40:
            end += 1
        done = end
        if (start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_.")) or (
            end < len(text) and (text[end].isalnum() or text[end] == "_")
        ):
            continue
        cand = text[start:end]
        groups = [g for g in cand.split(":") if g]
        if len(groups) < 2 or (len(groups) < 3 and not any(len(g) == 4 for g in groups)):
            continue
        if not any(c.isdigit() for c in cand):
            continue
        try:
            addr = ipaddress.IPv6Address(cand)
        except ValueError:
            continue
        if not (addr.is_loopback or addr.is_unspecified):
            _add(out, start, end, "ip", "ipv6", P_SHAPE)


def _host_shapes(text: str, out: list[Span]) -> None:
    if "-" in text:
        for start, end in iter_host_shapes(text):
            _add(out, start, end, "host", "host-shape", P_SHAPE)


def trie_pattern(words: Iterable[str]) -> str:
    """One regex for many literals, prefix-factored (`ali(?:ce(?:-laptop)?|ddell)`).

    Python's `re` tries every branch of a plain alternation at every position;
    a trie costs a few character tests per position however many names there are.
    Longer continuations come first, so the longest literal wins.
    """
    trie: dict[str, dict] = {}
    for word in words:
        node = trie
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def emit(node: dict[str, dict]) -> str:
        branches = [re.escape(ch) + emit(child) for ch, child in sorted(node.items()) if ch]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        if "" in node:
            return f"(?:{body})?"
        return body

    return emit(trie)


def _boundary_before(text: str, start: int) -> bool:
    """Same as `identity.BOUNDARY`: not after a letter, digit or `_`, unless that is a `\\n`-style escape."""
    if start == 0:
        return True
    before = text[start - 1]
    if not (before.isascii() and (before.isalnum() or before == "_")):
        return True
    return start >= 2 and text[start - 2] == "\\" and before in "nrtbf"


class LearnedMatcher:
    """One regex over the identity's bare values (lower-cased), rebuilt when the identity learns more."""

    def __init__(self) -> None:
        self._version = -1
        self._lower: re.Pattern[str] | None = None
        self._folded: re.Pattern[str] | None = None
        self._kinds: dict[str, str] = {}

    def spans(self, text: str, identity: Identity, out: list[Span], lowered: str | None = None) -> None:
        if identity.version != self._version:
            self._kinds = identity.literals()
            pattern = trie_pattern(self._kinds) if self._kinds else None
            # Matched against lower-cased text: with `(?i)` Python's `re` loses its fast scan for
            # the first letter and gets ~6x slower.
            self._lower = re.compile(f"(?:{pattern})(?![a-z0-9])") if pattern else None
            self._folded = re.compile(f"(?i:{pattern})(?![A-Za-z0-9])") if pattern else None
            self._version = identity.version
        if self._lower is None or self._folded is None:
            return
        lowered = text.lower() if lowered is None else lowered
        matches = self._lower.finditer(lowered) if len(lowered) == len(text) else self._folded.finditer(text)
        for m in matches:
            if not _boundary_before(text, m.start()):
                continue
            kind = self._kinds.get(m.group().lower(), "user")
            _add(out, m.start(), m.end(), kind, f"learned-{kind}", P_LEARNED)


def _escape_adjusted(text: str, spans: Iterable[Span]) -> list[Span]:
    """Move span starts past the tail of a JSON escape (`\\n`, `\\u003c`) they swallowed."""
    out = []
    for span in spans:
        start = span.start
        if start > 0 and text[start - 1] == "\\":
            if text[start] in "nrtbf":
                start += 1
            elif text[start] == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[start + 1 : start + 5] or "x"):
                start += 5
        if start < span.end:
            out.append(span._replace(start=start))
    return out


def protected_spans(text: str, *, keep_keyed: bool = True) -> list[tuple[int, int]]:
    """Existing placeholders (credential and PII), and URL passwords, that no rule may touch.

    A password's tail before its closing `@host` looks like an e-mail address (`...Lt4@db.internal`):
    pseudonymised, it would leave the rest of the password in clear and hide it from the final scan.
    """
    spans: list[tuple[int, int]] = []
    if "://" in text:
        raw = text.encode("utf-8", "surrogatepass")
        found = find_url_passwords(raw)
        if len(raw) == len(text):
            spans += found
        else:
            spans += [(len(raw[:a].decode("utf-8", "replace")), len(raw[:b].decode("utf-8", "replace")))
                      for a, b in found]
    if "REDACTED" in text:
        raw = text.encode("utf-8", "surrogatepass")
        if len(raw) == len(text):
            spans += [m.span() for m in PLACEHOLDER_RE.finditer(raw)]
        else:
            spans += [m.span() for m in re.finditer(PLACEHOLDER_RE.pattern.decode(), text)]
    if "<" in text:
        regex = PII_PLACEHOLDER_RE if keep_keyed else NUMBERED_RE
        spans += [m.span() for m in regex.finditer(text)]
    return spans


def find_pii_spans(
    text: str,
    identity: Identity,
    *,
    escaped: bool = False,
    hint: str | None = None,
    learned: LearnedMatcher | None = None,
    keep_keyed: bool = True,
) -> list[Span]:
    """Personal data in `text`, sorted and disjoint; existing placeholders are left alone.

    `hint` names the kind of bare UUIDs (a `session-id` header's value is a session).
    """
    spans: list[Span] = []
    lowered = text.lower()
    _emails(text, spans, escaped)
    _homes(text, lowered, identity, spans)
    _tmps(text, identity, spans)
    _remotes(text, lowered, identity, spans)
    _prompts(text, spans)
    _identifiers(text, lowered, hint, spans)
    _addresses(text, spans)
    _host_shapes(text, spans)
    (learned or LearnedMatcher()).spans(text, identity, spans, lowered)
    if not spans:
        return spans
    if escaped:
        spans = _escape_adjusted(text, spans)
    return merge_spans(spans, protected_spans(text, keep_keyed=keep_keyed))
