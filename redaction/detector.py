"""The one contract every credential detector meets, so the scanner can run them in a loop.

A detector names the triggers any of its findings contains (`Trigger`, found by the
engine in one pass over a body for every detector at once) and verifies only where they
matched, in one signature:

    find(data, hits, found)    # hits[i]: (start, end) matches of triggers[i]; appends Spans to found

`found` is the list every detector of the sweep appends to, so a detector that must know
what came before it (the name rules stop a bare value where a key found by its format
begins) reads it there; the registry's order (`redaction.registry`) says who comes first.

A detector carries its own true and false positives (`examples`, `near_misses`), as
gitleaks' rules carry `tps`/`fps`: `tests/redaction/test_detector_registry.py` runs each
detector alone on them. Like gitleaks' generated examples, they are written as templates
(`sample`): the secret in `DB_PASSWORD=<mixed:14>` is drawn when the module loads, so no
secret stands in ctxtap's own source, which agents read and the ordinary-content tests scan.
Add a detector with `ARCHITECTURE.md`'s recipe "Add a detector".
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ctxtap.redaction.engine import Trigger
from ctxtap.redaction.spans import Span

Hit = tuple[int, int]
"""One trigger match: (start, end); start is -1 where the trigger does not report starts."""

TriggerHits = Sequence[Sequence[Hit]]
"""A detector's hits: one sequence per own trigger, in `Detector.triggers` order (empty where it matched nothing)."""

Find = Callable[[bytes, TriggerHits, list[Span]], None]
"""`find(data, hits, found)`: append to `found` a span per verified finding."""

Scan = Callable[[bytes], list[Span]]
"""The whole scanner on decoded bytes (sorted, disjoint spans over them)."""

FindDecoded = Callable[[bytes, TriggerHits, list[Span], Scan], None]
"""`decode(data, hits, found, scan)`: decode around the hits, `scan` the decoded text, map its spans back."""

LinesAt = Callable[[bytes, TriggerHits], list[int]]


@dataclass(frozen=True)
class Detector:
    """One detector: its triggers, its verifier, its examples, and what the scanner must know of it.

    Exactly one of `find` and `decode` is given. Flags (all off for an ordinary detector):

    * `python_starts`: its triggers begin one byte before one of their literals (a name rule:
      a delimiter or name character, then the keyword); Hyperscan reports their ends and the
      starts are found in Python (start-of-match tracking made up most of the database).
    * `reads_found`: `find` reads the spans detectors before it appended to `found` (the
      name rules end a bare value where a key found by its format starts): it must come
      after them in the registry.
    * `numbered_last`: its triggers are numbered after every other detector's (the vendored
      rule catalogue: its size changes with each refresh, ctxtap's own trigger numbers do not).
    * `tolerant_triggers`: with Hyperscan, its triggers themselves take their escape-tolerant
      form (`redaction.openers`), because its hits are only places to verify its own regex;
      every other detector's triggers get that form as separate openers.
    * `lines_at`: where a finding spanning lines would match inside a JSON string once its
      escaped newlines are decoded (the JSON-string step opens the strings there).
    * `decode` instead of `find`: a decoder (percent-encoding, base64 files) hands what it
      decodes to the whole scanner (`scan`) and maps the findings back; it runs only when the
      scanner decodes. `nests`: its decoded text is a new level (scanned with decoding on,
      counted against the depth limit) rather than scanned once without decoding.
    """

    name: str
    triggers: tuple[Trigger, ...]
    find: Find | None
    examples: tuple[str, ...]  # text in which the detector alone must find a secret
    near_misses: tuple[str, ...]  # text it must leave alone
    python_starts: bool = False
    reads_found: bool = False
    numbered_last: bool = False
    tolerant_triggers: bool = False
    lines_at: LinesAt | None = None
    decode: FindDecoded | None = None
    nests: bool = False

    def __post_init__(self) -> None:
        if (self.find is None) == (self.decode is None):
            raise ValueError(f"detector {self.name}: give exactly one of find and decode")
        if self.nests and self.decode is None:
            raise ValueError(f"detector {self.name}: only a decoder nests")


_DIGITS = "0123456789"
_UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_LOWER = "abcdefghijklmnopqrstuvwxyz"
ALPHABETS: dict[str, str] = {
    "alnum": _UPPER + _LOWER + _DIGITS,
    "upper": _UPPER + _DIGITS,
    "lower": _LOWER + _DIGITS,
    "letters": _UPPER + _LOWER,
    "hex": _DIGITS + "abcdef",
    "b64": _UPPER + _LOWER + _DIGITS + "+/",
    "b64url": _UPPER + _LOWER + _DIGITS + "_-",
    "crypt": "./" + _UPPER + _LOWER + _DIGITS,
}
_FIELD_RE = re.compile(r"<(mixed|" + "|".join(ALPHABETS) + r"):([0-9]{1,4})>")


def sample(template: str) -> str:
    """`template` with each field `<alphabet:n>` replaced by n random characters of that alphabet
    (`alnum`, `upper`, `lower`, `letters`, `hex`, `b64`, `b64url`, `crypt`), and `<mixed:n>` by n
    letters and digits that read as a password (an upper-case letter, a lower-case one, two digits
    first). Drawn from a generator seeded by the template: the same text every run."""
    rng = random.Random(template)

    def field(m: re.Match[str]) -> str:
        kind, n = m.group(1), int(m.group(2))
        if kind == "mixed":
            head = [rng.choice(_UPPER), rng.choice(_LOWER), rng.choice(_DIGITS), rng.choice(_DIGITS)]
            return "".join(head + [rng.choice(ALPHABETS["alnum"]) for _ in range(n - 4)])[:n]
        return "".join(rng.choice(ALPHABETS[kind]) for _ in range(n))

    return _FIELD_RE.sub(field, template)


def samples(*templates: str) -> tuple[str, ...]:
    """`sample` of each template."""
    return tuple(sample(t) for t in templates)
