"""A JSON Web Key's private members never reach disk, and the key's description stays (its type, id, curve).

The public members (`n`, `x`, `y`) are base64url drawn at random too: the token detectors may take them for
keys, which costs nothing (a public key is no evidence an analysis needs). The detector alone leaves a public
key set whole (its near miss in the registry)."""

from __future__ import annotations

import base64
import json
import random

from ctxtap.redaction import Redactor

PRIVATE = ("d", "p", "q", "dp", "dq", "qi", "k")


def _b64u(rng: random.Random, n: int) -> str:
    return base64.urlsafe_b64encode(rng.randbytes(n)).rstrip(b"=").decode()


def _keys(seed: int) -> list[dict]:
    rng = random.Random(seed)
    rsa = {"kty": "RSA", "kid": "sig-2024", "use": "sig", "n": _b64u(rng, 256), "e": "AQAB", "d": _b64u(rng, 256),
           "p": _b64u(rng, 128), "q": _b64u(rng, 128), "dp": _b64u(rng, 128), "dq": _b64u(rng, 128),
           "qi": _b64u(rng, 128)}
    ec = {"kty": "EC", "crv": "P-256", "x": _b64u(rng, 32), "y": _b64u(rng, 32), "d": _b64u(rng, 32)}
    okp = {"kty": "OKP", "crv": "Ed25519", "x": _b64u(rng, 32), "d": _b64u(rng, 32)}
    oct_ = {"kty": "oct", "k": _b64u(rng, 32), "alg": "HS256"}
    return [rsa, ec, okp, oct_]


def _check(out: str, keys: list[dict]) -> None:
    for key in keys:
        for name, value in key.items():
            fragments = [value[i : i + 8] for i in range(0, max(1, len(value) - 7))]
            if name in PRIVATE:
                assert not any(f in out for f in fragments), (key["kty"], name)
            elif name not in ("n", "x", "y"):
                assert f'"{name}": "{value}"' in out or f'"{name}":"{value}"' in out or f'\\"{name}\\": \\"{value}\\"' in out, (key["kty"], name)


def test_private_members_go_in_every_writing() -> None:
    redactor = Redactor(b"k" * 32, "t")
    keys = _keys(seed=1)
    jwks = {"keys": keys}
    for text, held in ((json.dumps(jwks), keys), (json.dumps(jwks, indent=2), keys),
                       (json.dumps(jwks, separators=(",", ":")), keys),
                       (json.dumps({"type": "tool_result", "content": json.dumps(jwks, indent=2)}), keys),  # escaped
                       (f"cat key.json\n{json.dumps(keys[0])}\n", keys[:1])):
        out = redactor.redact_text(text)
        _check(out, held)
        assert redactor.redact_text(out) == out
