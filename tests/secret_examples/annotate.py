"""Each example's class and carrier decided by its own scanner's rule, not by our redactor.

    python -m tests.secret_examples.annotate      # re-annotate the vendored examples.jsonl in place

An example is *self-identifying* when its scanner's own rule finds it with no
credential name beside it: the gitleaks rule (regex, keywords, entropy) or the
detect-secrets plugin fires on `x: TOKEN` alone. The *token* is what carries
the format: the secret itself (`ghp_…`), or the smallest match of the rule
that holds it when the format is the surrounding shape (a URL with a password,
`curl -u user:pass`) — a shape without a credential name in it. Everything else is *name-marked*: gitleaks' keyword
rules and a bare 40-hex value need the name or keyword next to them. Placements
of a self-identifying example carry its token; a leak is still any fragment of
its secret on disk.

detect-secrets reports the first regex group as "the secret", which for some
plugins is only the prefix (`ghp`, `SG`, `glpat`); the secret is then the
rule's first group of 8+ characters, else its whole match.
"""

from __future__ import annotations

import json
import math
import re
import sys
import tomllib
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
EXAMPLES = HERE / "examples.jsonl"
GITLEAKS_TOML = ROOT / "redaction" / "rules" / "gitleaks.toml"
PROBE = "x: {}"
# A token whose shape around the secret holds one of these is marked by a name, not by its format.
CREDENTIAL_WORD = re.compile(r"(?i)key|pass|pwd|token|secret|auth|credential")
# detect-secrets plugins whose verdict rests on a keyword or a name, and the unmarked high-entropy ones
DS_NAME_PLUGINS = {"keyword", "cloudant", "ibm_cloud_iam", "ibm_cos_hmac", "softlayer", "azure_storage_key"}
DS_UNMARKED = {"high_entropy_strings"}
# detect-secrets test modules named apart from the plugin module they test
TEST_TO_PLUGIN = {"aws_key": "aws", "mailchimp_key": "mailchimp", "stripe_key": "stripe"}


def _regex(go: str):
    import regex  # reads the RE2-style patterns Python's `re` does not (a tiktoken dependency)

    return regex.compile(go.replace(r"\z", r"\Z"))


def _entropy(s: str) -> float:
    counts = Counter(s)
    return -sum(c / len(s) * math.log2(c / len(s)) for c in counts.values()) if s else 0.0


def _group(m, group: int) -> str:
    if group:
        return m.group(group) or ""
    return next((g for g in m.groups() if g and len(g) >= 8), m.group(0))


class GitleaksRule:
    """The parts of a gitleaks rule that decide a finding: keywords, regex, secret group, entropy."""

    def __init__(self, rule: dict) -> None:
        self.id = rule["id"]
        self.keywords = [k.lower() for k in rule.get("keywords", [])]
        self.regex = _regex(rule["regex"]) if rule.get("regex") else None
        self.group = rule.get("secretGroup", 0)
        self.entropy = rule.get("entropy", 0.0)
        self.generic = self.id.startswith("generic") or r"[\w.-]{0,50}?" in rule.get("regex", "")

    def match(self, text: str):
        """The first match gitleaks would report in `text` (or None)."""
        if self.regex is None or (self.keywords and not any(k in text.lower() for k in self.keywords)):
            return None
        for m in self.regex.finditer(text):
            if _entropy(_group(m, self.group)) >= self.entropy:
                return m
        return None


def gitleaks_rules(path: Path = GITLEAKS_TOML) -> dict[str, GitleaksRule]:
    return {r["id"]: GitleaksRule(r) for r in tomllib.loads(path.read_text())["rules"]}


# `name: value`, `name = value`, `AccountKey=value`: a rule whose match (or whose reported secret) is a
# whole assignment; the secret is the value. A separator without a space counts only after a credential
# word (`user:pass` is a value, not a pair).
_PAIR = re.compile(r"(?s)(?P<name>[A-Za-z_.][\w.-]*)(?:(?P<sp>[ \t]*(?::|=)[ \t]+)|(?P<tight>:=|=|:))"
                   r"(?:[|>][-+]?\s+)?[ \t]*(?P<q>[\"']?)(?P<value>.+?)(?P=q)")


_CREDENTIAL_NAME = re.compile(r"(?i)(?:key|pass(?:word)?|pwd|token|secret|auth|credentials?)$")


def value_of_pair(secret: str) -> str:
    """The value of a `name: value` pair reported as a secret; any other secret unchanged."""
    m = _PAIR.fullmatch(secret)
    if m is None or (m.group("tight") and not _CREDENTIAL_NAME.search(m.group("name"))):
        return secret
    return m.group("value")


def _one_line(s: str) -> bool:
    return "\n" not in s and "\r" not in s


def _format_carrier(token: str, secret: str) -> bool:
    """Can `token` carry `secret` as a self-identifying format: one line, holding it, no credential name?"""
    return bool(token) and secret in token and _one_line(token) and not CREDENTIAL_WORD.search(token.replace(secret, ""))


