"""Self-identifying tokens of the shapes the head-and-separator detector does not see.

`vendor_tokens` finds a head, a separator and a random body. Vendors issue keys in more
shapes, each recognisable from its structure rather than from a list of vendors:

- **Bech32 with a head that calls itself a secret** (`AGE-SECRET-KEY-1…`, `nsec1…`): the body
  carries a BCH checksum over the head, verified here, so a random run never passes. Heads that
  name an address (`bc1`, `npub1`, `cosmos1`) are public and stay.
- **Signed JSON tokens** (`eyJ….eyJ….sig`): a JWT's first two segments are base64url JSON
  objects, the first naming its algorithm; checked by decoding, not by the `eyJ` alone.
- **A glued head** (`AKIA…`): two to five capitals followed directly by a long body of capitals
  and digits (base32/base36); or 40 lower-case letters and digits or more (base36, neither hex nor
  base32), whatever head they start with. The body must look drawn at random: both letters and
  digits, near its alphabet's entropy, no long runs of one class, no upper-case hex (a digest). A glued head before a
  lower-case hex body (Twilio's `SK…`) is left to the catalogues: its trigger doubled this
  detector's cost.
- **A head and dotted random segments** (`SG.<22>.<43>`, `pat.<id>.<id>.<secret>`): each segment
  mixes upper, lower and digits at about base62's entropy (file names with a hash, package and
  domain names have words between their dots).
- **A timestamp-signed value** (`<payload>.<time>.<signature>`, the layout of `itsdangerous`,
  Flask's and Discord's tokens): a base64url payload, four bytes of issue time in six base64url
  characters that decode to a time between 2012 and 2040 (counted from 1970 or from 2011, the two
  epochs in use), and a random base64url signature of 27 characters or more (HMAC-SHA1 and up).
- **A number's id, a colon and the secret** (`<bot id>:<secret>`, Telegram's layout): six to twelve
  digits, then thirty base64url characters or more of both cases and digits drawn at random.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections import Counter
from functools import lru_cache

from ctxtap.redaction.detector import Detector, sample
from ctxtap.redaction.detectors import after_escape
from ctxtap.redaction.engine import Trigger
from ctxtap.redaction.entropy import expected_entropy, shannon_entropy
from ctxtap.redaction.false_positives import (
    all_classes,
    camel_case_name,
    decoded_text,
    digit_count,
    has_digit,
    labelled_digest,
    names_no_secret,
    reads_as_words,
)
from ctxtap.redaction.spans import PRIORITY_GENERIC, Span
from ctxtap.redaction.vendor_tokens import checksum_tail_end, verify_run

KIND = "vendor-token"

# Each shape is verified in a window around its trigger's matches, never over the whole body: a
# big body with one match costs a window, not a pass.
def _matches(pattern: re.Pattern[bytes], data: bytes, hits: list[tuple[int, int]] | None, before: int,
             after: int):  # noqa: ANN202 - an iterator of matches
    """The pattern's matches in the windows around the hits (the whole body when no hits are given)."""
    if hits is None:
        yield from pattern.finditer(data)
        return
    last = -1
    for lo, hi in _windows(data, hits, before, after):
        for m in pattern.finditer(data, lo, hi):
            if m.start() >= last:
                last = m.end()
                yield m


_RUN_TAIL = re.compile(rb"[A-Za-z0-9_.+/=-]*")
MAX_TOKEN = 16384


def _windows(data: bytes, hits: list[tuple[int, int]], before: int, after: int) -> list[tuple[int, int]]:
    """Merged windows [end - before, end + after) around the hits' ends."""
    out: list[tuple[int, int]] = []
    for _, end in hits:
        n = len(data)
        lo, hi = max(0, end - before), min(n, end + after)
        hi = _RUN_TAIL.match(data, hi, min(n, hi + MAX_TOKEN)).end()  # never cut a token: its end decides
        if out and lo <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


