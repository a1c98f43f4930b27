"""The name rules' trigger starts, found in Python instead of by Hyperscan's start-of-match mode."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ctxtap.redaction.engine import hyperscan_available
from ctxtap.redaction.scanner import Scanner, get_scanner
from tests.secret_corpus import generate_secrets

pytestmark = pytest.mark.skipif(not hyperscan_available(), reason="the hyperscan wheel is not installed")


def _bodies() -> list[bytes]:
    out = [
        b'export API_KEY="abcdefghijklmnop1234"\n{"key": "QWERTYUIOPASDFGH12"} key:   token=zzzzzzzzzzzzzzzz99',
        b'xkey=key=aaaaaaaaaaaaaaaaaaaa "auth" : "Bearer abcdefghijklmnopqrstuv" Key=\\"ABCDEFGHIJKLMNOPQ\\"',
        b"pass=" + b"p" * 40 + b" pwd: " + b"w" * 16 + b" signature=" + b"s" * 20,
        # a keyword many times within reach of each end: the start is one search, not one try per keyword
        b"key=" * 300 + b"KEY:" * 100 + b"api_key_key=" * 40 + b"passwordpassword=password:" * 20,
        b'"token": "' + b"token=" * 120 + b'abcdefghijklmnop123"',
    ]
    for seed in range(5):
        for s in generate_secrets(seed):
            out.append(f'{s.env_name}={s.surface}\n  "{s.env_name.lower()}": "{s.surface}", key = {s.surface}'.encode())
    return out


def _triggers_of(scanner: Scanner, name: str) -> range:
    """The engine's numbers of one detector's triggers."""
    return next(r for r in scanner._ranges if scanner.detectors[scanner._owner[r.start]].name == name)


def test_recovered_starts_are_the_fallbacks_starts() -> None:
    """Where the pure-Python engine (which finds every start with `re`) reports a match of a name
    rule's trigger, the Hyperscan engine reports the same end with the same start."""
    fast, slow = get_scanner(), Scanner(get_scanner().ruleset, backend="python")
    assign = _triggers_of(fast, "assignments")
    assert fast.engine.name == "hyperscan" and fast.engine._python_starts.keys() == set(assign)
    checked = 0
    for body in _bodies():
        hs_hits, py_hits = fast.engine.scan(body), slow.engine.scan(body)
        for i in assign:
            by_end = dict((e, s) for s, e in hs_hits.get(i))
            for start, end in py_hits.get(i):
                assert by_end.get(end) == start, (i, body[max(0, start - 10) : end])
                checked += 1
    assert checked > 100


def test_a_start_past_the_reach_is_not_invented() -> None:
    """Every recovered start is where the trigger's own regex matches up to the reported end."""
    scanner = get_scanner()
    for body in _bodies():
        hits = scanner.engine.scan(body)
        for i in _triggers_of(scanner, "assignments"):
            regex = scanner.engine._python_starts[i][0]
            for start, end in hits.get(i):
                assert regex.fullmatch(body, start, end) is not None


_URL_PIECES = ["://", "https", "u", "user", ":", "@", "/", "pw", "p4ss", " ", "host", ".", "?", "#", '"', "${P}", "x" * 300]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_URL_PIECES), max_size=40).map("".join))
@example("see https://host/a https://user:p4ss@host and ftp://x://u:pw@h")
@example("https://" + "u" * 250 + ":" + "p" * 250 + "@host https://u:pw@x@y")
def test_url_passwords_found_from_their_end_are_those_found_from_every_scheme(text: str) -> None:
    """The URL password trigger is reported where it ends; its start is recovered as the last `://`
    before. Both engines find exactly the passwords the rule finds from every `://`."""
    from ctxtap.redaction.detectors import find_context_spans
    from ctxtap.redaction.url_credentials import find_url_passwords

    data = text.encode()
    expected = set(find_url_passwords(data))
    for scanner in (get_scanner(), Scanner(get_scanner().ruleset, backend="python")):
        hits = scanner.engine.scan(data)
        spans: list = []
        find_context_spans(data, [hits.get(i) for i in _triggers_of(scanner, "context-formats")], spans)
        assert {(s.start, s.end) for s in spans if s.kind == "url-password"} == expected, scanner.backend


