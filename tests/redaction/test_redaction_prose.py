"""Credentials given in a sentence ("my password is ...") or a Markdown table row are redacted;
sentences and tables about them are not."""

from __future__ import annotations

import pytest

from ctxtap.redaction import Redactor
from ctxtap.redaction.engine import hyperscan_available
from tests.redaction_checks import assert_kept_everywhere, assert_redacted_everywhere

BACKENDS = ["python"] + (["hyperscan"] if hyperscan_available() else [])

FOUND = [
    ("my password is Xk9mP2qR7vL4zz, can you log in?", "Xk9mP2qR7vL4zz"),
    ("The database password is Qz&8<rT4>wK2.", "Qz&8<rT4>wK2"),
    ("the API key: Zt8Qm2Vx9Lp4Rk7W (keep it safe)", "Zt8Qm2Vx9Lp4Rk7W"),
    ('The admin passphrase will be "k@Zt8Q]m2V%x9L" from tomorrow.', "k@Zt8Q]m2V%x9L"),
    ("password \u2014 P@ssw0rd!42", "P@ssw0rd!42"),
    ("Use this access token: 7f3a9c2e1b8d4f60a5e2 for the staging API", "7f3a9c2e1b8d4f60a5e2"),
    ("the client secret is Zt8Qm2Vx9Lp4Rk7W", "Zt8Qm2Vx9Lp4Rk7W"),
    ("| Variable | Value |\n|---|---|\n| PORT | 8080 |\n| DB_PASSWORD | Qz&8<rT4>wK2 |\n", "Qz&8<rT4>wK2"),
    ("| `api_key` | `Zt8Qm2Vx9Lp4Rk7W` | set in CI |", "Zt8Qm2Vx9Lp4Rk7W"),
]

LEFT = [
    "the password is required",
    "The token is invalid. Please sign in again.",
    "Your password: ********",
    "the password is `$DB_PASSWORD` (from the environment)",
    "password is stored in /etc/app/secret.txt",
    "the password was changed on 2024-01-01",
    "The password is correct-horse-battery-staple",  # words only: a sentence reads the same
    "password is 12345678",
    "api_key = os.environ['API_KEY']",
    "host, port, access_key, secret_key = s3_server['connection']",
    "private_key: PKCS7PrivateKeyTypes,",
    "    token = binascii.a2b_hex(utf8(cookie))",
    'printf(&quot;Password is correct.&quot;);',
    "<code>{pem: &#x3C;string|buffer>[, passphrase: &#x3C;string>]}</code>",
    "mypassword is not a word anyone uses",
    "private key: load_key(path_to_key_2)",
    "<p>An invalid HTTP token was supplied.</p>",
    "| API_KEY | required | string |\n| DB_PASSWORD | ${DB_PASSWORD} |\n| JWT_SECRET | (generated at start) |",
    "| `STRIPE_SECRET_KEY` | sk_test_... | from the dashboard |\n| sort_key | abc12345xyz |",
    "if a || b_token || c_key2024 || d",
    "(?:COMPLETE|FALSE|INVALID|NULL|NUMBER|OBJECT|STRING|TRUE)|NULL_KEY|TEXTURE_(?:BLANK|DEFAULT|MAGIC)",
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("text, secret", FOUND)
def test_a_credential_in_a_sentence_is_redacted(backend: str, text: str, secret: str) -> None:
    assert_redacted_everywhere(Redactor(b"k" * 32, "prose", backend=backend), text, secret)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("text", LEFT)
def test_sentences_about_credentials_and_code_are_left_alone(backend: str, text: str) -> None:
    assert_kept_everywhere(Redactor(b"k" * 32, "prose", backend=backend), text)
