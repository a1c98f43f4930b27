"""gitleaks' allowlists answered by Hyperscan give the answers Python's `re` gives.

`redaction.any_match` moves the allowlists' "does any regex match" question to
Hyperscan (Python's backtracking took quadratic time on the generic rule's). A
regex whose meaning could differ there stays with `re`; these tests hold every
allowlist of the vendored rule set to `re`'s answer on text generated from its
own regexes, random text and the secret corpus.
"""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxtap.redaction.any_match import AnyMatch, hyperscan_form
from ctxtap.redaction.engine import hyperscan_available
from ctxtap.redaction.gitleaks import GENERIC_RULE, Allowlist, load_rules
from tests.secret_corpus import generate_secrets

needs_hyperscan = pytest.mark.skipif(not hyperscan_available(), reason="the hyperscan wheel is not installed")

_RULES = load_rules()
_ALLOWLISTS: list[tuple[str, Allowlist]] = [("global", _RULES.global_allowlist)] if _RULES.global_allowlist else []
_ALLOWLISTS += [(r.id, a) for r in _RULES.rules for a in r.allowlists]
_MATCHERS: list[AnyMatch] = [m for _, a in _ALLOWLISTS for m in (a.regexes, a.many_stopwords) if m is not None]


def _matching(source: str) -> st.SearchStrategy[bytes] | None:
    try:
        return st.from_regex(re.compile(source.encode()))
    except Exception:  # a construct hypothesis cannot generate from
        return None


# The allowlists' regexes (the stopwords, literal words, are drawn apart: there are 1,446 of them).
_REGEX_MATCHERS = [a.regexes for _, a in _ALLOWLISTS if a.regexes is not None]
_GENERATED = [(m, g) for m in _REGEX_MATCHERS for s in m.sources if (g := _matching(s)) is not None]
_WORD_MATCHERS = [a.many_stopwords for _, a in _ALLOWLISTS if a.many_stopwords is not None]


def _agrees(matcher: AnyMatch, text: bytes) -> None:
    expected = matcher.python is not None and matcher.python.search(text) is not None
    assert matcher.search(text) == expected, (matcher.sources[:3], text[:200])


def test_hyperscan_form_keeps_only_what_both_read_alike() -> None:
    assert hyperscan_form(r"^abc\Z") == r"^abc\z"  # Python's \Z is the very end
    assert hyperscan_form(r"(?i:key)[\w.-]{0,50}\s$") == r"(?i:key)[\w.-]{0,50}\s$"
    assert hyperscan_form(r"\\Z") == r"\\Z"  # an escaped backslash, then a letter
    for python_only in (r"a(?=b)", r"a(?!b)", r"(?<=a)b", r"(?<!a)b", r"(a)\1", r"(?P<n>a)", r"a{,3}", r"\Aa",
                        r"a\vb", r"\hx", r"(?x) a b", r"(?#note)a"):
        assert hyperscan_form(python_only) is None, python_only


def test_every_allowlist_is_covered() -> None:
    assert len(_ALLOWLISTS) >= 10 and len(_GENERATED) >= 40 and _WORD_MATCHERS
    generic = next(r for r in _RULES.rules if r.id == GENERIC_RULE)
    assert any(a.many_stopwords is not None for a in generic.allowlists)  # its 1,446 stopwords


@needs_hyperscan
def test_the_allowlists_go_through_hyperscan() -> None:
    generic = next(r for r in _RULES.rules if r.id == GENERIC_RULE)
    match = next(a for a in generic.allowlists if a.target == "match")
    assert match.regexes is not None and match.regexes.uses_hyperscan()
    assert match.regexes._rest is None  # every one of its regexes compiled
    assert _RULES.global_allowlist is not None and _RULES.global_allowlist.regexes.uses_hyperscan()


@needs_hyperscan
def test_a_set_with_a_regex_hyperscan_refuses_keeps_it_with_re() -> None:
    mixed = AnyMatch([r"token[0-9]+", r"(?<=x)secret", r"abc\Z"])
    assert mixed.uses_hyperscan() and mixed._rest is not None
    assert mixed.search(b"a token42 b") and mixed.search(b"abc")  # Hyperscan's
    assert mixed.search(b"xsecret") and not mixed.search(b"ysecret")  # the lookbehind, in `re`
    empty = AnyMatch([r"token[0-9]+", r"q*"])  # Hyperscan refuses a pattern matching the empty text
    assert empty.uses_hyperscan() and empty.search(b"anything at all")
    plain = AnyMatch([r"abc\Z", r"^x\s$"])
    assert plain.uses_hyperscan()
    assert plain.search(b"abc") and not plain.search(b"abc\n")  # the very end
    assert plain.search(b"x\x0b") and plain.search(b"x\n") and not plain.search(b"x\n\nx")  # \s, $
    for edge in (b"x\n\n", b"x \n", b"x\n \n", b"abc\n\n", b"\nx\t", b"x\x0c\n"):  # `$` before a last newline
        _agrees(plain, edge)


def test_the_python_fallback_answers_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTXTAP_REDACTION_ENGINE", "python")
    fallback = AnyMatch([r"(?i)api[_.-]?key", r"^\$\{[A-Z_]+\}$"])
    assert not fallback.uses_hyperscan()
    assert fallback.search(b"my API-KEY here") and fallback.search(b"${HOME}") and not fallback.search(b"x${HOME}")


@needs_hyperscan
@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_allowlists_agree_with_re_on_text_their_regexes_match(data: st.DataObject) -> None:
    matcher, strategy = data.draw(st.sampled_from(_GENERATED))
    inner = data.draw(strategy)
    before = data.draw(st.binary(max_size=40))
    after = data.draw(st.sampled_from([b"", b"\n", b"x", b" \n", b"\r\n"])) + data.draw(st.binary(max_size=20))
    for text in (inner, before + inner, inner + after, before + inner + after, inner.upper(), inner.lower()):
        _agrees(matcher, text)


@needs_hyperscan
@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_stopwords_agree_with_re(data: st.DataObject) -> None:
    matcher = data.draw(st.sampled_from(_WORD_MATCHERS))
    word = data.draw(st.sampled_from(matcher.sources)).replace("\\", "").encode("latin-1")
    text = data.draw(st.binary(max_size=30)) + word[: data.draw(st.integers(1, len(word)))] + data.draw(st.binary(max_size=30))
    _agrees(matcher, text)


@needs_hyperscan
def test_allowlists_agree_with_re_on_the_secret_corpus_and_noise() -> None:
    rng = random.Random(7)
    texts: list[bytes] = []
    for secret in generate_secrets(seed=3)[:400]:
        value = secret.value.encode() if isinstance(secret.value, str) else secret.value
        texts += [value, b'"api_key": "' + value + b'"', b"export TOKEN=" + value + b"\n"]
    alphabet = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.=:{}$*\"' \t\n"
    texts += [bytes(rng.choice(alphabet) for _ in range(rng.randint(1, 300))) for _ in range(400)]
    for matcher in _MATCHERS:
        for text in texts:
            _agrees(matcher, text)
