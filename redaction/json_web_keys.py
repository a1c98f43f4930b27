"""Private JSON Web Keys: the members of a JWK that hold its private part, by the format (RFC 7517/7518).

An authorization server's signing keys, a `jwks.json` fixture, a key printed by `jose` or `step`:
a JSON object with `"kty"` whose private members are base64url strings named `d` (RSA, EC,
OKP), `p`, `q`, `dp`, `dq`, `qi` (RSA's factors) or `k` (a symmetric `oct` key). One-letter names say
nothing to a credential-name rule, and the values are long base64url, which the token detectors cut
into pieces. The public members (`n`, `e`, `x`, `y`, `kid`) stay: a public key set is what a server
publishes.
"""

from __future__ import annotations

import re

from ctxtap.redaction.detector import Detector, TriggerHits, samples
from ctxtap.redaction.engine import Trigger
from ctxtap.redaction.spans import PRIORITY_FORMAT, Span

KIND = "private-key"
_REACH = 8192  # how far from `"kty"` the key's own braces may be (an RSA key of 4096 bits is about 3.2 KB)
_PRIVATE_MEMBER_RE = re.compile(rb'"(?:d|p|q|dp|dq|qi|k)"\s*:\s*"([A-Za-z0-9_\-]{16,}={0,2})"')

TRIGGERS: tuple[Trigger, ...] = (Trigger(rb'"kty"', literals=(b'"kty"',), window=0, som=True),)


def find_json_web_key_spans(data: bytes, hits: TriggerHits, out: list[Span]) -> None:
    """Append a span per private member's value of each JSON object that holds `"kty"`."""
    done = -1
    for start, _ in hits[0]:
        if start < done:
            continue
        # a JWK is one flat object (its arrays hold strings): its braces are the nearest around `"kty"`
        lo = data.rfind(b"{", max(0, start - _REACH), start)
        hi = data.find(b"}", start, start + _REACH)
        if lo < 0 or hi < 0 or data.find(b"}", lo, start) >= 0:
            continue
        for m in _PRIVATE_MEMBER_RE.finditer(data, lo, hi):
            out.append(Span(m.start(1), m.end(1), KIND, PRIORITY_FORMAT))
        done = hi


DETECTOR = Detector(
    "json-web-keys",
    TRIGGERS,
    find_json_web_key_spans,
    examples=samples(
        '{"kty": "RSA", "n": "<b64url:342>", "e": "AQAB", "d": "<b64url:342>", "p": "<b64url:171>", '
        '"q": "<b64url:171>", "dp": "<b64url:171>", "dq": "<b64url:171>", "qi": "<b64url:171>"}',
        '{"keys": [{"kty": "EC", "crv": "P-256", "x": "<b64url:43>", "y": "<b64url:43>", "d": "<b64url:43>"}]}',
        '{"kty":"oct","k":"<b64url:43>","alg":"HS256"}',
    ),
    near_misses=samples(
        '{"keys": [{"kty": "RSA", "kid": "2024-01", "use": "sig", "n": "<b64url:342>", "e": "AQAB"}]}',  # public
        '{"d": "2024-05-01T00:00:00Z", "k": "status_code_label_name"}',  # no `kty`: no key
    ),
)
