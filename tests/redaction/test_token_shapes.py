"""Self-identifying tokens of three more shapes (issue 37, item 2): bech32 secrets verified by their
checksum, signed JSON tokens verified by decoding, and a glued head before a random body. Written
from the structure; each shape's look-alikes in ordinary content must stay."""

from __future__ import annotations

import base64
import json
import random
import string

import pytest

from ctxtap.redaction.spans import Span
from ctxtap.redaction.token_shapes import (
    _CHARSET,
    _polymod,
    bech32_checks,
    bech32_secret_spans,
    dotted_spans,
    glued_head_spans,
    jwt_spans,
)

RNG = random.Random(37)


def bech32(hrp: str, n: int = 52, upper: bool = False, m: bool = False) -> str:
    """A bech32 (or bech32m) string with a valid checksum, of `n` random data characters."""
    data = [RNG.randrange(32) for _ in range(n)]
    values = [ord(c) >> 5 for c in hrp.lower()] + [0] + [ord(c) & 31 for c in hrp.lower()] + data
    poly = _polymod([*values, 0, 0, 0, 0, 0, 0]) ^ (0x2BC830A3 if m else 1)
    checksum = [(poly >> 5 * (5 - i)) & 31 for i in range(6)]
    text = hrp.lower() + "1" + "".join(_CHARSET[d] for d in data + checksum)
    return text.upper() if upper else text


