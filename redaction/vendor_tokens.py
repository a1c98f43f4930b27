"""Self-identifying tokens no catalogue lists, recognised by the structure vendors issue keys in.

Rule sets name vendors one by one (`ghp_`, `glpat-`, `sk_live_`), so a key from a vendor no
list knows yet reaches disk. Nearly every such key has one structure: a short alphabetic head
(`pnu`, `rdme`, `shippo`), a separator (`_`, `-`, `.`), optional short fields (a version `v1`,
an environment `live`, a kind `pat`), then a long body of one alphabet drawn at random (in docs and
fixtures, the alphabet written out: a placeholder of the same shape), with perhaps a short tail (a
checksum or region, `_46702463`, `=0BA1C2D3`). Some put an id drawn at random before a `.` and the
secret (`pat<id>.<secret>`): such a head is judged as random itself.
Identifiers, paths, hashes, UUIDs and base64 have heads and bodies too, but not this combination:
a body of 20+ letters and digits
with both, high entropy and few words; a head that is no hash's name (`sha512-`), a value no
`id` field or wire id (`msg_01...`, `call_...`) carries. Where the body ends in a GitHub/npm-style
CRC32 checksum (six base62 characters) that checks, the format says enough on its own.

The trigger is a separator (`_`, `-`, `.`, `~`) followed by 13 letters or digits (one Hyperscan
report per separator: standard base64 has none), and `~` followed by 12 token characters; the
token's run is found around it and verified here. Before a `~` the head may be any letters and
digits (`2Vq7Q~…`): a `~` inside a random run is a key's separator, never a word's, a path's or a
digest's. Scored on held-out families, random bodies and installed packages' code by
`benchmarks/bench_token_detector.py`.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence

from ctxtap.redaction.detector import Detector, TriggerHits, samples
from ctxtap.redaction.detectors import after_escape, escape_before
from ctxtap.redaction.engine import Trigger
from ctxtap.redaction.entropy import expected_entropy, shannon_entropy
from ctxtap.redaction.false_positives import (
    UUID_RE,
    all_classes,
    camel_case_name,
    decoded_text,
    digit_count,
    has_digit,
    labelled_digest,
    letter_pairs,
    reads_as_words,
)
from ctxtap.redaction.spans import PRIORITY_GENERIC, Span

KIND = "vendor-token"
BODY_MIN = 20
SEGMENT_MIN = 13  # the body's longest segment (13: a UUID's last group, twelve, never fires the trigger)
# A `.` starts a match only before thirteen letters or digits (a sentence's next word, a file's
# extension and a domain's label are shorter; a dotted identifier's verifier finds words in it).
# `opens=False`: a key is found in the raw bytes of a JSON string (the verifier steps over an escape
# before it); opening every string that holds an identifier cost a third of the scan.
TILDE_SEGMENT_MIN = 12
# Numeric fields of nine digits or more are ids the vendor put in the key (`xoxs-<team>-<user>-<bot>-<secret>`):
# two of them in a row fire a trigger of their own (no segment need be thirteen long), and with them the
# key's random part may be as short as eight.
ID_FIELD_MIN = 9
# A head and short kind fields (`sm_aat_`) say enough for a random body of sixteen.
SHORT_BODY_MIN = 16
ID_HEAD_MIN, ID_HEAD_MAX = 12, 24  # an id before a `.` and the secret
NUMBER_ID_BODY_MIN = 32  # the body after a number's id (`8-<secret>`)
PIECE_MAX = 12  # a piece of base64url between its separators shorter than SEGMENT_MIN
_PIECE_CHANGES = 40  # changes of class per hundred characters in such pieces, at least (about 60 at random)
# lower then upper, a digit beside a capital, a digit between letters not both hex (a UUID's groups have none)
_CLASS_CHANGE = rb"(?:[a-z][A-Z]|[A-Z][0-9]|[0-9][A-Z]|[g-z][0-9][A-Za-z]|[a-z][0-9][G-Zg-z])"
# One trigger for every separator (a `.` of its own, with a longer body, cost the engine a fifth more
# than sharing the repeat): `sentence.Start` never has thirteen letters and digits after its dot.
TRIGGERS: tuple[Trigger, ...] = (
    Trigger(rb"[_.~\-][A-Za-z0-9]{%d}" % SEGMENT_MIN, window=0, opens=False),
    # `~` inside a token (Azure's `…Q~…`, `sha256~…`): no word, path or digest is written so, and the
    # body after it may hold separators of its own
    Trigger(rb"~[A-Za-z0-9_.\-]{%d}" % TILDE_SEGMENT_MIN, window=0, opens=False),
    Trigger(rb"[0-9]{%d}[_~\-][0-9]{%d}" % (ID_FIELD_MIN, ID_FIELD_MIN), window=0, opens=False),
    # base64url cut by its own `-` and `_` into pieces shorter than thirteen: two pieces in a row, each with a
    # change of class inside that words seldom make (`_CLASS_CHANGE`). Snake and kebab names change class at
    # their separators, not inside the pieces. Scanned apart (see `Trigger`).
    Trigger(rb"[_\-][A-Za-z0-9]{0,%d}%s[A-Za-z0-9]{0,%d}[_\-][A-Za-z0-9]{0,%d}%s"
            % (PIECE_MAX, _CLASS_CHANGE, PIECE_MAX, PIECE_MAX, _CLASS_CHANGE), window=0, opens=False, apart=True),
)
# A head, a separator and a body of standard base64 whose first `+` or `/` comes before thirteen letters and
# digits (`fm2_lJPE+…`), which the first trigger never sees; judged as the others (`_base64_body_seps`). A
# head with digits takes `_` (`sha512-` integrity is a digest's), and a capital or a digit follows the `+` or
# `/` within twelve (`node_modules/lodash`: a path's lower-case names). Scanned apart, as the pieces' trigger is.
STANDARD_BASE64_TRIGGER = Trigger(rb"(?:^|[^A-Za-z0-9_.+/=\-])(?:[A-Za-z]{1,14}[_\-]|[A-Za-z][A-Za-z0-9]{0,13}_)"
                                  rb"[A-Za-z0-9]{0,%d}[+/][A-Za-z0-9+/]{0,11}[A-Z0-9]" % (SEGMENT_MIN - 1),
                                  window=0, opens=False, apart=True)
# a hit's separator, from its end (the pieces' trigger ends anywhere in its run: its last byte stands for it)
_SEP_BEFORE_END = (SEGMENT_MIN + 1, TILDE_SEGMENT_MIN + 1, ID_FIELD_MIN + 1, 1)
# how far before that the run may start: a head and its fields, and for the pieces' trigger the pieces too
_REACH_BEFORE = (64, 64, 64, 64 + 2 * (2 * PIECE_MAX + 3))

_RUN_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-~")
_SEPARATORS = b"_.-~"
_NOT_RUN_TO_SPACE = bytes(c if c in _RUN_BYTES else 0x20 for c in range(256))
_RUN_AFTER_RE = re.compile(rb"[A-Za-z0-9_.\-~]*")
# A head before `~` may be any letters and digits (`2Vq7Q~…`): no word, path or digest is written so.
# Before a `.`, a head of twelve or more drawn at random itself (`pat<id>.<secret>`): an id, then its secret.
# A number before `-` or `_` is an id too (`8-<secret>`), when a long body of all three classes follows.
# Before `_` or `-`, such a head longer than any vendor's (`EAAA5Vdw8spS5whXWn_…`) is base64url's first piece.
_HEAD_AT_RE = re.compile(rb"[A-Za-z](?:[A-Za-z]|[0-9](?![0-9]{4})){0,13}[_.\-~]|[A-Za-z0-9]{1,14}~"
                         rb"|[A-Za-z0-9]{%d,%d}[._\-]|[0-9]{1,10}[_\-]" % (ID_HEAD_MIN, ID_HEAD_MAX))
_BASE64_ONLY = frozenset(b"+/=")
_BASE64_TAIL_RE = re.compile(rb"([A-Za-z0-9+/]*)={0,3}")  # fly.io pads with up to three
_B64_PIECE_RE = re.compile(rb"[A-Za-z0-9]+")
_HEAD_MAX = 14  # a vendor's head, at most
_MAX_RUN = 512  # longer runs are base64url blobs, not keys
_MAX_SEGMENTS = 16
_HEAD_RE = re.compile(rb"[A-Za-z](?:[A-Za-z]|[0-9](?![0-9]{4})){0,13}")
# `gAAAAA`: a Fernet token's start, no vendor's mnemonic (Square's `EAAA` has three)
_REPEAT_RE = re.compile(rb"(.)\1\1\1")
_SPLIT_RE = re.compile(rb"[_.\-~]")
_FILE_END_RE = re.compile(rb"\.[a-z][a-z0-9]{0,4}$")  # a file's extension (`.woff2`, `.mp4`), a domain's last label
_HEX_RE = re.compile(rb"[0-9a-fA-F]+")
# camelCase or lowercase words of three letters or more holding a vowel: identifiers are made of them
_WORD_RE = re.compile(rb"[A-Z]?[a-z]{2,}|[A-Z]{2,}(?![a-z])")
_VOWELS = frozenset(b"aeiouyAEIOUY")
_CLUSTER_RE = re.compile(rb"[^aeiouyAEIOUY]{4}")
# Heads that name a digest, not a key (`sha512-` integrity, `h1:` sums are cut at `:`), and heads of
# the wire ids every model API returns (not secrets: replay and analysis match requests by them).
_NOT_KEY_HEADS = frozenset(
    h.encode()
    for h in (
        "sha", "sha1", "sha224", "sha256", "sha384", "sha512", "md5", "blake2b", "blake2s", "blake3", "crc32",
        "xxh64", "xxh3", "hash", "digest", "commit", "tree", "blob", "uuid", "guid", "id", "ulid",
        "msg", "toolu", "srvtoolu", "req", "resp", "call", "chatcmpl", "cmpl", "rs", "fc", "file", "gen",
        "asst", "thread", "run", "step", "batch", "ws", "conv", "item", "sess", "session", "evt", "ft",
        "ftjob", "vs", "modr", "org", "user", "proj", "ctc", "mcp", "cache", "trace", "span",
    )
)
# `"id": "`, `tool_use_id=`, `request-id: `: the value of an identifier's field
_ID_FIELD_RE = re.compile(rb"(?i)id(?:s)?\\*[\"']?\s*[:=]\s*\\*[\"']?$")
_BASE62 = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def crc32_base62(data: bytes) -> bytes:
    """GitHub's and npm's token checksum: CRC32 of the random part, six base62 digits."""
    n = zlib.crc32(data)
    out = bytearray()
    for _ in range(6):
        n, r = divmod(n, 62)
        out.append(_BASE62[r])
    return bytes(reversed(out))


def _checksum_holds(body: bytes) -> bool:
    return len(body) >= 26 and crc32_base62(body[:-6]) == body[-6:]



def _wordy(parts: list[bytes]) -> int:
    """How many characters are in pronounceable words (identifiers, names, paths), part by part:
    four letters or more, a vowel in four, no four consonants in a row."""
    total = 0
    for part in parts:
        for w in _WORD_RE.findall(part):
            if len(w) >= 4 and sum(1 for c in w if c in _VOWELS) * 4 >= len(w) and not _CLUSTER_RE.search(w):
                total += len(w)
    return total


def _class_changes(parts: list[bytes]) -> int:
    """How often the class (upper, lower, digit, other) changes from one character to the next."""
    changes = 0
    for part in parts:
        prev = -1
        for c in part:
            cls = 0 if 65 <= c <= 90 else 1 if 97 <= c <= 122 else 2 if 48 <= c <= 57 else 3
            changes += prev not in (-1, cls)
            prev = cls
    return changes


_HEX_TAIL_RE = re.compile(rb"[0-9a-f]{32,}$")
# Letter pairs a body needs before its letters are judged as words or chance: fewer (`7u1rpal84hro4l5v`)
# read as words by chance too often
_PAIRS_TO_JUDGE = 12


def _random_enough(parts: list[bytes]) -> bool:
    """A body drawn at random: two classes of characters at least, entropy near its alphabet's, few words.
    A body ending in 32 hex digits or more (a macaroon's caveats, then its signature) is judged by them."""
    body = b"".join(parts)
    tail = _HEX_TAIL_RE.search(body)
    if tail is not None and tail.start() > 0:
        body = tail.group(0)
    digits = digit_count(body)
    upper = sum(1 for c in body if 65 <= c <= 90)
    lower = len(body) - digits - upper
    n = len(body)
    if _HEX_RE.fullmatch(body) is not None and (upper == 0 or lower == 0):
        if digits == 0 or digits == n:
            return False
        alphabet = 16
    elif (digits > 0) + (upper > 0) + (lower > 0) < 2:
        return False
    else:
        alphabet = 10 * (digits > 0) + 26 * (upper > 0) + 26 * (lower > 0)
    if b"+" in body or b"/" in body:
        alphabet = 64
    if shannon_entropy(body) < 0.8 * expected_entropy(alphabet, n):
        return False
    if sum(1 for a, b in zip(body, body[1:], strict=False) if b - a == 1) * 3 >= n:
        # `abcdef…`, `ABC…XYZ0123…`: an alphabet written out, a key's placeholder. Docs and scanners' fixtures
        # write keys so (`ak_live_` then `abcdefghijklmnopqrstuvwx123456`); no identifier or digest is, so the word
        # tests below (which such runs may fail) do not apply. After a head and a separator, it is a key.
        return True
    if alphabet != 16 and ((letter_pairs(body) >= _PAIRS_TO_JUDGE and reads_as_words(body)) or camel_case_name(body)):
        return False  # `allowStaleOnFetchAbort`, `GetAllJobInfoRequest`: names made of words
    if digits:
        # one random segment may hold pronounceable runs (up to 70 % of it); segments joined
        # (`CPPTYPE_INT32`) are mostly words, so half
        return _wordy(parts) < (0.7 if len(parts) == 1 else 0.5) * n
    # letters only: camelCase names change case once a word (and are mostly words: `camel_case_name`),
    # random letters every other character
    return _class_changes(parts) * 100 >= 25 * n and _wordy(parts) * 10 < 7 * n


def _id_head(head: bytes) -> bool:
    """An id drawn at random before a `.` (`pat21ROq7yrgyzh7t.`): letters and digits mixed, no hex alone
    (two digests joined by a dot are no key). Base64 of a number is an id too; base64 of text with letters
    is a payload (a JWT's header, `eyJhbGciOiJIUzI1NiJ9.`), which the signed-token shapes judge by decoding."""
    if not (ID_HEAD_MIN <= len(head) <= ID_HEAD_MAX and head.isalnum() and _HEX_RE.fullmatch(head) is None
            and _random_enough([head])):
        return False
    text = decoded_text(head)
    return text is None or text.isdigit()


def _names_no_key(head: bytes, separator: int) -> bool:
    """Is `head` a digest's or a wire id's (`sha512-` integrity, `toolu_`)? `sha256~` is no digest's notation."""
    return separator != 0x7E and head.lower() in _NOT_KEY_HEADS


def _base64url_pieces(run: bytes, parts: list[bytes]) -> bool:
    """Short pieces that are base64url cut by its own `-` and `_` (`q7Xk2-Rt9pWm_4Lz8`), no name's words:
    upper case, lower case and digits among them (snake and kebab names, constants and CSS classes lack one),
    the class changing inside the pieces as often as at random (words change it once: `AMD-Instinct-MI250X`)."""
    joined = b"".join(parts)
    return (b"." not in run and b"~" not in run and all_classes(joined)
            and _class_changes(parts) * 100 >= _PIECE_CHANGES * len(joined))


def verify_run(run: bytes) -> bool:
    """Is this run of token characters (bounded on both sides) a vendor key?

    Head, then the rest: short fields (`v1`, `live`, `pat`) and the random body, which may
    itself hold separators (base64url); judged as the rest's letters and digits joined."""
    if len(run) > _MAX_RUN:
        return False
    segments = _SPLIT_RE.split(run)
    if len(segments) < 2 or len(segments) > _MAX_SEGMENTS:
        return False
    head = segments[0]
    tilde = b"~" in run
    # a random id before `.`; before `_` or `-`, a random piece longer than a vendor's head (base64url split)
    id_head = (run[len(head)] == 0x2E or len(head) > _HEAD_MAX) and _id_head(head)
    number_id = head.isdigit() and run[len(head)] in b"_-"
    random_head = (run[len(head)] == 0x7E and head.isalnum()) or id_head or number_id  # see `_HEAD_AT_RE`
    if (not 1 <= len(head) <= (ID_HEAD_MAX if id_head else _HEAD_MAX)
            or (_HEAD_RE.fullmatch(head) is None and not random_head)
            or _REPEAT_RE.search(head) or _names_no_key(head, run[len(head)])):
        return False
    rest = run[len(head) + 1 :]
    if UUID_RE.fullmatch(rest) or UUID_RE.fullmatch(run):
        return False
    if _FILE_END_RE.search(run):
        return False  # `main.a1af608a1019e2ff468d.bundle.js`, `host-3f2a...9c.example.com`: a name, hash and all
    last = segments[-1]
    if (sum(1 for p in segments[1:] if p.isdigit() and len(p) >= ID_FIELD_MIN) >= 2 and head.isalpha()
            and len(last) >= 8 and not last.isdigit()):
        return _random_enough([last])  # ids, then the secret (a version or date has one long number at most)
    longest = max(segments[1:], key=len)
    if number_id and not (len(longest) >= NUMBER_ID_BODY_MIN and all_classes(longest)):
        return False  # `2024-…`, `3-column`: a number before a word or a short run is no key's id
    fields = segments[1:-1]
    # a last segment of sixteen after a head and short kind fields (`sm_aat_<16>`) is a body
    short = bool(fields) and len(last) == len(longest) and all(f.isalpha() and len(f) <= 6 for f in fields)
    if len(longest) >= BODY_MIN or (short and len(longest) >= SHORT_BODY_MIN):
        parts = [longest]
    else:
        # (base64url) the rest's segments together; numbers alone are versions and dates
        # (`v0.0.0-20241124373141-893a276f18ec`), no key's random part
        parts = [p for p in segments[1:] if not p.isdigit()]
        if sum(len(p) for p in parts) + len(parts) - 1 < BODY_MIN:  # base64url: its `-` and `_` count
            return False
    if len(longest) < SEGMENT_MIN and not tilde and not _base64url_pieces(run, parts):
        return False
    if b"." in run and not any(has_digit(p) for p in parts):
        return False  # `document.getElementsByTagName`: a member's name after a dot, letters only
    return any(_checksum_holds(p) for p in parts) or _random_enough(parts)


def _base64_tail(data: bytes, start: int, stop: int) -> int:
    """Where a body of standard base64 (`fm2_lJPE...+...==`) ends, or -1 if this is no such body.

    It must hold a `+`, end in `=` or be cut by `/` into pieces drawn at random (a path's are words), and end
    at a token boundary."""
    m = _BASE64_TAIL_RE.match(data, stop, min(len(data), start + _MAX_RUN))
    assert m is not None  # it matches the empty string
    end, pad = m.end(1), m.end()
    after = pad + (pad < len(data) and data[pad] == 0x2E)  # a sentence's full stop
    if after < len(data) and (data[after] in _RUN_BYTES or data[after] in _BASE64_ONLY):
        return -1
    if data.startswith((b"[REDACTED:", b"%5BREDACTED:", b"%5bREDACTED:"), after):
        return -1  # `NAME=` before a value already redacted: as before it was (redacting twice changes nothing)
    tail = data[stop:pad]
    pieces = _B64_PIECE_RE.findall(data, start, pad)[1:]  # the head's left out
    if b"+" not in tail and pad == end and not _base64url_pieces(data[start:pad], pieces):
        return -1  # `/` alone: a path's, unless its pieces change class as random ones do (and no `.`: a crypt hash's)
    return pad


_CHECKSUM_TAIL_RE = re.compile(rb"=[A-Za-z0-9]{4,16}")


def checksum_tail_end(data: bytes, at: int) -> int:
    """Where `=` and a short field after a body end (`…=0BA1C2D3`: a checksum or a version after the random
    part), or -1: more token characters after it, or no such field."""
    m = _CHECKSUM_TAIL_RE.match(data, at)
    if m is None:
        return -1
    end = m.end()
    if end < len(data) and (data[end] in _RUN_BYTES or data[end] in _BASE64_ONLY):
        return -1
    return end


_NOT_B64_RUN_TO_SPACE = bytes(c if c in b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_+/-"
                              else 0x20 for c in range(256))
_B64_MATCH_MAX = 48  # the standard-base64 trigger's match and the byte before it, at most
_B64_HEAD_RE = re.compile(rb"[A-Za-z][A-Za-z0-9]{0,13}[_\-]([A-Za-z0-9]*)")


def _base64_body_seps(data: bytes, hits: Sequence[tuple[int, int]]) -> list[tuple[int, int, int]]:
    """`STANDARD_BASE64_TRIGGER`'s hits as the other triggers' are judged: (the head's separator, the end of
    the letters and digits after it, how far back the run may start). The hit ends past a `+` or `/`, so
    its start is found backwards over base64 first; `_base64_tail` then reads the body as for any run."""
    out = []
    for _, end in hits:
        floor = max(0, end - _B64_MATCH_MAX)
        start = floor + 1 + data[floor:end].translate(_NOT_B64_RUN_TO_SPACE).rfind(b" ")  # in C
        m = _B64_HEAD_RE.match(data, start)
        if m is not None:
            out.append((m.start(1) - 1, m.end(1), _REACH_BEFORE[0]))
    return out


def find_vendor_token_spans(data: bytes, hits: TriggerHits, out: list[Span]) -> None:
    """Append spans of vendor keys around the triggers' hits ((start, end), end only, one list per trigger)."""
    # where each hit's separator is (the triggers' bodies differ in length), in order: a run two triggers
    # found (`~` before thirteen letters) is judged once
    seps = [(end - back, end, reach) for found, back, reach in zip(hits[:-1], _SEP_BEFORE_END, _REACH_BEFORE, strict=True)
            for _, end in found]
    seps = sorted(seps + _base64_body_seps(data, hits[-1]) if hits[-1] else seps)
    done = -1
    n = len(data)
    for sep, end, reach in seps:
        if sep < done:
            continue  # inside a run already judged
        if data[sep] == 0x2E and sep and 48 <= data[sep - 1] <= 57 and data[sep + 1 : end].isdigit():
            continue  # a decimal fraction (`19.360564538132063`): half the hits in JSON of measurements
        floor = max(0, sep - reach)
        start = floor + 1 + data[floor:sep].translate(_NOT_RUN_TO_SPACE).rfind(b" ")  # the run's start, in C
        fwd = _RUN_AFTER_RE.match(data, end, min(n, start + _MAX_RUN + 1))
        stop = fwd.end() if fwd is not None else end
        done = stop
        start = after_escape(data, start, sep)  # `\\n`, `%3D`, `\\u0022` end right before the token
        if (start > 0 and data[start - 1] in _RUN_BYTES and not escape_before(data, start)) or (
            stop < n and data[stop] in _RUN_BYTES
        ):
            continue  # longer than any key
        if (data[stop - 1] in _SEPARATORS and data.startswith(b"[REDACTED:", stop)) or (
                data[start] in _SEPARATORS and data[start - 1 : start] == b"]"
                and data.rfind(b"[REDACTED:", max(0, start - 80), start) >= 0):
            continue  # glued to a token redacted before: the run was judged whole then (redacting twice changes nothing)
        while start < sep and data[start] in _SEPARATORS:
            start += 1  # `.IQ8Q~…`: a separator before the head belongs to no word
        head = _HEAD_AT_RE.match(data, start)
        if head is None:
            continue  # no vendor's head (a UUID, a hash, `self._name`): the cheap and common case
        if _names_no_key(data[start : head.end() - 1], data[head.end() - 1]):
            continue  # as `verify_run` judges, sooner: lockfiles and tool calls hold thousands
        if start > 0 and data[start - 1] == 0x24 and _id_head(data[start : head.end() - 1]):
            continue  # `$2a$06$<salt>.<hash>`: a crypt hash's base64 holds dots (the password-hash rule's)
        while stop > start and data[stop - 1] in _SEPARATORS and not (stop < n and data[stop] in b"+/"):
            stop -= 1  # a sentence's full stop, a trailing dash (not a separator before base64's `+` or `/`)
        if start > 0 and data[start - 1] == 0x2B:
            continue  # `+`: inside base64
        end = stop
        if stop < n and data[stop] in _BASE64_ONLY:
            padded = _base64_tail(data, start, stop)
            if padded >= 0:
                end = stop = padded
            else:
                end = checksum_tail_end(data, stop)  # the body is judged without it
                if end < 0:
                    continue
        run = data[start:stop]
        if not verify_run(run):
            continue
        if _ID_FIELD_RE.search(data, max(0, start - 40), start) or labelled_digest(data, start):
            continue  # an identifier's field holds a wire id, a digest's label a digest: not a key
        out.append(Span(start, end, KIND, PRIORITY_GENERIC))  # any named rule names it better


# Heads invented for the examples: no rule set lists them, only the structure finds them.
DETECTOR = Detector(
    "vendor-tokens",
    (*TRIGGERS, STANDARD_BASE64_TRIGGER),
    find_vendor_token_spans,
    examples=samples(
        "export SOMETHING=qzv_<alnum:36>",
        "see kloppa-live-<alnum:32>.",
        '{"key": "WXT_v2_<lower:40>"}',
        "tnx_<letters:34>",  # letters only, as Hugging Face's are
        "VAULT_TOKEN=q.<alnum:24>",  # one letter and a dot
        "token kq.zt.<lower:22>7<lower:20>",  # short fields between dots
        "secret: <alnum:3>8Q~<alnum:12>.<alnum:8>~<alnum:10>",  # `~` between the body's parts
        "client 7<alnum:3>~<alnum:14>.<alnum:18> ok",  # a head of any letters and digits before `~`
        "deploy key 36: rwk_<lower:28>",  # one random segment whose letters make a few pronounceable runs
        "hub token 40: hxq_<letters:30>",  # letters only, changing case less often than half the time
        "ci secret 5: pqe_<b64url:20>",  # base64url of twenty, a `_` of its own inside
        "ci secret 7: pqe_<alnum:9>-<alnum:7>_<alnum:8>",  # base64url cut by its `-` and `_` into short pieces
        "fly token qzf_<alnum:6>+<b64:40>",  # standard base64, its first `+` early
        "deploy rqx_<alnum:9>/<alnum:12>/<alnum:14> now",  # standard base64 with `/` alone, random pieces
        "key: wvk-<alnum:20>/<alnum:20>",  # a long first piece, then `/` and no padding
        "grant <mixed:16>7.<hex:64> ok",  # an id drawn at random, a dot, then the secret
        "pqe_<alnum:36>=<upper:8>",  # the body, `=` and a checksum
        '{"method": "auth.login_with_api_key", "params": ["7-<alnum:64>"]}',  # a number's id, then the secret
        "grant Q7<alnum:17>_<alnum:40> ok",  # base64url whose first piece is longer than any vendor's head
        "use QAAA7<alnum:6>_<alnum:30> here",  # a head with a letter thrice
        # a key's placeholder, an alphabet written out (built here, so this file holds no such key)
        "set pqz_live_{}123456 in .env".format("abcdefghijklmnopqrstuvwx"),
        "token: qzs_{}{}".format("ABCDEFGHIJKLMNO", "abcdefghijklmno1234567890"),
    ),
    near_misses=(
        "resp_e11ea717b1935bc5fda8f2cc65477d8f2c36bfe3d5f05d17",  # a wire id the analysis needs
        '"tool_use_id": "toolu_01A09q90qw90lq917835lq9Hx"',
        "integrity sha512-3kQ9GQ5mGF2l5Jk8q6Yy0Xq1s8wZ7u2Yv0m1rRk3o9x2Q==",
        "def test_user_account_settings_request_handler_3(self) -> None:",
        "req-550e8400-e29b-41d4-a716-446655440000",
        '{"encrypted_content": "gAAAAABnX9c2-abcDEF123ghiJKL456mnoPQR789stuVWX0yz"}',
        "see ~/projects/ctxtap-analysis/reports and self.accountSettingsHandler.requestTimeout",
        "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "ctxtap/cli.py,sha256=cQY_j5X9AT7MG9IBvrVnevPXFAZA0fCwXgdxEK1FYvc,1532",  # a wheel's RECORD line
        "if (opts.fetchOptions.allowStaleOnFetchAbort) {",  # a name made of words, camelCase
        "var links = document.getElementsByTagName('a');",  # a member's name after a dot
        "src: url(roboto-latin-500.f5b74d7ffcdf85b9dd60.woff2)",  # a file name with its content hash
        "('', '$2a$06$DCq7YPn5Rq63x1Lad4cll.TV4S6ytwfsfvkgY8jIucDrjc8deX1s'),",  # a crypt hash: the hash rule's
        "a 3-column grid, build 20241205-abcdefghijklmnopqrstuvwxyzabcdefgh",  # numbers before words
        "gpu: NVIDIA-Tesla-V100S-PCIE-32GB ready, AMD-Instinct-MI300X-OAM",  # a product's name in pieces
        "cd node_modules/yaml2/dist/schema3/json8 && ls",  # a path: pieces of one case
        "hash 'sha-512=lzgnXLFcvglRLS0gt.C4gy.NurS3OIOVRAU1zZOV4P.qFiVFO2/'",  # a crypt hash: `.` and `/`
        '"alphabet": "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"',  # an alphabet, no head
        "test_abcdefghijklmnopqrstuvwxyz()",  # letters alone, written out: a name
    ),
)
