"""Password hashes, by the string formats that store them rather than by a list of algorithms.

A dictionary attack recovers a weak password from its hash, so a stored hash (an `/etc/shadow`
line, an htpasswd file, a users table dumped by a tool, a framework's fixture) is as good as the
password to whoever reads the capture. Hashes are written in three formats, whatever the algorithm:

* the modular crypt format and the PHC string format, `$id$[params$]salt$hash`: crypt(3)'s
  MD5, SHA-256 and SHA-512, bcrypt, yescrypt, scrypt, Argon2, passlib's PBKDF2, Cisco's types
  8 and 9, and the next algorithm too, since only the shape is read;
* the same with the method's name before the first `$` instead of an id after it: Django
  (`pbkdf2_sha256$<iterations>$<salt>$<hash>`, `argon2$argon2id$…`) and Werkzeug
  (`pbkdf2:sha256:600000$<salt>$<hex>`, `scrypt:32768:8:1$…`);
* LDAP's scheme in braces (`{SSHA}<base64>`, `{PBKDF2-SHA256}…`).

The hash, the last field, must look drawn at random (a crypt alphabet's letters and digits, no
programmer's name): `$HOME$PATH`, `$1$2` in a regex's replacement and shell variables side by
side have no such field.
"""

from __future__ import annotations

import re

from ctxtap.redaction.detector import Detector, TriggerHits, samples
from ctxtap.redaction.detectors import after_escape, escape_before
from ctxtap.redaction.engine import Trigger
from ctxtap.redaction.false_positives import looks_random
from ctxtap.redaction.spans import PRIORITY_FORMAT, Span

KIND = "password-hash"
# parameters and salt, each after its `$`; a `/` may be escaped as PHP's JSON writes it (`\/`)
_FIELDS = rb"(?:\$(?:[A-Za-z0-9=,.+/\-]|\\/){0,128}){1,4}\$"
_HASH = rb"(?P<hash>(?:[./0-9A-Za-z+]|\\/){16,1024})={0,2}(?![./0-9A-Za-z+=$]|\\/)"
# `$id$…`: the modular crypt and PHC formats (an id of lower case and digits, `pbkdf2-sha256`)
_MCF_RE = re.compile(rb"\$[a-z0-9][a-z0-9\-]{0,31}" + _FIELDS + _HASH)
# a method's name before the first `$` (Django, Werkzeug): it names a password-hashing algorithm
_ALGORITHMS = rb"(?:pbkdf2|scrypt|argon2|bcrypt|crypt|sha1|sha256|sha512|md5|blake2)"
_METHOD_RE = re.compile(rb"[a-z0-9_\-]*" + _ALGORITHMS + rb"[a-z0-9_:\-]{0,40}" + _FIELDS + _HASH)
_METHOD_CHARS = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789_:-")
_WORD_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_$\\")
# LDAP's `{SCHEME}value` (RFC 2307 and OpenLDAP's modules)
_LDAP_RE = re.compile(rb"\{(?:S?SHA(?:256|384|512)?|S?MD5|PBKDF2(?:-SHA(?:1|256|512))?|ARGON2)\}"
                      rb"[A-Za-z0-9+/.$=\-]{20,}(?![A-Za-z0-9+/=])")
_METHOD_REACH = 48  # how far before its `$` a method's name may start

TRIGGERS: tuple[Trigger, ...] = (
    # ends at the `$` after an id: the field before it is found backwards
    Trigger(rb"\$[a-z0-9][a-z0-9\-]{0,31}\$", literals=(b"$",), window=40, opens=False),
    Trigger(_ALGORITHMS + rb"[a-z0-9_:\-]{0,40}\$", literals=(b"pbkdf2", b"scrypt", b"argon2", b"bcrypt", b"crypt",
            b"sha1", b"sha256", b"sha512", b"md5", b"blake2"), window=48, opens=False),
    Trigger(rb"\{(?:S?SHA|S?MD5|PBKDF2|ARGON2)", literals=(b"SHA", b"MD5", b"{PBKDF2", b"{ARGON2"), window=16,
            som=True),
)


def _hash_at(m: re.Match[bytes] | None) -> Span | None:
    if m is None or not looks_random(m.group("hash").replace(b"\\/", b"/")):
        return None
    return Span(m.start(), m.end(), KIND, PRIORITY_FORMAT)


def _starts_a_word(data: bytes, start: int) -> bool:
    return start == 0 or data[start - 1] not in _WORD_BYTES or escape_before(data, start)


def find_password_hash_spans(data: bytes, hits: TriggerHits, out: list[Span]) -> None:
    """Append a span per password hash around the triggers' hits (ends of `$id$`, of a method's `…$`;
    starts of `{SCHEME}`)."""
    mcf, method, ldap = hits
    done = -1
    for _, end in mcf:
        start = data.rfind(b"$", 0, end - 1)
        if start < done or not _starts_a_word(data, start):
            continue  # inside a hash already found, or after a method's name (below) or a variable's
        span = _hash_at(_MCF_RE.match(data, start))
        if span is not None:
            out.append(span)
            done = span.end
    for _, end in method:
        start = end - 1
        floor = max(0, end - 1 - _METHOD_REACH)
        while start > floor and data[start - 1] in _METHOD_CHARS:
            start -= 1
        start = after_escape(data, start, end)  # `\\npbkdf2…`: the escape's letter is no part of the name
        if start < done or not _starts_a_word(data, start):
            continue
        # the method may follow a field's name and its `:` (`password_hash:pbkdf2:sha256:…`)
        for at in (start, *(k + 1 for k in range(start, end) if data[k] == 0x3A)):
            span = _hash_at(_METHOD_RE.match(data, at)) if data[at : at + 1].isalpha() else None
            if span is not None:
                out.append(span)
                done = span.end
                break
    for start, _ in ldap:
        m = _LDAP_RE.match(data, start)
        if m is not None:
            out.append(Span(m.start(), m.end(), KIND, PRIORITY_FORMAT))


DETECTOR = Detector(
    "password-hashes",
    TRIGGERS,
    find_password_hash_spans,
    examples=samples(
        "deploy:$2y$10$<crypt:53>\nbob:x",  # bcrypt in an htpasswd file
        "root:$6$rounds=5000$<crypt:16>$<crypt:86>:19000:0:99999:7:::",  # SHA-512 crypt in /etc/shadow
        '{"password": "$argon2id$v=19$m=65536,t=3,p=4$<b64:22>$<b64:43>"}',  # Argon2 (PHC)
        "hash = '$scrypt$ln=16,r=8,p=1$<b64:22>$<b64:43>'",  # passlib's scrypt
        "enable secret 9 $9$<crypt:14>$<crypt:43>",  # Cisco type 9
        "INSERT INTO auth_user VALUES (1, 'pbkdf2_sha256$600000$<alnum:22>$<b64:43>=');",  # Django
        "password_hash: pbkdf2:sha256:600000$<alnum:16>$<hex:64>",  # Werkzeug
        "userPassword: {SSHA}<b64:32>",  # LDAP
    ),
    near_misses=(
        "bcrypt hashes start with $2b$ and a cost",
        "sed -e 's/$1$2/x/' file",
        'echo "$HOME$PATH$LD_LIBRARY_PATH"',
        "re.sub(pattern, r'$1$2$3', text)",
        "PASSWORD_HASHERS = ['django.contrib.auth.hashers.PBKDF2PasswordHasher']",
        "$a$b$getElementsByTagNameNS",  # a name after the last `$`, no hash
        "algorithm: pbkdf2_sha256$iterations$salt$hash",  # the format described, not a hash
    ),
)