def _every_prefix_in_reach(data: bytes, hits: list[list[tuple[int, int]]]) -> set[int]:
    """`token_starts` as first written: every prefix occurrence in each hit's reach, hit by hit."""
    from ctxtap.redaction.detectors import _DISCORD, _REACH, TOKEN_FORMATS

    out: set[int] = set()
    for i, found in enumerate(hits):
        f = TOKEN_FORMATS[i]
        for start, end in found:
            if not f.prefixes:
                if i == _DISCORD:
                    out.update(t for t in range(max(0, start - 27), start - 23) if data[t] in b"MNO")
                else:
                    out.add(start)
            elif start >= 0:
                out.add(start)
            else:
                lo = max(0, end - _REACH[i])
                for prefix in f.prefixes:
                    pos = data.find(prefix, lo, end)
                    while pos >= 0:
                        out.add(pos)
                        pos = data.find(prefix, pos + 1, end)
    return out


def test_token_starts_search_each_prefix_once_and_miss_none() -> None:
    """Hits close together share their reach: each prefix occurrence is collected once (a body of
    JWTs gave 640,000 starts for 14,000 tokens), and none a hit's own reach holds is left out."""
    from ctxtap.redaction.detectors import token_starts

    jwt = b"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJlc2lnbmF0dXJl "
    bodies = _bodies() + [jwt * 300, b"x".join([b"ghp_" + b"A" * 36, b"sk-ant-api03-" + b"b" * 90] * 200)]
    for scanner in (get_scanner(), Scanner(get_scanner().ruleset, backend="python")):
        for body in bodies:
            hits = scanner.engine.scan(body)
            tokens = [hits.get(i) for i in _triggers_of(scanner, "token-formats")]
            starts = token_starts(body, tokens)
            assert set(starts) == _every_prefix_in_reach(body, tokens), scanner.backend
            if body.startswith(jwt):
                assert len(starts) < 2 * body.count(b"eyJ")  # once each, not once per hit in reach


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 20_000), st.integers(1, 3_000)), min_size=1, max_size=60), st.integers(1, 9_000))
def test_fallback_windows_merge_into_bounded_searches(windows: list[tuple[int, int]], cap: int) -> None:
    """The fallback merges overlapping windows into one search each, but no longer than a cap: a
    lazy run (`curl.*?-H`) failing from every start of a line-long search was quadratic (39 s for
    230 KB of `curl -u` commands). Every window still lies whole in one search."""
    from ctxtap.redaction.engine import _merge

    spans = [(lo, lo + width) for lo, width in windows]
    merged = _merge(list(spans), cap)
    longest = max(hi - lo for lo, hi in spans)
    assert all(hi - lo <= max(cap, longest) for lo, hi in merged)
    assert all(any(m_lo <= lo and hi <= m_hi for m_lo, m_hi in merged) for lo, hi in spans)
    assert len(merged) <= len(spans)


def test_the_fallback_finds_every_command_on_a_long_line() -> None:
    """A line of 400 `curl -u` commands, searched in bounded pieces: each command's password is found."""
    body = b"".join(b"curl -u user:pw%06dxyz https://x " % i for i in range(400))
    slow = Scanner(get_scanner().ruleset, backend="python")
    found = [body[s.start : s.end] for s in slow.find_spans(body) if s.kind == "curl-auth-user"]
    assert len(found) == 400 and all(b"pw" in f for f in found)


def test_hits_are_kept_as_arrays_of_pairs() -> None:
    """A body of `key=key=...` has three hits per keyword: kept as tuples they held 180 MB per
    megabyte of body; as two arrays per trigger, 16 bytes a hit. They still read as pairs."""
    import sys

    from ctxtap.redaction.engine import HitList

    hits = get_scanner().engine.scan(b"key=" * 25_000)
    total = sum(len(found) for found in hits.by_trigger.values())
    assert total >= 25_000
    held = sum(sys.getsizeof(f.starts) + sys.getsizeof(f.ends) for f in hits.by_trigger.values())
    assert held < 24 * total  # arrays grow by a fraction: never a tuple's 110 bytes
    one = HitList()
    one.append(3, 9)
    one.append(-1, 12)
    assert list(one) == [(3, 9), (-1, 12)] == one and one[1] == (-1, 12) and len(one) == 2 and one
    assert not HitList() and HitList() != one
