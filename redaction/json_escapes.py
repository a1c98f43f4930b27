"""Secrets inside JSON strings whose escapes hide a rule's delimiters.

A tool result that quotes `curl -u ":pw"` or `<add key="Password" value="pw"/>`
reaches the model as `curl -u \\":pw\\"`: the quotes a rule anchors on are
escaped, so the raw bytes match nothing. Each JSON string literal holding an
escaped quote or backslash is decoded (with, for every decoded byte, the
offset it came from), scanned with every detector (itself included, so JSON
inside JSON is opened too), and each secret found is mapped back onto the
escaped bytes — the placeholder replaces the whole escaped run, so nothing of
the secret survives and the JSON stays valid.
"""

from __future__ import annotations

import bisect
import hashlib
import re
from collections.abc import Callable, Iterator, Sequence
from json.decoder import scanstring
from typing import overload

from ctxtap.redaction.spans import Span

# An escaped quote, a `\\` pair, a printable ASCII character written as `\u00XX` (Go's
# encoder writes `&`, `<` and `>` so: `postgres://app:p\u0026ss@db` hides a URL's password), or
# two escaped slashes (PHP's encoder writes every `/` so: `postgres:\/\/app:pass@db`,
# `https:\/\/hooks.example\/webhook\/<token>` hide a URL and all it holds): found at the backslash
# (a literal first byte, so `re` skips to it in C). Control characters (`\u001b` in coloured tool
# output) and non-ASCII ones hide no rule's delimiter; one escaped slash alone (a path's) no URL.
_HIDING_RUN = re.compile(rb'\\(?:[\\"]|u00[2-7][0-9a-fA-F]|/\\/)')
_ESCAPE = re.compile(rb'\\(?:u([0-9a-fA-F]{4})|(["\\/bfnrt]))')
_SIMPLE = {b'"': b'"', b"\\": b"\\", b"/": b"/", b"b": b"\b", b"f": b"\f", b"n": b"\n", b"r": b"\r", b"t": b"\t"}
MAX_DEPTH = 4


def unescaped_quote(data: bytes, pos: int) -> bool:
    """Is the `"` at `pos` a string delimiter (preceded by an even run of backslashes)?"""
    n = 0
    while pos - n - 1 >= 0 and data[pos - n - 1] == 0x5C:
        n += 1
    return n % 2 == 0


@overload
def _string_start(data: bytes, pos: int) -> int: ...
@overload
def _string_start(data: bytes, pos: int, steps: int) -> int | None: ...
def _string_start(data: bytes, pos: int, steps: int | None = None) -> int | None:
    """Where the content of the JSON string literal holding `pos` begins (0 where no quote opens it);
    None where more than `steps` escaped quotes lie between."""
    lo = data.rfind(b'"', 0, pos)
    while lo >= 0 and not unescaped_quote(data, lo):
        if steps is not None:
            if steps == 0:
                return None
            steps -= 1
        lo = data.rfind(b'"', 0, lo)
    return lo + 1


class _Backwards:
    """`_string_start` for positions deep in long literals: a trigger can match far into a tool
    result that quotes code, and walking back over each escaped quote before it is a step of
    Python per quote. Past a few, one regex search over the bytes before it, reversed: a window
    of them, widened until it holds the opening quote (reversing a whole 1 MB body for a hit
    near its literal's start cost more than the search)."""

    _STEPS = 16
    _WINDOW = 4096  # bytes reversed first; then eight times as many, until the body's start
    # in reversed bytes: a quote followed by an even run of backslashes (preceded by one, unreversed)
    _UNESCAPED = re.compile(rb'"(?:\\\\)*(?!\\)')

    def __init__(self, data: bytes) -> None:
        self.data = data

    def string_start(self, pos: int) -> int:
        start = _string_start(self.data, pos, self._STEPS)
        if start is not None:
            return start
        width = self._WINDOW
        while True:
            lo = max(0, pos - width)
            window = self.data[lo:pos][::-1]
            m = self._UNESCAPED.search(window)
            # a match whose backslashes reach the window's end may have more beyond it: widen
            if lo == 0 or (m is not None and m.end() < len(window)):
                return pos - m.start() if m is not None else 0
            width *= 8


