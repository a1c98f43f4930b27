"""Only the JSON string literals a trigger's escape-tolerant form matches are opened.

Opening fewer literals must never find less: with Hyperscan the scanner decodes
only literals where a trigger (or its escape-tolerant form, `redaction.openers`)
matched the raw bytes; these tests hold it to exactly what opening every literal
with an escaped quote finds, over the vendored secret examples placed the ways
tools and encoders place them, and check that literals with nothing to find are
really left closed.
"""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import example as hypothesis_example
from hypothesis import strategies as st

from ctxtap.redaction import json_escapes
from ctxtap.redaction.engine import hyperscan_available
from ctxtap.redaction.gitleaks import load_rules
from ctxtap.redaction.openers import opener, tolerant
from ctxtap.redaction.scanner import Scanner, clear_caches
from tests.secret_corpus import generate_secrets
from tests.secret_examples.matrix import load_examples

needs_hyperscan = pytest.mark.skipif(not hyperscan_available(), reason="the hyperscan wheel is not installed")


def _forms(pattern: bytes) -> re.Pattern[bytes]:
    return re.compile(tolerant(pattern))


def test_an_atom_takes_the_escape_of_what_it_matches() -> None:
    base64 = _forms(b'"base64"')
    assert base64.fullmatch(b'"base64"') and base64.fullmatch(b'\\"base64\\"')
    assert base64.fullmatch(b'\\\\\\"base64\\\\\\"')  # JSON inside JSON
    sep = _forms(rb"key[ \t]*=")
    assert sep.fullmatch(b"key\\t=") and sep.fullmatch(b"key \t=") and not sep.fullmatch(b"key\\n=")
    space = _forms(rb"-H\s+x")
    assert space.fullmatch(b"-H\\nx") and space.fullmatch(b"-H\\r\\n  x")
    word = _forms(rb"caf[^\"]+")
    assert word.fullmatch("café".encode()) and word.fullmatch(b"caf\\u00e9") and not word.fullmatch(b'caf\\"')
    bracket = _forms(rb'x[^]"]+')  # a negated class led by `]` still leaves it out
    assert bracket.fullmatch(b"xab\\n") and not bracket.fullmatch(b"x]") and not bracket.fullmatch(b'x\\"')


def test_any_byte_stops_at_an_escaped_line_break() -> None:
    """`.` never matches a newline: its form must not run over `\\n` a byte at a time (`curl.*`
    would reach past every line of a tool result, and Hyperscan would report each end)."""
    dot = _forms(rb"curl.*-u")
    assert dot.fullmatch(b'curl -s \\"x\\" -u') and not dot.fullmatch(b"curl x\\n-u")


def test_anchors_take_the_literal_quotes() -> None:
    start = _forms(rb"^-u ")
    assert start.match(b'"-u ') and start.match(b'\\"-u ')
    assert not re.search(rb"\\b", tolerant(rb"\bAKIA[A-Z0-9]{16}\b"))  # `\nAKIA`: `n` then `A`, no boundary


def test_which_triggers_need_an_opener() -> None:
    assert opener(rb"sk-ant-[a-z]{2,8}[0-9]{0,3}-[A-Za-z0-9_\-]{20}") is None  # no atom matches an escaped byte
    # gitleaks' last group takes the backslash an escape begins with, and the closing quote
    assert opener(rb"""(AIza[\w-]{35})(?:[^A-Za-z0-9_\-]|$|[\s"'`\\,;)<>\]}])""") is None
    assert opener(rb'"inlineData"') is not None
    assert opener(rb"""(?i)<add key=\"(?:(?:ClearText)?Password)\"\s*value=\"(.{8,})\"\s*/>""") is not None


@needs_hyperscan
def test_every_opener_compiles() -> None:
    scanner = Scanner(load_rules(), "hyperscan")
    assert scanner._narrow and scanner.engine.name == "hyperscan"
    assert len(scanner._ranges) == len(scanner.detectors) and scanner._first_opener == scanner._ranges[-1].stop


@pytest.fixture(scope="module")
def scanners() -> tuple[Scanner, Scanner]:
    if not hyperscan_available():
        pytest.skip("the hyperscan wheel is not installed")
    narrow, wide = Scanner(load_rules(), "hyperscan"), Scanner(load_rules(), "hyperscan")
    wide._narrow = False  # every literal with an escaped quote opened: the reference
    return narrow, wide


def _same(scanners: tuple[Scanner, Scanner], body: bytes) -> None:
    narrow, wide = scanners
    clear_caches()
    narrow._opened.clear()
    wide._opened.clear()
    assert narrow.find_spans(body) == wide.find_spans(body), body[:300]


_EXAMPLES = sorted({e.text for e in load_examples()[1]})
_SECRETS = [f'{s.env_name} = "{s.value}"' for s in generate_secrets(3)]
_CODE = ['print("done")\n', "x = {'a': \"b\"}\n", "\tif (a) {\n\t\treturn \"x\";\n\t}\n", 'path = "C:\\\\tmp"\n',
         "# café, naïve\n", "curl -s https://example.com/api \\\n  -o out.json\n"]


