"""Secrets hidden by HTML's character references: code and config shown in a web page.

A page that shows a file escapes its quotes and angle brackets: `{&quot;password&quot;:
&quot;hunter2&quot;}`, `DB_PASSWORD=&quot;hunter2&quot;`, `&lt;password&gt;hunter2&lt;/password&gt;`.
An agent that fetches such a page (`curl` in a shell, a docs site, a repository's web view)
sends it on as a tool result, and the rules that read a credential's name by its quotes or tags
see none. A trigger finds the references that stand for quotes and tags; the text around them
(its line, bounded) is decoded, scanned with every detector, and each secret found is mapped back
onto the escaped bytes, as the percent-encoded decoder (`encodings.py`) does for URLs.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable

from ctxtap.redaction.detector import Detector, TriggerHits, samples
from ctxtap.redaction.engine import Trigger
from ctxtap.redaction.spans import PRIORITY_CONTEXT, Span

# A quote (`&quot;`, `&#34;`, `&#x22;`, `&apos;`, `&#39;`, `&#x27;`) or a tag's bracket (`&lt;`):
# what a rule reads around a credential's name. `&amp;` alone hides none (a URL's rules read it).
TRIGGERS: tuple[Trigger, ...] = (
    Trigger(rb"&(?:quot|apos|lt|#0*3[49]|#x0*2[27]);", literals=(b"&quot;", b"&apos;", b"&lt;", b"&#"), window=12,
            caseless=True, opens=False),
)
_REFERENCE_RE = re.compile(rb"&(?:[A-Za-z]{2,8}|#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6});")
_MAX_SIDE = 32768  # bytes each side of a hit decoded at most (a page on one line, a JSON string)


def _region(data: bytes, pos: int) -> tuple[int, int]:
    """The line around `pos`, at most _MAX_SIDE bytes each side (a real newline, or an escaped one in JSON)."""
    first = max(0, pos - _MAX_SIDE)
    lo = first
    for mark in (b"\n", b"\\n"):
        at = data.rfind(mark, first, pos)
        if at >= 0:
            lo = max(lo, at + len(mark))
    ends = [at for mark in (b"\n", b"\\n") if (at := data.find(mark, pos, pos + _MAX_SIDE)) >= 0]
    return lo, min(ends) if ends else min(len(data), pos + _MAX_SIDE)


def entity_decode(data: bytes) -> tuple[bytes, list[int]]:
    """`data` with its character references decoded (those that stand for ASCII text), and for each decoded
    byte the offset in `data` it came from (plus one past the end)."""
    out = bytearray()
    origin: list[int] = []
    last = 0
    for m in _REFERENCE_RE.finditer(data):
        char = html.unescape(m.group().decode("ascii"))
        if len(char) != 1 or not (0x20 <= ord(char) < 0x7F or char in "\t\n"):
            continue  # not a reference, or one for a character no rule reads (`&nbsp;`, `&eacute;`)
        out += data[last : m.start()]
        origin.extend(range(last, m.start()))
        out.append(ord(char))
        origin.append(m.start())
        last = m.end()
    out += data[last:]
    origin.extend(range(last, len(data) + 1))
    return bytes(out), origin


def find_entity_spans(data: bytes, hits: TriggerHits, out: list[Span], scan: Callable[[bytes], list[Span]]) -> None:
    """Append spans (over the escaped bytes) of secrets found in the decoded text around the triggers."""
    done = -1
    for found in hits:
        for _, end in found:
            if end <= done:
                continue  # inside a region already decoded
            lo, hi = _region(data, end - 1)
            done = hi
            decoded, origin = entity_decode(data[lo:hi])
            for span in scan(decoded):
                out.append(Span(lo + origin[span.start], lo + origin[span.end], span.kind,
                                min(span.priority, PRIORITY_CONTEXT)))


# A decoder (`redaction.detector`): the decoded line is scanned once without decoding again.
DETECTOR = Detector(
    "html-entities",
    TRIGGERS,
    None,
    examples=samples(
        "<pre>{&quot;service&quot;: &quot;api&quot;, &quot;password&quot;: &quot;<mixed:10>&quot;}</pre>",
        "<code>DB_PASSWORD=&quot;<mixed:12>&quot;</code>",
        "&lt;password&gt;<mixed:10>&lt;/password&gt;",
        "<td>password: &#39;<mixed:10>&#39;</td>",
    ),
    near_misses=(
        "<p>Set the &quot;password&quot; field in the form, then press &quot;Save&quot;.</p>",
        "<code>if (a &lt; b &amp;&amp; c &gt; d) { return &quot;ok&quot;; }</code>",
        "<title>Tom &amp; Jerry&#39;s &quot;Password Manager&quot; review</title>",
    ),
    decode=find_entity_spans,
)
