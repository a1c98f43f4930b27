"""The name rules' trigger starts, found in Python instead of by Hyperscan's start-of-match mode."""

from __future__ import annotations

import pytest

from redaction.engine import hyperscan_available
from redaction.scanner import Scanner, get_scanner
from tests.secret_corpus import generate_secrets

pytestmark = pytest.mark.skipif(not hyperscan_available(), reason="the hyperscan wheel is not installed")


def _bodies() -> list[bytes]:
    out = [
        b'export API_KEY="abcdefghijklmnop1234"\n{"key": "QWERTYUIOPASDFGH12"} key:   token=zzzzzzzzzzzzzzzz99',
        b'xkey=key=aaaaaaaaaaaaaaaaaaaa "auth" : "Bearer abcdefghijklmnopqrstuv" Key=\\"ABCDEFGHIJKLMNOPQ\\"',
        b"pass=" + b"p" * 40 + b" pwd: " + b"w" * 16 + b" signature=" + b"s" * 20,
    ]
    for seed in range(5):
        for s in generate_secrets(seed):
            out.append(f'{s.env_name}={s.surface}\n  "{s.env_name.lower()}": "{s.surface}", key = {s.surface}'.encode())
    return out


def test_recovered_starts_are_the_fallbacks_starts() -> None:
    """Where the pure-Python engine (which finds every start with `re`) reports a match of a name
    rule's trigger, the Hyperscan engine reports the same end with the same start."""
    fast, slow = get_scanner(), Scanner(get_scanner().ruleset, backend="python")
    assign = fast._ranges[2]
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
        for i in scanner._ranges[2]:
            regex = scanner.engine._python_starts[i][0]
            for start, end in hits.get(i):
                assert regex.fullmatch(body, start, end) is not None
