"""Password hashes never reach disk, whatever the algorithm, and private keys in the files that carry them whole neither.

The hashes are drawn here at random in the string formats that store them (the modular crypt and PHC
formats, a method's name before the first `$`, LDAP's scheme in braces) for algorithms the old list of
crypt ids did not hold: Argon2, scrypt, PBKDF2 as passlib, Django and Werkzeug write it, Cisco's type 9.
"""

from __future__ import annotations

import base64
import json
import random
import string
from pathlib import Path

from ctxtap.redaction import Redactor
from ctxtap.redaction.scanner import find_spans
from tests.secret_examples.matrix import Example, run_matrix

_CRYPT = "./" + string.ascii_uppercase + string.ascii_lowercase + string.digits
_B64 = string.ascii_letters + string.digits + "+/"
_HEX = "0123456789abcdef"


def _hashes(seed: int) -> list[str]:
    rng = random.Random(seed)

    def d(alphabet: str, n: int) -> str:
        return "".join(rng.choice(alphabet) for _ in range(n))

    return [
        f"$argon2id$v=19$m=65536,t=3,p=4${d(_B64, 22)}${d(_B64, 43)}",
        f"$scrypt$ln=16,r=8,p=1${d(_B64, 22)}${d(_B64, 43)}",
        f"$pbkdf2-sha256$29000${d(_CRYPT, 22)}${d(_CRYPT, 43)}",
        f"$9${d(_CRYPT, 14)}${d(_CRYPT, 43)}",
        f"pbkdf2_sha256$600000${d(string.ascii_letters + string.digits, 22)}${d(_B64, 43)}=",
        f"argon2$argon2id$v=19$m=102400,t=2,p=8${d(_B64, 22)}${d(_B64, 43)}",
        f"pbkdf2:sha256:600000${d(string.ascii_letters + string.digits, 16)}${d(_HEX, 64)}",
        f"scrypt:32768:8:1${d(string.ascii_letters + string.digits, 16)}${d(_HEX, 128)}",
        f"{{PBKDF2-SHA256}}10000${d(_CRYPT, 22)}${d(_CRYPT, 43)}",
    ]


def test_every_placement_through_the_writer(tmp_path: Path) -> None:
    lines = ("root:{}:19000:0:99999:7:::", "INSERT INTO auth_user (password) VALUES ('{}');", "password_hash: {}")
    examples = [
        Example(id=f"hash:{i}", source="ctxtap", family="password-hash", label="tp", cls="self-identifying",
                text=lines[i % len(lines)].format(h), secret=h, name="password_hash",
                file="tests/redaction/test_password_hashes.py", line=1, token=h)
        for i, h in enumerate(_hashes(seed=1))
    ]
    run = run_matrix(tmp_path / "cap", examples, positions=3)
    assert sorted({(run.cases[i].example.secret, run.cases[i].placement) for i in run.leaks}) == []
    assert {"header-neutral", "prose", "tool-json", "json-escaped", "upstream", "sse-split2"} <= {
        c.placement for c in run.cases}


def test_only_the_hash_goes_and_twice_changes_nothing() -> None:
    redactor = Redactor(b"k" * 32, "t")
    for h in _hashes(seed=2):
        text = f"root:{h}:19000:0:99999:7:::\nbob:*:19000"
        once = redactor.redact_text(text)
        assert once.startswith("root:[REDACTED:password-hash:") and once.endswith("]:19000:0:99999:7:::\nbob:*:19000")
        assert redactor.redact_text(once) == once


def test_a_hash_in_phps_json_goes_whole() -> None:
    """PHP's `json_encode` escapes every `/`, and bcrypt's and crypt's alphabets hold it."""
    redactor = Redactor(b"k" * 32, "t")
    rng = random.Random(3)
    for h in (f"$2y$10${''.join(rng.choice(_CRYPT) for _ in range(53))}", _hashes(seed=3)[3]):
        h = h[:20] + "/" + h[21:]  # a `/` in the hash's part, at least
        text = '{"user":{"password":"' + h.replace("/", "\\/") + '","name":"bob"}}'
        out = redactor.redact_text(text)
        assert out.startswith('{"user":{"password":"[REDACTED:password-hash:') and out.endswith('","name":"bob"}}'), out


def test_what_is_no_hash_stays() -> None:
    for text in (
        'echo "$HOME$PATH$LD_LIBRARY_PATH"',
        "sed -e 's/$1$2/x/' file; re.sub(p, r'$1$2$3', s)",
        "bcrypt hashes start with $2b$ and a cost; argon2 ones with $argon2id$v=19$",
        "the format is pbkdf2_sha256$<iterations>$<salt>$<hash>",
        "PASSWORD_HASHERS = ['django.contrib.auth.hashers.PBKDF2PasswordHasher']",
        "$a$b$getElementsByTagNameNS",
        "price: $5$ per unit, $10$ per pack",
        "{SSHA} and {SHA} are LDAP's schemes",
    ):
        assert find_spans(text.encode()) == [], text


def _encoded_pem(label: str, seed: int) -> bytes:
    rng = random.Random(seed)
    body = "\n".join(base64.b64encode(rng.randbytes(48)).decode() for _ in range(12))
    return base64.b64encode(f"-----BEGIN {label}-----\n{body}\n-----END {label}-----\n".encode())


def test_a_pem_file_encoded_whole_goes_and_a_certificate_stays() -> None:
    """A kubeconfig (`kubectl config view --raw`): the client's key goes, its certificate and the CA's stay."""
    redactor = Redactor(b"k" * 32, "t")
    key, cert, ca = _encoded_pem("RSA PRIVATE KEY", 1), _encoded_pem("CERTIFICATE", 2), _encoded_pem("CERTIFICATE", 3)
    config = (f"    certificate-authority-data: {ca.decode()}\n    client-certificate-data: {cert.decode()}\n"
              f"    client-key-data: {key.decode()}\n")
    out = redactor.redact_text(config)
    assert key.decode()[20:60] not in out and "client-key-data: [REDACTED:" in out
    assert ca.decode() in out and cert.decode() in out
    # wrapped at 76 as `base64` writes it, in a tool result's JSON string
    wrapped = base64.encodebytes(base64.b64decode(_encoded_pem("OPENSSH PRIVATE KEY", 4))).decode()
    out = redactor.redact_text('{"content": "' + wrapped.replace("\n", "\\n") + '"}')
    assert all(line[8:40] not in out for line in wrapped.splitlines() if len(line) > 40)


def test_a_minisign_or_signify_secret_key_goes_and_a_public_key_stays() -> None:
    redactor = Redactor(b"k" * 32, "t")
    rng = random.Random(5)
    secret = base64.b64encode(b"Ed\x00\x00" + rng.randbytes(150)).decode()
    public = base64.b64encode(b"Ed" + rng.randbytes(40)).decode()
    for text in (f"untrusted comment: minisign encrypted secret key\n{secret}\n",
                 f"untrusted comment: signify secret key\n{secret}\n",
                 json.dumps({"content": f"cat ~/.minisign/minisign.key\nuntrusted comment: minisign encrypted secret key\n{secret}\n"})):
        out = redactor.redact_text(text)
        assert secret[10:40] not in out and "[REDACTED:private-key:" in out, text[:40]
    text = f"untrusted comment: signify public key\n{public}\n"  # (its random base64 may look like a token)
    assert [s.kind for s in find_spans(text.encode()) if s.kind == "private-key"] == []