def _string_around(data: bytes, pos: int, start: int | None = None) -> tuple[int, int]:
    """Content bounds of the JSON string literal holding `pos`; the whole of `data` where no
    quote delimits it (a decoded string's content, one level down, has none). `start`: its
    content start, when known (`_string_start`)."""
    lo = (_string_start(data, pos) if start is None else start) - 1
    # `pos + 1` is where an escape or a plain byte begins (`pos` ends an escape or a `\\` pair):
    # from there the string runs through plain bytes and escapes to its unescaped closing quote.
    hi = _STRING_REST.match(data, pos + 1).end()  # type: ignore[union-attr]
    return lo + 1, hi if hi < len(data) and data[hi] == 0x22 else len(data)


_STRING_REST = re.compile(rb'[^"\\]*(?:\\.[^"\\]*)*', re.S)


def string_end(data: bytes, start: int) -> int:
    """The offset of the quote that closes the JSON string whose contents begin at `start`, or -1:
    found with `bytes.find` (C speed over long strings), skipping escaped quotes."""
    i = data.find(b'"', start)
    while i >= 0 and not unescaped_quote(data, i):
        i = data.find(b'"', i + 1)
    return i


def json_unescape(raw: bytes) -> tuple[bytes, list[int]]:
    """Decoded UTF-8 bytes of a string literal's content and each byte's offset in `raw` (plus the end)."""
    out = bytearray()
    origin: list[int] = []
    last = 0
    pending_high: tuple[int, int] | None = None  # (code unit, offset) of a high surrogate
    for m in _ESCAPE.finditer(raw):
        if m.start() > last:
            if pending_high is not None:
                _emit(out, origin, chr(pending_high[0]), pending_high[1])
                pending_high = None
            out += raw[last : m.start()]
            origin.extend(range(last, m.start()))
        if m.group(1) is not None:
            unit = int(m.group(1), 16)
            if pending_high is not None and 0xDC00 <= unit <= 0xDFFF:
                code = 0x10000 + ((pending_high[0] - 0xD800) << 10) + (unit - 0xDC00)
                _emit(out, origin, chr(code), pending_high[1])
                pending_high = None
            else:
                if pending_high is not None:
                    _emit(out, origin, chr(pending_high[0]), pending_high[1])
                    pending_high = None
                if 0xD800 <= unit <= 0xDBFF:
                    pending_high = (unit, m.start())
                else:
                    _emit(out, origin, chr(unit), m.start())
        else:
            if pending_high is not None:
                _emit(out, origin, chr(pending_high[0]), pending_high[1])
                pending_high = None
            out += _SIMPLE[m.group(2)]
            origin.append(m.start())
        last = m.end()
    if pending_high is not None:
        _emit(out, origin, chr(pending_high[0]), pending_high[1])
    out += raw[last:]
    origin.extend(range(last, len(raw)))
    origin.append(len(raw))
    return bytes(out), origin


def _emit(out: bytearray, origin: list[int], char: str, at: int) -> None:
    encoded = char.encode("utf-8", "surrogatepass")
    out += encoded
    origin.extend([at] * len(encoded))


def decode_string(raw: bytes) -> bytes:
    """`json_unescape(raw)[0]`, in C where the content is valid UTF-8 with only JSON's escapes.

    Most opened strings hold no secret, so the offsets (a Python loop over every byte) are
    worked out only for those that do.
    """
    try:
        text = raw.decode("utf-8")
        value, end = scanstring(text + '"', 0, False)
    except ValueError:  # not UTF-8, or an escape JSON does not have: the regex decoder keeps it
        return json_unescape(raw)[0]
    if end != len(text) + 1:
        return json_unescape(raw)[0]
    return value.encode("utf-8", "surrogatepass")


