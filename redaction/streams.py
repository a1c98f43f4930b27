"""Secrets split across streamed deltas: `"text":"sk-ant-api"` ... `"text":"03-x7Yq..."`.

A model that echoes a key back streams it a few characters per event (SSE
events, or WebSocket frames on the Codex transport), so no single event holds
a recognisable secret. Here every content stream of a body is reassembled —
the text, tool-argument and reasoning deltas of Anthropic Messages, OpenAI
Responses (over SSE or WebSocket), Chat Completions and Gemini — and the
joined text is redacted *before* the events are: a secret found in the joined
text puts its placeholder in the delta where it starts and removes its bytes
from every later delta, so no fragment survives even when the first fragment
is a valid key by itself. Only then is each event redacted on its own for
what lies outside the deltas. Events stay valid JSON: edits land inside the
string contents (the joined text is the strings in their escaped JSON form,
which the detectors read, and edges are widened to whole escapes).

It works incrementally, because a live stream arrives in arbitrary cuts:
`StreamRedactor.feed` takes one event and returns the events that are final.
An event is held while the last `HOLD_BYTES` of its stream are still open (a
secret there could go on in the next delta); a stream is rescanned once
`SCAN_STEP` new bytes arrived, with `CONTEXT_BYTES` of released text before
it so a credential name stays in view. What is held is bounded
(`MAX_HELD_BYTES`); past that the oldest stream is released as it stands and
whatever continues a secret found there is still removed.

The redactor is used only through its public interface: `redact_payload`
(one message that is not an event stream) and `counts`; a capture redactor
that layers personal data on top exposes its credential part as
`credentials`, which is what the joined text is scanned with.
"""

from __future__ import annotations

import collections
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from ctxtap.redaction.json_escapes import string_end
from ctxtap.redaction.names import KEYWORD_PATTERNS
from ctxtap.redaction.placeholder import PLACEHOLDER_RE
from ctxtap.wire.families import delta_markers, stream_deltas
from ctxtap.wire.sse import data_payload, event_ends

HOLD_BYTES = 8 * 1024
SCAN_STEP = 8 * 1024
CONTEXT_BYTES = 1024
MAX_HELD_BYTES = 4 * 1024 * 1024
MAX_EVENT_BYTES = 8 * 1024 * 1024  # an SSE "event" with no blank line this long is released as it stands
_ALIGN_BUDGET = 20_000


class PayloadRedactor(Protocol):
    counts: collections.Counter[str]

    def redact_payload(self, data: bytes) -> bytes: ...


# --- which strings of an event are pieces of a content stream --------------------------------

Path = tuple[Any, ...]
# An API no family of ctxtap.wire.families knows (Ollama's NDJSON, Cohere's or Bedrock's events, the next one):
# every string under one of these keys is a piece of the content stream at its path.
CONTENT_KEYS = frozenset({"text", "content", "delta", "partial_json", "arguments", "thinking", "reasoning",
                          "reasoning_content", "response", "refusal", "input", "output", "message", "token"})
_GENERIC_MARKERS = tuple(b'"%s"' % k.encode() for k in sorted(CONTENT_KEYS))
# A delta of an API read generically is a small event; a bigger payload (a whole request frame on a
# WebSocket, a final event repeating the answer) is not parsed for one.
_GENERIC_MAX_BYTES = 64 * 1024
_GENERIC_DEPTH = 8
_GENERIC_ITEMS = 64


def _wanted(obj: dict) -> Iterator[tuple[tuple, Path]]:
    """(stream key, path of the string) for every delta string of one decoded event: where its API
    family says (`ctxtap.wire.families`), else read generically."""
    known = stream_deltas(obj)
    if known is None:
        yield from _generic(obj, ())
    else:
        yield from known


def _generic(value: Any, path: Path) -> Iterator[tuple[tuple, Path]]:
    """Every string under a content-like key (`CONTENT_KEYS`), its path its stream: consecutive
    events of one shape put the pieces of one text at one path (array indices included, so two
    choices or two tool calls stay apart)."""
    if len(path) >= _GENERIC_DEPTH:
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, str):
                if key in CONTENT_KEYS:
                    yield ("generic", *path, key), (*path, key)
            elif isinstance(item, (dict, list)):
                yield from _generic(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value[:_GENERIC_ITEMS]):
            if isinstance(item, (dict, list)):
                yield from _generic(item, (*path, i))


# A JSON string as an unrolled loop (runs of plain bytes, then one escape): an alternation per
# byte would make the regex engine take a step for every character of a long delta.
_TOKEN_RE = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[{}\[\],]')


