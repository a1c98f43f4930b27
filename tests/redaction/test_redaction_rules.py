"""The rule set and the engine: vendored gitleaks rules, name rules, encodings, both engines agreeing.

Every case the redaction issue lists is a test here, run with the Hyperscan
engine and with the pure-Python fallback. Secrets are random and fake.
"""

from __future__ import annotations

import json
import os
import random
import re
import string
import tomllib
from urllib.parse import quote

import pytest

from ctxtap.redaction import KINDS, PLACEHOLDER_RE, Redactor
from ctxtap.redaction.engine import hyperscan_available
from ctxtap.redaction.gitleaks import RULES_FILE, TranslationError, load_rules, translate_re2
from ctxtap.redaction.scanner import get_scanner
from tests.redaction.rule_checks import BACKENDS, KEY, _assert_redacted, _kinds

ALNUM = string.ascii_letters + string.digits
UPPER = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"


def _r(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


@pytest.fixture(params=BACKENDS)
def redactor(request: pytest.FixtureRequest) -> Redactor:
    r = Redactor(KEY, "rules", backend=request.param)
    assert r.backend == request.param
    return r


# --- the vendored gitleaks rules ---------------------------------------------------------


def test_vendored_rules_are_marked_with_licence_and_version() -> None:
    readme = RULES_FILE.with_name("README.md").read_text()
    licence = RULES_FILE.with_name("LICENSE-gitleaks").read_text()
    assert "MIT License" in licence
    assert re.search(r"^version: v\d+\.\d+\.\d+", readme, re.M)
    assert re.search(r"^commit: [0-9a-f]{40}", readme, re.M)
    assert load_rules().version.startswith("v8.")


def test_every_gitleaks_rule_compiles_or_is_reported_with_a_reason() -> None:
    with RULES_FILE.open("rb") as fh:
        ids = [r["id"] for r in tomllib.load(fh)["rules"]]
    ruleset = load_rules()
    compiled = {r.id for r in ruleset.rules}
    skipped = dict(ruleset.skipped)
    assert len(ids) >= 200
    assert compiled | set(skipped) == set(ids) and not compiled & set(skipped)
    assert all(reason for reason in skipped.values())
    # Only the rule that matches file names (never a body) is left out.
    assert set(skipped) == {"pkcs12-file"}, skipped
    for rule in ruleset.rules:
        assert rule.verifier.pattern and rule.trigger  # compiled for Python, pattern for the engine
        assert PLACEHOLDER_RE.fullmatch(f"[REDACTED:{rule.id}:abcdef]".encode()), rule.id
        assert rule.id in KINDS


@pytest.mark.skipif(not hyperscan_available(), reason="hyperscan wheel not installed")
def test_every_gitleaks_trigger_compiles_for_hyperscan() -> None:
    import hyperscan

    failures = []
    for rule in load_rules().rules:
        db = hyperscan.Database()
        try:
            db.compile(expressions=[rule.trigger], ids=[0], elements=1, flags=[0])
        except hyperscan.error as exc:  # type: ignore[attr-defined]
            failures.append((rule.id, str(exc)))
    assert not failures


def test_re2_translation() -> None:
    # flags to the end of the group, across alternatives
    assert translate_re2(r"ab(?i)cd|ef") == r"ab(?i:cd)|(?i:ef)"
    assert re.fullmatch(translate_re2(r"ab(?i)cd|ef"), "abCD") and re.fullmatch(translate_re2(r"ab(?i)cd|ef"), "EF")
    assert not re.fullmatch(translate_re2(r"ab(?i)cd|ef"), "ABcd")
    assert translate_re2(r"x(y(?i)z)w") == r"x(y(?i:z))w"
    assert translate_re2(r"a\z") == r"a\Z"
    assert re.fullmatch(translate_re2(r"pat[[:alnum:]]{3}"), "patA1b")
    assert translate_re2(r"(?i)leading") == r"(?i)leading"
    with pytest.raises(TranslationError):
        translate_re2(r"\pL+")
    with pytest.raises(TranslationError):
        translate_re2(r"(unbalanced")


def test_rule_ids_are_placeholder_kinds(redactor: Redactor) -> None:
    rng = random.Random(5)
    out = redactor.redact_text("key: pscale_tkn_" + _r(rng, ALNUM, 40) + " and AKCp" + _r(rng, ALNUM, 69))
    assert {"planetscale-api-token", "artifactory-api-key"} <= _kinds(out)


# --- self-identifying formats, no credential name beside them -----------------------------


def _self_identifying(rng: random.Random) -> list[tuple[str, str]]:
    return [
        ("huggingface-organization-api-token", "api_org_" + _r(rng, string.ascii_letters, 34)),
        ("aws-amazon-bedrock-api-key-long-lived", "ABSK" + _r(rng, ALNUM, 120)),
        (
            "aws-amazon-bedrock-api-key-short-lived",
            "bedrock-api-key-YmVkcm9jay5hbWF6b25hd3MuY29t" + _r(rng, ALNUM, 60) + "/" + _r(rng, ALNUM, 30) + "=",
        ),
        ("artifactory-api-key", "AKCp" + _r(rng, ALNUM, 69)),
        ("artifactory-reference-token", "cmVmd" + _r(rng, ALNUM, 59)),
        ("planetscale-api-token", "pscale_tkn_" + _r(rng, ALNUM, 40)),
        ("planetscale-password", "pscale_pw_" + _r(rng, ALNUM, 40)),
        ("flyio-access-token", "fo1_" + _r(rng, ALNUM, 43)),
        ("sourcegraph-access-token", "sgp_" + _r(rng, HEX, 16) + "_" + _r(rng, HEX, 40)),
        (
            "1password-secret-key",
            "A3-" + "-".join(_r(rng, UPPER, n) for n in (6, 11, 5, 5, 5)),
        ),
        ("onepassword-token", "ops_eyJ" + _r(rng, ALNUM, 260)),
        ("new-relic-key", "NRAK-" + _r(rng, UPPER, 27)),
        ("tailscale-key", "tskey-auth-k" + _r(rng, ALNUM, 10) + "-" + _r(rng, ALNUM, 30)),
        ("pinecone-key", "pcsk_" + _r(rng, ALNUM, 6) + "_" + _r(rng, ALNUM, 60)),
        ("nvidia-key", "nvapi-" + _r(rng, ALNUM + "-_", 64)),
        ("together-key", "tgp_v1_" + _r(rng, ALNUM, 43)),
        ("gitlab-token", "glpat-" + _r(rng, ALNUM, 27) + ".01" + _r(rng, HEX, 7)),  # ctxtap's kind wins
        ("shippo-api-token", "shippo_live_" + _r(rng, HEX, 40)),
        ("dynatrace-api-token", "dt0c01." + _r(rng, UPPER, 24) + "." + _r(rng, ALNUM, 64)),
    ]


@pytest.mark.parametrize("placement", ["prose", "neutral-env", "neutral-query", "json", "escaped-json"])
def test_self_identifying_formats_without_a_name(redactor: Redactor, placement: str) -> None:
    failures = []
    for kind, secret in _self_identifying(random.Random(11)):
        text = {
            "prose": f"I found {secret} in the logs, is it still valid?",
            "neutral-env": f"SOME_NAME={secret}\nOTHER=1\n",
            "neutral-query": f"https://example.com/cb?ref={secret}&page=2",
            "json": json.dumps({"ref": secret, "n": 1}),
            "escaped-json": json.dumps({"content": "line one\n" + secret + "\nline three"}),
        }[placement]
        out = redactor.redact_text(text)
        if secret in out or json.dumps(secret)[1:-1] in out or kind not in _kinds(out):
            failures.append((kind, out[:200]))
        outside = PLACEHOLDER_RE.sub(b"", out.encode()).decode()
        if secret[:12] in outside or secret[-12:] in outside:
            failures.append((kind, "fragment left", out[:200]))
    assert not failures


def test_jwts_unsigned_two_segment_and_non_json_payload(redactor: Redactor) -> None:
    rng = random.Random(2)
    unsigned = "eyJhbGciOiJub25lIn0.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
    _assert_redacted(redactor, f"token {unsigned} end", unsigned, "jwt")
    two = "eyJhbGciOiJub25lIn0.eyJzdWIiOiIxMjM0NTY3ODkwIn0"
    _assert_redacted(redactor, f"token {two}, end", two, "jwt")
    not_json = "eyJhbGciOiJIUzI1NiJ9.bm90LWpzb24tcGF5bG9hZC1hdC1hbGw." + _r(rng, ALNUM, 43)
    _assert_redacted(redactor, f"Bearer {not_json}", not_json, "jwt")


def test_redaction_keeps_json_escapes_whole(redactor: Redactor) -> None:
    jwt = (
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ"
        ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
    )
    # (text inside a JSON string, what it must read after redaction)
    for text, expected in (
        (f"x\n{jwt}\ny", r"x\n\[REDACTED:jwt:\w{6}\]\ny"),
        (f'say "{jwt}" twice', r'say "\[REDACTED:jwt:\w{6}\]" twice'),
        (f"{jwt}\\", r"\[REDACTED:jwt:\w{6}\]\\"),
        ("token=Zq8vX2mL0pR7sT4uW9yB\\", r"token=\[REDACTED:generic-secret:\w{6}\]\\"),
    ):
        out = redactor.redact_bytes(json.dumps({"content": text}).encode())
        assert re.fullmatch(expected, json.loads(out)["content"]), out


# --- name rules -------------------------------------------------------------------------------


def test_bare_key_is_a_credential_name(redactor: Redactor) -> None:
    rng = random.Random(3)
    value = _r(rng, ALNUM, 32)
    _assert_redacted(redactor, json.dumps({"key": value}), value)
    _assert_redacted(redactor, f'[service]\nkey = "{value}"\n', value)  # TOML
    _assert_redacted(redactor, f"key: {value}\n", value)  # YAML


def test_token_auth_credential_take_uuids_and_digit_poor_values(redactor: Redactor) -> None:
    uuid = "3f2b8c1e-9a4d-4e7f-b2c1-8d9e0f1a2b3c"
    _assert_redacted(redactor, json.dumps({"token": uuid}), uuid)
    _assert_redacted(redactor, f"auth: {uuid}\n", uuid)
    _assert_redacted(redactor, f'credential = "{uuid}"', uuid)
    few_digits = "xKqLpVzRtWmNbHgFaQeRsT"
    _assert_redacted(redactor, f'credential = "{few_digits}"', few_digits)
    _assert_redacted(redactor, f"credentials: {few_digits}\n", few_digits)
    _assert_redacted(redactor, f"AUTH={few_digits}\n", few_digits)


def test_pipe_does_not_end_a_bare_value(redactor: Redactor) -> None:
    secret = "9116373834524567|AY-6fGhJk2LmNpQrStUvWxYz0123456"
    out = _assert_redacted(redactor, f"FACEBOOK_SECRET={secret}\nNEXT=1\n", secret)
    assert out.endswith("\nNEXT=1\n") and "AY-" not in out and "9116373834524567" not in out


def test_quoted_values_with_spaces_under_a_credential_name(redactor: Redactor) -> None:
    _assert_redacted(redactor, json.dumps({"password": "correct horse battery"}), "correct horse battery")
    _assert_redacted(redactor, 'DB_PASSWORD="two words here"\n', "two words here")
    # Under a weak name, spaces still mean prose.
    text = json.dumps({"auth": "the login screen of the app"})
    assert redactor.redact_text(text) == text


@pytest.mark.parametrize(
    "template",
    [
        '{{"api_key": "{v}"}}',  # JSON
        "api_key: {v}\n",  # YAML
        'api_key = "{v}"\n',  # TOML
        "[default]\naws_secret_access_key = {v}\n",  # INI
        "export SERVICE_TOKEN={v}\n",  # env
        "SERVICE_PWD='{v}'\n",
        "client_secret => '{v}',\n",  # Ruby/PHP
    ],
)
def test_credential_names_in_every_syntax(redactor: Redactor, template: str) -> None:
    value = "Zr8" + _r(random.Random(template), ALNUM, 21)
    _assert_redacted(redactor, template.format(v=value), value)


def test_gitleaks_context_rules_apply_to_bodies(redactor: Redactor) -> None:
    # gitleaks applies this one to nuget.config files only; a tool result has no file name.
    out = redactor.redact_text('<add key="ClearTextPassword" value="Zr8DNWqCmGSsNAFo74" />')
    assert "Zr8DNWqCmGSsNAFo74" not in out and "nuget-config-password" in _kinds(out)


@pytest.mark.parametrize(
    ("text", "secret", "kind"),
    [
        ("curl -u admin:S3cr3tPassw0rd https://example.com", "S3cr3tPassw0rd", None),
        ("curl -s -u 'deploy:hunter2-xyz' https://example.com/api", "hunter2-xyz", None),
        ("curl --user=ci:Zq8vX2mL0pR7sT4u https://example.com", "Zq8vX2mL0pR7sT4u", None),
        ("docker login --username bob --password Tr0ub4dor-3x registry.example", "Tr0ub4dor-3x", "password"),
        ("gh auth login --with-token < f; tool --api-key Zq8vX2mL0pR7sT4uW", "Zq8vX2mL0pR7sT4uW", None),
        ("mysql -u root -pSup3rS3cret mydb", "Sup3rS3cret", "password"),
        ("mysqldump -h db -u app -p'Sup3r S3cret' app > dump.sql", "Sup3r S3cret", "password"),
        ("sshpass -p rootpw99x ssh user@host", "rootpw99x", "password"),
        ("docker login -u bob -p Tr0ub4dor-3x", "Tr0ub4dor-3x", "password"),
        ("redis-cli -h cache -a R3disPassw0rd ping", "R3disPassw0rd", "password"),
        ("Send the header Authorization: Bearer Zq8vX2mL0pR7sT4uW9yB1 with it", "Zq8vX2mL0pR7sT4uW9yB1", None),
        ('curl -H "Authorization: Token Zq8vX2mL0pR7sT4uW9yB1" https://api', "Zq8vX2mL0pR7sT4uW9yB1", None),
        ('curl -H "X-Api-Key: Zq8vX2mL0pR7sT4uW9yB1" https://api', "Zq8vX2mL0pR7sT4uW9yB1", None),
        ("openssl pkcs12 -export -in c.pem -out c.p12 -passout pass:Tr0ub4dor-3x", "Tr0ub4dor-3x", "password"),
        ("keytool -genkeypair -keystore k.jks -storepass Tr0ub4dor-3x -keypass 'Zq8vX2mL0pR7'", "Zq8vX2mL0pR7",
         "password"),
        ("jarsigner -storepass Tr0ub4dor-3x app.jar release", "Tr0ub4dor-3x", "password"),
        ("ldapsearch -x -H ldap://dc -p 389 -D cn=admin,dc=corp -w Tr0ub4dor-3x -b dc=corp", "Tr0ub4dor-3x", "password"),
        ("az login -u bob@example.com -p Tr0ub4dor-3x", "Tr0ub4dor-3x", "password"),
        # a literal piped or fed into a command that reads a secret from its standard input
        ('echo "Tr0ub4dor-3x" | docker login -u bob --password-stdin registry.example', "Tr0ub4dor-3x",
         "password"),
        ('echo -n "Tr0ub4dor-3x" | podman login --username bob --password-stdin quay.io', "Tr0ub4dor-3x",
         "password"),
        ("printf '%s' 'Tr0ub4dor-3x' | helm registry login reg.example -u bob --password-stdin", "Tr0ub4dor-3x",
         "password"),
        ("cd app && echo Zq8vX2mL0pR7 | sudo -S systemctl restart app", "Zq8vX2mL0pR7", "password"),
        ("echo 'Zq8vX2mL0pR7' | sudo -u deploy -kS make install", "Zq8vX2mL0pR7", "password"),
        ("printf 'Zq8vX2mL0pR7\\n' | sudo --stdin apt-get install -y nginx", "Zq8vX2mL0pR7", "password"),
        ('echo "deploy:Tr0ub4dor-3x" | sudo chpasswd', "Tr0ub4dor-3x", "password"),
        ('echo "Tr0ub4dor-3x" | passwd --stdin deploy', "Tr0ub4dor-3x", "password"),
        ('docker login -u bob --password-stdin <<< "Tr0ub4dor-3x"', "Tr0ub4dor-3x", "password"),
        ("echo Zq8vX2mL0pR7sT4uW9yB1 | gh auth login --with-token", "Zq8vX2mL0pR7sT4uW9yB1", "password"),
        # Samba's user%password
        ("smbclient //fs/share -U 'corp\\bob%Tr0ub4dor-3x' -c ls", "Tr0ub4dor-3x", "password"),
        ("smbclient -U bob%Tr0ub4dor-3x //fs/share", "Tr0ub4dor-3x", "password"),
        ("rpcclient --user=corp/bob%Tr0ub4dor-3x dc01 -c enumdomusers", "Tr0ub4dor-3x", "password"),
        # a password as a positional argument, no flag before it
        ("htpasswd -bc /etc/nginx/.htpasswd admin Tr0ub4dor-3x && nginx -s reload", "Tr0ub4dor-3x", "password"),
        ("htpasswd -nbB admin 'Tr0ub4dor-3x' > auth.txt", "Tr0ub4dor-3x", "password"),
        ('{"command": "rabbitmqctl add_user deploy Tr0ub4dor-3x", "timeout": 30}', "Tr0ub4dor-3x", "password"),
        ("rabbitmqctl change_password guest Tr0ub4dor-3x", "Tr0ub4dor-3x", "password"),
        ("mc alias set store https://s3.example minio Zq8vX2mL0pR7sT4u --api S3v4", "Zq8vX2mL0pR7sT4u", "password"),
        ("NET USE Z: \\\\fs01\\public Tr0ub4dor-3x /USER:CORP\\bob /PERSISTENT:NO", "Tr0ub4dor-3x", "password"),
        ("wpa_passphrase HomeNet Tr0ub4dor-3x >> /etc/wpa_supplicant.conf", "Tr0ub4dor-3x", "password"),
        ("openssl passwd -6 -salt Xq7 Tr0ub4dor-3x", "Tr0ub4dor-3x", "password"),
        ("winrs -r:srv01 -u:admin -p:Tr0ub4dor-3x ipconfig", "Tr0ub4dor-3x", "password"),
    ],
)
def test_command_line_credentials(redactor: Redactor, text: str, secret: str, kind: str | None) -> None:
    _assert_redacted(redactor, text, secret, kind)


def test_password_hashes_are_redacted(redactor: Redactor) -> None:
    """htpasswd, /etc/shadow and LDAP password hashes: a dictionary attack recovers a weak password."""
    rng = random.Random(11)
    crypt = "./" + ALNUM
    for stored in (
        f"$apr1${_r(rng, crypt, 8)}${_r(rng, crypt, 22)}",  # htpasswd (Apache MD5)
        f"$1${_r(rng, crypt, 8)}${_r(rng, crypt, 22)}",  # MD5-crypt
        f"$2y$10${_r(rng, crypt, 53)}",  # bcrypt
        f"$5${_r(rng, crypt, 16)}${_r(rng, crypt, 43)}",  # SHA-256-crypt
        f"$6$rounds=5000${_r(rng, crypt, 16)}${_r(rng, crypt, 86)}",  # SHA-512-crypt
        f"$y$j9T${_r(rng, crypt, 24)}${_r(rng, crypt, 43)}",  # yescrypt (Debian's /etc/shadow)
        "{SSHA}" + _r(rng, ALNUM + "+/", 32),  # LDAP
        "{SHA}" + _r(rng, ALNUM + "+/", 27) + "=",  # htpasswd -s
    ):
        digest = stored.rsplit("$", 1)[-1].rsplit("}", 1)[-1]
        for text in (f"deploy:{stored}\nbob:x", f"root:{stored}:19700:0:99999:7:::", f'hash = "{stored}"'):
            out = _assert_redacted(redactor, text, digest, "password-hash")
            assert stored not in out and text.split(stored)[0] in out, out  # the user name stays
    for text in (  # the prefixes alone, or shapes too short to be a hash
        "sed -e 's/$1$2/x/' file",
        "bcrypt hashes start with $2b$ and a cost",
        "echo $6$HOME",
        "{SHA} is the scheme's label",
    ):
        assert redactor.redact_text(text) == text, text


@pytest.mark.parametrize(
    "template",
    [
        "password:\n  {v}\n",  # a plain scalar on the next line
        "db:\n  password: >-\n    {v}\nport: 5432\n",  # a folded block scalar
        "api_key: |\n  {v}\n",  # a literal block scalar
        "services:\n  - name: db\n    db_password:\n      \"{v}\"\n",  # quoted, under a list item
        "client_secret: |-\n\n  {v}\n",  # a blank line first
        "host: db\npassword:\n  {v}\n",  # a top-level name after another line (`\\npassword:` in JSON)
    ],
)
def test_yaml_values_below_their_name(redactor: Redactor, template: str) -> None:
    value = "Zr8" + _r(random.Random(template), ALNUM, 17)
    text = template.format(v=value)
    _assert_redacted(redactor, text, value)
    nested = json.dumps({"input": json.dumps({"content": text})})  # a file in a JSON string in a JSON string
    assert value not in redactor.redact_text(nested)


def test_yaml_below_a_name_that_is_no_value_is_kept(redactor: Redactor) -> None:
    for text in (
        "password:\n  secretKeyRef:\n    name: db\n    key: pw\n",  # a mapping
        "passwords:\n  - ${ADMIN_PW}\n",  # a list
        "password:\n  ${DB_PASSWORD}\n",  # a reference
        "password:\nhost: db.internal\n",  # not indented below it
        "api_key:\n  # set in CI\nregion: eu\n",  # a comment
        "tokenizer:\n  bpe_merges_file_v2\n",  # not a credential's name
    ):
        assert redactor.redact_text(text) == text, text
        assert redactor.redact_text(json.dumps({"content": text})) == json.dumps({"content": text}), text


def test_command_lines_without_credentials_are_kept(redactor: Redactor) -> None:
    for text in (
        "mkdir -p build/out && docker run -p 8080:80 app",
        "ssh -p 2222 user@host",
        "curl -u $USER:$PASS https://example.com",
        "tool --password-file ./secret.txt --token-type bearer",
        "sort --key 2 file.txt",
        "mysql -u root -p mydb",  # prompts for the password
        "docker run -u 1000:1000 image",
        "openssl rsa -in key.pem -passin env:KEY_PASS -out plain.pem",
        "openssl enc -aes256 -pass file:./pw.txt -in a -out b",
        "ffmpeg -i in.mp4 -c:v libx264 -pass 1 -f null /dev/null",
        "ldapsearch -x -H ldap://dc -p 389 -b dc=corp uid=bob",
        # what is piped in is a reference, a command's output, or not read as a secret
        "echo $REGISTRY_PASSWORD | docker login -u bob --password-stdin",
        'echo "${CI_TOKEN}" | gh auth login --with-token',
        "aws ecr get-login-password --region eu-west-1 | docker login --password-stdin 1234.dkr.ecr.example",
        "cat ~/.registry-pw | docker login -u bob --password-stdin",
        "echo Zq8vX2mL0pR7 | sudo pacman -S foo",  # pacman's -S, not sudo's
        "echo Zq8vX2mL0pR7 | sudo tee /etc/motd",
        'echo "deploy" | sudo chpasswd',
        "smbclient -L //fs -U guest%",
        "smbclient -U bob //fs/share",
        # positional passwords that are not there: prompted for, a reference, no batch mode
        "htpasswd -c /etc/nginx/.htpasswd admin",
        "htpasswd -D .htpasswd admin",
        "net use Z: \\\\fs01\\public * /user:bob && net use Z: /delete",
        "rabbitmqctl add_user deploy \"$RABBIT_PASSWORD\"",
        "openssl passwd -6 -stdin < pw.txt",
        "the net use command maps a share; rabbitmqctl add_user takes a user and a password",
    ):
        assert redactor.redact_text(text) == text, text


def test_a_word_where_only_a_password_goes(redactor: Redactor) -> None:
    """A flag that takes nothing but a password (`sshpass -p`, `mysql -pX`, `redis-cli -a`, `ldapsearch -w`,
    `--password=`) takes a word too: weak passwords are passwords. A long flag followed by a word with a
    space may be prose naming the flag, and a user-and-password pair's `-p` another tool's option: those
    keep words. References and placeholders stay everywhere."""
    for text, secret in (("sshpass -p dev_admin ssh deploy@build01", "dev_admin"),
                         ("mysql -u root -pwhiteduke app", "whiteduke"),
                         ("redis-cli -h cache -a whiteduke ping", "whiteduke"),
                         ("ldapsearch -x -D cn=admin,dc=corp -w change-it-soon -b dc=corp", "change-it-soon"),
                         ("docker login -u bob -p whiteduke registry.example", "whiteduke"),
                         ("mysqldump -u root --password=whiteduke app > dump.sql", "whiteduke"),
                         ("7z x -pwhiteduke backup.7z", "whiteduke"),
                         # the places a command reads nothing but a password: piped into its standard input,
                         # after Samba's `%`, a tool's own password flag, a command's password position
                         ("echo whiteduke | docker login -u bob --password-stdin registry.example", "whiteduke"),
                         ("echo dev_admin | sudo -S apt update", "dev_admin"),
                         ("echo 'bob:whiteduke' | chpasswd", "whiteduke"),
                         ("smbclient //srv/share -U bob%whiteduke", "whiteduke"),
                         ("zip -P whiteduke backup.zip notes.txt", "whiteduke"),
                         ("ssh-keygen -t ed25519 -N dev_admin -f deploy_key", "dev_admin"),
                         ("htpasswd -b .htpasswd bob whiteduke", "whiteduke")):
        _assert_redacted(redactor, text, secret)
    for text in ("sshpass -p $SSHPASS ssh host", "mysql -u root -p mydb", "mysql -u root -pPASSWORD app",
                 "docker login -u bob -p your_password registry.example", "journalctl -u nginx -p warning",
                 "use the --username and --password options", "mysqldump --password=$DB_PASSWORD app",
                 "redis-cli -a secret ping", "echo y | sudo -S apt install curl", "zip -P password backup.zip f",
                 "echo $PW | docker login --password-stdin", "htpasswd -b passwords.txt user password",
                 'ssh-keygen -N "" -f key'):
        assert redactor.redact_text(text) == text, text


def test_near_miss_next_to_a_credential_name_is_redacted(redactor: Redactor) -> None:
    # One character short of a GitHub token, one of an OpenAI key: the name says it is a secret.
    for text, value in (
        ("GITHUB_TOKEN=ghp_" + "a1B2" * 8 + "xyz", "ghp_" + "a1B2" * 8 + "xyz"),
        ('"openai_api_key": "sk-proj-short1"', "sk-proj-short1"),
        ("ANTHROPIC_API_KEY=sk-ant-api03-trunc", "sk-ant-api03-trunc"),
    ):
        _assert_redacted(redactor, text, value)


# --- encodings ------------------------------------------------------------------------------


def test_percent_encoded_connection_string_in_a_query_value(redactor: Redactor) -> None:
    dsn = quote("postgres://app:s3cr3tPa55word@db.internal:5432/app", safe="")
    out = redactor.redact_url(f"https://x.example/cb?dsn={dsn}&a=1")
    assert "s3cr3tPa55word" not in out and "[REDACTED:url-password:" in out and out.endswith("&a=1")
    out = redactor.redact_text(f"see https://x.example/cb?dsn={dsn}&a=1 for details")
    assert "s3cr3tPa55word" not in out


def test_percent_encoded_slack_webhook_and_pem(redactor: Redactor) -> None:
    rng = random.Random(4)
    path = "T0" + _r(rng, UPPER, 9) + "/B0" + _r(rng, UPPER, 9) + "/" + _r(rng, ALNUM, 24)
    hook = quote("https://hooks.slack.com/services/" + path, safe="")
    out = redactor.redact_url(f"https://x.example/notify?hook={hook}&x=1")
    assert path.rsplit("/", 1)[1] not in out and "[REDACTED:slack-webhook:" in out and out.endswith("&x=1")
    body = _r(rng, ALNUM + "+/", 64 * 6)
    pem = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(body[i : i + 64] for i in range(0, len(body), 64))
    pem += "\n-----END RSA PRIVATE KEY-----"
    out = redactor.redact_text(f"POST /upload?key={quote(pem, safe='')}&name=a HTTP/1.1")
    assert body[64:128] not in out and quote(body[64:128], safe="") not in out
    assert "[REDACTED:private-key:" in out and out.endswith("&name=a HTTP/1.1")


def test_percent_encoded_base64_token_keeps_its_placeholder(redactor: Redactor) -> None:
    import base64

    secret = "ABSK" + base64.b64encode(random.Random(12).randbytes(100)).decode()  # has + / =
    assert "+" in secret or "/" in secret
    raw = redactor.redact_text(f"x {secret} y")
    for url in (f"https://e.example/a?ref={quote(secret, safe='')}&b=1", f"https://e.example/a?key={quote(secret)}"):
        out = redactor.redact_url(url)
        assert quote(secret, safe="")[:20] not in out and secret[:20] not in out, out
        assert set(PLACEHOLDER_RE.findall(out.encode())) == set(PLACEHOLDER_RE.findall(raw.encode())), (out, raw)
    for url in ("https://e.example/a?q=a%2Fb%2Fc&path=%2Fusr%2Flocal%2Fbin", "https://e.example/?next=%2Fhome%3Dx"):
        assert redactor.redact_url(url) == url and redactor.redact_text(url) == url


def test_webhook_without_scheme(redactor: Redactor) -> None:
    rng = random.Random(6)
    path = "T0" + _r(rng, UPPER, 9) + "/B0" + _r(rng, UPPER, 9) + "/" + _r(rng, ALNUM, 24)
    _assert_redacted(redactor, f"post to hooks.slack.com/services/{path} now", path, "slack-webhook")
    token = _r(rng, ALNUM + "_-", 68)
    _assert_redacted(redactor, f"discord.com/api/webhooks/123456789012345678/{token}", token, "discord-webhook")


# --- the engines agree ------------------------------------------------------------------------


@pytest.mark.skipif(not hyperscan_available(), reason="hyperscan wheel not installed")
def test_hyperscan_and_fallback_find_the_same_spans() -> None:
    from tests.secret_corpus import generate_secrets, negative_corpus, plant_everywhere

    fast, slow = get_scanner("hyperscan"), get_scanner("python")
    docs = [p.data for p in plant_everywhere(generate_secrets(seed=21))]
    docs += [data for _, data in negative_corpus(seed=2, stdlib_files=40)]
    docs += [text.encode() for _, text in _self_identifying(random.Random(9))]
    differ = [d[:120] for d in docs if fast.find_spans(d) != slow.find_spans(d)]
    assert not differ, differ[:3]


# --- properties: bounded growth, idempotence, engines agree ---------------------------------

_ATOMS = [
    "key", "token", "auth", "credentials", "password", "PASS", "pwd", "secret", "=", ": ", '"', "'", "\\n",
    "\\\"", " ", "\n", "|", "-p", "--password ", "-u ", "curl ", "mysql ", "sshpass ", "user:", "@", "://",
    "%3A%2F%2F", "%40", "%2F", "hooks.slack.com/services/", "-----BEGIN RSA PRIVATE KEY-----", "%20",
    "eyJhbGciOiJub25lIn0", ".", "eyJzdWIiOiIxIn0", "api_org_", "ABSK", "pscale_tkn_", "sgp_", "NRAK-",
    "tskey-auth-", "nvapi-", "ghp_", "sk-ant-api03-", "AKIA", "[REDACTED:", "]", "Zq8vX2mL0pR7sT4uW9yB",
    "3f2b8c1e-9a4d-4e7f-b2c1-8d9e0f1a2b3c", "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", "0123456789abcdef" * 3,
]  # fmt: skip


def _secretish():
    from hypothesis import strategies as st

    return st.lists(st.one_of(st.sampled_from(_ATOMS), st.text(max_size=5)), max_size=20).map("".join)


def _check_growth_and_idempotence(text: str) -> None:
    for backend in BACKENDS:
        r = Redactor(KEY, "prop", backend=backend)
        raw = text.encode("utf-8", "surrogatepass")
        once = r.redact_bytes(raw)
        assert r.redact_bytes(once) == once
        added = len(PLACEHOLDER_RE.findall(once)) - len(PLACEHOLDER_RE.findall(raw))
        # Each placeholder is at most 64 bytes and replaces at least one byte of a secret.
        assert len(once) <= len(raw) + 64 * max(added, 0)
        assert added <= len(raw) // 2 + 1
    if len(BACKENDS) == 2:
        raw = text.encode("utf-8", "surrogatepass")
        assert get_scanner("hyperscan").find_spans(raw) == get_scanner("python").find_spans(raw)


def test_redaction_is_bounded_idempotent_and_engine_independent() -> None:
    from hypothesis import HealthCheck, given, settings

    examples = int(os.environ.get("REDACTION_EXAMPLES", "300"))

    @settings(max_examples=examples, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(_secretish())
    def check(text: str) -> None:
        _check_growth_and_idempotence(text)

    check()


def test_issue_cases_are_idempotent_together() -> None:
    rng = random.Random(8)
    parts = [secret for _, secret in _self_identifying(rng)]
    parts += ["FACEBOOK_SECRET=9116373834524567|AY-6fGhJk2LmNpQrStUvWxYz0123456", "mysql -pSup3rS3cret db"]
    parts += ['{"password": "correct horse battery"}', "curl -u admin:S3cr3tPassw0rd https://x"]
    _check_growth_and_idempotence("\n".join(parts))
    _check_growth_and_idempotence(json.dumps({"content": "\n".join(parts)}))


@pytest.mark.skipif(not hyperscan_available(), reason="hyperscan wheel not installed")
def test_compiled_database_is_cached_and_a_bad_cache_is_recompiled(tmp_path, monkeypatch) -> None:
    from ctxtap.redaction.engine import HyperscanEngine, Trigger

    monkeypatch.setenv("CTXTAP_CACHE_DIR", str(tmp_path))
    triggers = [Trigger(rb"ghp_[A-Za-z0-9]{36}", som=True), Trigger(rb"sk-ant-", som=True)]
    data = b"x ghp_" + b"a1B2" * 9 + b" sk-ant-api03"
    first = HyperscanEngine(triggers).scan(data).by_trigger
    cached = list(tmp_path.glob("redaction-hs-*.db"))
    assert len(cached) == 1 and first == {0: [(2, 42)], 1: [(43, 50)]}
    assert HyperscanEngine(triggers).scan(data).by_trigger == first  # loaded, not compiled
    cached[0].write_bytes(b"torn")
    assert HyperscanEngine(triggers).scan(data).by_trigger == first
    assert cached[0].read_bytes() != b"torn"


@pytest.mark.skipif(not hyperscan_available(), reason="hyperscan wheel not installed")
def test_databases_nothing_loaded_for_a_month_are_removed(tmp_path, monkeypatch) -> None:
    import os
    import time

    from ctxtap.redaction.engine import HyperscanEngine, Trigger

    monkeypatch.setenv("CTXTAP_CACHE_DIR", str(tmp_path))
    stale, recent, other = (tmp_path / f"redaction-hs-{n}.db" for n in ("stale", "recent", "x"))
    for path in (stale, recent, other):
        path.write_bytes(b"an earlier rule set")
    os.utime(stale, (time.time() - 40 * 86400,) * 2)
    os.utime(other, (time.time() - 40 * 86400,) * 2)
    other.rename(tmp_path / "notes.db")  # not a database of ours: left alone
    HyperscanEngine([Trigger(rb"sk-ant-", som=True)])
    names = sorted(p.name for p in tmp_path.iterdir())
    assert "redaction-hs-stale.db" not in names and "redaction-hs-recent.db" in names and "notes.db" in names
    built = [n for n in names if n not in ("redaction-hs-recent.db", "notes.db")]
    assert len(built) == 1 and built[0].startswith("redaction-hs-")
    os.utime(tmp_path / built[0], (time.time() - 40 * 86400,) * 2)
    HyperscanEngine([Trigger(rb"sk-ant-", som=True)])  # loaded: marked as in use again
    assert (tmp_path / built[0]).stat().st_mtime > time.time() - 60


def _outer_branches(pattern: str) -> list[str]:
    """The branches of a regex's outermost alternation (`(?i)(?:A|B)` -> [A, B]), each with its
    groups cut out: what is left every match of that branch contains literally (escapes and
    character classes respected)."""
    body = pattern.removeprefix("(?i)")
    if body.startswith("(?:") and body.endswith(")"):
        body = body[3:-1]
    branches, kept, depth, i, in_class = [], [], 0, 0, False
    while i < len(body):
        c = body[i]
        step = 2 if c == "\\" else 1
        if in_class:
            in_class = c != "]"
        elif c == "[" and depth == 0:
            in_class = True
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            step = 1
        elif c == "|" and depth == 0:
            branches.append("".join(kept))
            kept = []
            i += 1
            continue
        if depth == 0 and c != ")":
            kept.append(body[i : i + step])
        i += step
    return [*branches, "".join(kept)]


def test_the_words_a_multiline_rule_needs_are_in_every_branch_of_its_regex() -> None:
    """`LINES_NEED` lets `lines_at` skip a rule's search where a word it names is missing: each word
    must stand outside every group in each branch of the rule's regex, so every match holds it."""
    from ctxtap.redaction.gitleaks import load_rules
    from ctxtap.redaction.gitleaks_match import LINES_NEED

    rules = {r.id: r for r in load_rules().rules}
    for rule_id, words in LINES_NEED.items():
        branches = _outer_branches(rules[rule_id].regex)
        assert len(branches) == 2, branches
        for branch in branches:
            for word in words:
                assert word.decode() in branch.lower(), (rule_id, word, branch)