class OpenedStrings:
    """Secrets found in long string literals opened before, recalled without decoding them again.

    An agent resends its whole history with every request, so each request brings the
    same tool results, escaped quotes and all, and each would be decoded and scanned
    again. What a literal holds depends only on its bytes and how deep it was opened:
    a literal seen before is recognised by its first bytes, a closing quote where its
    length ends, and a SHA-256 of its bytes (hashing is several times faster than
    decoding); its spans are then those found the first time.
    """

    MIN_LENGTH = 1024  # shorter literals cost less to scan than to remember
    LIMIT = 1024  # first bytes remembered at once (then all forgotten together)
    _HEAD = 64  # bytes a literal is first looked up by
    _PER_HEAD = 8  # literals remembered per first bytes (numbered file listings start alike)

    def __init__(self) -> None:
        # (depth, hash of the first bytes) -> (length, SHA-256, spans relative to the start): no
        # body bytes are kept
        self._by_head: dict[tuple[int, int], list[tuple[int, bytes, tuple[Span, ...]]]] = {}

    def recall(self, data: bytes, lo: int, depth: int) -> tuple[int, list[Span]] | None:
        """(closing quote, spans) of the literal whose content begins at `lo`, if seen before."""
        known = self._by_head.get((depth, hash(data[lo : lo + self._HEAD])))
        if not known:
            return None
        for length, digest, spans in known:
            hi = lo + length
            # the same bytes before a quote: the same backslashes before it, so it closes the literal
            if hi < len(data) and data[hi] == 0x22:
                if hashlib.sha256(memoryview(data)[lo:hi]).digest() == digest:
                    return hi, [s._replace(start=s.start + lo, end=s.end + lo) for s in spans]
        return None

    def remember(self, data: bytes, lo: int, hi: int, depth: int, spans: Sequence[Span]) -> None:
        """Keep what a literal closed by a quote at `hi` holds (`spans` over `data`)."""
        if hi - lo < self.MIN_LENGTH or hi >= len(data) or data[hi] != 0x22:
            return
        if len(self._by_head) >= self.LIMIT:
            self._by_head.clear()
        known = self._by_head.setdefault((depth, hash(data[lo : lo + self._HEAD])), [])
        if len(known) >= self._PER_HEAD:
            known.pop(0)
        relative = tuple(s._replace(start=s.start - lo, end=s.end - lo) for s in spans)
        known.append((hi - lo, hashlib.sha256(memoryview(data)[lo:hi]).digest(), relative))

    def clear(self) -> None:
        self._by_head.clear()


def find_escaped_spans(
    data: bytes,
    out: list[Span],
    scan: Callable[[bytes, int], list[Span]],
    depth: int,
    lines_at: Sequence[int] = (),
    memory: OpenedStrings | None = None,
    near: Sequence[int] | None = None,
) -> None:
    """Append spans (over the escaped bytes) of secrets found in decoded string literals.

    Each string literal holding an escaped quote or a `\\\\` pair is decoded once (the
    search goes on after its closing quote), or recalled from `memory`; so is each one
    around a position of `lines_at` (where a rule spanning lines matched its keyword) that
    holds an escaped newline. `near` (sorted), where given, narrows the first kind to the
    literals holding one of its positions (where a trigger's escape-tolerant form matched
    the raw bytes): see `_narrowed`.
    """
    if depth >= MAX_DEPTH:
        return
    opened: list[tuple[int, int]] = []
    text = ""  # `data` as Latin-1, one character per byte (the C JSON scanner's offsets are ours)
    ascii_only = False
    for pos, lo in _hiding_literals(data, opened) if near is None else _narrowed(data, near, opened):
        recalled = memory.recall(data, lo, depth) if memory is not None else None
        if recalled is not None:
            hi, found = recalled
        else:
            if not text:  # decoded once, at the first literal not recalled
                text, ascii_only = data.decode("latin-1"), data.isascii()
            lo, hi, decoded = _string_at(data, text, ascii_only, pos, lo)
            found = []
            _scan_string(data, lo, hi, found, scan, depth, decoded)
            if memory is not None:
                memory.remember(data, lo, hi, depth, found)
        out.extend(found)
        opened.append((lo, hi))
    for pos in sorted(lines_at):
        if any(lo <= pos < hi for lo, hi in opened) or pos >= len(data):
            continue
        lo, hi = _string_around(data, pos)
        if b"\\n" in data[lo:hi]:
            _scan_string(data, lo, hi, out, scan, depth)
        opened.append((lo, hi))