def _string_spans(payload: bytes) -> dict[Path, tuple[int, int]]:
    """Path -> (start, end) of the escaped contents of every string value in a JSON text."""
    out: dict[Path, tuple[int, int]] = {}
    stack: list[list] = []  # [is_object, key or index, expecting a key]
    for m in _TOKEN_RE.finditer(payload):
        c = payload[m.start()]
        if c == 0x22:  # a string
            top = stack[-1] if stack else None
            if top is not None and top[0] and top[2]:
                raw = m.group()[1:-1]
                top[1] = json.loads(m.group()) if b"\\" in raw else raw.decode("utf-8", "replace")
                top[2] = False
            else:
                out[tuple(s[1] for s in stack)] = (m.start() + 1, m.end() - 1)
        elif c == 0x7B:  # {
            stack.append([True, None, True])
        elif c == 0x5B:  # [
            stack.append([False, 0, False])
        elif c in (0x7D, 0x5D):  # } ]
            if stack:
                stack.pop()
        elif stack:  # ,
            top = stack[-1]
            if top[0]:
                top[2] = True
            else:
                top[1] += 1
    return out


def delta_pieces(payload: bytes) -> list[tuple[tuple, int, int]]:
    """(stream key, start, end) of the delta strings in one event's JSON payload (escaped form)."""
    if not any(marker in payload for marker in delta_markers()) and (
            len(payload) > _GENERIC_MAX_BYTES or not any(marker in payload for marker in _GENERIC_MARKERS)):
        return []
    try:
        obj = json.loads(payload)
    except (ValueError, RecursionError):
        return []
    if not isinstance(obj, dict):
        return []
    wanted = list(_wanted(obj))
    if not wanted:
        return []
    spans = _field_spans(payload, obj, wanted) or _string_spans(payload)
    return [(key, *spans[path]) for key, path in wanted if path in spans]


def _value_span(payload: bytes, name: str) -> tuple[int, int] | None:
    """Where the string value of the one key `"name"` sits, if that key occurs exactly once."""
    key = b'"' + name.encode() + b'"'
    at = payload.find(key)
    colon = _COLON_QUOTE.match(payload, at + len(key)) if at >= 0 else None
    if colon is None:
        return None
    end = string_end(payload, colon.end())
    # a second `"name"` cannot sit inside the value (its quotes would be escaped there)
    if end < 0 or payload.find(key, end) >= 0:
        return None
    return colon.end(), end


_COLON_QUOTE = re.compile(rb'[ \t]*:[ \t]*"')


def _field_spans(payload: bytes, obj: dict, wanted: list[tuple[tuple, Path]]) -> dict[Path, tuple[int, int]]:
    """The common case without tokenizing: each wanted field name occurs once, as that very key."""
    out: dict[Path, tuple[int, int]] = {}
    for _, path in wanted:
        span = _value_span(payload, path[-1])
        if span is None:
            return {}
        value: Any = obj
        for step in path:
            value = value[step]
        raw = payload[span[0] : span[1]]
        if (json.loads(b'"' + raw + b'"') if b"\\" in raw else raw.decode("utf-8", "replace")) != value:
            return {}
        out[path] = span
    return out


# --- the joined text and where its redactions land -------------------------------------------


def align(before: bytes, after: bytes) -> list[tuple[int, int, bytes]]:
    """Where `after` (the redactor's output) replaced parts of `before` with placeholders.

    The redactor changes nothing outside the spans it replaces, so `after` is
    `before` with some runs swapped for placeholders. Returns (start, end,
    placeholder) in `before`'s coordinates. If the output cannot be read that
    way, one edit covering everything between the first and last changed byte
    is returned: coarser, but applying it still yields exactly `after`.
    """
    if before == after:
        return []
    parts: list[tuple[bool, bytes]] = []
    pos = 0
    for m in PLACEHOLDER_RE.finditer(after):
        parts += [(False, after[pos : m.start()]), (True, m.group())]
        pos = m.end()
    parts.append((False, after[pos:]))
    edits: list[tuple[int, int, bytes]] = []
    failed: set[tuple[int, int]] = set()
    budget = [_ALIGN_BUDGET]

    def solve(k: int, at: int) -> bool:
        if budget[0] <= 0 or (k, at) in failed:
            return False
        budget[0] -= 1
        if k == len(parts):
            return at == len(before)
        is_placeholder, text = parts[k]
        if not is_placeholder:
            if before.startswith(text, at) and solve(k + 1, at + len(text)):
                return True
        else:
            if before.startswith(text, at) and solve(k + 1, at + len(text)):
                return True  # a placeholder that was already there
            following = parts[k + 1][1] if k + 1 < len(parts) else None
            ends = _candidate_ends(before, at, following, last=k + 2 >= len(parts))
            for end in ends:
                edits.append((at, end, text))
                if solve(k + 1, end):
                    return True
                edits.pop()
        failed.add((k, at))
        return False

    try:
        if solve(0, 0):
            return edits
    except RecursionError:
        pass
    lo = 0
    while lo < min(len(before), len(after)) and before[lo] == after[lo]:
        lo += 1
    hi = 0
    while hi < min(len(before), len(after)) - lo and before[-1 - hi] == after[-1 - hi]:
        hi += 1
    return [(lo, len(before) - hi, after[lo : len(after) - hi])]


