"""The format-based vendor-token detector: invented vendors' keys found, ordinary shapes left alone.

Heads here are made up (no rule set lists them), so only the structure can find them; recall on
held-out example families and the false-positive rate are `benchmarks/bench_token_detector.py`'s.
"""

from __future__ import annotations

import random
import string

import pytest

from ctxtap.redaction import Redactor
from ctxtap.redaction.vendor_tokens import crc32_base62, verify_run

ALNUM = string.ascii_letters + string.digits


def _r(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _invented(rng: random.Random) -> list[str]:
    return [
        f"qzv_{_r(rng, ALNUM, 36)}",
        f"kloppa-live-{_r(rng, ALNUM, 32)}",
        f"WXT_v2_{_r(rng, string.ascii_lowercase + string.digits, 40)}",
        f"brm-{_r(rng, string.hexdigits.lower()[:16], 48)}",  # `.` alone triggers nothing (see vendor_tokens)
        f"tnx_{_r(rng, string.ascii_letters, 34)}",  # letters only, as Hugging Face's are
        f"zorp_pat_{_r(rng, ALNUM + '_-', 60)}",  # a base64url body
        f"fmq2_{_r(rng, ALNUM, 20)}+{_r(rng, ALNUM, 20)}/{_r(rng, ALNUM, 10)}==",  # a base64 body
        # ids the vendor put in the key, then a short secret
        f"qvx-{_r(rng, string.digits, 11)}-{_r(rng, string.digits, 10)}-{_r(rng, 'abcdef', 3)}7{_r(rng, '0123456789abcdef', 8)}",
        f"zt_ak_{_r(rng, string.ascii_lowercase, 4)}5{_r(rng, string.ascii_lowercase + string.digits, 12)}",  # head, kind, 16
        # a head ending in a digit, then a dot and digits first: not a decimal fraction
        f"vx1.{_r(rng, string.digits, 4)}{_r(rng, string.ascii_uppercase, 2)}{_r(rng, ALNUM, 28)}",
    ]


@pytest.mark.parametrize("seed", range(5))
def test_keys_of_vendors_no_list_names_are_redacted(seed: int) -> None:
    redactor = Redactor(b"\x03" * 32, "vendor")
    for key in _invented(random.Random(seed)):
        out = redactor.redact_text(f"export SOMETHING={key}\nsee {key}.")
        assert key[6:18] not in out, key


@pytest.mark.parametrize("text", [
    "github.com/foo/bar v0.0.0-20241124373141-893a276f18ec h1:NLUjzeczUJdHaI4gxBOMs8MJGDz9xZichD",
    "order ORD-20241205-123456789-shipped and phone_+1-415-555-0132",
    "a pseudo-version v0.0.0-202412051200123-893a276f18ec and 2024-12-05-123456789",
    "'sr_yu.microsoftcp1251@cyrillic': 'sr_CS.CP1251',",  # a locale name, not a short body
    "zt_ak_abcdefghijklmnop",  # a head and a kind, but letters in a row are no key
])
def test_fields_and_numbers_are_not_keys(text: str) -> None:
    assert Redactor(b"\x03" * 32, "vendor").redact_text(text) == text


def test_a_valid_crc32_checksum_is_enough() -> None:
    """GitHub's and npm's scheme: CRC32 of the random part as six base62 digits at the end."""
    random_part = "az" * 15  # no entropy to speak of
    assert not verify_run(b"qzv_" + random_part.encode() + b"000000")
    assert verify_run(b"qzv_" + random_part.encode() + crc32_base62(random_part.encode()))


def test_a_keys_placeholder_goes_an_alphabet_alone_stays() -> None:
    """Docs and scanners' fixtures write a key with its alphabet written out: after a head it is a key's
    shape, and goes as one would; the alphabet on its own (a base64 table in code) stays."""
    redactor = Redactor(b"\x03" * 32, "vendor")
    lower, upper, digits = string.ascii_lowercase, string.ascii_uppercase, string.digits
    for key in (f"qzl_live_{lower[:24]}123456", f"qzs_{upper[:15]}{lower[:15]}{digits}", f"qzw-{digits}{lower[:16]}"):
        out = redactor.redact_text(f"the docs say to paste {key} there")
        assert key not in out and "[REDACTED:" in out, key
    table = f'"alphabet": "{upper}{lower}{digits}-_"'
    assert redactor.redact_text(table) == table


@pytest.mark.parametrize(
    "text",
    [
        "resp_e11ea717b1935bc5fda8f2cc65477d8f2c36bfe3d5f05d17",  # wire ids: no secret, analysis needs them
        '"tool_use_id": "toolu_01A09q90qw90lq917835lq9Hx"',
        "integrity sha512-3kQ9GQ5mGF2l5Jk8q6Yy0Xq1s8wZ7u2Yv0m1rRk3o9x2Q==",
        "self.cmp = bz2.BZ2Compressor()",
        "github.com/foo/bar v0.0.0-20241124373141-893a276f18ec h1:NLUjzeczUJdHaI4gxBOMs8MJGDz9xZichD",
        "//# sourceMappingURL=main.a1af608a1019e2ff468d.bundle.js.map",
        "def test_user_account_settings_request_handler_3(self) -> None:",
        "const userAccountSettingsRequestHandlerV2 = useAccountSettings();",
        "req-550e8400-e29b-41d4-a716-446655440000",
        '{"encrypted_content": "gAAAAABnX9c2-abcDEF123ghiJKL456mnoPQR789stuVWX0yz"}',
        '{"latency_ms": [19.360564538132063, 1370.4483300999054, 0.0000000000001234]}',  # decimal fractions
    ],
)
def test_ordinary_shapes_stay(text: str) -> None:
    assert Redactor(b"\x03" * 32, "vendor").redact_text(text) == text


@pytest.mark.parametrize("glue", ["~", "-", "_"])
def test_a_run_glued_to_a_token_is_judged_the_same_twice(glue: str) -> None:
    """A run too long to be a key (seventeen pieces, a Slack token glued on) is left whole; once the Slack
    token is a placeholder, what is left of the run must be left too, or redacting twice changes the text."""
    rng = random.Random(9)
    pieces = "_".join(_r(rng, ALNUM, 18) for _ in range(15))
    slack = f"xoxb-{_r(rng, string.digits, 12)}-{_r(rng, string.digits, 13)}-{_r(rng, ALNUM, 24)}"
    redactor = Redactor(b"\x03" * 32, "vendor")
    for text in (f"Aq29.{pieces}{glue}{slack}", f"{slack}{glue}Aq29.{pieces}"):
        once = redactor.redact_text(text)
        assert "[REDACTED:slack-" in once
        assert redactor.redact_text(once) == once


def _pieces_keys(rng: random.Random) -> list[str]:
    """Invented keys whose bodies no thirteen letters and digits in a row reach: base64url cut by its own `-`
    and `_`, and standard base64 whose first `+` or `/` comes early (or holds `/` alone)."""
    b64 = ALNUM + "+/"
    return [
        f"qzv_{_r(rng, ALNUM, 9)}-{_r(rng, ALNUM, 7)}_{_r(rng, ALNUM, 8)}",
        f"kloppa-{_r(rng, ALNUM, 11)}_{_r(rng, ALNUM, 10)}-{_r(rng, ALNUM, 5)}",
        f"fmq2_{_r(rng, ALNUM, 6)}+{_r(rng, b64, 40)}",
        f"wvk-{_r(rng, ALNUM, 9)}/{_r(rng, ALNUM, 12)}/{_r(rng, ALNUM, 14)}",
        f"tnx_{_r(rng, ALNUM, 20)}/{_r(rng, ALNUM, 20)}",
        f"zorp_{_r(rng, ALNUM, 4)}/{_r(rng, b64, 30)}==",
    ]


def test_bodies_in_short_pieces_are_redacted() -> None:
    """Drawn at random, a body's letters read as words now and then (`reads_as_words`, a few in a hundred at
    this length): nine in ten keys at least, each in every placement, and the text around them kept."""
    redactor = Redactor(b"k" * 32, "t")
    keys = [key for seed in range(10) for key in _pieces_keys(random.Random(seed))]
    kept = 0
    for key in keys:
        outs = [(text, redactor.redact_text(text)) for text in
                (f"the key is {key} for now", f'{{"output": "found {key}\\n"}}', f"X-Thing: {key}")]
        for text, out in outs:
            assert out.startswith(text[: text.index(key)]) and out.endswith(text[text.index(key) + len(key):]), out
        kept += all(key not in out for _, out in outs)
    assert kept >= 0.9 * len(keys), f"{kept} of {len(keys)}"


@pytest.mark.parametrize("text", [
    "cd node_modules/yaml2/dist/schema3/json8 && ls",  # a path: pieces of one case
    "gpu: NVIDIA-Tesla-V100S-PCIE-32GB ready, AMD-Instinct-MI300X-OAM",  # a product's name in pieces
    "color: var(--vscode-symbolIcon-numberForeground-2);",  # CSS variables: words
    "TLS_CHACHA20_POLY1305_SHA256 and ECDHE_RSA_WITH_AES_128_GCM_SHA256",  # constants
    "see src_dir/LoginHandler2/views/AccountSettings.tsx",  # a path with camelCase folders
])
def test_pieces_that_are_names_stay(text: str) -> None:
    assert Redactor(b"k" * 32, "t").redact_text(text) == text


def test_a_crypt_hash_is_left_to_the_password_hash_rule() -> None:
    """`.` and `/` in a crypt hash's alphabet: no base64 body of a key (the hash rule names it better)."""
    text = "('secret', '$5$rounds=1005$nacl$6Mo/TmGDrXxg.bMK9isRzyWH3a..6HnSVVsJMEX7ud/')"
    out = Redactor(b"k" * 32, "t").redact_text(text)
    assert "[REDACTED:password-hash:" in out and "vendor-token" not in out