def _hiding_literals(data: bytes, opened: list[tuple[int, int]]) -> Iterator[tuple[int, int]]:
    """(a position in its first hiding run, content start) of every literal holding one, in order.

    The search goes on after the closing quote of the literal last opened (`opened[-1]`,
    appended by the caller for each literal yielded)."""
    # memchr for a backslash first; then the regex, whose literal first byte it skips to in C
    # (several times faster than `b'\\"' in data`, a two-byte search)
    search = _HIDING_RUN.search
    m = search(data) if b"\\" in data else None
    while m is not None:
        pos = m.start() + 1
        yield pos, _string_start(data, pos)
        m = search(data, max(opened[-1][1], m.end()))


def _narrowed(data: bytes, near: Sequence[int], opened: list[tuple[int, int]]) -> Iterator[tuple[int, int]]:
    """`_hiding_literals` narrowed to the literals holding a position of `near` (sorted).

    Decoding every literal with an escaped quote scans most of an agent's request twice
    (tool results quote code); yet a rule matches a decoded literal only where a trigger's
    escape-tolerant form matches the raw one, so only the literals where one did are
    opened; `near` must also hold the escapes those forms leave out (`redaction.openers`).
    """
    if b"\\" not in data:
        return
    search = _HIDING_RUN.search
    done = 0  # where the literal considered last ends
    m = None  # the first hiding run after the last literal start looked at
    backwards = _Backwards(data)
    i, count = 0, len(near)
    while i < count:
        pos = near[i]
        if pos < done:  # triggers match many times in a literal: skip to the first hit past it
            i = bisect.bisect_left(near, done, i)
            continue
        i += 1
        lo = backwards.string_start(pos)
        if m is None or m.start() < lo:
            m = search(data, lo)
        if m is None:
            return  # no hiding run from here on
        if m.start() >= pos:  # none before `pos` in its literal: is there one after, before it closes?
            end = data.find(b'"', pos)  # no escaped quote up to the run: the first quote closes it
            if 0 <= end < m.start():
                done = end + 1
                continue
        yield m.start() + 1, lo
        done = opened[-1][1]


def _string_at(data: bytes, text: str, ascii_only: bool, pos: int, start: int) -> tuple[int, int, bytes | None]:
    """`_string_around(data, pos, start)` for a `pos` in the first hiding run after the last string
    opened (`start`: its content start), plus its decoded content where that came for free.

    The closing quote is found by the C JSON scanner over `text` (`data` as Latin-1): a regex
    takes a step per byte of a long tool result. A string whose escapes JSON does not have, or
    with no closing quote (source code one level down), goes the regex way.
    """
    try:
        value, end = scanstring(text, start, False)
    except ValueError:
        lo, hi = _string_around(data, pos, start)
        return lo, hi, None
    hi = end - 1
    if not ascii_only and not data[start:hi].isascii():
        return start, hi, None  # Latin-1 read its UTF-8 bytes one by one: decode them again
    return start, hi, value.encode("utf-8", "surrogatepass")


def _scan_string(data: bytes, lo: int, hi: int, out: list[Span], scan: Callable[[bytes, int], list[Span]],
                 depth: int, decoded: bytes | None = None) -> None:
    raw = data[lo:hi]
    if decoded is None:
        decoded = decode_string(raw)
    spans = scan(decoded, depth + 1)
    if spans:
        exact, origin = json_unescape(raw)
        if exact != decoded:  # never expected: trust the slow decoder
            decoded, spans = exact, scan(exact, depth + 1)
        for span in spans:
            start = lo + origin[span.start]
            end = lo + origin[span.end] if span.end < len(decoded) else hi
            out.append(Span(start, end, span.kind, span.priority, span.encoded))