def _candidate_ends(before: bytes, at: int, following: bytes | None, last: bool) -> Iterator[int]:
    """Possible ends of a replaced run starting at `at`, given the text that follows it."""
    if following is None or (last and following == b""):
        yield len(before)
        return
    if last:
        end = len(before) - len(following)
        if end > at and before.endswith(following):
            yield end
        return
    if following == b"":  # another placeholder follows at once: any split of the run will do
        yield from range(at + 1, len(before) + 1)
        return
    end = before.find(following, at + 1)
    while end >= 0:
        yield end
        end = before.find(following, end + 1)


def _escape_starts(text: bytes) -> list[int]:
    """Offsets where a JSON escape starts (`\\n`, `\\"`, `\\u00e9`) and where it ends, in order."""
    marks: list[int] = []
    i = text.find(b"\\")
    while i >= 0:
        size = 6 if text[i + 1 : i + 2] == b"u" else 2
        marks += [i, i + size]
        i = text.find(b"\\", i + size)
    return marks


def _widen(text: bytes, lo: int, hi: int) -> tuple[int, int]:
    """Move edit edges out of the middle of an escape, so the string stays valid JSON."""
    if b"\\" not in text:
        return lo, hi
    marks = _escape_starts(text)
    for i in range(0, len(marks), 2):
        start, end = marks[i], marks[i + 1]
        if start < lo < end:
            lo = start
        if start < hi < end:
            hi = end
    return lo, min(hi, len(text))


# --- the incremental joiner ------------------------------------------------------------------


_CREDENTIAL_WORD = re.compile(rb"(?i)" + b"|".join(KEYWORD_PATTERNS))  # a name that marks its value


class _Content:
    """One content stream: the joined escaped text still needed (context + held) and its findings."""

    __slots__ = ("text", "origin", "base", "scanned", "spans", "applied", "forced")

    def __init__(self) -> None:
        self.text = bytearray()
        self.origin = 0  # absolute offset of text[0]
        self.base = 0  # absolute offset of the first byte not yet released
        self.scanned = -1  # absolute end of the text the last scan covered
        self.spans: list[tuple[int, int, bytes]] = []
        self.applied: list[tuple[int, int]] = []  # spans whose placeholder is already out
        self.forced = False

    @property
    def end(self) -> int:
        return self.origin + len(self.text)

    def safe(self, final: bool) -> int:
        """Up to where pieces may be released: HOLD_BYTES back from the scanned end, never inside a span."""
        if final or self.forced:
            # a stream that never grew was never scanned (`scanned` -1): its empty pieces are out already
            return max(self.scanned, self.base)
        if self.scanned < 0:
            return self.base
        point = self.scanned - HOLD_BYTES
        for start, end, _ in self.spans:
            if start < point < end:
                point = start
        return max(point, self.base)


@dataclass(slots=True)
class _Piece:
    content: _Content
    start: int  # absolute offsets in the content's joined text
    end: int
    lo: int  # where the escaped string sits in the event
    hi: int


@dataclass(slots=True)
class _Held:
    token: object
    data: bytes
    pieces: list[_Piece] = field(default_factory=list)
    clean: bool = False  # its bytes around the delta string are a framing already found clean


@dataclass
class Released:
    """An event that is final: its delta strings redacted against the joined stream.

    `data` still needs the per-event pass (`redact_payload`) unless `clean`; `redactions`
    counts the placeholders the join put in. `clean`: the event is one delta string inside a
    framing byte for byte the same as one the per-event pass found nothing in, whose last name
    is no credential's; the joined stream's scan covered the string (in wider context), so the
    per-event pass would read nothing new. Most events of a long answer are such.
    """

    token: object
    data: bytes
    redactions: dict[str, int]
    clean: bool = False