def _spaced(text: str, how: int) -> str:
    """The example with its separators written the ways files write them (tabs, line breaks)."""
    if how == 1:
        return text.replace(" = ", "\t=\t").replace(": ", ":\t")
    if how == 2:
        return text.replace("=", " =\n  ").replace(": ", ":\n    ")
    return text


def _encoded(text: str, level: int, ascii_only: bool, slashes: bool) -> bytes:
    for _ in range(level):
        text = json.dumps({"type": "tool_result", "content": text}, ensure_ascii=ascii_only)
    return (text.replace("/", "\\/") if slashes else text).encode()


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.sampled_from(_EXAMPLES + _SECRETS),
    st.lists(st.sampled_from(_CODE), max_size=3),
    st.integers(0, 2),
    st.integers(1, 3),
    st.booleans(),
    st.booleans(),
)
def test_opening_fewer_literals_finds_the_same(
    scanners: tuple[Scanner, Scanner], example: str, code: list[str], how: int, level: int,
    ascii_only: bool, slashes: bool,
) -> None:
    text = "".join(code[:1]) + _spaced(example, how) + "\n" + "".join(code[1:])
    _same(scanners, _encoded(text, level, ascii_only, slashes))


def test_every_example_in_every_placement_finds_the_same(scanners: tuple[Scanner, Scanner]) -> None:
    for example in _EXAMPLES:
        for how in (0, 1, 2):
            text = 'x = "quoted"\n' + _spaced(example, how) + "\n"
            for level in (1, 2):
                _same(scanners, _encoded(text, level, True, False))


def test_literals_with_nothing_to_find_stay_closed(scanners: tuple[Scanner, Scanner],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[bytes] = []
    real = json_escapes._scan_string

    def counting(data: bytes, lo: int, hi: int, *args: object, **kwargs: object) -> None:
        opened.append(data[lo:hi])
        real(data, lo, hi, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(json_escapes, "_scan_string", counting)
    narrow, wide = scanners
    code = "".join(_CODE) * 20
    secret = generate_secrets(4)[0]
    body = json.dumps({"messages": [{"content": code}, {"content": f'cfg = "x"\n{secret.env_name}="{secret.value}"\n'},
                                    {"content": code.replace("done", "ok")}]}).encode()
    clear_caches()
    narrow._opened.clear()
    spans = narrow.find_spans(body)
    assert [o for o in opened if b"print" in o] == []  # the tool results quoting code: closed
    assert len(opened) == 1 and secret.env_name.encode() in opened[0]
    opened.clear()
    wide._opened.clear()
    assert wide.find_spans(body) == spans
    assert sum(b"print" in o for o in opened) == 2  # the reference decodes both tool results


@given(st.binary(max_size=300).map(lambda b: bytes(c for c in b if c in b'"\\ax')), st.integers(0, 299))
def test_the_start_of_a_literal_found_backwards_is_the_walks(data: bytes, pos: int) -> None:
    """Deep in a literal the start is found by one regex over the reversed bytes: the same as
    walking back over every escaped quote."""
    pos = min(pos, len(data))
    assert json_escapes._Backwards(data).string_start(pos) == json_escapes._string_start(data, pos)


def test_a_literal_with_escaped_slashes_is_opened(scanners: tuple[Scanner, Scanner]) -> None:
    """PHP writes `https:\\/\\/`: the openers leave that escape out, so such literals are opened."""
    text = 'ok = "yes"\nDATABASE_URL=postgres://app:Xq7vR2mK9pLw@db.internal/app\n'
    body = json.dumps({"content": text}).replace("/", "\\/").encode()
    narrow, _ = scanners
    clear_caches()
    narrow._opened.clear()
    found = [body[s.start:s.end] for s in narrow.find_spans(body)]
    assert any(b"Xq7vR2mK9pLw" in f for f in found), found
    _same(scanners, body)


_QUOTED = st.lists(st.sampled_from([b'"', b"\\", b"\\\\", b'\\"', b"a", b"xy"]), max_size=80).map(b"".join)


@hypothesis_example(b'"a\\\\\\"xx', 8, 3)  # the window's edge cuts the three backslashes escaping a quote
@given(_QUOTED, st.integers(0, 299), st.integers(1, 9))
def test_the_backward_window_widens_past_a_cut_backslash_run(data: bytes, pos: int, window: int) -> None:
    """The reversed window starts small and widens: a quote whose run of backslashes the window's
    edge cuts (its escaping undecided) is looked at again in the wider window."""

    class Narrow(json_escapes._Backwards):
        _STEPS = 0  # no walk first: the window every time
        _WINDOW = window

    pos = min(pos, len(data))
    assert Narrow(data).string_start(pos) == json_escapes._string_start(data, pos)
