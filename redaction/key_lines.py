"""A private key's body seen without its BEGIN line: lines of base64 cut at one width.

An agent reads part of a file (`Read` with an offset, `sed -n 5,20p`, `tail`, a truncated tool result)
and a key's middle lines reach the model with neither `-----BEGIN ... PRIVATE KEY-----` nor the DER
head `detectors.py` knows a body's first line by. What is left is the layout: PEM wraps base64 at 64
characters (OpenSSH's own format at 70), line after line, random. Two or more full lines of
one such width, each on a line of its own (raw, JSON-escaped, or after a line number as `cat -n`, `grep
-n` and a Read tool print it), with the entropy base64 drawn at random has, are taken as a key's body.

Not taken: lines inside a PEM block whose BEGIN line is in view (a certificate's or a public key's body is
public; a private key's is the PEM rule's), lines of another width or of uneven widths, text encoded
as base64 (its entropy is lower), and a file whose first bytes say it is an image, a document or an
archive (`openssl base64` wraps any file at 64). A certificate's middle lines read alone are taken:
nothing in them tells them from a key's.
"""

from __future__ import annotations

import base64
import re
import textwrap

from ctxtap.redaction.detector import Detector, TriggerHits, samples
from ctxtap.redaction.engine import Trigger
from ctxtap.redaction.entropy import expected_entropy, shannon_entropy
from ctxtap.redaction.false_positives import all_classes
from ctxtap.redaction.spans import PRIORITY_FORMAT, Span

KIND = "private-key"
# PEM's and OpenSSH's private key format's (MIME's and `base64`'s 76 are any file's: random at that width is
# an attachment, an archive or an image's middle as often as a key)
WIDTHS = (64, 70)
MIN_FULL_LINES = 2
_B64 = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
_DIGITS = frozenset(b"0123456789")
# What a line number ends with: a Read tool's arrow (raw or JSON-escaped), `cat -n`'s tab, `grep -n`'s colon,
# opencode's colon and a space, a bar (`00012| `).
_NUMBER_ENDS = (b"\xe2\x86\x92", b"\\u2192", b"\t", b"\\t", b":", b": ", b"|", b"| ")
_BREAK = rb"(?:\r?\n|\\{1,3}r?\\{0,3}n)"
_NUMBER = rb"(?:[ \t]{0,8}[0-9]{1,7}(?:\xe2\x86\x92|\\u2192|\t|\\t|[:|] ?))?"
_BREAK_RE = re.compile(_BREAK + _NUMBER)  # what parts two lines, as the trigger reads it
# A full line, a line break (a line number perhaps), and sixteen characters of the next line. Scanned apart
# (see `Trigger`): wide classes, no literal.
TRIGGERS = (Trigger(rb"[A-Za-z0-9+/]{64}" + _BREAK + _NUMBER + rb"[A-Za-z0-9+/]{16}", window=0, opens=False,
                    apart=True),)
# the first bytes of files sent as base64 that are no key: images, PDFs, archives, audio, executables
_FILE_MAGICS = (b"\x89PNG", b"\xff\xd8\xff", b"GIF8", b"%PDF", b"PK\x03\x04", b"\x1f\x8b", b"RIFF", b"OggS", b"ID3",
                b"\x7fELF", b"BZh", b"\xfd7zXZ", b"(\xb5/\xfd")
_LAST_LINE_ENDS = frozenset(b"\r\n\\\"'`-<")  # a line break (raw or escaped), a quote, `-----END`, a tag
_ENTROPY_SLACK = 0.3  # bits per character under what random base64 of the block's length scores
_PEM_REACH = 1 << 16  # how far back a BEGIN line may hold the block


def _break_before(data: bytes, i: int) -> int:
    """The start of the line break that ends right before `i` (raw, or escaped once or twice), else -1."""
    if i >= 1 and data[i - 1] == 0x0A:
        return i - 2 if i >= 2 and data[i - 2] == 0x0D else i - 1
    if i >= 2 and data[i - 1] == 0x6E and data[i - 2] == 0x5C:  # `\n`
        j = i - 2
        while j > 0 and data[j - 1] == 0x5C:
            j -= 1
        if j >= 2 and data[j - 1] == 0x72 and data[j - 2] == 0x5C:  # `\r\n`
            j -= 2
            while j > 0 and data[j - 1] == 0x5C:
                j -= 1
        return j
    return -1


def _number_before(data: bytes, i: int) -> int:
    """Where a line number printed before `i` begins (`   5→`, `5\\t`, `5:`), else `i`."""
    for mark in _NUMBER_ENDS:
        if data.startswith(mark, i - len(mark)):
            j = i - len(mark)
            while j > 0 and data[j - 1] in _DIGITS:
                j -= 1
            if j == i - len(mark):
                return i  # no digits: the mark is text of its own
            while j > 0 and data[j - 1] in b" \t":
                j -= 1
            return j
    return i


def _line_start(data: bytes, end: int) -> int:
    """The start of the base64 characters before `end`; an escape's letters (`\\n`, `\\t`, `\\u2192`) are not
    the line's."""
    start = end
    while start > 0 and data[start - 1] in _B64:
        start -= 1
    if start > 0 and data[start - 1] == 0x5C:
        start += 5 if data.startswith(b"u2192", start) else 1
    return min(start, end)