def _b64(obj: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()


def jwt() -> str:
    sig = base64.urlsafe_b64encode(RNG.randbytes(32)).rstrip(b"=").decode()
    return f"{_b64({'alg': 'HS256', 'typ': 'JWT'})}.{_b64({'sub': 'u-17', 'iat': 1764000000})}.{sig}"


def _found(finder, text: str) -> list[str]:
    out: list[Span] = []
    data = text.encode()
    finder(data, out)
    return [data[s.start:s.end].decode() for s in out]


def _random(alphabet: str, n: int) -> str:
    while True:
        body = "".join(RNG.choice(alphabet) for _ in range(n))
        if sum(c.isdigit() for c in body) >= 3 and sum(c.isalpha() for c in body) >= 3:
            return body


SECRETS = [
    (bech32_secret_spans, bech32("AGE-SECRET-KEY-", 52, upper=True)),
    (bech32_secret_spans, bech32("nsec", 52)),
    (bech32_secret_spans, bech32("zsec", 40, m=True)),
    (jwt_spans, jwt()),
    (glued_head_spans, "AKIA" + _random(string.ascii_uppercase + string.digits, 16)),
    (glued_head_spans, "QZK" + _random(string.ascii_uppercase + string.digits, 30)),
    # glued heads of other alphabets: both cases at random, a capital head on a lower-case body, a
    # lower-case head on hex, a digit first (no head at all), a base64url body
    (glued_head_spans, "QVXm" + _random(string.ascii_letters + string.digits, 36)),
    (glued_head_spans, "ZKTr" + _random(string.ascii_lowercase + string.digits, 40)),
    (glued_head_spans, "WQ" + _random("0123456789abcdef", 32)),
    (glued_head_spans, "zork" + _random("0123456789abcdef", 32)),
    (glued_head_spans, "7" + _random(string.ascii_letters + string.digits, 41)),
    (glued_head_spans, "QzWx" + _random(string.ascii_letters + string.digits, 20) + "_" + _random(string.ascii_letters + string.digits, 14)),
    # a labelled key wrapped in base64 (padded, and not): the text it decodes to holds a key
    (glued_head_spans, base64.b64encode(b"QuuxAPIKey-" + _random(string.ascii_letters + string.digits, 32).encode()
                                        + b"x").decode()),
    (glued_head_spans, base64.b64encode(b"zorp:" + _random(string.ascii_letters + string.digits, 30).encode()).decode()),
    (dotted_spans, "QZ." + _random(string.ascii_letters + string.digits, 22) + "."
     + _random(string.ascii_letters + string.digits + "-_", 43)),
    (dotted_spans, "pat." + ".".join(_random(string.ascii_letters + string.digits, 24) for _ in range(3))),
]


@pytest.mark.parametrize(("finder", "secret"), SECRETS, ids=lambda v: v if isinstance(v, str) else v.__name__)
@pytest.mark.parametrize("placed", ["{}", "token={} ok", '{{"k": "{}"}}', "the key {}.", "X-Thing: {}\r\n"])
def test_each_shape_is_found_whole_wherever_it_is_placed(finder, secret: str, placed: str) -> None:
    assert _found(finder, placed.format(secret)) == [secret]


def test_the_checksum_decides_and_an_address_is_public() -> None:
    key = bech32("AGE-SECRET-KEY-", 52, upper=True)
    broken = key[:-1] + ("Q" if key[-1] != "Q" else "P")
    assert bech32_checks("AGE-SECRET-KEY-", key.split("1", 1)[1]) and _found(bech32_secret_spans, broken) == []
    mixed = key[:20] + key[20:].lower()
    assert _found(bech32_secret_spans, mixed) == []
    for public in (bech32("bc", 39), bech32("npub", 52), bech32("cosmos", 38)):
        assert _found(bech32_secret_spans, f"send to {public} today") == [], public


LOOKALIKES = [
    "SHA1DA39A3EE5E6B4B0D3255BFEF95601890AFD80709",  # an upper-case digest with a head
    "HTTPSCONNECTIONPOOLMANAGER",
    "ID12345678901234567890",  # digits only after the head
    "9f1c2e7a4b3d4e8f9a0b1c2d3e4f5a6b",  # a UUID without dashes: 32 lower-case hex, no head
    "01ARZ3NDEKTSV4RRFFQ69G5FAV",  # a ULID
    "ABCDEFGHIJKLMNOPQRSTUVWXYZ012345",  # an alphabet written out
    "eyJhbGciOiJIUzI1NiJ9.notjson.c2lnbmF0dXJlc2lnbmF0dXJl",  # the payload decodes to no JSON
    "TODOFIXMEXXXXXXXXXXXXXXXX1",
    "MD5:D41D8CD98F00B204E9800998ECF8427E",
    "AWS_SECRET_ACCESS_KEY",
    "v1.2.3-0.20241124373141-893a276f18ec",
    "main.a1af608a1019e2ff468d.bundle.js",  # a file name with its hash
    "com.example.orderservice.PaymentGatewayClient",  # a package name
    "d1234567890abcdefgh.cloudfront.net.example",
    "font: 12px/1.5 HelveticaNeue, ARIALMT2000XYZ",
    "eyJyaCI6IjNhYzg1ZGY4NzViMGY3ZDIiLCJmZWF0dXJlX25hbWUiOiJjbWRfbG9hZCJ9",  # base64 of JSON: data, not a key
    "c2VlIHRoZSBsb2cgZm9yIGRldGFpbHMgYW5kIHRyeSBhZ2Fpbg",  # base64 of a sentence
    "getUserAccountSettings2FactorHandler",  # camelCase with a digit
    "da39a3ee5e6b4b0d3255bfef95601890afd80709",  # a lower-case digest: no head
    "sha1da39a3ee5e6b4b0d3255bfef95601890afd80709",  # a digest's name glued to it
    "00000000A0A0AAAABaCb00",  # one character over and over
    'h1:NLUjzeczUJdHaI4gxBOMs8MJGDz9xZichD and sha256:Ab3xK9mQ2pL7vR4tY8wZ1cN6bH5jF0gD',  # digests by label
    '"next_page_token": "ME3ILWPOAmMMynF0uOB17FJUYi84mvpIHbXYzduh"',  # a page token: its name says so
    '"responseId": "mBFYaPmNB7yzkdUPt6K2qA0XvLq"',  # a wire id
    # base64 of JSON whose random values are ids by their names (a page cursor, telemetry), padded
    base64.b64encode(json.dumps({"last_id": "msg_01AbCdEfGhIjKlMnOpQrStUv",
                                 "anonymousId": "x7Kq9ZmP2vLw8RtYn3Bc5HdJfE0gA"}).encode()).decode(),
    "QWxhZGRpbjpvcGVuIHNlc2FtZQ==",  # base64 of a sentence with padding
    "VARIABLENAME0123ABCD=value",  # a name before its value
]


@pytest.mark.parametrize("text", LOOKALIKES)
def test_look_alikes_in_ordinary_content_stay(text: str) -> None:
    for finder in (bech32_secret_spans, jwt_spans, glued_head_spans, dotted_spans):
        assert _found(finder, f"see {text} here") == [], finder.__name__
