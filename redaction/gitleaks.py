"""The vendored gitleaks rule set (`redaction/rules/gitleaks.toml`) as ctxtap format rules.

gitleaks' `config/gitleaks.toml` is data: per rule an id, an RE2 regex, the
keywords that gate it, an entropy floor and allowlists. This module reads it
with `tomllib` and makes two patterns per rule:

* a Hyperscan trigger: the rule's regex made a little wider (`\\b` dropped,
  gitleaks' end-of-token group replaced by any one delimiter), so it finds
  every place the rule could match;
* a Python verifier: the regex translated from RE2 to Python (`(?i)` in
  mid-pattern scoped, `\\z`, POSIX classes) and adapted to agent traffic:
  a token may end at any non-token character (`&`, `,`, `)` as well as
  gitleaks' quote/space/`;`), may start right after a JSON escape (`\\n`,
  `\\u0022`) or a percent escape (`%3D`), and quotes may be JSON-escaped.

`redaction.gitleaks_match` runs gitleaks' own checks on what the triggers
found. A rule whose regex cannot be translated is kept out and listed with
the reason in `RuleSet.skipped`; a test asserts every rule compiles or is
listed. Two rules are tried only where their keywords are (`_KEYWORD_GATED`),
and the catch-all `generic-api-key` asks for values of 16+ characters (ctxtap
redacts shorter ones only under a strong name). Placeholder kinds are the
rule ids.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from ctxtap.redaction.any_match import AnyMatch

RULES_FILE = Path(__file__).with_name("rules") / "gitleaks.toml"
MAX_WIDTH = 4096  # how far back from a trigger's end a match may start

_END_OF_TOKEN = "(?:[\\x60'\"\\s;]|\\\\[nr]|$)"
_END_OF_TOKEN_OR_B = "(?:[\\x60'\"\\s;]|\\\\[nr]|$|\\b)"
_PY_END = r"(?![A-Za-z0-9_\-])"
_HS_END = r"(?:[^A-Za-z0-9_\-]|$)"
# `\b` before a token, also right after `\n`, `\u0022` (JSON) or `%3D` (percent escapes).
_PY_START_B = r"(?:\b|(?<=\\[nrt])|(?<=\\u[0-9a-fA-F]{4})|(?<=%[0-9A-Fa-f]{2}))"
_QUOTES_3 = "[\\s'\"]{0,3}"
_QUOTES_5 = "[\\x60'\"\\s=]{0,5}"
_ESCAPED_QUOTES_3 = "(?:[\\s'\"]|\\\\{1,3}[\"'])" + "{0,3}"
_ESCAPED_QUOTES_5 = "(?:[\\x60'\"\\s=]|\\\\{1,3}[\"'])" + "{0,5}"
_GREEDY_CONTEXT = r"(?:.*|.*(?:[\r\n]{1,2}.*){1,5})"
_LAZY_CONTEXT = r"(?:.*?|.*?(?:[\r\n]{1,2}.*?){1,5})"
_VALUE_END = "[\\s\"'\x60\\\\,;)<>\\]}]"
_ASSIGNMENT_OPS = "(?:=|>|:{1,3}=|\\|\\||:|=>|\\?=|,)"

_POSIX = {
    "alnum": "a-zA-Z0-9",
    "alpha": "a-zA-Z",
    "digit": "0-9",
    "lower": "a-z",
    "upper": "A-Z",
    "xdigit": "0-9A-Fa-f",
    "space": r"\t\n\v\f\r ",
    "word": r"\w",
    "punct": r"!-/:-@\[-`{-~",
}


class TranslationError(ValueError):
    """An RE2 construct this translator does not handle."""


@dataclass(frozen=True)
class Allowlist:
    """One of gitleaks' allowlists: what makes a finding not a secret."""

    target: str  # "secret", "match" or "line"
    regexes: AnyMatch | None  # one question for all of them (Hyperscan where it compiles them)
    stopwords: tuple[bytes, ...]
    and_condition: bool
    has_paths: bool
    many_stopwords: AnyMatch | None = None  # the generic rule's 1,446: one Hyperscan pass

    def allows(self, secret: bytes, match: bytes, line: bytes) -> bool:
        target = {"match": match, "line": line}.get(self.target, secret)
        regex_ok = self.regexes is not None and bool(target) and self.regexes.search(target)
        stop_ok = bool(secret and self.stopwords) and self._has_stopword(secret.lower())
        if self.and_condition:
            if self.has_paths:
                return False  # needs a file path, which a body does not have
            checks = ([regex_ok] if self.regexes else []) + ([stop_ok] if self.stopwords else [])
            return bool(checks) and all(checks)
        return regex_ok or stop_ok

    def _has_stopword(self, text: bytes) -> bool:
        if self.many_stopwords is not None:
            return self.many_stopwords.search(text)
        return any(w in text for w in self.stopwords)


