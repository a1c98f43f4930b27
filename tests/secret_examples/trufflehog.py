"""A scanner whose rules ctxtap does not vendor: trufflehog's pattern tests, read from a checkout.

trufflehog (AGPL-3.0) is not vendored and nothing of it is committed here: `trufflehog_examples` reads a
checkout the user points at (`python -m tests.secret_examples.score --trufflehog ../trufflehog`). Each detector's
`*_test.go` lists `{input: ..., want: []string{...}}` cases for its pattern; a case whose `want` is not empty is a
true positive, its `input` the text as trufflehog's authors wrote it (the matrix's "upstream" placement). The
literals are Go: raw and quoted strings, `+`, `fmt.Sprintf` over package-level and local variables, which a small
evaluator reads; a case it cannot read is skipped and counted.

What must stay off disk is the secret itself: a `want` that joins a key and its secret (`id:secret`) counts
each part found in the input; a URL counts its password (or a `password=` parameter, or a webhook's last
segment), not the host. A value is self-identifying when it begins with a head (letters, then `_`, `-` or `.`)
that the detector's own regex spells out; every other value is name-marked (trufflehog finds it by the vendor's
name near it). Families are split in two halves by a fixed hash of the detector's name (`held_out`): rules were
written with only the other half's leaks in view.
"""

from __future__ import annotations

import json
import re
import zlib
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from tests.secret_examples.matrix import Example

_TOKEN_RE = re.compile(
    r"""(?P<ws>\s+)|(?P<lc>//[^\n]*)|(?P<bc>/\*.*?\*/)|(?P<raw>`[^`]*`)|(?P<str>"(?:\\.|[^"\\\n])*")"""
    r"""|(?P<chr>'(?:\\.|[^'\\])*')|(?P<num>\d+)|(?P<id>[A-Za-z_][A-Za-z0-9_.]*)|(?P<p>:=|\.\.\.|[^\s])""",
    re.S,
)
_VERB_RE = re.compile(r"%%|%[-+# 0-9.]*[sdvqx]")
_HEAD_RE = re.compile(r"[A-Za-z][A-Za-z0-9]{1,11}[_\-.]")
_REGEX_RE = re.compile(r"regexp\.MustCompile\((.*?)\)\s*$", re.M)
_LOOKAHEAD = 600  # tokens an expression may span


class GoUnreadable(ValueError):
    """A Go expression the evaluator does not read (a call, a struct, a constant of another package)."""


def _tokens(source: str) -> list[tuple[str, str]]:
    return [(m.lastgroup or "", m.group()) for m in _TOKEN_RE.finditer(source) if m.lastgroup not in ("ws", "lc", "bc")]