def annotate_gitleaks(row: dict, rules: dict[str, GitleaksRule]) -> None:
    rule = rules.get(row["family"])
    if row.get("secret"):
        row["secret"] = value_of_pair(row["secret"])
    secret = row.get("secret")
    row["token"] = secret
    if rule is None and row["label"] == "tp" and secret:
        # a rule gitleaks' shipped config leaves out: self-identifying only if another rule knows the format
        hit = any(r.match(PROBE.format(secret)) for r in rules.values() if not r.generic)
        row["cls"] = "self-identifying" if hit else "name-marked"
        return
    if rule is None or rule.generic or row["label"] != "tp" or not secret:
        row["cls"] = "name-marked" if rule is not None and rule.generic else row["cls"]
        return
    if rule.match(PROBE.format(secret)):
        row["cls"] = "self-identifying"
        return
    m = rule.match(row["text"])
    for token in (m.group(0).strip(" \t'\"`=:,;"), m.group(0).strip()) if m else ():
        if _format_carrier(token, secret) and rule.match(PROBE.format(token)):
            row["cls"], row["token"] = "self-identifying", token
            return
    row["cls"] = "name-marked"


def _ds_plugins() -> dict[str, type]:
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    return {cls.__module__.rsplit(".", 1)[-1]: cls for cls in get_mapping_from_secret_type_to_class().values()}


def _ds_flags(plugin, text: str) -> bool:
    from detect_secrets.settings import default_settings

    with default_settings():
        return bool(list(plugin.analyze_line(filename="config.txt", line=text, line_number=1)))


def _outside_value(match, current: str) -> bool:
    """Is the reported secret a part of the rule's shape (its name, the URL) rather than of its value?"""
    group = next((i for i, g in enumerate(match.groups(), 1) if g and len(g) >= 8), 0)
    v_start, v_end = match.span(group)
    at = match.group(0).find(current)
    if at < 0 or not current:
        return False
    start = match.start() + at
    return start + len(current) <= v_start or start >= v_end


def annotate_detect_secrets(row: dict, plugins: dict[str, type]) -> None:
    plugin_name = row["file"].rsplit("/", 1)[-1].removesuffix("_test.py")
    cls = plugins.get(plugin_name) or plugins.get(TEST_TO_PLUGIN.get(plugin_name, ""))
    row["token"] = row.get("secret")
    if plugin_name in DS_UNMARKED:
        row["cls"] = "unmarked"
        return
    if cls is None or row["label"] != "tp":
        row["cls"] = "name-marked" if plugin_name in DS_NAME_PLUGINS else row["cls"]
        return
    match = next((m for rx in getattr(cls, "denylist", ()) for m in [rx.search(row["text"])] if m), None)
    tokens = [row["text"].strip()]  # the example as written first: `://user:pw@` alone is no natural carrier
    if match is not None:
        tokens += [match.group(0).strip(" \t'\"`=:,;"), match.group(0).strip()]
        value = value_of_pair(_group(match, 0).strip(" \t'\"`=:,;"))
        # the reported secret may be a prefix (`ghp`), the name (`softlayer`) or the whole line
        # (`IBMCLOUDIAMAPIKEY=...`): the rule's value group is the secret then
        current = row["secret"] = value_of_pair(row.get("secret") or "")
        if len(current) < 8 or current not in tokens[0] or (current not in value and value in current) \
                or value not in row["text"].replace(current, "\0") and current not in value \
                or _outside_value(match, current):
            row["secret"] = value
        row["token"] = row["secret"]
    if plugin_name in DS_NAME_PLUGINS:
        row["cls"] = "name-marked"
        return
    plugin = cls()
    if not row.get("secret"):
        return
    if _ds_flags(plugin, PROBE.format(row["secret"])):
        row["cls"], row["token"] = "self-identifying", row["secret"]
        return
    for token in tokens:
        if _format_carrier(token, row["secret"]) and _ds_flags(plugin, PROBE.format(token)):
            row["cls"], row["token"] = "self-identifying", token
            return
    row["cls"] = "name-marked"


def annotate(rows: list[dict]) -> list[dict]:
    """Set `cls` and `token` (and fix detect-secrets' prefix-only secrets) on every example row."""
    rules = gitleaks_rules()
    plugins = _ds_plugins()
    for row in rows:
        if row["source"] == "gitleaks":
            annotate_gitleaks(row, rules)
        else:
            annotate_detect_secrets(row, plugins)
    return rows


def main() -> int:
    lines = EXAMPLES.read_text(encoding="utf-8").splitlines()
    rows = annotate([json.loads(line) for line in lines[1:]])
    EXAMPLES.write_text("\n".join([lines[0], *(json.dumps(r, ensure_ascii=False) for r in rows)]) + "\n",
                        encoding="utf-8")
    print(Counter((r["source"], r["label"], r["cls"]) for r in rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
