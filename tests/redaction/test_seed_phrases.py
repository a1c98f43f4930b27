"""A wallet's seed phrase under its name never reaches disk; the words around it, and mentions of it, stay.

The phrases are drawn here at random (words of three to eight letters, twelve or twenty-four of them): the
detector reads the phrase's shape after its name, not a word list.
"""

from __future__ import annotations

import json
import random
import string

from ctxtap.redaction import Redactor
from ctxtap.redaction.scanner import find_spans


def _phrase(rng: random.Random, words: int) -> str:
    return " ".join("".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(3, 8))) for _ in range(words))


def test_every_writing_of_a_phrase_goes() -> None:
    redactor = Redactor(b"k" * 32, "t")
    rng = random.Random(7)
    for words in (12, 24):
        p = _phrase(rng, words)
        for text in (
            f'PRIVATE_NETWORK=sepolia\nMNEMONIC="{p}"\nRPC_URL=http://localhost:8545\n',  # a dApp's .env
            json.dumps({"mnemonic": p, "path": "m/44'/60'/0'/0"}, indent=2),  # a wallet's JSON
            f"networks:\n  sepolia:\n    accounts:\n      mnemonic: {p}\n    chainId: 11155111\n",  # YAML
            f"accounts: {{ mnemonic: '{p}' }},",  # a Hardhat config
            json.dumps({"type": "tool_result", "content": f'cat .env\nSEED_PHRASE="{p}"\n'}),  # escaped in a result
            f"My recovery phrase is {p}. Can you check my wallet?",  # a chat
        ):
            out = redactor.redact_text(text)
            assert not any(w in out.split() or f" {w} " in out for w in p.split() if len(w) >= 6), (words, text[:40])
            assert "[REDACTED:seed-phrase:" in out, text[:40]
            assert redactor.redact_text(out) == out


def test_mentions_and_other_mnemonics_stay() -> None:
    for text in (
        'insn.mnemonic = "push"; mnemonic: str = "mov eax ebx"',
        "Your seed phrase is the only way to restore a wallet, so write it down and keep it offline.",
        "MNEMONIC=${MNEMONIC}\nmnemonic: process.env.MNEMONIC",
        "the mnemonic words are checked against the word list before the wallet opens its keys today",
        "mnemonic: alpha bravo charlie delta echo foxtrot golf hotel india juliett kilo lima mike november",  # 14
    ):
        assert find_spans(text.encode()) == [], text
