"""The vendored Kingfisher rule catalogue (`redaction/rules/kingfisher.json`) as rules beside gitleaks'.

Kingfisher (MongoDB, Apache-2.0) keeps a maintained catalogue of several hundred provider
formats, written for Hyperscan as ctxtap's engine is; gitleaks lists fewer. Its YAML rules are
read once, when the catalogue is refreshed (`redaction/kingfisher_refresh.py`), into a
JSON file of what redaction needs (id, name, regex, entropy floor, examples); rules that only
find identifiers (`visible: false`), low-confidence ones, and formats gitleaks or ctxtap
already redact on every one of the rule's own examples (`duplicate_of`) are left out there.
Each kept rule becomes a `gitleaks.Rule`: the regex is de-verbosed (`(?x)`), translated and
adapted exactly as gitleaks' are, and its placeholder kind names its source
(`kingfisher-github-2`). Most of the catalogue is context rules (a vendor's name, then a value):
those are found by the name alone (`context_keywords`, `Rule.anchored`). Nothing is fetched at
run time.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

from ctxtap.redaction.gitleaks import (
    LAST_GROUP,
    Rule,
    RuleSet,
    TranslationError,
    _adapt,
    _max_width,
    translate_re2,
)

RULES_FILE = Path(__file__).with_name("rules") / "kingfisher.json"
KIND_PREFIX = "kingfisher-"
_VERBOSE_RE = re.compile(r"\s*\(\?([a-z]*x[a-z]*)\)")


def kind_of(rule_id: str) -> str:
    """`kingfisher.github.2` -> `kingfisher-github-2` (placeholder kinds: lower case, digits, dashes)."""
    slug = re.sub(r"[^a-z0-9]+", "-", rule_id.lower().removeprefix("kingfisher.")).strip("-")
    return (KIND_PREFIX + slug)[:48]


def deverbose(pattern: str) -> str:
    """A `(?x)` pattern with its layout and comments (`# …` to the line's end, `(?# …)` to its `)`) taken out
    (Hyperscan and `_adapt` read it plain)."""
    m = _VERBOSE_RE.match(pattern)
    if m is None:
        return pattern.strip()
    rest = m.group(1).replace("x", "")
    pattern = (f"(?{rest})" if rest else "") + pattern[m.end() :]
    out: list[str] = []
    i, n, in_class = 0, len(pattern), False
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if in_class:
            in_class = c != "]"
            out.append(c)
        elif c == "[":
            in_class = True
            out.append(c)
            if pattern[i + 1 : i + 2] == "]":  # `[]...]`: a literal `]` first
                out.append("]")
                i += 1
            elif pattern[i + 1 : i + 3] == "^]":
                out.append("^]")
                i += 2
        elif pattern.startswith("(?#", i):  # an inline comment, `(?# header )`: to its `)`
            close = pattern.find(")", i)
            i = n if close < 0 else close + 1
            continue
        elif c == "#":
            while i < n and pattern[i] != "\n":
                i += 1
            continue
        elif not c.isspace():
            out.append(c)
        i += 1
    return "".join(out)


def _flags_first(source: str) -> str:
    """`(?i)` and the like at the very start become one leading group (Python wants global flags first)."""
    flags = ""
    while m := re.match(r"\(\?([a-z]+)\)", source):
        flags += m.group(1)
        source = source[m.end() :]
    return (f"(?{''.join(dict.fromkeys(flags))})" if flags else "") + source


def compile_rule(raw: dict) -> Rule:
    """One catalogue entry as a rule (raises `TranslationError` or `re.error` if it cannot be read)."""
    source = _flags_first(deverbose(raw["pattern"]))
    python = translate_re2(source)
    verifier = re.compile(_adapt(python, for_python=True).encode())
    heads = fixed_heads(raw["pattern"])
    names = [] if heads else context_keywords(raw["pattern"])
    if not heads and not names:
        raise TranslationError("a context rule without a vendor's name of four letters or more to find it by")
    return Rule(
        id=kind_of(raw["id"]),
        regex=source,
        trigger=_adapt(source, for_python=False).encode(),
        verifier=verifier,
        # a self-identifying format's fixed heads (`bkua_`, `p8e-`) are its keywords: the fallback engine
        # looks them up instead of running the regex over every body (70 catalogue triggers had no literal);
        # a context rule's vendor names are, and all the engine looks for (see `context_keywords`)
        keywords=tuple(sorted({h.lower().encode() for h in heads or names})),
        entropy=float(raw.get("min_entropy") or 0.0),
        secret_group=LAST_GROUP,
        allowlists=(),
        contextual=False,
        max_width=_max_width(verifier),
        gated=bool(names),
        anchored=bool(names),
    )


CONTEXT_NAME_MIN = 4  # `box`, `aws`, `uid`: three letters are inside too many words to find a rule by


def context_keywords(pattern: str) -> list[str]:
    """The vendor names a context rule's whole match starts with (`adobe` of `\\badobe(?:.|[\\n\\r]){0,32}?
    \\b([a-f0-9]{32})`), lower case, if each has four characters or more; else none.

    Most of the catalogue is such rules. Their bounded any-character runs cost the engine half its speed
    as triggers; found by their names alone (literals, which the engine matches almost for free) and
    matched in Python only where a name ends a hit, they cost little (`GitleaksDetector.find_named`)."""
    try:
        heads = _heads(_parsed(pattern))
    except (re.error, RecursionError):
        return []
    if not heads or min(len(h) for h in heads) < CONTEXT_NAME_MIN:
        return []
    return sorted({h.lower() for h in heads})


def secret_prefix(pattern: str) -> list[str] | None:
    """The fixed heads the rule's secret (its first group, else the match) starts with, if each has
    three characters or more (`aio_`, `p8e-`): a self-identifying format. None for a context rule
    (a vendor's name near a value: `adobe(?:.|[\\n\\r]){0,32}?([a-f0-9]{32})`)."""
    items = _parsed(pattern)
    group = _group(items, 1)
    heads = _heads(group if group is not None else items)
    return heads if heads and min(len(h) for h in heads) >= 3 else None


def _parsed(pattern: str) -> list:
    """The rule's regex as Python's parser reads it, after the translation its verifier gets (flags in the
    middle scoped, named groups spelled Python's way); raises `re.error`, a failed translation too."""
    from re import _parser  # type: ignore[attr-defined]

    try:
        source = translate_re2(_flags_first(deverbose(pattern)))
    except TranslationError as exc:
        raise re.error(str(exc)) from exc
    return list(_parser.parse(source))


def fixed_heads(pattern: str) -> list[str]:
    """`secret_prefix`'s heads, or none when the rule has none or Python cannot read its regex."""
    try:
        return secret_prefix(pattern) or []
    except (re.error, RecursionError):
        return []


def _group(items: list, number: int) -> list | None:
    from re._constants import BRANCH, MAX_REPEAT, MIN_REPEAT, SUBPATTERN  # type: ignore[attr-defined]

    for op, av in items:
        if op is SUBPATTERN:
            found = list(av[3]) if av[0] == number else _group(list(av[3]), number)
        elif op is BRANCH:
            found = next((g for b in av[1] if (g := _group(list(b), number)) is not None), None)
        elif op in (MAX_REPEAT, MIN_REPEAT):
            found = _group(list(av[2]), number)
        else:
            continue
        if found is not None:
            return found
    return None


def _heads(items: list) -> list[str] | None:
    from re._constants import AT, BRANCH, LITERAL, SUBPATTERN  # type: ignore[attr-defined]

    out = [""]
    for op, av in items:
        if op is AT:
            continue
        if op is LITERAL:
            out = [h + chr(av) for h in out]
            continue
        if op is SUBPATTERN:
            sub = _heads(list(av[3]))
            if sub is None:
                break
            out = [h + s for h in out for s in sub]
            continue
        if op is BRANCH:
            alts = [_heads(list(b)) for b in av[1]]
            if all(a is not None for a in alts):
                out = [h + s for h in out for a in alts for s in a]  # type: ignore[union-attr]
        break
    return out


@lru_cache(maxsize=1)
def catalogue(path: Path = RULES_FILE) -> dict:
    return json.loads(path.read_text("utf-8"))


def add_rules(ruleset: RuleSet, path: Path = RULES_FILE) -> RuleSet:
    """Append the catalogue's kept rules to `ruleset` (one that cannot be read goes to `skipped`)."""
    for raw in catalogue(path)["rules"]:
        if raw.get("duplicate_of") or raw.get("skip"):
            continue
        try:
            ruleset.rules.append(compile_rule(raw))
        except (TranslationError, re.error) as exc:
            ruleset.skipped.append((kind_of(raw["id"]), f"regex not translatable to Python: {exc}"))
    return ruleset


def rule_kinds(path: Path = RULES_FILE) -> tuple[str, ...]:
    """Placeholder kinds of the kept rules, compiling nothing."""
    return tuple(kind_of(r["id"]) for r in catalogue(path)["rules"] if not (r.get("duplicate_of") or r.get("skip")))