class StreamRedactor:
    """Feeds events of one body or socket in order; returns them once a split secret cannot reach them."""

    def __init__(self, redactor: PayloadRedactor) -> None:
        self._redactor = redactor
        self._credentials: PayloadRedactor = getattr(redactor, "credentials", redactor)
        self._contents: dict[tuple, _Content] = {}
        self._queue: collections.deque[_Held] = collections.deque()
        self._touched: dict[int, _Content] = {}  # contents fed since the last release
        self._shape: dict[object, tuple[bytes, bytes, tuple]] = {}  # per channel: see `_pieces`
        self._framing: dict[object, tuple[bytes, bytes, bool]] = {}  # per channel: see `_framing_clean`
        self.held_bytes = 0

    def feed(self, token: object, data: bytes, start: int = 0, end: int | None = None,
             channel: object = None) -> list[Released]:
        """One event; its JSON payload is `data[start:end]`. `channel` keeps streams apart (a direction)."""
        return self.feed_many([(token, data, start, end)], channel)

    def feed_many(self, events: list[tuple[object, bytes, int, int | None]], channel: object = None) -> list[Released]:
        """Several events that arrived together, (token, data, start, end) each, released once at the
        end: what `feed` one by one would release, give or take events still held (a scan then
        covers the batch at once instead of deciding after every small delta)."""
        contents, touched, queue = self._contents, self._touched, self._queue
        for token, data, start, end in events:
            held = _Held(token, data)
            stop = len(data) if end is None else end
            pieces, same_shape = self._pieces(data, start, stop, channel)
            if same_shape:
                _, lo, hi = pieces[0]
                held.clean = self._framing_clean(data, lo, hi, channel)
            if pieces:
                with memoryview(data) as view:
                    for key, lo, hi in pieces:
                        content = contents.get((channel, key))
                        if content is None:
                            content = contents[(channel, key)] = _Content()
                        at = content.origin + len(content.text)
                        content.text += view[lo:hi]
                        held.pieces.append(_Piece(content, at, at + hi - lo, lo, hi))
                        touched[id(content)] = content
            queue.append(held)
            self.held_bytes += len(data)
        return self._release(final=False)

    def _framing_clean(self, data: bytes, lo: int, hi: int, channel: object) -> bool:
        """Are the event's bytes around its delta string (`data[:lo]`, `data[hi:]`) a framing the
        per-event pass finds nothing in? Judged once per framing and channel (with the string left
        empty), then by comparing bytes; a framing whose last 48 bytes name a credential
        (`"password":"`) is never clean: its string is a value the name marks."""
        known = self._framing.get(channel)
        if known is not None and data.startswith(known[0]) and len(data) - hi == len(known[1]) and (
                data.endswith(known[1])) and lo == len(known[0]):
            return known[2]
        pre, post = data[:lo], data[hi:]
        counts = self._redactor.counts
        saved = collections.Counter(counts)
        try:
            clean = _CREDENTIAL_WORD.search(pre[-48:]) is None and self._redactor.redact_payload(pre + post) == pre + post
        finally:  # judging is not replacing
            counts.clear()
            counts.update(saved)
        self._framing[channel] = (pre, post, clean)
        return clean

    def _pieces(self, data: bytes, start: int, stop: int, channel: object) -> tuple[list[tuple[tuple, int, int]], bool]:
        """`delta_pieces(data[start:stop])` in `data`'s offsets, without parsing an event shaped
        like the last one parsed (nor copying its payload); True when it was shaped so.

        Consecutive deltas of a stream differ only in their one delta string: an event made of
        the last parsed event's bytes before and after that string, around a string that ends
        right there, has the same structure and so the same one piece.
        """
        shape = self._shape.get(channel)
        if shape is not None:
            head, tail, key = shape
            lo, hi = start + len(head), stop - len(tail)
            if (hi >= lo and data.startswith(head, start) and data.endswith(tail, start, stop)
                    and string_end(data, lo) == hi):
                return [(key, lo, hi)], True
        payload = data[start:stop]
        pieces = delta_pieces(payload)
        if len(pieces) == 1:
            key, lo, hi = pieces[0]
            self._shape[channel] = (payload[:lo], payload[hi:], key)
        return [(key, start + lo, start + hi) for key, lo, hi in pieces], False

    def finish(self) -> list[Released]:
        """Everything still held (the body or the response ended); streams start afresh after."""
        out = self._release(final=True)
        self._contents.clear()
        return out

    # --- internals ---------------------------------------------------------------------------

    def _release(self, final: bool) -> list[Released]:
        # Only a stream that grew can have become due for a scan (or, at the end, any stream).
        for content in list(self._contents.values() if final else self._touched.values()):
            end = content.end
            unscanned = end - max(content.scanned, content.origin)
            if end > content.base and (final or unscanned >= SCAN_STEP) and content.scanned < end:
                self._scan(content)
        self._touched.clear()
        released: dict[int, _Content] = {}
        out: list[Released] = []
        safe: dict[int, int] = {}  # per stream, up to where its pieces may go (`_Content.safe`)
        while self._queue:
            held = self._queue[0]
            blocked = []
            for p in held.pieces:
                point = safe.get(id(p.content))
                if point is None:
                    point = safe[id(p.content)] = p.content.safe(final)
                if p.end > point:
                    blocked.append(p)
            if blocked:
                if self.held_bytes <= MAX_HELD_BYTES:
                    break
                for piece in blocked:  # over the bound: release this stream as it stands
                    if piece.content.scanned < piece.content.end:
                        self._scan(piece.content)
                    piece.content.forced = True
                    safe.pop(id(piece.content), None)
                continue
            self._queue.popleft()
            self.held_bytes -= len(held.data)
            out.append(self._finish_event(held))
            for piece in held.pieces:
                if id(piece.content) not in released:
                    released[id(piece.content)] = piece.content
                    piece.content.forced = False
        # Trimmed once all due events are out: trimmed at its first released event, a stream would
        # keep (and its next scan read again) everything the rest of this batch released.
        for content in released.values():
            self._trim(content)
        return out

    def _scan(self, content: _Content) -> None:
        window = bytes(content.text)
        counts = self._credentials.counts
        saved = collections.Counter(counts)
        try:
            redacted = self._credentials.redact_payload(window)
        finally:  # scanning is not replacing: counts change when an event is released
            counts.clear()
            counts.update(saved)
        found = [(content.origin + s, content.origin + e, ph) for s, e, ph in align(window, redacted)]
        # Keep what an earlier scan found past the released edge: the tail of a secret whose start
        # went out already is still part of it, even if the context no longer shows its start.
        found += [s for s in content.spans if s[0] < content.base < s[1]]
        content.spans = _fuse(found, content.base)
        content.scanned = content.end

    def _finish_event(self, held: _Held) -> Released:
        edits: list[tuple[int, int, bytes]] = []
        kinds: dict[str, int] = {}
        for piece in held.pieces:
            content = piece.content
            for s, e, placeholder in content.spans:  # most streams: none
                if e <= piece.start or s >= piece.end:
                    continue
                lo = max(s, piece.start) - piece.start
                hi = min(e, piece.end) - piece.start
                if any(a < e and s < b for a, b in content.applied):
                    replacement = b""
                else:
                    replacement = placeholder
                    content.applied.append((s, e))
                    kind = _kind(placeholder)
                    kinds[kind] = kinds.get(kind, 0) + 1
                lo, hi = _widen(held.data[piece.lo : piece.hi], lo, hi)
                edits.append((piece.lo + lo, piece.lo + hi, replacement))
            if piece.end > content.base:
                content.base = piece.end
        if not edits:
            return Released(held.token, held.data, kinds, held.clean)
        data = held.data
        for lo, hi, replacement in sorted(edits, reverse=True):
            data = data[:lo] + replacement + data[hi:]
        if kinds:
            self._credentials.counts.update(kinds)
        return Released(held.token, data, kinds, held.clean)

    @staticmethod
    def _trim(content: _Content) -> None:
        cut = content.base - CONTEXT_BYTES
        if cut > content.origin:
            del content.text[: cut - content.origin]
            content.origin = cut
        content.spans = [s for s in content.spans if s[1] > content.base]
        content.applied = [a for a in content.applied if a[1] > content.origin]


