"""Refresh the vendored Kingfisher catalogue from a checkout: `redaction/rules/kingfisher.json`.

    git clone --depth 1 https://github.com/mongodb/kingfisher /tmp/kingfisher
    python -m ctxtap.redaction.kingfisher_refresh /tmp/kingfisher
    python -m ctxtap.redaction.kingfisher_refresh --rejudge    # skips and duplicates again, no checkout

Reads `data/rules/*.yml` (PyYAML, needed here only) and writes, per rule, what redaction needs:
id, name, pattern, entropy floor, confidence, examples. Marked, not dropped, so a refresh shows
what changed: `skip` (an identifier helper, `visible: false`; low confidence; a regex Python or
Hyperscan cannot read; a context rule with no vendor's name of four letters to find it by, or
with one common in ordinary text) and `duplicate_of` (ctxtap's rules without this catalogue, gitleaks' and
its own, already redact every one of the rule's own examples by format: the kind that does).
Copies the licence to `LICENSE-kingfisher`. Then bump `RULESET_VERSION` and run the redaction tests.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from collections import Counter
from functools import lru_cache
from pathlib import Path

from ctxtap.redaction.gitleaks import load_rules
from ctxtap.redaction.gitleaks_match import _secret_span
from ctxtap.redaction.kingfisher import RULES_FILE, compile_rule, context_keywords, secret_prefix
from ctxtap.redaction.scanner import Scanner
from ctxtap.redaction.spans import PRIORITY_CONTEXT

HERE = Path(__file__).resolve().parent / "rules"

# Most of the catalogue: a vendor's name, then within a few dozen characters a value. As triggers their
# bounded any-character runs made the engine pass half as fast again (58.7 against 96.5 MB/s cold,
# bench_redaction.py), so the engine looks for the name alone (`kingfisher.context_keywords`); a name
# of three letters (`box`, `aws`) is inside too many words to be worth it.
CONTEXT_RULE = "context rule without a vendor's name of four letters or more to find it by"


HELPER = "identifier helper (visible: false): not a secret"
COMMON_NAME = "context rule whose vendor name is common in ordinary text (more than once a megabyte)"


@lru_cache(maxsize=1)
def _ordinary_text() -> bytes:
    """The ordinary-content corpus of the tests (code, docs, lockfiles, ids: generated, the same on
    every machine), lower case: where a vendor's name is too common to find a rule by."""
    import random

    from tests.redaction.ordinary_content import CLASSES

    return "\n".join(t for name, make in CLASSES.items() for t in make(random.Random(name))).lower().encode()


def name_is_common(name: str) -> bool:
    """Is `name` (`line`, `client`, `github`) found more than once a megabyte in ordinary text? The engine
    would report it all the time, and a rule found by it would be tried there each time."""
    text = _ordinary_text()
    return text.count(name.encode()) > len(text) / 1e6


def _git(checkout: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(checkout), *args], capture_output=True, text=True).stdout.strip()


def _skip(raw: dict) -> str | None:
    if raw.get("visible") is False:
        return HELPER
    if raw.get("confidence") == "low":
        return "low confidence"
    try:
        if secret_prefix(raw["pattern"]) is None:
            names = context_keywords(raw["pattern"])
            if not names:
                return CONTEXT_RULE
            if common := [n for n in names if name_is_common(n)]:
                return f"{COMMON_NAME}: {common[0]}"
        rule = compile_rule(raw)
    except Exception as exc:  # noqa: BLE001 - any reason a regex cannot be read is a reason to skip it
        return f"regex not readable: {exc}"
    if rule.gated:
        return None  # the engine looks for its vendor names, not its regex
    try:
        import hyperscan

        from ctxtap.redaction.openers import opener

        for form in (rule.trigger, opener(rule.trigger)):  # the scanner compiles its escape-tolerant form
            if form is not None:
                hyperscan.Database().compile(expressions=[form], flags=[0])
    except ImportError:
        pass
    except Exception as exc:  # noqa: BLE001
        return f"Hyperscan cannot compile the trigger: {exc}"
    return None


