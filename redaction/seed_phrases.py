"""A wallet's seed phrase under its name: twelve to twenty-four words that give away every key it derives.

BIP-39 writes a wallet's seed as 12, 15, 18, 21 or 24 lower-case words of three to eight letters
(`MNEMONIC="legal winner thank …"` in a dApp's `.env`, `mnemonic: …` in a Hardhat or Truffle config,
"my recovery phrase is …" in a support chat). No credential-name rule reads `mnemonic`, and a value of
words is prose to every other detector. The name is the trigger; the value must be the phrase's shape: one
of those counts of words, each of three to eight letters, and nothing more on its line or in its quotes
(`mnemonic = "mov"` in a disassembler is one word; a sentence has words of one or two letters).
"""

from __future__ import annotations

import random
import re
import string

from ctxtap.redaction.detector import Detector, TriggerHits, samples
from ctxtap.redaction.engine import Trigger
from ctxtap.redaction.spans import PRIORITY_CONTEXT, Span

KIND = "seed-phrase"
_NAME = rb"(?:mnemonic|(?:seed|recovery|secret|backup|wallet)[ _\-]?(?:phrase|words))"
TRIGGERS: tuple[Trigger, ...] = (
    Trigger(_NAME, literals=(b"mnemonic", b"phrase", b"words"), window=40, caseless=True, opens=False),
)
# after the name: more of the name (`MNEMONIC_PHRASE`), a closing quote, a separator or `is` (a sentence that
# only mentions the words has none), an opening quote;
# then the words, one separator between each, and the value's end (a quote, the line's end, escaped or not)
_VALUE_RE = re.compile(
    rb"[A-Za-z0-9_]{0,24}\\*[\"']?(?:[ \t]*(?::=|=>|=|:)|[ \t]+(?:is|was)[ \t]*:?)[ \t]*\\*[\"']?"
    rb"(?P<v>[a-z]{3,8}(?:[ \t]+[a-z]{3,8}){11,23})"
    rb"[ \t]*(?=\\*[\"'`]|\r?\n|\\+[rn]|[.,;](?:\s|$)|$)"
)
_COUNTS = frozenset((12, 15, 18, 21, 24))


def find_seed_phrase_spans(data: bytes, hits: TriggerHits, out: list[Span]) -> None:
    """Append the words after each seed phrase's name (`hits[0]`: where a name ends)."""
    for _, end in hits[0]:
        m = _VALUE_RE.match(data, end)
        if m is not None and len(m.group("v").split()) in _COUNTS:
            out.append(Span(m.start("v"), m.end("v"), KIND, PRIORITY_CONTEXT))


def _drawn(words: int) -> str:
    """A phrase of lower-case words drawn when the module loads (the examples' secrets: none in the source)."""
    rng = random.Random()
    return " ".join("".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(3, 8))) for _ in range(words))


DETECTOR = Detector(
    "seed-phrases",
    TRIGGERS,
    find_seed_phrase_spans,
    examples=samples(
        f'MNEMONIC="{_drawn(12)}"',
        f"  mnemonic: {_drawn(15)}\n",  # fifteen words in YAML
        f"my recovery phrase is {_drawn(24)}.",
    ),
    near_misses=(
        'insn.mnemonic = "push"; mnemonic: str = "mov eax ebx"',  # a disassembler's mnemonic: one word
        "Your seed phrase is the only way to restore a wallet, so write it down and keep it offline.",
        "MNEMONIC=${MNEMONIC}",
        "the mnemonic words are checked against the word list before the wallet opens its keys today",  # no `=`
    ),
)