def _fuse(spans: list[tuple[int, int, bytes]], base: int) -> list[tuple[int, int, bytes]]:
    """Sorted, disjoint spans that reach past `base`; overlapping ones become one (fail closed)."""
    out: list[tuple[int, int, bytes]] = []
    for s, e, ph in sorted(spans):
        if e <= base:
            continue
        if out and s < out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e), out[-1][2])
        else:
            out.append((s, e, ph))
    return out


def _kind(placeholder: bytes) -> str:
    inner = placeholder.split(b":")
    return inner[1].decode("ascii", "replace") if len(inner) >= 3 else "secret"


class FramedRedactor:
    """A body framed into events for the joiner (`StreamRedactor`) as it is fed in arbitrary cuts.

    Subclasses find complete events at the head of `_buf` (`_frames`, which may set `failed` when
    the body stops being what it looked like) and say how the end of the body is read (`finish`).
    The concatenation of everything `feed` and `finish` return is the redacted body (once
    `failed`, its first part: `abandon` gives the rest, unredacted, for the caller).
    `redactions` counts every placeholder written so far.
    """

    def __init__(self, redactor: PayloadRedactor) -> None:
        self._redactor = redactor
        self._events = StreamRedactor(redactor)
        self._buf = bytearray()
        self.failed = False
        self.redactions: collections.Counter[str] = collections.Counter()

    @property
    def held_bytes(self) -> int:
        return len(self._buf) + self._events.held_bytes

    def feed(self, *pieces: bytes) -> bytes:
        """The next bytes of the body (one or more reads, in order)."""
        for data in pieces:
            self._buf += data
        if self.failed:
            return b""
        events = self._frames()
        released = self._events.feed_many(events) if events else []
        if self.failed:  # what was framed goes out now; the rest is the caller's (`abandon`)
            released += self._events.finish()
        return self._emit(released)

    def finish(self) -> bytes:
        raise NotImplementedError

    def abandon(self) -> bytes:
        """The bytes not framed once framing failed (for the caller to redact some other way)."""
        rest = bytes(self._buf)
        self._buf.clear()
        return rest

    def _frames(self) -> list[tuple[object, bytes, int, int | None]]:
        raise NotImplementedError

    def _emit(self, released: list[Released]) -> bytes:
        if not released:
            return b""
        for item in released:
            if item.redactions:
                self.redactions.update(item.redactions)
        before = collections.Counter(self._redactor.counts)
        # One pass over each run of released events together: a span cannot cross from one event
        # into the next (each is a JSON value, and no secret format runs through `"`, `{` or a blank
        # line). Clean events (`Released.clean`) go out as the joined stream's scan left them.
        out: list[bytes] = []
        run: list[bytes] = []
        for item in released:
            if item.clean:
                if run:
                    out.append(self._redactor.redact_payload(b"".join(run)))
                    run = []
                out.append(item.data)
            else:
                run.append(item.data)
        if run:
            out.append(self._redactor.redact_payload(b"".join(run)))
        self._count_since(before)
        return b"".join(out)

    def _count_since(self, before: collections.Counter[str]) -> None:
        """Add the placeholders the redactor wrote since `before` (its counts then) to `redactions`."""
        after = self._redactor.counts
        self.redactions.update({k: after[k] - before.get(k, 0) for k in after if after[k] > before.get(k, 0)})