def _string(kind: str, text: str) -> str:
    if kind == "raw":
        return text[1:-1]
    try:
        return json.loads(text)
    except ValueError:
        return text[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape")


class _Expr:
    """Go string expressions: literals, names bound before, `+`, `fmt.Sprintf`/`fmt.Sprint`, `strings.Repeat`."""

    def __init__(self, tokens: list[tuple[str, str]], names: dict[str, str]) -> None:
        self.tokens, self.names, self.i = tokens, names, 0

    def _peek(self) -> tuple[str, str]:
        return self.tokens[self.i] if self.i < len(self.tokens) else ("", "")

    def _expect(self, punct: str) -> None:
        if self._peek() != ("p", punct):
            raise GoUnreadable(f"expected {punct!r}, found {self._peek()[1]!r}")
        self.i += 1

    def read(self) -> str:
        value = self._term()
        while self._peek() == ("p", "+"):
            self.i += 1
            value += self._term()
        return value

    def _term(self) -> str:
        kind, text = self._peek()
        if kind in ("raw", "str"):
            self.i += 1
            return _string(kind, text)
        if kind == "num":
            self.i += 1
            return text
        if kind == "id" and text in ("fmt.Sprintf", "fmt.Sprint", "strings.Repeat"):
            self.i += 1
            self._expect("(")
            args = [self.read()]
            while self._peek() == ("p", ","):
                self.i += 1
                if self._peek() == ("p", ")"):
                    break
                args.append(self.read())
            self._expect(")")
            if text == "strings.Repeat":
                return args[0] * int(args[1])
            if text == "fmt.Sprint":
                return "".join(args)
            rest = iter(args[1:])
            try:
                return _VERB_RE.sub(lambda m: "%" if m.group() == "%%" else next(rest), args[0])
            except StopIteration as exc:
                raise GoUnreadable("fewer arguments than verbs") from exc
        if kind == "id" and text in self.names:
            self.i += 1
            return self.names[text]
        raise GoUnreadable(f"{kind} {text!r}")


def _read(tokens: list[tuple[str, str]], at: int, names: dict[str, str]) -> tuple[str, int]:
    """The expression starting at token `at`, and the index of the token after it."""
    expr = _Expr(tokens[at : at + _LOOKAHEAD], names)
    value = expr.read()
    return value, at + expr.i


def _bindings(tokens: list[tuple[str, str]]) -> dict[str, str]:
    """Every `name = expr` and `name := expr` whose expression reads, in the order they come."""
    names: dict[str, str] = {}
    for i in range(len(tokens) - 2):
        if tokens[i][0] == "id" and tokens[i + 1] in (("p", "="), ("p", ":=")) and tokens[i][1] not in names:
            try:
                names[tokens[i][1]] = _read(tokens, i + 2, names)[0]
            except (GoUnreadable, IndexError, ValueError):
                continue
    return names


def pattern_cases(source: str) -> tuple[list[tuple[str, list[str]]], int]:
    """(input, want) of each test case of a Go test file, and how many cases could not be read."""
    tokens = _tokens(source)
    names = _bindings(tokens)
    cases: list[tuple[str, list[str]]] = []
    unread = 0
    i = 0
    while i < len(tokens) - 1:
        if tokens[i] != ("id", "input") or tokens[i + 1] != ("p", ":"):
            i += 1
            continue
        try:
            text, after = _read(tokens, i + 2, names)
            want = _want(tokens, after, names)
        except (GoUnreadable, IndexError, ValueError):
            unread += 1
            i += 2
            continue
        if want is None:
            unread += 1
        else:
            cases.append((text, want))
        i = after
    return cases, unread


def _want(tokens: list[tuple[str, str]], at: int, names: dict[str, str]) -> list[str] | None:
    """The `want: []string{...}` (or `nil`) of the case whose input ends at token `at`."""
    for k in range(at, min(len(tokens) - 4, at + 80)):
        if tokens[k] == ("id", "input"):
            return None
        if tokens[k] != ("id", "want") or tokens[k + 1] != ("p", ":"):
            continue
        m = k + 2
        if tokens[m] == ("id", "nil"):
            return []
        if tokens[m : m + 4] != [("p", "["), ("p", "]"), ("id", "string"), ("p", "{")]:
            return None
        m += 4
        want = []
        while tokens[m] != ("p", "}"):
            value, m = _read(tokens, m, names)
            want.append(value)
            if tokens[m] == ("p", ","):
                m += 1
        return want
    return None


def held_out(family: str) -> bool:
    """Is this detector in the half kept out of sight while rules were written (a fixed hash of its name)?"""
    return zlib.crc32(family.encode()) % 2 == 1


def secret_parts(want: str, text: str) -> list[str]:
    """What of a wanted finding must stay off disk, as it occurs in the input."""
    if "://" in want or want.startswith("jdbc:"):
        secret = _url_secret(want)
        return [secret] if secret and len(secret) >= 8 and secret in text else []
    if want in text:
        return [want] if _secret_like(want) else []
    return [p for p in re.split(r"[:|;,\s]+", want) if len(p) >= 8 and p in text and _secret_like(p)]


def _url_secret(url: str) -> str | None:
    body = url.removeprefix("jdbc:")
    try:
        password = urlsplit(body).password
    except ValueError:
        password = None
    if password:
        return password
    if m := re.search(r"(?i)[;?&]password=([^;&]+)", body):
        return m.group(1)
    if "/hooks/" in body or "/webhooks/" in body:
        return body.rstrip("/").rsplit("/", 1)[-1]
    return None


def _secret_like(value: str) -> bool:
    """Not a host, a quoted key name or a lower-case word (the parts of a `want` that name where a secret is)."""
    return len(value) >= 8 and '"' not in value and not re.fullmatch(r"[A-Za-z0-9.\-]+\.[a-z]{2,6}", value) and not (
        value.isalpha() and value.islower())


@dataclass(frozen=True)
class Loaded:
    examples: list[Example]
    files: int
    unread: int


def trufflehog_examples(checkout: Path) -> Loaded:
    """Every pattern test's secrets in a trufflehog checkout, one example per (detector, secret)."""
    detectors = checkout / "pkg" / "detectors"
    if not detectors.is_dir():
        raise FileNotFoundError(f"{checkout} is not a trufflehog checkout (no pkg/detectors)")
    examples: list[Example] = []
    seen: set[tuple[str, str]] = set()
    files = unread = 0
    for test in sorted(detectors.glob("*/*_test.go")):
        if "integration" in test.name:
            continue
        source = test.read_text(errors="replace")
        if "input" not in source:
            continue
        files += 1
        detector = test.parent.name
        cases, missed = pattern_cases(source)
        unread += missed
        regexes = " ".join(_REGEX_RE.findall("".join(
            p.read_text(errors="replace") for p in test.parent.glob("*.go") if not p.name.endswith("_test.go"))))
        for text, want in cases:
            for value in want:
                for secret in secret_parts(value, text):
                    if (detector, secret) in seen:
                        continue
                    seen.add((detector, secret))
                    head = _HEAD_RE.match(secret)
                    cls = "self-identifying" if head and head.group() in regexes else "name-marked"
                    examples.append(Example(
                        id=f"trufflehog:{detector}:{len(examples)}", source="trufflehog", family=detector, label="tp",
                        cls=cls, text=text, secret=secret, name=detector,
                        file=str(test.relative_to(checkout)), line=0))
    return Loaded(examples, files, unread)
