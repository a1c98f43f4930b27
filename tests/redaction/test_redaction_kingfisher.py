"""The vendored Kingfisher catalogue: read as vendored, every kept rule compiled, its examples redacted.

Kept rules are the self-identifying formats gitleaks and ctxtap lacked (`redaction/rules/README.md`);
each must find the examples upstream wrote for it, through the whole redactor, and a rule the
other rule sets already covered must name the kind that covers it.
"""

from __future__ import annotations

import re

from ctxtap.redaction import KINDS, Redactor
from ctxtap.redaction.gitleaks import RuleSet
from ctxtap.redaction.gitleaks_match import _secret_span
from ctxtap.redaction.kingfisher import add_rules, catalogue, compile_rule, kind_of
from ctxtap.redaction.version import KINGFISHER_VERSION

_WRITTEN_OUT = re.compile(r"abcdefghij|ABCDEFGHIJ|0123456789")


def _kept() -> list[dict]:
    return [r for r in catalogue()["rules"] if not (r.get("skip") or r.get("duplicate_of"))]


def test_catalogue_is_vendored_with_its_version_and_marks() -> None:
    header = catalogue()["header"]
    assert header["version"] == KINGFISHER_VERSION and header["source"].endswith("mongodb/kingfisher")
    assert header["rules"] == len(catalogue()["rules"]) >= 700
    assert header["kept"] == len(_kept()) >= 50
    for raw in catalogue()["rules"]:
        assert raw["id"].startswith("kingfisher.") and (raw.get("skip") is None or raw["skip"])


def test_every_kept_rule_compiles_and_names_its_source() -> None:
    ruleset = add_rules(RuleSet(version="test"))
    assert ruleset.skipped == []
    assert len(ruleset.rules) == len(_kept())
    for rule in ruleset.rules:
        assert re.fullmatch(r"kingfisher-[a-z0-9-]+", rule.id) and rule.id in KINDS and len(rule.id) <= 48


def test_kept_rules_redact_their_own_examples() -> None:
    redactor = Redactor(b"\x09" * 32, "kingfisher")
    missed = []
    for raw in _kept():
        rule = compile_rule(raw)
        for example in raw["examples"]:
            m = rule.verifier.search(example.encode())
            if m is None:
                missed.append((raw["id"], "its regex", example[:60]))
                continue
            start, end = _secret_span(rule, m)
            secret = example.encode()[start:end].decode()
            if _WRITTEN_OUT.search(secret):
                continue  # `abcdefghij...`: gitleaks' allowlists keep such placeholders, as they should
            if secret in redactor.redact_text(example):
                missed.append((raw["id"], "the redactor", example[:60]))
    assert len(missed) <= 2, missed  # upstream examples a rule's own regex misses (blynk.8)


def test_duplicates_name_the_kind_that_covers_them() -> None:
    dups = [r for r in catalogue()["rules"] if r.get("duplicate_of")]
    assert dups
    assert all(r["duplicate_of"] in KINDS for r in dups)
    assert kind_of("kingfisher.github.2") == "kingfisher-github-2"


def test_the_duplicate_marks_are_todays_judgement() -> None:
    """A rule is left out as a duplicate only if ctxtap without it redacts its examples as written and
    standing alone (`kingfisher_refresh --rejudge` gives the vendored file): gitleaks' airtable rule
    wants the word `airtable` beside a `pat…` token, so Kingfisher's, which does not, is kept."""
    from ctxtap.redaction.gitleaks import load_rules
    from ctxtap.redaction.kingfisher_refresh import _duplicate_of
    from ctxtap.redaction.scanner import Scanner

    scanner = Scanner(load_rules())
    judged = {r["id"]: _duplicate_of(r, scanner) for r in catalogue()["rules"] if not r.get("skip")}
    assert judged == {r["id"]: r.get("duplicate_of") for r in catalogue()["rules"] if not r.get("skip")}
    assert judged["kingfisher.airtable.1"] is None
    token = "patXfsZBLOgxbJqSi.fd6210cfb2e0b2049bd8e7fa0e69f26a3a704412af6fcbd93a097c42507fc893"
    assert token not in Redactor(b"\x09" * 32, "kingfisher").redact_text(f"the token {token} works")
