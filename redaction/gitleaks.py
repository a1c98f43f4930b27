"""The vendored gitleaks rule set (`redaction/rules/gitleaks.toml`) as ctxtap format rules.

gitleaks' `config/gitleaks.toml` is data: per rule an id, an RE2 regex, the
keywords that gate it, an entropy floor and allowlists. This module reads it
with `tomllib` and makes two patterns per rule:

* a Hyperscan trigger: the rule's regex made a little wider (leading and
  inner `\\b` dropped, gitleaks' end-of-token group dropped), so it finds
  every place the rule could match;
* a Python verifier: the regex translated from RE2 to Python (`(?i)` in
  mid-pattern scoped, `\\z`, POSIX classes) and adapted to agent traffic:
  a token may end at any non-token character (`&`, `,`, `)` as well as
  gitleaks' quote/space/`;`), may start right after a JSON escape (`\\n`,
  `\\u0022`) or a percent escape (`%3D`), and quotes may be JSON-escaped.

Then gitleaks' own checks run on each verified match: the secret group (or
the first non-empty group), the entropy floor, the global and the rule's
allowlists (regexes on secret/match/line and stopwords; paths cannot apply
to a body). Keywords gate a match when one of them occurs in or just before
it, the local form of gitleaks' "keyword somewhere in the file".

A rule whose regex cannot be translated is kept out and listed with the
reason in `RULES.skipped`; a test asserts every rule compiles or is listed.
Placeholder kinds are the rule ids.
"""

from __future__ import annotations

import bisect
import re
import tomllib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from redaction.assignments import NOT_SECRET_NAMES, is_non_secret_value, looks_random
from redaction.engine import Trigger, hyperscan_module
from redaction.entropy import shannon_entropy
from redaction.spans import PRIORITY_GENERIC, PRIORITY_GITLEAKS, Span

_hs = hyperscan_module()

RULES_FILE = Path(__file__).with_name("rules") / "gitleaks.toml"
MAX_WIDTH = 4096  # how far back from a trigger's end a match may start
_TAIL = 64  # text after a trigger's end the verifier may look at

_END_OF_TOKEN = "(?:[\\x60'\"\\s;]|\\\\[nr]|$)"
_END_OF_TOKEN_OR_B = "(?:[\\x60'\"\\s;]|\\\\[nr]|$|\\b)"
_PY_END = r"(?![A-Za-z0-9_\-])"
_HS_END = r"(?:[^A-Za-z0-9_\-]|$)"
# Hyperscan has no lookbehind: the escape before a token is consumed instead (only ends are used).
_HS_START_B = r"(?:\b|\\[nrt]|\\u[0-9a-fA-F]{4}|%[0-9A-Fa-f]{2})"
# `\b` before a token, also right after `\n`, `\u0022` (JSON) or `%3D` (percent escapes).
_PY_START_B = r"(?:\b|(?<=\\[nrt])|(?<=\\u[0-9a-fA-F]{4})|(?<=%[0-9A-Fa-f]{2}))"
_QUOTES_3 = "[\\s'\"]{0,3}"
_QUOTES_5 = "[\\x60'\"\\s=]{0,5}"
_ESCAPED_QUOTES_3 = "(?:[\\s'\"]|\\\\{1,3}[\"'])" + "{0,3}"
_ESCAPED_QUOTES_5 = "(?:[\\x60'\"\\s=]|\\\\{1,3}[\"'])" + "{0,5}"
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


_stopword_dbs: dict[int, object] = {}


def _has_stopword(words: tuple[bytes, ...], text: bytes) -> bool:
    """Does `text` contain one of `words`? (1,446 stopwords for the generic rule: one Hyperscan pass.)"""
    if _hs is None or len(words) < 32:
        return any(w in text for w in words)
    db = _stopword_dbs.get(id(words))
    if db is None:
        db = _hs.Database(mode=_hs.HS_MODE_BLOCK)
        db.compile(expressions=[re.escape(w) for w in words], ids=list(range(len(words))), elements=len(words))
        _stopword_dbs[id(words)] = db
    found: list[int] = []

    def on_match(*_: object) -> bool:
        found.append(1)
        return True  # stop at the first

    try:
        db.scan(text, match_event_handler=on_match)  # type: ignore[attr-defined]
    except _hs.ScanTerminated:
        pass
    return bool(found)


class TranslationError(ValueError):
    """An RE2 construct this translator does not handle."""