LAST_GROUP = -1  # `Rule.secret_group`: the last outermost group is the secret (Kingfisher's catalogue)


@dataclass(frozen=True)
class Rule:
    """One gitleaks rule, ready to verify the places its trigger found."""

    id: str
    regex: str  # the RE2 source as vendored
    trigger: bytes  # Hyperscan pattern
    verifier: re.Pattern[bytes]
    keywords: tuple[bytes, ...]
    entropy: float
    secret_group: int
    allowlists: tuple[Allowlist, ...]
    contextual: bool  # `name = value` rules (gitleaks' semi-generic form), not a self-identifying format
    max_width: int
    gated: bool  # found by its keywords, not by its regex (regex too loose to scan a body with)
    literal: bool = False  # the regex is a fixed string: the prefix of a longer token
    anchored: bool = False  # (with `gated`) the regex starts with a keyword: matched only where one is


@dataclass
class RuleSet:
    version: str
    rules: list[Rule] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (rule id, why)
    global_allowlist: Allowlist | None = None


# Rules whose regex alone matches ordinary content (a bare 40-hex alternative
# is every git SHA): only tried where one of their keywords is.
# `kubernetes-secret-yaml` (gitleaks applies it to *.yaml files only) matches every SSE `data:` line.
GENERIC_RULE = "generic-api-key"
_KEYWORD_GATED = frozenset({"sourcegraph-access-token", "kubernetes-secret-yaml"})


def translate_re2(source: str) -> str:
    """RE2 syntax to Python `re` syntax (the constructs gitleaks uses).

    `X(?i)Y|Z` (flags to the end of the group, across alternatives) becomes
    `X(?i:Y)|(?i:Z)`; `(?<name>` becomes `(?P<name>`; `\\z` becomes `\\Z`; `[[:alnum:]]` is spelled out; a `[`
    inside a class is escaped.
    """
    out: list[str] = []
    # Per open group: the inline-flag groups opened inside it (to close at `|` and `)`).
    stack: list[list[str]] = [[]]
    i = 0
    n = len(source)
    while i < n:
        c = source[i]
        if c == "\\":
            if i + 1 >= n:
                raise TranslationError("trailing backslash")
            nxt = source[i + 1]
            if nxt == "z":
                out.append(r"\Z")
            elif nxt in "pPQCX":
                raise TranslationError(f"unsupported escape \\{nxt}")
            else:
                out.append(source[i : i + 2])
            i += 2
            continue
        if c == "[":
            j, cls = _translate_class(source, i)
            out.append(cls)
            i = j
            continue
        if c == "(":
            m = re.match(r"\(\?([imsU-]+)\)", source[i:])
            if m is not None:
                flags = m.group(1)
                if "U" in flags:
                    raise TranslationError("ungreedy flag (?U)")
                if i == 0 and "-" not in flags:
                    out.append(m.group(0))  # leading global flags are valid Python
                else:
                    opener = f"(?{flags}:"
                    out.append(opener)
                    stack[-1].append(opener)
                i += m.end()
                continue
            stack.append([])
            if named := re.match(r"\(\?<([A-Za-z_][A-Za-z0-9_]*)>", source[i:]):
                out.append(f"(?P<{named.group(1)}>")  # RE2's newer spelling of a named group
                i += named.end()
                continue
            out.append(c)
            i += 1
            continue
        if c == ")":
            if len(stack) == 1:
                raise TranslationError("unbalanced )")
            out.append(")" * len(stack.pop()))
            out.append(c)
            i += 1
            continue
        if c == "|" and stack[-1]:
            out.append(")" * len(stack[-1]) + "|" + "".join(stack[-1]))
            i += 1
            continue
        out.append(c)
        i += 1
    if len(stack) != 1:
        raise TranslationError("unbalanced (")
    out.append(")" * len(stack[0]))
    return "".join(out)


