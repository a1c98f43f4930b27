"""Credentials recognised by their structure rather than a list (issue 37, item 4): a user and password
pair on a command line, in a record or handed to an auth call, and a private key's base64 body without
its BEGIN line. Each class is checked raw and inside a JSON tool result, and against the look-alikes that
must stay (ports, paths, uids, prompts, public certificates, random base64)."""

from __future__ import annotations

import base64
import random

import pytest

from ctxtap.redaction import Redactor
from tests.redaction_checks import assert_kept_everywhere, assert_redacted_everywhere, in_tool_result

SECRET = "Wonderland1865"


@pytest.fixture(scope="module")
def redactor() -> Redactor:
    return Redactor(b"k" * 32)


@pytest.mark.parametrize("text", [
    f"psexec \\\\host -u admin -p {SECRET} cmd",
    f"sqlcmd -S srv -U sa -P {SECRET} -Q 'select 1'",
    f"xfreerdp /u:alice /p:{SECRET} /v:host",
    f"mosquitto_pub -h broker -u alice -P {SECRET} -t x -m y",
    f"rabbitmqadmin --username alice -p {SECRET} list queues",
    f"newtool -p '{SECRET}' -u alice",  # the password flag may come first
    f"plink -ssh admin@host -pw {SECRET}",
])
def test_a_command_that_names_its_user_gives_its_password_flag_away(redactor: Redactor, text: str) -> None:
    assert_redacted_everywhere(redactor, text, SECRET)


@pytest.mark.parametrize("text", [
    "docker run -u 1000 -p 8080:80 -w /app nginx:1.25",
    "docker run -u node -P nginx",
    "docker exec -u root -w app web sh",
    "sudo -u postgres -p 'Password: ' psql",
    "ssh -l alice -p 2222 host",
    "ps -u alice -p 1234",
    "top -u alice -p 1234,5678",
    "cp -u -p src dst",
    "mysql -u root -P 3306 -h db",
    "psql -U alice -p 5432 -d app",
    "curl -u alice -p -x http://proxy https://example.com",
    "strace -u alice -p 4242",
    "pidstat -u -p ALL 1",
    "rsync -avz -u -p src/ dst/",
    "uv pip install -U ruff -p python3.12",
    "ncat -u -p 5353 host 53",
    "tool -u alice -p /etc/tool.conf",
])
def test_user_and_port_or_path_flags_stay(redactor: Redactor, text: str) -> None:
    assert_kept_everywhere(redactor, text)


@pytest.mark.parametrize("text", [
    f"login: alice\npass: {SECRET}\n",
    f"user=alice pass={SECRET}",
    f'{{"user": "alice", "pass": "{SECRET}"}}',
    f'{{"username": "alice", "pw": "{SECRET}"}}',
    f'[db]\nuser = "alice"\npwd = "{SECRET}"\n',
    f"account: main\npass: {SECRET}\n",
])
def test_a_weak_password_name_beside_a_user_name_is_a_password(redactor: Redactor, text: str) -> None:
    assert_redacted_everywhere(redactor, text, SECRET)


@pytest.mark.parametrize("text", [
    "USER=alice\nPWD=/home/alice/proj\nHOME=/home/alice",
    '{"user": "ci", "pass": 12, "fail": 0, "skip": 3}',
    '{"user": "bob", "pass": "passed"}',
    "login: alice\npass: true",
    "user = request.user\npw = form.cleaned_data['password']",
    "user = get_user()\npwd = os.getcwd()",
    "user=alice pass=$PASS",
    "user: alice\npass: ********",
    "account: main\npass: Skipped because flaky",
    "for user in users:\n    pass",
    f"pass={SECRET}",  # no user beside it: a weak name's short word stays (it must look random)
])
def test_weak_names_without_a_pair_or_with_no_secret_stay(redactor: Redactor, text: str) -> None:
    assert_kept_everywhere(redactor, text)


@pytest.mark.parametrize("text", [
    f"requests.get(url, auth=('alice', '{SECRET}'))",
    f'HTTPBasicAuth("alice", "{SECRET}")',
    f'req.SetBasicAuth("alice", "{SECRET}")',
    f'new NetworkCredential("svc", "{SECRET}")',
    f'session.auth = ("bob", "{SECRET}")',
])
def test_an_auth_call_given_two_literals_holds_a_password(redactor: Redactor, text: str) -> None:
    assert_redacted_everywhere(redactor, text, SECRET)