# --- bech32 ----------------------------------------------------------------------------------

_CHARSET = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
_CHARSET_INDEX = {c: i for i, c in enumerate(_CHARSET)}
_BECH32_CONSTS = (1, 0x2BC830A3)  # bech32, bech32m
_BECH32_RE = re.compile(rb"(?<![A-Za-z0-9])([A-Za-z][A-Za-z0-9-]{0,40})1([02-9ac-hj-np-zAC-HJ-NP-Z]{38,})(?![A-Za-z0-9])")
_SECRET_HEAD = re.compile(r"(?i)secret|sec$|priv|^sk|key")


def _polymod(values: list[int]) -> int:
    generator = (0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3)
    chk = 1
    for v in values:
        top = chk >> 25
        chk = (chk & 0x1FFFFFF) << 5 ^ v
        for i, g in enumerate(generator):
            chk ^= g if (top >> i) & 1 else 0
    return chk


def bech32_encode(hrp: str, data: list[int]) -> str:
    """`hrp` + `1` + the 5-bit `data` and its bech32 checksum (lower case): how such keys are written."""
    values = [ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp] + data
    poly = _polymod([*values, 0, 0, 0, 0, 0, 0]) ^ 1
    return hrp + "1" + "".join(_CHARSET[d] for d in data + [(poly >> 5 * (5 - i)) & 31 for i in range(6)])


def bech32_checks(hrp: str, data: str) -> bool:
    """The BCH checksum of a bech32 or bech32m string (one case throughout) holds."""
    if not (hrp + data).islower() and not (hrp + data).isupper():
        return False
    hrp, data = hrp.lower(), data.lower()
    values = [ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp] + [_CHARSET_INDEX[c] for c in data]
    return _polymod(values) in _BECH32_CONSTS


def bech32_secret_spans(data: bytes, out: list[Span], hits: list[tuple[int, int]] | None = None) -> None:
    for m in _matches(_BECH32_RE, data, hits, 120, 200):
        hrp, body = m.group(1).decode(), m.group(2).decode()
        if _SECRET_HEAD.search(hrp.rstrip("-")) and bech32_checks(hrp, body):
            out.append(Span(m.start(), m.end(), KIND, PRIORITY_GENERIC))


# --- JWT ---------------------------------------------------------------------------------------

_JWT_RE = re.compile(rb"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{16,}(?![A-Za-z0-9_-])")


def _b64url_json(segment: bytes) -> object:
    try:
        raw = base64.urlsafe_b64decode(segment + b"=" * (-len(segment) % 4))
        return json.loads(raw)
    except (binascii.Error, ValueError):
        return None


def jwt_spans(data: bytes, out: list[Span], hits: list[tuple[int, int]] | None = None) -> None:
    for m in _matches(_JWT_RE, data, hits, 2048, 64):  # the trigger is the payload's start: the header is before it
        header, payload, _ = m.group(0).split(b".", 2)
        head = _b64url_json(header)
        if isinstance(head, dict) and "alg" in head and isinstance(_b64url_json(payload), dict):
            out.append(Span(m.start(), m.end(), KIND, PRIORITY_GENERIC))


# A token's start: no token character before it, or a JSON string's escaped line break or tab (`\\nAKIA…`
# in a tool result's raw bytes), which these shapes read without the string being opened.

# --- claims behind a head ----------------------------------------------------------------------

_CLAIMS_RE = re.compile(
    rb"(?:(?<![A-Za-z0-9_./+-])|(?<=\\[nrt]))[A-Za-z][A-Za-z0-9]{1,12}[_-](eyJ[A-Za-z0-9+/=_-]{16,})(?![A-Za-z0-9+/=_-])"
)
_CLAIM_START = re.compile(rb'\{\s*"[A-Za-z0-9_$.-]{1,40}"\s*:')


