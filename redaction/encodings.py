"""Secrets hidden by percent-encoding: a connection string, a webhook or a PEM block inside a query value.

`?dsn=postgres%3A%2F%2Fapp%3As3cret%40db%2Fapp`, `?hook=https%3A%2F%2Fhooks.slack.com%2Fservices%2F...`
and `key=-----BEGIN%20RSA%20PRIVATE%20KEY-----%0AMIIE...` carry credentials
that no detector sees in their encoded form. A trigger finds the encoded
markers (`%3A%2F%2F`, an encoded `-----BEGIN`, `hooks.slack.com%2F`, a base64
run with `%2B`/`%2F`/`%3D` in it...); the
encoded run around it is decoded (twice for `%25`-encoded text), scanned with
every detector, and each secret found is mapped back onto the encoded bytes.
"""

from __future__ import annotations

from collections.abc import Callable

from ctxtap.redaction.detector import Detector, TriggerHits, samples
from ctxtap.redaction.engine import Trigger
from ctxtap.redaction.spans import PRIORITY_CONTEXT, Span

TRIGGERS: tuple[Trigger, ...] = (
    Trigger(rb"%3A%2F%2F", literals=(b"%3a%2f%2f",), window=0, caseless=True),
    Trigger(rb"%2D%2D%2D%2D%2DBEGIN|-----BEGIN(?:%20|\+)", literals=(b"begin",), window=20, caseless=True),
    Trigger(rb"(?:hooks\.slack\.com|discord(?:app)?\.com)%2F", literals=(b".com%2f",), window=20, caseless=True),
    Trigger(rb"%253A%252F%252F", literals=(b"%253a%252f%252f",), window=0, caseless=True),
    # A base64 token (`ABSK...`, a PEM body) with its `+`, `/` and `=` percent-encoded.
    Trigger(rb"[A-Za-z0-9_\-]{8}%(?:2[BbFf]|3[Dd])", literals=(b"%2b", b"%2f", b"%3d"), window=8, caseless=True),
)
# What an encoded run may contain: the characters a URL keeps plus `%XX`.
_RUN_CHARS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789%._~+-!*'()/:=@,$")
_HEX = frozenset(b"0123456789abcdefABCDEF")
_MAX_RUN = 65536


def _run(data: bytes, pos: int) -> tuple[int, int]:
    """The encoded value around `pos`: back to `=`/`&`/`?`/space/quote, forward to `&`/space/quote."""
    lo = pos
    while lo > 0 and data[lo - 1] in _RUN_CHARS and data[lo - 1] not in b"=" and pos - lo < _MAX_RUN:
        lo -= 1
    hi = pos
    n = len(data)
    while hi < n and data[hi] in _RUN_CHARS and hi - pos < _MAX_RUN:
        hi += 1
    return lo, hi


def percent_decode(data: bytes, plus_is_space: bool) -> tuple[bytes, list[int]]:
    """Decoded bytes and, for each, the offset in `data` it came from (plus one past the end)."""
    out = bytearray()
    origin: list[int] = []
    i = 0
    n = len(data)
    while i < n:
        c = data[i]
        if c == 0x25 and i + 2 < n and data[i + 1] in _HEX and data[i + 2] in _HEX:
            out.append(int(data[i + 1 : i + 3], 16))
            origin.append(i)
            i += 3
            continue
        out.append(0x20 if (c == 0x2B and plus_is_space) else c)
        origin.append(i)
        i += 1
    origin.append(n)
    return bytes(out), origin


def find_encoded_spans(
    data: bytes,
    hits: TriggerHits,
    out: list[Span],
    scan: Callable[[bytes], list[Span]],
) -> None:
    """Append spans (over the encoded bytes) of secrets found in decoded runs around the triggers."""
    done: list[tuple[int, int]] = []
    for found in hits:
        for start, end in found:
            pos = end - 1 if start < 0 else start
            if any(lo <= pos < hi for lo, hi in done):
                continue
            lo, hi = _run(data, pos)
            done.append((lo, hi))
            _scan_run(data, lo, hi, out, scan)


def _scan_run(data: bytes, lo: int, hi: int, out: list[Span], scan: Callable[[bytes], list[Span]]) -> None:
    raw = data[lo:hi]
    plus = b"BEGIN+" in raw.upper() or b"+PRIVATE+" in raw.upper()
    decoded, origin = percent_decode(raw, plus)
    if b"%25" in raw.upper():
        twice, origin2 = percent_decode(decoded, plus)
        decoded, origin = twice, [origin[o] for o in origin2]
    for span in scan(decoded):
        start = lo + origin[span.start]
        end = lo + origin[span.end] if span.end < len(origin) else hi
        out.append(Span(start, end, span.kind, min(span.priority, PRIORITY_CONTEXT), encoded=True))


# A decoder: the scanner hands it the whole scan (`redaction.detector`), run on the decoded run once
# without decoding again (a run decodes to its text; `%25` is decoded twice above).
DETECTOR = Detector(
    "percent-encoded",
    TRIGGERS,
    None,
    examples=samples(
        "GET /v1/connect?dsn=postgres%3A%2F%2Fapp%3A<mixed:12>%40db.internal%2Fapp&pool=4",
        "?hook=https%3A%2F%2Fhooks.slack.com%2Fservices%2FT<upper:8>%2FB<upper:10>%2F<alnum:24>",
    ),
    near_misses=(
        "GET /login?next=https%3A%2F%2Fexample.com%2Fdocs%2Fpage&lang=en",
        "?q=a%2Bb%3Dc&sort=name%2Fasc",
    ),
    decode=find_encoded_spans,
)