def _translate_class(source: str, start: int) -> tuple[int, str]:
    """A character class from `start` (its `[`): (index after it, Python spelling)."""
    i = start + 1
    parts = ["["]
    if i < len(source) and source[i] == "^":
        parts.append("^")
        i += 1
    if i < len(source) and source[i] == "]":
        parts.append(r"\]")
        i += 1
    while i < len(source):
        c = source[i]
        if c == "\\":
            if source[i + 1 : i + 2] in ("p", "P"):
                raise TranslationError("unicode class \\p")
            parts.append(source[i : i + 2])
            i += 2
            continue
        if c == "[":
            m = re.match(r"\[:(\^?)([a-z]+):\]", source[i:])
            if m is not None:
                if m.group(1) or m.group(2) not in _POSIX:
                    raise TranslationError(f"POSIX class {m.group(0)}")
                parts.append(_POSIX[m.group(2)])
                i += m.end()
                continue
            parts.append(r"\[")
            i += 1
            continue
        if c == "]":
            parts.append("]")
            return i + 1, "".join(parts)
        parts.append(c)
        i += 1
    raise TranslationError("unterminated character class")


_CLASS_RE = re.compile(r"\[(?:\\.|[^\]\\])*\]")


def _no_backslash_in_tokens(source: str) -> str:
    """A token alphabet with `\\` in it (gitleaks' JWT rules) would swallow the `\\n` after a
    token in JSON, or half of a `\\"`, and break the document: take it out."""

    def fix(m: re.Match[str]) -> str:
        cls = m.group()
        return cls.replace("\\\\", "") if "a-z" in cls or "A-Z" in cls else cls

    return _CLASS_RE.sub(fix, source)


def _adapt(source: str, *, for_python: bool) -> str:
    """gitleaks' idioms widened for agent traffic (see the module docstring)."""
    source = _no_backslash_in_tokens(source)
    source = source.replace(_QUOTES_3, _ESCAPED_QUOTES_3).replace(_QUOTES_5, _ESCAPED_QUOTES_5)
    if for_python:
        # a greedy context run (`curl\b(?:.*|...)-u`) spans to the last `-u` of a one-line JSON body,
        # hiding every command before it: match it lazily, so each command is found
        source = source.replace(_GREEDY_CONTEXT, _LAZY_CONTEXT)
    # Hyperscan has no lookahead: it consumes the delimiter (one report per token, not one per length).
    end = _PY_END if for_python else _HS_END
    source = source.replace(_END_OF_TOKEN_OR_B, end).replace(_END_OF_TOKEN, end)
    # A rule's own end group that allows the end of input (`(?:[/#?:]|$)`) also ends at a quote,
    # space or bracket: in traffic the value sits inside JSON or prose, not at the end of a file.
    for tail in ("|$)", "|\\z)", "|\\Z)"):
        if source.endswith(tail):
            widened = f"(?={_VALUE_END})" if for_python else _VALUE_END
            source = f"{source[: -len(tail)]}{tail[:-1]}|{widened})"
            break
    return _replace_word_boundaries(source, _PY_START_B if for_python else "")


def _replace_word_boundaries(source: str, replacement: str) -> str:
    r"""Every `\b` outside a class (the Python replacement also accepts the end of a JSON escape)."""
    out = []
    i = 0
    in_class = False
    while i < len(source):
        c = source[i]
        if c == "\\":
            pair = source[i : i + 2]
            out.append(replacement if pair == r"\b" and not in_class else pair)
            i += 2
            continue
        if c == "[" and not in_class:
            in_class = True
            if source[i + 1 : i + 2] == "]" or source[i + 1 : i + 3] == "^]":
                out.append(source[i : i + (2 if source[i + 1] == "]" else 3)])
                i += 2 if source[i + 1] == "]" else 3
                continue
        elif c == "]" and in_class:
            in_class = False
        out.append(c)
        i += 1
    return "".join(out)


