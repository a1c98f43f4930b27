"""Secrets inside base64-encoded text: a `.env` or a config file attached to a model call.

Model APIs carry attached files as base64 (`"source": {"type": "base64", ...}`,
`data:text/plain;base64,...` URLs, Gemini's `inlineData`), and a text file
there reaches the capture readable by anyone with `base64 -d` while no
detector sees its contents. In a body that names one of those carriers, each
long base64 run is decoded; where it decodes to text, the text is scanned with
every detector and each secret found removes the 4-character groups that
encode it (so its bytes are gone; what stays still decodes, group by group).
Binary content (images, PDFs) is recognised from its first kilobytes and
left alone.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable

from ctxtap.redaction.detector import Detector, Scan, TriggerHits, sample
from ctxtap.redaction.engine import Trigger
from ctxtap.redaction.spans import Span

# Where a body carries a file as base64: Anthropic's `"type": "base64"`, data URLs (OpenAI's
# `file_data`, `image_url`), Gemini's `inlineData`. Quoted, so source code that merely says
# base64 (escaped quotes in a JSON string, `\\"base64\\"`) does not count.
_CARRIERS = (b'"base64"', b";base64,", b'"inlineData"', b'"inline_data"')
# Found in the engine's one pass with every other trigger (a search of its own per marker cost a
# fifth of a clean body's scan).
TRIGGERS: tuple[Trigger, ...] = tuple(Trigger(re.escape(m), literals=(m,), window=0) for m in _CARRIERS)
MIN_RUN = 64  # shorter runs are ids and hashes, not files
_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-"  # either alphabet
_AS_RUNS = bytes(0x41 if c in _ALPHABET else 0x20 for c in range(256))  # "A" for a base64 char, else " "
_SAMPLE = 4096  # characters decoded first to tell text from binary (a multiple of 4)
_CONTROL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def base64_runs(data: bytes) -> list[tuple[int, int]]:
    """(start, end) of each run of at least MIN_RUN base64 characters, its `=` padding included.

    Found with `bytes.translate` and `bytes.find` (C speed): a regex for "64 or more of a
    class" retries at every byte of every shorter word.
    """
    marks = data.translate(_AS_RUNS)
    needle = b"A" * MIN_RUN
    out = []
    pos = marks.find(needle)
    while pos >= 0:
        lo = marks.rfind(b" ", 0, pos) + 1
        hi = marks.find(b" ", pos)
        hi = len(data) if hi < 0 else hi
        end = hi
        while hi < len(data) and data[hi] == 0x3D and hi - end < 2:  # `=` padding
            hi += 1
        out.append((lo, hi))
        pos = marks.find(needle, hi)
    return out


def find_base64_spans(data: bytes, out: list[Span], scan: Callable[[bytes], list[Span]]) -> None:
    """Append spans (over the encoded characters) of secrets in base64 runs that decode to text."""
    for lo, hi in base64_runs(data):
        run = data[lo:hi]
        urlsafe = b"-" in run or b"_" in run
        head = _decode(run[:_SAMPLE], urlsafe)
        if head is None or not looks_like_text(head):
            continue
        decoded = _decode(run, urlsafe)
        if decoded is None:
            continue
        payload_end = hi - (len(run) - len(run.rstrip(b"=")))
        for span in scan(decoded):
            start = lo + 4 * (span.start // 3)
            end = min(hi, lo + 4 * -(-span.end // 3))  # the groups holding any byte of it
            if end >= payload_end:
                end = hi  # the padding goes with the last group
            out.append(Span(start, end, span.kind, span.priority))


def _decode(chars: bytes, urlsafe: bool) -> bytes | None:
    chars = chars.rstrip(b"=")
    if len(chars) % 4 == 1:
        chars = chars[:-1]  # a lone character decodes to nothing
    padded = chars + b"=" * (-len(chars) % 4)
    if urlsafe:
        padded = padded.translate(_URLSAFE)
    try:
        return binascii.a2b_base64(padded, strict_mode=True)
    except (binascii.Error, ValueError):
        return None


_URLSAFE = bytes.maketrans(b"-_", b"+/")


def looks_like_text(sample: bytes) -> bool:
    """UTF-8 (a character cut at the end allowed) without control bytes other than tab and newlines."""
    try:
        sample.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(sample) - 3:
            return False
    return _CONTROL.search(sample) is None


def decode_carried_files(data: bytes, hits: TriggerHits, out: list[Span], scan: Scan) -> None:
    """`find_base64_spans` in a body that names a carrier (`hits`: where the carriers' triggers matched)."""
    find_base64_spans(data, out, scan)


def _attached(body: str, text: bytes) -> str:
    """`body` (a JSON request) with its `{}` replaced by `text` in base64."""
    return body.replace("{}", base64.b64encode(text).decode())


_SETTINGS = sample("# app settings\nDB_HOST=db.internal\nDB_PASSWORD=<mixed:14>\nretries = 3\n").encode()
_ANTHROPIC = '{"type": "base64", "media_type": "text/plain", "data": "{}"}'

# A decoder that nests: a decoded file is a new level (scanned with decoding on, counted against the
# JSON depth limit), since a file may carry JSON, percent-encoding or base64 of its own.
DETECTOR = Detector(
    "base64-files",
    TRIGGERS,
    None,
    examples=(_attached(_ANTHROPIC, _SETTINGS), _attached('{"file_data": "data:text/plain;base64,{}"}', _SETTINGS)),
    near_misses=(
        _attached(_ANTHROPIC, b"hello world, nothing secret here\n" * 3),
        _attached('{"image_url": "data:image/png;base64,{}"}', b"\x89PNG\r\n\x1a\n" + bytes(range(7, 67))),
    ),
    decode=decode_carried_files,
    nests=True,
)