def _line_at(data: bytes, start: int) -> int:
    """The end of the base64 characters from `start`."""
    end, n = start, len(data)
    while end < n and data[end] in _B64:
        end += 1
    return end


def _previous_line(data: bytes, start: int) -> tuple[int, int] | None:
    """The line of base64 before the line at `start` (its start and end), if a line break parts them."""
    brk = _break_before(data, _number_before(data, start))
    if brk < 0:
        return None
    return _line_start(data, brk), brk


def _next_line(data: bytes, end: int) -> tuple[int, int] | None:
    """The line of base64 after the line ending at `end`, if a line break (and perhaps a number) comes first."""
    m = _BREAK_RE.match(data, end)
    return None if m is None else (m.end(), _line_at(data, m.end()))


class _PemMarks:
    """The last `-----BEGIN` and `-----END` before a point, found by reading each byte once as blocks come in
    order (many blocks far from any marker would each search the whole reach again)."""

    def __init__(self) -> None:
        self.begin = self.end = -1
        self.read_to = 0

    def inside(self, data: bytes, start: int) -> bool:
        """Does a `-----BEGIN` with no `-----END` after it come within reach before `start` (its block's body)?"""
        floor = max(self.read_to, start - _PEM_REACH)
        if (b := data.rfind(b"-----BEGIN", floor, start)) >= 0:
            self.begin = b
        if (e := data.rfind(b"-----END", floor, start)) >= 0:
            self.end = e
        self.read_to = max(self.read_to, start)
        return self.begin > self.end and self.begin >= start - _PEM_REACH


def _binary_file(first_line: bytes) -> bool:
    """Does the block decode to the start of an image, an archive or a document (a MIME attachment, `base64 pic.png`)?"""
    try:
        head = base64.b64decode(first_line[: len(first_line) // 4 * 4])
    except ValueError:
        return False
    return head.startswith(_FILE_MAGICS) or head[4:8] == b"ftyp"


def _random(body: bytes) -> bool:
    return all_classes(body) and shannon_entropy(body) >= expected_entropy(64, len(body)) - _ENTROPY_SLACK


def find_key_line_spans(data: bytes, hits: TriggerHits, out: list[Span]) -> None:
    """Append spans of base64 blocks cut at one width, random, outside any PEM block in view."""
    done = -1
    marks = _PemMarks()
    for _, end in hits[0]:
        if end <= done:
            continue
        second = _line_start(data, end)
        first = _previous_line(data, second)
        if first is None or first[1] - first[0] not in WIDTHS:
            continue
        width = first[1] - first[0]
        lines = [first]
        while (prev := _previous_line(data, lines[0][0])) is not None and prev[1] - prev[0] == width:
            lines.insert(0, prev)
        line: tuple[int, int] | None = (second, _line_at(data, second))
        while line is not None and line[1] - line[0] == width:
            lines.append(line)
            line = _next_line(data, line[1])
        if line is not None and 0 < line[1] - line[0] < width:  # the last line, shorter, its padding with it
            stop = line[1]
            while stop < len(data) and stop - line[1] < 2 and data[stop] == 0x3D:
                stop += 1
            if (stop == len(data) or data[stop] in _LAST_LINE_ENDS) and not data[line[0] : stop].islower():
                lines.append((line[0], stop))  # (not `and` of `and that was all`, nor a word on a line)
        done = lines[-1][1]
        full = sum(1 for s, e in lines if e - s == width)
        if full < MIN_FULL_LINES or marks.inside(data, lines[0][0]):
            continue
        if not _random(b"".join(data[s:e] for s, e in lines).rstrip(b"=")) or _binary_file(data[slice(*lines[0])]):
            continue
        out.append(Span(lines[0][0], lines[-1][1], KIND, PRIORITY_FORMAT))


_TEXT_AS_BASE64 = "\n".join(
    textwrap.wrap(base64.b64encode(b"The quick brown fox jumps over the lazy dog, and again, " * 4).decode(), 64))

DETECTOR = Detector(
    "key-lines",
    TRIGGERS,
    find_key_line_spans,
    examples=samples(
        "<b64:64>\n<b64:64>\n<b64:64>\n<b64:20>==\n-----END PRIVATE KEY-----\n",  # the end of a key, read alone
        '{"content": "     7\\u2192<b64:64>\\n     8\\u2192<b64:64>\\n     9\\u2192<b64:64>\\n"}',  # a Read tool's lines
        "$ sed -n 4,6p id_rsa\n<b64:70>\n<b64:70>\n<b64:70>\n",  # OpenSSH's width
        '{"output": "4: <b64:64>\\n5: <b64:64>\\n6: <b64:64>\\n"}',  # opencode's read: a number, a colon, a space
    ),
    near_misses=samples(
        "-----BEGIN CERTIFICATE-----\n<b64:64>\n<b64:64>\n<b64:64>\n",  # a certificate's body: public
        _TEXT_AS_BASE64,  # English text as base64, wrapped at 64: a text's entropy
        "one line of base64 alone: <b64:64>\n",
        "<b64:64>\n<b64:60>\n<b64:64>\n",  # uneven widths: no encoder's wrapping
    ),
)