@pytest.mark.parametrize("text", [
    'requests.get(u, auth=("alice", "password"))',
    'authenticate("user", "password")',
    'oauth("client", "scope")',
    'auth("login", "Please sign in")',
    "req.SetBasicAuth(user, pass)",
    'client = Client(auth=("api", key))',
])
def test_auth_calls_with_variables_words_or_prose_stay(redactor: Redactor, text: str) -> None:
    assert_kept_everywhere(redactor, text)


def _keys() -> list[tuple[str, list[str]]]:
    from cryptography.hazmat.primitives import serialization as ser
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

    out = []
    for key in (ed25519.Ed25519PrivateKey.generate(), ec.generate_private_key(ec.SECP256R1()),
                rsa.generate_private_key(65537, 2048)):
        formats = {"PKCS8": ser.PrivateFormat.PKCS8, "TraditionalOpenSSL": ser.PrivateFormat.TraditionalOpenSSL,
                   "OpenSSH": ser.PrivateFormat.OpenSSH}  # named here: older cryptography enums have no .name
        for fmt_name, fmt in formats.items():
            try:
                pem = key.private_bytes(ser.Encoding.PEM, fmt, ser.NoEncryption()).decode()
            except ValueError:
                continue  # Ed25519 has no traditional form
            out.append((f"{type(key).__name__}-{fmt_name}", pem.strip().splitlines()[1:-1]))
    return out


@pytest.mark.parametrize(("name", "lines"), _keys(), ids=lambda v: v if isinstance(v, str) else "")
@pytest.mark.parametrize("tail", ["\nUse it for the deploy.", "\n-----END PRIVATE KEY-----", ""])
def test_a_private_key_body_without_its_begin_line_is_redacted_to_its_last_line(
        redactor: Redactor, name: str, lines: list[str], tail: str) -> None:
    text = "the key:\n" + "\n".join(lines) + tail
    for shown in (redactor.redact_bytes(text.encode()).decode(),
                  in_tool_result(redactor, text)):
        assert not any(line[i : i + 12] in shown for line in lines for i in range(0, len(line) - 12, 6)), shown
        assert "[REDACTED:private-key:" in shown and shown.endswith(tail) and shown.startswith("the key:\n")


def test_public_certificates_keys_and_random_base64_stay(redactor: Redactor) -> None:
    cert = ("MIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBaMQswCQYDVQQGEwJJRTESMBAGA1UEChMJQmFsdGltb3JlMRMwEQYDVQQL"
            "EwpDeWJlclRydXN0MSIwIAYDVQQDExlCYWx0aW1vcmUgQ3liZXJUcnVzdCBSb290")
    spki = ("MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onLR"
            "nrq0/IzW7yWR7Qkr")
    assert_kept_everywhere(redactor, cert)
    assert_kept_everywhere(redactor, spki)
    rnd = random.Random(37)
    for _ in range(50):
        blob = base64.b64encode(rnd.randbytes(3000)).decode()
        wrapped = "\n".join(blob[i : i + 76] for i in range(0, len(blob), 76))
        assert redactor.redact_bytes(wrapped.encode()).decode().count("[REDACTED:private-key") == 0


@pytest.mark.parametrize("text", [
    f"user alice, password {SECRET}",
    f"Log in as alice with password {SECRET}.",
    f"Use password {SECRET} for the admin account",
    "the vault opens with password P@ssw0rd!",
    f"set the password to {SECRET} and restart",
    f"Password for alice is {SECRET}",
    f"the password is now {SECRET}",
])
def test_a_password_written_into_a_sentence_is_redacted(redactor: Redactor, text: str) -> None:
    assert_redacted_everywhere(redactor, text, SECRET if SECRET in text else "P@ssw0rd!")


@pytest.mark.parametrize("text", [
    "password reset for user123", "password hashing/verification", "the password file2.txt", "password v1.2.3a",
    "password 12345678", "password policy2024 draft", "password bcrypt2b cost", "password Argon2id parameters",
    "password PBKDF2-HMAC", "password SHA256 hashes", "password to access the server",
    "password for alice is unknown", "password OAuth2 flow", "Password for user admin123 was reset",
])
def test_terms_after_the_word_password_stay(redactor: Redactor, text: str) -> None:
    assert_kept_everywhere(redactor, text)