def _claims_json(body: bytes) -> bool:
    """Does the body start as a base64 (standard or url-safe) JSON object with a named first field?"""
    chunk = body[: len(body) // 4 * 4][:64].replace(b"-", b"+").replace(b"_", b"/")
    try:
        raw = base64.b64decode(chunk, validate=True)
    except (binascii.Error, ValueError):
        return False
    return _CLAIM_START.match(raw) is not None


def claims_spans(data: bytes, out: list[Span], hits: list[tuple[int, int]] | None = None) -> None:
    """`ops_eyJ…`, `sntrys_eyJ…`: a head and a separator before a base64 JSON object (the token carries
    its claims, as a JWT's payload does), checked by decoding its start."""
    for m in _matches(_CLAIMS_RE, data, hits, 24, 64):
        if _claims_json(m.group(1)):
            out.append(Span(m.start(), m.end(), KIND, PRIORITY_GENERIC))


# --- glued heads -------------------------------------------------------------------------------

# A run of token characters that starts a token (nothing token-like before it, or a JSON escape):
# a letter, seven more letters or digits, then base64url up to 256 in all, ending at a boundary.
_GLUED_RUN_RE = re.compile(rb"[A-Za-z0-9]{8}[A-Za-z0-9_-]{12,248}")
GLUED_TRIGGER = rb"(?:^|[^A-Za-z0-9_./+~-])[A-Za-z0-9]{20}"  # its end is 20 past the run's start
_GLUED_TRIGGER_RE = re.compile(GLUED_TRIGGER)
_AFTER_RUN = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_/+=~-")
_ALNUM = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_UPPER_GLUED_RE = re.compile(rb"([A-Z]{2,5})([A-Z0-9]{16,64})")
_UPPER_HEAD_RE = re.compile(rb"[A-Z]{1,6}(?=[a-z0-9])")
_LOWER_HEAD_RE = re.compile(rb"[a-z]{2,8}(?=[0-9a-f]{24})")
_HEX_LOWER = re.compile(rb"[0-9a-f]+")
_CLASS_RUN = re.compile(rb"[A-Z]{9}|[0-9]{9}|[a-f]{9}")
_DIGIT_RUN = re.compile(rb"[0-9]{9}")
_HEX_DIGIT_RUN = re.compile(rb"[0-9]{14}")
_UPPER_HEX = re.compile(rb"[0-9A-F]+")
# Heads that name a digest, not a key (`SHA256` glued to its hex).
_DIGEST_HEADS = frozenset((b"sha", b"md", b"crc", b"xxh", b"blake", b"hash", b"digest", b"checksum", b"commit"))


_STEP_UP = bytes(range(1, 256)) + b"\x00"  # each byte's successor: `a` -> `b`


def _ascending(body: bytes) -> bool:
    """An alphabet written out (`ABCDEFGH...234567`): a third of the steps go up by one."""
    following = body[1:]
    return sum(1 for a, b in zip(body.translate(_STEP_UP), following, strict=False) if a == b) * 3 >= len(body)


def _drawn_at_random(body: bytes) -> bool:
    """Letters and a digit at least, no number of nine digits, letters that are no words, entropy near
    the alphabet's (base32 keys may hold a single digit and long runs of capitals)."""
    digits = digit_count(body)
    if digits < 1 or len(body) - digits < 2 or _DIGIT_RUN.search(body) or _UPPER_HEX.fullmatch(body):
        return False  # an upper-case hex run is a digest (`SHA1DA39A3EE...`), not a key
    if shannon_entropy(body) < 0.8 * expected_entropy(32 if digits * 5 < len(body) else 36, len(body)):
        return False
    return not reads_as_words(body) and not _ascending(body)  # words, or an alphabet written out


_CLASS_SEGMENTS = re.compile(rb"[A-Z]+|[a-z]+|[0-9]+")


def _repeats(body: bytes) -> bool:
    """One character far more often than chance would put it (`00000000A0A0AAAA...`)."""
    return max(Counter(body).values()) > max(3, len(body) // 8)


def _mixed_random(body: bytes) -> bool:
    """Upper, lower and digits drawn at random (base62, base64url): entropy near the alphabet's, the class
    changing at most characters, not words. camelCase names change class once a word and read as words.
    Cheapest checks first: most runs that reach here are names."""
    n = len(body)
    if len(_CLASS_SEGMENTS.findall(body)) * 100 < 40 * n + 100:  # class changes = segments - 1
        return False
    if shannon_entropy(body) < 0.85 * expected_entropy(64 if b"_" in body or b"-" in body else 62, n):
        return False
    return not (_repeats(body) or reads_as_words(body) or _ascending(body) or camel_case_name(body))


_TEXT_TOKEN_RE = re.compile(rb"[A-Za-z0-9_.~\-]{20,}")


@lru_cache(maxsize=1024)
def carries_key(text: bytes) -> bool:
    """Does decoded text hold a key of its own, as the token detectors judge one in the open (a labelled key,
    `<Vendor>APIKey-<key>` or `<id>:<key>`, wrapped in base64 as some vendors issue theirs)? Values of id fields
    do not count. Remembered: telemetry resends the same few texts (cleared with the scanner's caches)."""
    for m in _TEXT_TOKEN_RE.finditer(text):
        token = m.group(0).strip(b"_.~-")
        if (verify_run(token) or _GLUED_RUN_RE.fullmatch(token) is not None and glued_key(token)) and (
                not names_no_secret(text, m.start())):
            return True
    return False


def _one_case_random(head: bytes, body: bytes) -> bool:
    """A head glued to a body of one case and digits (base36 or hex): the body's digits and letters mixed,
    near its alphabet's entropy, no words, no run of nine digits (a number; in hex, where ten of sixteen
    characters are digits and a third of random bodies hold such a run, fourteen)."""
    if head.lower().rstrip(b"0123456789") in _DIGEST_HEADS:
        return False
    digits = digit_count(body)
    n = len(body)
    hex_body = _HEX_LOWER.fullmatch(body) is not None or _UPPER_HEX.fullmatch(body) is not None
    if not 2 <= digits <= n - 4 or (_HEX_DIGIT_RUN if hex_body else _DIGIT_RUN).search(body) or _ascending(body):
        return False
    if hex_body:
        return shannon_entropy(body) >= 0.85 * expected_entropy(16, n)
    return not reads_as_words(body) and shannon_entropy(body) >= 0.85 * expected_entropy(36, n)


@lru_cache(maxsize=4096)
def glued_key(run: bytes) -> bool:
    """Is this bounded run (no separator in its first eight characters) a key whose head is glued to its
    body: capitals then base32 (`AKIA...`), a capital head then a lower-case or hex body (`AKCp...`,
    `SK` + hex), a lower-case head then hex (`dapi` + hex), or letters and digits of both cases at random
    throughout (`EAAM9GOn...`, `AIza...`)?"""
    body = run.replace(b"_", b"").replace(b"-", b"")
    upper = body.lower() != body
    lower = body.upper() != body
    if run[0] <= 57:  # a digit first: no head, so only a body drawn at random (both cases, or base36)
        if not upper:
            return _lower_base36(run)
        return upper and lower and digit_count(body) * 2 <= len(body) and _random_or_carrier(run, body)
    if not lower:
        m = _UPPER_GLUED_RE.fullmatch(body)
        return m is not None and _drawn_at_random(m.group(2))
    m = _UPPER_HEAD_RE.match(body)
    if m is not None and body[m.end():].upper() != body[m.end():] and body[m.end():].lower() == body[m.end():]:
        return _one_case_random(m.group(0), body[m.end():])
    if not upper:
        m = _LOWER_HEAD_RE.match(body)
        if m is not None and _HEX_LOWER.fullmatch(body, m.end()) is not None and not _HEX_LOWER.fullmatch(m.group(0)):
            return _one_case_random(m.group(0), body[m.end():])
        return _lower_base36(run)
    return has_digit(body) and _random_or_carrier(run, body)


LOWER_BASE36_MIN = 40
_BASE32_LOWER = re.compile(rb"[a-z2-7]+")


def _lower_base36(run: bytes) -> bool:
    """Lower-case letters and digits drawn at random, 40 or more and no separator (NuGet's `oy2…`, whatever
    head it has): no hex (a digest), no base32 (an IPFS CID, an onion address: content addresses, public),
    no bech32 whose checksum holds (an address), no word, near base36's entropy. Shorter runs of this
    alphabet are ids (cuid, nanoid) as often as keys."""
    return (len(run) >= LOWER_BASE36_MIN and run.isalnum() and _HEX_LOWER.fullmatch(run) is None
            and _BASE32_LOWER.fullmatch(run) is None and not _bech32(run) and _one_case_random(b"", run))


def _bech32(run: bytes) -> bool:
    """A bech32 string whose checksum holds: an address (`bc1q…`) or a key the bech32 shape judges by its head."""
    m = _BECH32_RE.fullmatch(run)
    return m is not None and bech32_checks(m.group(1).decode(), m.group(2).decode())


def _random_or_carrier(run: bytes, body: bytes) -> bool:
    """Both cases and digits at random; or base64 of text, a key only when the text holds one (base64 of
    JSON or prose stays: Claude Code's telemetry carries it)."""
    text = decoded_text(run)
    return _mixed_random(body) if text is None else carries_key(text)


def glued_head_spans(data: bytes, out: list[Span], hits: list[tuple[int, int]] | None = None) -> None:
    """Runs that start where the trigger saw a token start, kept when `glued_key` says so."""
    n = len(data)
    done = -1
    ends = [end for _, end in hits] if hits is not None else [m.end() for m in _GLUED_TRIGGER_RE.finditer(data)]
    for end in ends:
        start = end - 20
        start = after_escape(data, start, end)  # `\\nAKIA...`, `\\u0022AKIA...`, `%3AAAH...`: after the escape
        if start < done:
            continue
        m = _GLUED_RUN_RE.match(data, start)
        if m is None:
            continue
        stop = end = m.end()
        done = stop
        if stop < n and data[stop] == 0x3D:  # `=`: padding, so the run is base64 (or a name before its value)
            end = checksum_tail_end(data, stop)  # or a checksum after the key (`…=0BA1C2D3`)
            if end < 0:
                _padded_carrier(data, start, stop, out)
                continue
        elif stop < n and (data[stop] in _AFTER_RUN or (data[stop] == 0x2E and stop + 1 < n and (
                data[stop + 1] in _ALNUM or data.startswith(b"[REDACTED:", stop + 1)))):
            continue  # longer than a key (base64, a path, a dotted name, a token redacted before)
        while stop > start and data[stop - 1] in b"_-" and end == stop:
            stop = end = stop - 1
        if stop - start in (64, 76) and (data[stop : stop + 1] in (b"\n", b"\r") or data.startswith(b"\\n", stop)):
            continue  # a full line of an armored block (a certificate, a public key): PEM and MIME widths
        run = data[start:stop]
        if not has_digit(run) or not glued_key(run):
            continue  # every glued shape holds a digit: names and words (`RawDescriptionHelpFormatter`) do not
        if labelled_digest(data, start):
            continue
        if not run.isupper() and names_no_secret(data, start):
            continue  # a wire id or a page token (`"responseId": "…"`); capitals after `key_id=` are a key's id
        out.append(Span(start, end, KIND, PRIORITY_GENERIC))


def _padded_carrier(data: bytes, start: int, stop: int, out: list[Span]) -> None:
    """A run padded with `=` is base64: a key when it is base64 of text holding one (`carries_key`)."""
    end = stop + 1 + (data[stop + 1 : stop + 2] == b"=")
    if end < len(data) and data[end] in _AFTER_RUN:
        return  # a name and its value (`NAME=value`), or longer base64
    text = decoded_text(data[start:end], (0,))  # padded: whole from its start
    if text is not None and carries_key(text) and not names_no_secret(data, start):
        out.append(Span(start, end, KIND, PRIORITY_GENERIC))


# --- dotted ------------------------------------------------------------------------------------

_DOTTED_RE = re.compile(rb"(?<![A-Za-z0-9_.-])[A-Za-z][A-Za-z0-9]{1,7}((?:\.[A-Za-z0-9_-]{16,}){2,3})(?![A-Za-z0-9_-]|\.[A-Za-z0-9_-])")
def _random_segment(segment: bytes) -> bool:
    """Upper, lower and digits mixed (base62/base64url), near that alphabet's entropy."""
    if not all_classes(segment) or _CLASS_RUN.search(segment):
        return False
    return shannon_entropy(segment) >= 0.85 * expected_entropy(62, len(segment))


def dotted_spans(data: bytes, out: list[Span], hits: list[tuple[int, int]] | None = None) -> None:
    """`SG.<22>.<43>`, `pat.<id>.<id>.<secret>`: a short head, then two or three random segments after
    dots (a JWT's segments start `eyJ` and are found as one above)."""
    for m in _matches(_DOTTED_RE, data, hits, 260, 80):
        segments = m.group(1)[1:].split(b".")
        if not m.group(1).startswith(b".eyJ") and all(_random_segment(seg) for seg in segments):
            out.append(Span(m.start(), m.end(), KIND, PRIORITY_GENERIC))


# --- timestamp-signed ---------------------------------------------------------------------------

# the same pattern as the Discord format's trigger (`detectors.py`): the engine's pass costs no more
SIGNED_TRIGGER = rb"\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27}"
_SIGNED_RE = re.compile(rb"(?<![A-Za-z0-9_.-])(\.?[A-Za-z0-9_-]{16,1024})\.([A-Za-z0-9_-]{6})\.([A-Za-z0-9_-]{27,86})"
                        rb"(?![A-Za-z0-9_-]|\.[A-Za-z0-9_-])")
_ISSUED = (1325376000, 2208988800)  # 2012-01-01 to 2040-01-01
_EPOCHS = (0, 1293840000)  # seconds since 1970, or since 2011 (itsdangerous before 1.0, Discord)


def _issue_time(field: bytes) -> bool:
    """Do six base64url characters hold four bytes of a time of issue (big-endian seconds)?"""
    try:
        raw = base64.urlsafe_b64decode(field + b"==")
    except (binascii.Error, ValueError):
        return False
    seconds = int.from_bytes(raw[:4], "big")
    return any(_ISSUED[0] <= seconds + epoch < _ISSUED[1] for epoch in _EPOCHS)


def signed_spans(data: bytes, out: list[Span], hits: list[tuple[int, int]] | None = None) -> None:
    """`<payload>.<time>.<signature>`: kept when the time decodes to one of issue and the signature
    is random (its payload may be anything: an id, JSON, compressed data)."""
    for m in _matches(_SIGNED_RE, data, hits, 1100, 60):
        if _issue_time(m.group(2)) and _mixed_random(m.group(3)) and not reads_as_words(m.group(1)):
            out.append(Span(m.start(), m.end(), KIND, PRIORITY_GENERIC))


# --- grouped ------------------------------------------------------------------------------------

_GROUPED_RE = re.compile(rb"(?:(?<![A-Za-z0-9_.+/-])|(?<=\\[nrt]))[A-Z0-9]{1,8}(?:-[A-Z0-9]{4,12}){4,10}(?![A-Za-z0-9_+/=-])")
_HEX_GROUPS = re.compile(rb"[0-9A-F-]+")


def grouped_spans(data: bytes, out: list[Span], hits: list[tuple[int, int]] | None = None) -> None:
    """`A3-ASWWYB-798JRY-LJVD4-…`: a key read out in five or more dashed groups of capitals and digits
    (licence and account keys). Upper-case hex in groups is a UUID or a digest and stays; so do part
    numbers and dates, which are mostly digits or words."""
    for m in _matches(_GROUPED_RE, data, hits, 40, 80):
        run = m.group(0)
        body = run.replace(b"-", b"")
        digits = digit_count(body)
        if (_HEX_GROUPS.fullmatch(run) or len(body) < 24 or not 3 <= digits <= len(body) - 8
                or reads_as_words(body)):
            continue
        if shannon_entropy(body) >= 0.85 * expected_entropy(36, len(body)):
            out.append(Span(m.start(), m.end(), KIND, PRIORITY_GENERIC))


# --- a number's id, a colon, the secret ---------------------------------------------------------

_NUMBERED_RE = re.compile(rb"(?:(?<![A-Za-z0-9_.:/+-])|(?<=\\[nrt]))[0-9]{6,12}:([A-Za-z0-9_-]{30,128})(?![A-Za-z0-9_+/=-])")


def numbered_spans(data: bytes, out: list[Span], hits: list[tuple[int, int]] | None = None) -> None:
    """`<bot id>:<secret>` (Telegram's bot tokens, an app's `id:secret`): a number of six to twelve digits, a
    colon, then thirty characters of base64url or more drawn at random, both cases and digits. Times
    (`12:30`), ports, line numbers and `key:value` pairs of words never have such a body."""
    for m in _matches(_NUMBERED_RE, data, hits, 40, 140):
        body = m.group(1).replace(b"-", b"").replace(b"_", b"")
        if all_classes(body) and _mixed_random(body):
            out.append(Span(m.start(), m.end(), KIND, PRIORITY_GENERIC))


def find_token_shape_spans(data: bytes, hits: list[list[tuple[int, int]]], out: list[Span]) -> None:
    """Append the spans of the shapes; `hits` are the triggers' (the body is scanned only when
    one of them matched)."""
    bech32, jwt, claims, glued, dotted, grouped, signed, numbered = hits
    if bech32:
        bech32_secret_spans(data, out, list(bech32))
    if jwt:
        jwt_spans(data, out, list(jwt))
    if claims:
        claims_spans(data, out, list(claims))
    if glued:
        glued_head_spans(data, out, list(glued))
    if dotted:
        dotted_spans(data, out, list(dotted))
    if grouped:
        grouped_spans(data, out, list(grouped))
    if signed:
        signed_spans(data, out, list(signed))
    if numbered:
        numbered_spans(data, out, list(numbered))


def _examples() -> tuple[str, ...]:
    """Made when the module loads (no key stands in the source): a bech32 secret with its checksum, a
    signed JSON token, glued heads, dotted and grouped keys, and a timestamp-signed value."""
    words = [ord(c) & 31 for c in sample("<lower:52>")]
    age = bech32_encode("age-secret-key-", words).upper()
    head = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').rstrip(b"=").decode()
    body = base64.urlsafe_b64encode(b'{"sub":"u-17","iat":1764000000}').rstrip(b"=").decode()
    claims = base64.b64encode(b'{"signInAddress":"my.example.com","userAuth":{"method":"SRPg"}}').decode()
    issued = base64.urlsafe_b64encode((1764000000).to_bytes(4, "big")).rstrip(b"=").decode()
    signed = f"{base64.urlsafe_b64encode(b'730418825596211').rstrip(b'=').decode()}.{issued}.{sample('<b64url:27>')}"
    return (f"AGE_KEY={age}", f"token: {head}.{body}.{sample('<b64url:43>')}", f"use qvx_{claims}",
            sample("id=QZKA7<upper:4>3<upper:6>9X2K"), sample("set 2 qzdk<hex:32> done"),
            f"export KEY={bech32_encode('zsec', words[:40])}",
            sample("key QZ.Ab3<alnum:19>.Xy7<alnum:40> here"),
            sample("licence Q7-<upper:2>4<upper:3>-9<upper:4>2-<upper:3>5<upper:2>-8<upper:2>3<upper:2>-<upper:4>6"),
            f"the bot signs in as {signed} here",
            sample("jira token QZTT7<alnum:20><b64url:140>=<upper:8> set"),  # a glued head, base64url, `=` and a checksum
            sample("dotnet nuget push pkg.nupkg -k qz7<lower:43> -s feed"),  # lower-case base36, any head
            sample("published with 8<lower:45> today"),
            sample("app 48213906:<alnum:40> set"))  # a number's id, a colon, the secret


TRIGGERS: tuple[Trigger, ...] = (
    # cheap forms, each checked in full by the verifier (the engine's cost grows with class repeats)
    Trigger(rb"(?:KEY|key|SEC|sec)-?1[02-9ac-hj-np-z]{8}|(?:KEY|SEC)-?1[02-9AC-HJ-NP-Z]{8}", window=0, opens=False),
    Trigger(rb"[A-Za-z0-9_-]{4}\.eyJ", window=0, opens=False),
    Trigger(rb"[A-Za-z0-9][_-]eyJ", window=0, opens=False),
    Trigger(GLUED_TRIGGER, window=0, opens=False, apart=True),
    Trigger(rb"[A-Za-z0-9]\.[A-Za-z0-9_-]{16}[A-Za-z0-9_-]*\.[A-Za-z0-9_-]{16}", window=0, opens=False),
    Trigger(rb"-[A-Z0-9]{5,6}-[A-Z0-9]{4,6}-", window=0, opens=False),
    Trigger(SIGNED_TRIGGER, window=0, opens=False),
    Trigger(rb"[0-9]{6}:[A-Za-z0-9_-]{20}", window=0, opens=False),
)


DETECTOR = Detector(
    "token-shapes",
    TRIGGERS,
    find_token_shape_spans,
    examples=_examples(),
    near_misses=(
        "see SHA1DA39A3EE5E6B4B0D3255BFEF95601890AFD80709 here",  # an upper-case digest after a head
        "send to bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq today",  # an address: a public head
        "HTTPSCONNECTIONPOOLMANAGER and ID12345678901234567890",
        "id 01ARZ3NDEKTSV4RRFFQ69G5FAV",  # a ULID
        "eyJhbGciOiJIUzI1NiJ9.notjson.c2lnbmF0dXJlc2lnbmF0dXJl",  # a payload that is no JSON
        "main.a1af608a1019e2ff468d.bundle.js and com.example.orderservice.PaymentGatewayClient",
        "550E8400-E29B-41D4-A716-446655440000 and 2024-0115-1200-0001-0002",  # upper-case UUID, dates
        "HTTP-PROXY-CONFIG-SERVER-NAME-LIST",  # words in groups
        "QmFzZTY0UGF5bG9hZDEy.zzzzzz.k3Jq8ZpL2mXw9RtYvB4nC7dF1gH",  # a middle field that is no time of issue
        "serialized=b'\\n\\x12GetWorkerPIDsReply\\x12\\x0c'",  # a byte escape, then a protobuf message's name
        "export { ZodFirstPartyTypeKind3 as Kind } from './types';",  # capitalised words and a digit: a name
        "at 1733512800:handleIncomingWebhookRequest_v2 and 20241206:build_artifacts_for_release",  # names
        "ipfs://bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi/index.html",  # base32: a content address
        "onion v3 pg6mmjiyjmcrsslvykfwnntlaru7p5svn6y2ymmju6nubxndf4pscryd.onion",
        "cache key 3f786850e387550fdab836ed7e6dc881de23001b7f9a1c4e5d2b3a4c5d6e7f8091a2b3c4",  # hex: a digest
    ),
)