@dataclass(frozen=True)
class Allowlist:
    """One of gitleaks' allowlists: what makes a finding not a secret."""

    target: str  # "secret", "match" or "line"
    regexes: tuple[re.Pattern[bytes], ...]
    combined: re.Pattern[bytes] | None  # the regexes as one alternation (one search per finding)
    stopwords: tuple[bytes, ...]
    and_condition: bool
    has_paths: bool

    def allows(self, secret: bytes, match: bytes, line: bytes) -> bool:
        target = {"match": match, "line": line}.get(self.target, secret)
        regex_ok = self.combined is not None and bool(target) and self.combined.search(target) is not None
        stop_ok = _has_stopword(self.stopwords, secret.lower()) if secret and self.stopwords else False
        if self.and_condition:
            if self.has_paths:
                return False  # needs a file path, which a body does not have
            checks = ([regex_ok] if self.regexes else []) + ([stop_ok] if self.stopwords else [])
            return bool(checks) and all(checks)
        return regex_ok or stop_ok


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


@dataclass
class RuleSet:
    version: str
    rules: list[Rule] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (rule id, why)
    global_allowlist: Allowlist | None = None


# Rules whose regex alone matches ordinary content (a bare 40-hex alternative
# is every git SHA): only tried where one of their keywords is.
# `kubernetes-secret-yaml` (gitleaks applies it to *.yaml files only) matches every SSE `data:` line.
_KEYWORD_GATED = frozenset({"sourcegraph-access-token", "kubernetes-secret-yaml"})
_UUID_RE = re.compile(rb"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def translate_re2(source: str) -> str:
    """RE2 syntax to Python `re` syntax (the constructs gitleaks uses).

    `X(?i)Y|Z` (flags to the end of the group, across alternatives) becomes
    `X(?i:Y)|(?i:Z)`; `\\z` becomes `\\Z`; `[[:alnum:]]` is spelled out; a `[`
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


def _adapt(source: str, *, for_python: bool) -> str:
    """gitleaks' idioms widened for agent traffic (see the module docstring)."""
    source = source.replace(_QUOTES_3, _ESCAPED_QUOTES_3).replace(_QUOTES_5, _ESCAPED_QUOTES_5)
    # Hyperscan has no lookahead: it consumes the delimiter (one report per token, not one per length).
    end = _PY_END if for_python else _HS_END
    source = source.replace(_END_OF_TOKEN_OR_B, end).replace(_END_OF_TOKEN, end)
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


def _scoped(source: str) -> str:
    """A pattern with leading global flags as a group that can sit inside an alternation."""
    m = re.match(r"\(\?([a-z]+)\)", source)
    return f"(?{m.group(1)}:{source[m.end():]})" if m else f"(?:{source})"


def _allowlist(raw: dict) -> Allowlist:
    sources = [translate_re2(r) for r in raw.get("regexes", ())]
    return Allowlist(
        target=raw.get("regexTarget", "secret"),
        regexes=tuple(re.compile(r.encode()) for r in sources),
        combined=re.compile("|".join(_scoped(r) for r in sources).encode()) if sources else None,
        stopwords=tuple(w.lower().encode() for w in raw.get("stopwords", ())),
        and_condition=raw.get("condition", "OR").upper() == "AND",
        has_paths=bool(raw.get("paths")),
    )


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
        if rule_id == _GENERIC:
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


@dataclass(frozen=True)
class Finding:
    rule: Rule
    start: int  # of the secret
    end: int
    match_start: int


def verify(
    rule: Rule,
    data: bytes,
    lo: int,
    hi: int,
    global_allowlist: Allowlist | None,
    ends: list[int] | None = None,
) -> list[Finding]:
    r"""The rule's findings with a match inside `data[lo:hi]` (a match cut at `hi` is not one).

    The regex is tried first where a keyword starts (anchored `match`, cheap:
    gitleaks' semi-generic regexes start with a lazy `[\w.-]{0,50}?` that makes
    a free search cost fifty steps per byte); a window none of whose keyword
    positions yields a match is searched in full. `ends` (where the trigger
    matched, when known) limit the keyword positions tried to those close enough
    before an end.
    """
    if rule.keywords and not rule.gated:
        matches = [m for m in _anchored(rule, data, lo, hi, ends) if m.end() < hi or hi == len(data)]
        if matches or rule.contextual:
            # A `name = value` rule's regex starts at its keyword: nothing to find elsewhere.
            return _findings(rule, data, matches, hi, global_allowlist)
    needed = _NEEDS_ALL.get(rule.id)
    if needed is not None:
        window = data[lo:hi].lower()
        if not all(w in window for w in needed):
            return []
    return _findings(rule, data, rule.verifier.finditer(data, lo, hi), hi, global_allowlist)


# Literals a keyword-gated rule's match always contains (its regex is slow to search in Python).
_NEEDS_ALL = {"kubernetes-secret-yaml": (b"kind:", b"data:")}


_ANCHOR_REACH = 320  # how far before a trigger's end its keyword may be (name, operator, a long value)


def _anchored(
    rule: Rule, data: bytes, lo: int, hi: int, ends: list[int] | None
) -> Iterator[re.Match[bytes]]:
    lowered = data[lo:hi].lower()
    starts: set[int] = set()
    for kw in rule.keywords:
        pos = lowered.find(kw)
        while pos >= 0:
            starts.add(lo + pos)
            pos = lowered.find(kw, pos + 1)
    if ends:
        reach = min(rule.max_width, _ANCHOR_REACH) + 2  # the trigger's end includes the delimiter
        ordered = sorted(ends)
        starts = {s for s in starts if _end_within(ordered, s, s + reach)}
    covered = -1
    match = rule.verifier.match
    for start in sorted(starts):
        if start < covered:
            continue
        m = match(data, start, hi)
        if m is not None:
            covered = m.end()
            yield m


def _findings(
    rule: Rule,
    data: bytes,
    matches: Iterable[re.Match[bytes]],
    hi: int,
    global_allowlist: Allowlist | None,
) -> list[Finding]:
    out: list[Finding] = []
    n = len(data)
    for m in matches:
        if m.end() >= hi and hi < n:
            continue
        if m.end() == m.start():
            continue
        start, end = _secret_span(rule, m)
        if end <= start:
            continue
        finding = Finding(rule, start, end, m.start())
        # The verdict depends only on the text around the match: bodies repeat
        # the same lines (resent history, tool schemas), so decide each once.
        line_lo, line_hi = _line_bounds(data, m.start(), m.end())
        lo = min(line_lo, max(0, m.start() - 160))
        hi_ctx = max(line_hi, min(n, m.end() + 16))
        key = (rule.id, data[lo:hi_ctx], m.start() - lo, m.end() - lo, start - lo, end - lo)
        verdict = _VERDICTS.get(key)
        if verdict is None:
            if len(_VERDICTS) >= _VERDICT_LIMIT:
                _VERDICTS.clear()
            verdict = _VERDICTS[key] = _accept(finding, data, m, data[line_lo:line_hi], global_allowlist)
        if verdict:
            out.append(finding)
    return out


_VERDICTS: dict[tuple, bool] = {}
_VERDICT_LIMIT = 8192


def _accept(
    f: Finding, data: bytes, m: re.Match[bytes], line: bytes, global_allowlist: Allowlist | None
) -> bool:
    """gitleaks' checks on one match, cheapest first, then ctxtap's for `name = value` rules."""
    rule = f.rule
    secret = data[f.start : f.end]
    if rule.entropy and shannon_entropy(secret) <= rule.entropy:
        return False
    if rule.keywords and not _keyword_near(rule, data, m.start(), m.end()):
        return False
    if rule.contextual and not _credential_context(rule, data, f):
        return False
    match = m.group(0)
    if global_allowlist is not None and global_allowlist.allows(secret, match, line):
        return False
    return not any(a.allows(secret, match, line) for a in rule.allowlists)


def _secret_span(rule: Rule, m: re.Match[bytes]) -> tuple[int, int]:
    if m.re.groups == 0:
        return m.span()
    if rule.secret_group:
        if rule.secret_group > m.re.groups:
            return (0, 0)
        return m.span(rule.secret_group)
    for g in range(1, m.re.groups + 1):
        s, e = m.span(g)
        if e > s:
            return s, e
    return m.span()


def _keyword_near(rule: Rule, data: bytes, start: int, end: int) -> bool:
    around = data[max(0, start - 64) : end + 16].lower()
    return any(k in around for k in rule.keywords)


def _line_bounds(data: bytes, start: int, end: int) -> tuple[int, int]:
    """The line around a match (at most 1 KB either side; JSON bodies are often one line)."""
    lo = data.rfind(b"\n", max(0, start - 1024), start)
    lo = lo + 1 if lo >= 0 else max(0, start - 1024)
    hi = data.find(b"\n", end, end + 1024)
    return lo, hi if hi >= 0 else min(len(data), end + 1024)


_TOKEN_TAIL = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_B64_TAIL = frozenset(_TOKEN_TAIL | frozenset(b"+/="))
_FALLBACK_WINDOW = 1024


class GitleaksDetector:
    """The rule set's triggers for the engine, and the verification of what they found."""

    def __init__(self, ruleset: RuleSet) -> None:
        self.ruleset = ruleset
        self.triggers: list[Trigger] = []
        for rule in ruleset.rules:
            if rule.gated:
                pattern = b"|".join(re.escape(k) for k in rule.keywords)
                self.triggers.append(
                    Trigger(pattern, literals=rule.keywords, window=0, caseless=True)
                )
            else:
                self.triggers.append(
                    Trigger(
                        rule.trigger,
                        literals=rule.keywords,
                        window=min(rule.max_width, _FALLBACK_WINDOW),
                        py_pattern=rule.verifier.pattern,
                        fold_literals=True,
                    )
                )

    def find(self, data: bytes, hits: list[list[tuple[int, int]]], out: list[Span]) -> None:
        """Append a span per verified finding; `hits[i]` are the matches of rule i's trigger."""
        n = len(data)
        glob = self.ruleset.global_allowlist
        for rule, found in zip(self.ruleset.rules, hits, strict=True):
            if not found:
                continue
            # The trigger's end includes the delimiter after the token; lookbehinds see two bytes more.
            back = rule.max_width + 8 if not rule.gated else rule.max_width + 256
            ahead = _TAIL if not rule.gated else rule.max_width + 256
            ends = [e for _, e in found]
            windows = _windows(list(ends), back, ahead, n)
            priority = PRIORITY_GENERIC if rule.contextual else PRIORITY_GITLEAKS
            seen: set[tuple[int, int]] = set()
            for lo, hi in windows:
                for f in verify(rule, data, lo, hi, glob, None if rule.gated else ends):
                    if (f.start, f.end) in seen:
                        continue
                    seen.add((f.start, f.end))
                    end = f.end if rule.contextual else _token_end(data, f.start, f.end, rule.literal)
                    out.append(Span(f.start, end, rule.id, priority))


def _windows(ends: list[int], back: int, ahead: int, n: int) -> list[tuple[int, int]]:
    ends.sort()
    out: list[tuple[int, int]] = []
    for e in ends:
        lo, hi = max(0, e - back), min(n, e + ahead)
        if out and lo <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def _token_end(data: bytes, start: int, end: int, literal: bool = False) -> int:
    """A format rule's match may stop inside a longer token: take the token to its real end.

    `literal`: the rule is a fixed prefix (`bedrock-api-key-...`) of a base64 token.
    """
    tail = _B64_TAIL if literal or any(c in b"+/" for c in data[start:end]) else _TOKEN_TAIL
    n = len(data)
    while end < n and data[end] in tail:
        end += 1
    return end


def rule_ids(path: Path = RULES_FILE) -> tuple[str, ...]:
    """The ids of the rules in the file (placeholder kinds), without compiling anything."""
    with path.open("rb") as fh:
        return tuple(r["id"] for r in tomllib.load(fh).get("rules", ()) if r.get("regex"))


_NAME_RE = re.compile(rb"[\w.\-]{1,160}")
_NAME_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_GENERIC = "generic-api-key"


def _tighten_generic(source: str) -> str:
    """The catch-all rule's value must be able to look random to ctxtap (16+ characters, see
    `_credential_context`): asking Hyperscan for that keeps `"key": "status"` out of Python."""
    return source.replace(r"([\w.=-]{10,150}|[a-z0-9][a-z0-9+/]{11,}={0,3})", r"([\w.=-]{16,150}|[a-z0-9][a-z0-9+/]{15,}={0,3})")


def _credential_context(rule: Rule, data: bytes, f: Finding) -> bool:
    """ctxtap's name and value checks on a `name = value` rule's finding (code is full of near misses).

    Names the analysis needs (`prompt_cache_key`, `next_page_token`) and values
    that are clearly not secrets (references, words, code) are dropped; the
    catch-all generic rule also needs a random-looking value.
    """
    value = data[f.start : f.end]
    begin = f.match_start
    while begin > 0 and data[begin - 1] in _NAME_BYTES and f.match_start - begin < 80:
        begin -= 1  # the whole name, when the match began at its keyword
    name_m = _NAME_RE.match(data, begin)
    name = name_m.group().lower() if name_m is not None else b""
    norm = name.rsplit(b".", 1)[-1].replace(b"_", b"").replace(b"-", b"").decode("ascii", "replace")
    if norm in NOT_SECRET_NAMES:
        return False
    if is_non_secret_value(value, True, b""):
        return False
    if rule.id == _GENERIC:
        return looks_random(value) and not _UUID_RE.fullmatch(value)
    return True


def _end_within(ends: list[int], lo: int, hi: int) -> bool:
    i = bisect.bisect_left(ends, lo)
    return i < len(ends) and ends[i] <= hi
