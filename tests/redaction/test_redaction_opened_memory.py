"""Long JSON string literals opened before are recalled, not decoded and scanned again.

An agent resends its history with every request: the second time a tool result
is seen its spans come from `OpenedStrings`. These tests check that a recalled
literal yields exactly what a cold scan yields, wherever it sits and whatever
changed around or inside it, and that recalling really skips the scan.
"""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxtap.redaction import Redactor
from ctxtap.redaction.json_escapes import OpenedStrings, find_escaped_spans
from ctxtap.redaction.scanner import clear_caches, get_scanner
from ctxtap.redaction.spans import Span
from tests.secret_corpus import generate_secrets

SECRETS = [s for s in generate_secrets(11) if "\n" not in s.value][:40]
CODE = [
    'def load(path):\n    with open(path) as fh:\n        return json.load(fh)\n',
    'print("done: %s" % name)\n',
    'PATH = "C:\\\\Users\\\\dev\\\\project"\n',
    'query = {"q": "select * from t", "limit": 10}\n',
    '    raise ValueError(f"bad value {value!r}")\n',
]
# The literals share their first bytes: recalling must look past them.
HEADER = "     1\tfrom __future__ import annotations\n     2\timport os, json, sys\n     3\t\n"


@st.composite
def literal(draw: st.DrawFn) -> str:
    """A tool result over 1 KB with quotes (so JSON escapes it), sometimes secrets in it."""
    parts = [HEADER]
    while sum(map(len, parts)) < 1100:
        if draw(st.integers(0, 5)) == 0:
            s = draw(st.sampled_from(SECRETS))
            parts.append(f'{s.env_name} = "{s.value}"\n')
        else:
            parts.append(draw(st.sampled_from(CODE)))
    text = "".join(parts)
    if draw(st.booleans()):
        text = json.dumps({"file": "cfg.json", "content": text})  # JSON inside JSON: opened one level down
    return text


def _body(prefix: str, texts: list[str]) -> bytes:
    messages = [{"role": "user", "content": prefix}]
    messages += [{"role": "user", "content": [{"type": "tool_result", "content": t}]} for t in texts]
    return json.dumps({"model": "m", "messages": messages}).encode()


def _cold(body: bytes) -> list[Span]:
    clear_caches()
    return get_scanner().find_spans(body)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    first=st.lists(literal(), min_size=1, max_size=3),
    second=st.lists(literal(), min_size=0, max_size=2),
    prefix=st.text(alphabet="ab \"\\", max_size=30),
)
def test_a_recalled_literal_gives_what_a_cold_scan_gives(first: list[str], second: list[str], prefix: str) -> None:
    earlier = _body("start", first)
    # the same literals again at other offsets, some edited, beside new ones
    edited = [t.replace("json", "yaml", 1) for t in first[:1]]
    later = _body(prefix, first + edited + second)
    expected = _cold(later)
    clear_caches()
    scanner = get_scanner()
    scanner.find_spans(earlier)
    assert scanner.find_spans(later) == expected
    assert scanner.find_spans(later) == expected  # now everything is recalled


def test_the_redactor_hides_the_same_secrets_the_second_time() -> None:
    secret = SECRETS[0]
    text = HEADER * 20 + f'{secret.env_name} = "{secret.value}"\n'
    redactor = Redactor(b"\x01" * 32, "memory")
    clear_caches()
    first = redactor.redact_bytes(_body("one", [text]))
    second = redactor.redact_bytes(_body("two, longer history", ["x" * 50, text]))
    assert secret.value.encode() not in first and secret.value.encode() not in second
    assert json.loads(first)["messages"][1] == json.loads(second)["messages"][2]


def test_recalling_skips_the_scan_and_a_changed_literal_is_scanned() -> None:
    text = HEADER * 20 + 'print("no secret here")\n'
    calls: list[bytes] = []

    def scan(decoded: bytes, depth: int) -> list[Span]:
        calls.append(decoded)
        return [Span(3, 9, "probe", 0)]

    memory = OpenedStrings()
    relative = []
    for offset in (0, 7, 123):
        data = _body("p" * offset, [text])
        out: list[Span] = []
        find_escaped_spans(data, out, scan, 0, memory=memory)
        lo = data.index(b"     1")
        relative.append([(s.start - lo, s.end - lo, s.kind) for s in out])
    assert len(calls) == 1
    assert relative[0] == relative[1] == relative[2] == [(3, 10, "probe")]  # 3..9 decoded: a `\t` escape in it
    # same first bytes, same length, one byte changed inside: not the literal seen before
    changed = text.replace("no secret", "an secret")
    find_escaped_spans(_body("", [changed]), [], scan, 0, memory=memory)
    # the same content one level deeper is another literal
    find_escaped_spans(_body("", [text]), [], scan, 1, memory=memory)
    assert len(calls) == 3


def test_short_literals_and_unclosed_ones_are_not_remembered() -> None:
    calls: list[bytes] = []

    def scan(decoded: bytes, depth: int) -> list[Span]:
        calls.append(decoded)
        return []

    memory = OpenedStrings()
    short = _body("", ['say "hi"'])
    unclosed = b'"' + b'x = \\"y\\"\\n' * 200  # source one level down: no closing quote
    for _ in range(2):
        find_escaped_spans(short, [], scan, 0, memory=memory)
        find_escaped_spans(unclosed, [], scan, 0, memory=memory)
    assert len(calls) == 4