def _max_width(pattern: re.Pattern[bytes]) -> int:
    try:
        from re import _parser  # type: ignore[attr-defined]

        width = _parser.parse(pattern.pattern, pattern.flags).getwidth()[1]
    except Exception:
        return MAX_WIDTH
    return min(int(width), MAX_WIDTH)


def _allowlist(raw: dict) -> Allowlist:
    sources = [translate_re2(r) for r in raw.get("regexes", ())]
    for source in sources:
        re.compile(source.encode())  # a regex `re` cannot read fails its rule here (re.error)
    stopwords = tuple(w.lower().encode() for w in raw.get("stopwords", ()))
    return Allowlist(
        target=raw.get("regexTarget", "secret"),
        regexes=AnyMatch(sources) if sources else None,
        stopwords=stopwords,
        and_condition=raw.get("condition", "OR").upper() == "AND",
        has_paths=bool(raw.get("paths")),
        many_stopwords=AnyMatch.words(stopwords) if len(stopwords) >= _MANY_WORDS else None,
    )


_MANY_WORDS = 32  # fewer stopwords are looked up one by one (faster than a Hyperscan call)


def _version(path: Path) -> str:
    readme = path.with_name("README.md")
    if readme.exists():
        m = re.search(r"^version: (\S+)", readme.read_text("utf-8"), re.M)
        if m is not None:
            return m.group(1)
    return "unknown"


def load_rules(path: Path = RULES_FILE) -> RuleSet:
    """Every rule of the TOML file, compiled, or listed in `skipped` with the reason."""
    with path.open("rb") as fh:
        config = tomllib.load(fh)
    ruleset = RuleSet(version=_version(path))
    glob = config.get("allowlist")
    if glob:
        ruleset.global_allowlist = _allowlist(glob)
    for raw in config.get("rules", ()):
        rule_id = raw.get("id", "?")
        source = raw.get("regex")
        if not source:
            ruleset.skipped.append((rule_id, "no regex: the rule matches file paths only"))
            continue
        if rule_id == GENERIC_RULE:
            source = _tighten_generic(source)
        try:
            python = translate_re2(source)
            verifier = re.compile(_adapt(python, for_python=True).encode())
            trigger = _adapt(source, for_python=False).encode()
            allowlists = tuple(_allowlist(a) for a in raw.get("allowlists", ()))
        except (TranslationError, re.error) as exc:
            ruleset.skipped.append((rule_id, f"regex not translatable to Python: {exc}"))
            continue
        ruleset.rules.append(
            Rule(
                id=rule_id,
                regex=source,
                trigger=trigger,
                verifier=verifier,
                keywords=tuple(k.lower().encode() for k in raw.get("keywords", ())),
                entropy=float(raw.get("entropy", 0.0)),
                secret_group=int(raw.get("secretGroup", 0)),
                allowlists=allowlists,
                contextual=_ASSIGNMENT_OPS in source,
                max_width=_max_width(verifier),
                gated=rule_id in _KEYWORD_GATED,
                literal=re.fullmatch(r"[\w-]+", source) is not None,
            )
        )
    return ruleset


def rule_ids(path: Path = RULES_FILE) -> tuple[str, ...]:
    """The ids of the rules in the file (placeholder kinds), without compiling anything."""
    with path.open("rb") as fh:
        return tuple(r["id"] for r in tomllib.load(fh).get("rules", ()) if r.get("regex"))


def _tighten_generic(source: str) -> str:
    """The catch-all rule's value must be able to look random to ctxtap (16+ characters, see
    `_credential_context`): asking Hyperscan for that keeps `"key": "status"` out of Python."""
    return source.replace(r"([\w.=-]{10,150}|[a-z0-9][a-z0-9+/]{11,}={0,3})", r"([\w.=-]{16,150}|[a-z0-9][a-z0-9+/]{15,}={0,3})")