def _duplicate_of(raw: dict, scanner: Scanner) -> str | None:
    """The kind ctxtap already redacts every example's secret (or its URL's password) as, by format:
    in the example as written, and standing alone where this rule reads it alone (gitleaks' rule for
    the same format may want the vendor's name as a keyword: airtable's `pat…` tokens)."""
    rule = compile_rule(raw)
    kinds: Counter[str] = Counter()
    examples = raw.get("examples") or []
    for example in examples:
        data = example.encode()
        m = rule.verifier.search(data)
        if m is None:
            return None
        start, end = _secret_span(rule, m)
        kind = _covering_kind(data, start, end, scanner)
        if kind is None:
            return None
        alone = b" " + data[start:end] + b" "
        if (m_alone := rule.verifier.search(alone)) is not None and \
                _covering_kind(alone, *_secret_span(rule, m_alone), scanner) is None:
            return None
        kinds[kind] += 1
    return kinds.most_common(1)[0][0] if kinds else None


def _covering_kind(data: bytes, start: int, end: int, scanner: Scanner) -> str | None:
    """The kind of the format span that covers [start, end) of `data` (a URL: its password), if any."""
    covering = [s for s in scanner.find_spans(data) if s.start < end and start < s.end]
    if not covering or covering[0].priority > PRIORITY_CONTEXT:  # formats, URL passwords, PEM blocks
        return None
    return covering[0].kind


def rejudge(path: Path = RULES_FILE) -> dict:
    """Judge the vendored file's skips and duplicates again with today's rules (no checkout needed): after a
    change to `_skip`, to `_duplicate_of`, to the regex reader or to the rules they compare with. Identifier
    helpers stay skipped (the file keeps no `visible` field to judge them by)."""
    catalogue = json.loads(path.read_text("utf-8"))
    scanner = Scanner(load_rules())
    for entry in catalogue["rules"]:
        if entry.get("skip") != HELPER:
            entry.pop("skip", None)
            if reason := _skip(entry):
                entry["skip"] = reason
        if entry.get("skip"):
            entry.pop("duplicate_of", None)
            continue
        entry.pop("duplicate_of", None)
        if dup := _duplicate_of(entry, scanner):
            entry["duplicate_of"] = dup
    _count(catalogue["header"], catalogue["rules"])
    path.write_text(json.dumps(catalogue, indent=1, ensure_ascii=False) + "\n")
    return catalogue["header"]


def _count(header: dict, rules: list[dict]) -> None:
    header.update(rules=len(rules), kept=sum(1 for r in rules if not (r.get("skip") or r.get("duplicate_of"))),
                  duplicates=sum(1 for r in rules if r.get("duplicate_of")))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkout", type=Path, nargs="?", help="a clone of github.com/mongodb/kingfisher")
    parser.add_argument("--rejudge", action="store_true",
                        help="judge the vendored file's skips and duplicates again, without a checkout")
    args = parser.parse_args(argv)
    if args.rejudge:
        print(json.dumps(rejudge(), indent=1))
        return 0
    if args.checkout is None:
        parser.error("give a Kingfisher checkout, or --rejudge")
    import yaml

    scanner = Scanner(load_rules())  # gitleaks' and ctxtap's rules: what is already redacted
    rules = []
    for path in sorted((args.checkout / "data" / "rules").glob("*.yml")):
        for raw in yaml.safe_load(path.read_text("utf-8")).get("rules") or []:
            entry = {k: raw[k] for k in ("id", "name", "pattern", "min_entropy", "confidence", "examples") if k in raw}
            entry["file"] = path.name
            reason = _skip(raw)
            if reason:
                entry["skip"] = reason
            elif dup := _duplicate_of(raw, scanner):
                entry["duplicate_of"] = dup
            rules.append(entry)
    header = {
        "source": "https://github.com/mongodb/kingfisher",
        "version": _git(args.checkout, "describe", "--tags", "--always"),
        "commit": _git(args.checkout, "log", "-1", "--format=%H %cs"),
        "licence": "Apache-2.0 (LICENSE-kingfisher)",
    }
    _count(header, rules)
    RULES_FILE.write_text(json.dumps({"header": header, "rules": rules}, indent=1, ensure_ascii=False) + "\n")
    shutil.copyfile(args.checkout / "LICENSE", HERE / "LICENSE-kingfisher")
    print(json.dumps(header, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