class SseRedactor(FramedRedactor):
    """An SSE body fed in arbitrary cuts (network reads, batches); returns redacted bytes once final."""

    def __init__(self, redactor: PayloadRedactor) -> None:
        super().__init__(redactor)
        self._searched = 0  # `_buf` holds no event end before this

    def _frames(self) -> list[tuple[object, bytes, int, int | None]]:
        ends = event_ends(self._buf, self._searched)
        if not ends and len(self._buf) > MAX_EVENT_BYTES:
            # not events after all (a hostile or broken stream): released up to its last line end, so
            # what is held stays bounded; the per-event pass still redacts it
            cut = self._buf.rfind(b"\n")
            ends = [cut + 1 if cut > 0 else len(self._buf)]
        events = []
        if ends:
            pos = 0
            with memoryview(self._buf) as view:
                for end in ends:  # each event copied once, straight out of the buffer
                    block = bytes(view[pos:end])
                    events.append((None, block, *data_payload(block)))
                    pos = end
            del self._buf[: ends[-1]]
        self._searched = max(0, len(self._buf) - 2)  # an event end may begin in the bytes held
        return events

    def finish(self) -> bytes:
        released: list[Released] = []
        if self._buf:
            block = bytes(self._buf)
            self._buf.clear()
            released += self._events.feed(None, block, *data_payload(block))
        return self._emit(released + self._events.finish())


def redact_sse(data: bytes, redactor: PayloadRedactor) -> bytes:
    """A whole SSE body: every content stream joined, then every event."""
    sse = SseRedactor(redactor)
    return sse.feed(data) + sse.finish()
