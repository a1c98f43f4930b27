"""gitleaks' checks on the places the rule set's triggers matched, as ctxtap spans.

For each rule with trigger hits: the verifier regex in a window before each
hit (anchored at the rule's keywords: gitleaks' semi-generic regexes begin
with a lazy `[\\w.-]{0,50}?` that makes a free search cost fifty steps per
byte), then the secret group (or the first non-empty group), the entropy
floor, keywords in or just before the match (the local form of gitleaks'
"keyword somewhere in the file"), the global and the rule's allowlists
(regexes on secret/match/line and stopwords; paths cannot apply to a body),
and for `name = value` rules ctxtap's own name and value checks. Verdicts are
remembered per surrounding text, since bodies repeat lines.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ctxtap.redaction.detector import Detector, TriggerHits, samples
from ctxtap.redaction.engine import Trigger
from ctxtap.redaction.entropy import shannon_entropy
from ctxtap.redaction.false_positives import NOT_SECRET_NAMES, UUID_RE, is_non_secret_value, looks_random
from ctxtap.redaction.gitleaks import GENERIC_RULE, LAST_GROUP, Allowlist, Rule, RuleSet
from ctxtap.redaction.names import shown_offset, without_line_numbers
from ctxtap.redaction.spans import PRIORITY_GENERIC, PRIORITY_GITLEAKS, Span

_TAIL = 64  # text after a trigger's end the verifier may look at
_LINES_REACH = 1024  # how far a multi-line rule's match may reach from its keyword (gitleaks': 200 + 100 + a value)
_ESCAPED_SPACE = re.compile(rb"\\+([nrt])")
_WHITESPACE = {b"n": b"\n", b"r": b"\r", b"t": b"\t"}


def _whitespace(m: re.Match[bytes]) -> bytes:
    return _WHITESPACE[m.group(1)]


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
    found = _findings(rule, data, rule.verifier.finditer(data, lo, hi), hi, global_allowlist)
    if found or not rule.gated or (listing := without_line_numbers(data[lo:hi])) is None:
        return found
    # a rule spanning lines over a file a tool showed numbered: read the file, place the findings in the listing
    text, where = listing
    return [Finding(f.rule, lo + shown_offset(where, f.start), lo + shown_offset(where, f.end - 1) + 1,
                    lo + shown_offset(where, f.match_start))
            for f in verify(rule, text, 0, len(text), global_allowlist) if f.end > f.start]


# Literals a keyword-gated rule's match always contains (its regex is slow to search in Python).
_NEEDS_ALL = {"kubernetes-secret-yaml": (b"kind:", b"data:")}


_ANCHOR_REACH = 320  # how far before a trigger's end its keyword may be (name, operator, a long value)


def _anchored(
    rule: Rule, data: bytes, lo: int, hi: int, ends: list[int] | None
) -> Iterator[re.Match[bytes]]:
    """Matches of the rule's regex anchored where a keyword starts (close enough before an end)."""
    if ends:
        reach = min(rule.max_width, _ANCHOR_REACH) + 2  # the trigger's end includes the delimiter
        regions = _windows([e for e in ends if lo <= e <= hi], reach, 0, len(data))
    else:
        regions = [(lo, hi)]
    starts: set[int] = set()
    for r_lo, r_hi in regions:
        lowered = data[max(lo, r_lo) : r_hi].lower()
        base = max(lo, r_lo)
        for kw in rule.keywords:
            pos = lowered.find(kw)
            while pos >= 0:
                starts.add(base + pos)
                pos = lowered.find(kw, pos + 1)
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
    if rule.anchored and is_non_secret_value(secret.strip(b"\"'`"), True, b""):
        return False  # a vendor's name near a value that is clearly none (`CLIENT_SECRET = "CLIENT_SECRET"`)
    match = m.group(0)
    if global_allowlist is not None and global_allowlist.allows(secret, match, line):
        return False
    return not any(a.allows(secret, match, line) for a in rule.allowlists)


MIN_SECRET_GROUP = 8


def _secret_span(rule: Rule, m: re.Match[bytes]) -> tuple[int, int]:
    if m.re.groups == 0:
        return m.span()
    if rule.secret_group == LAST_GROUP and m.re.groups > 1:
        # Kingfisher's rules that capture several things capture the secret last (an account's name,
        # then its key; a machine, a login, then the password); a group inside another is a piece of it
        outer: list[tuple[int, int]] = []
        for g in range(1, m.re.groups + 1):
            s, e = m.span(g)
            if e > s and not (outer and s < outer[-1][1]):
                outer.append((s, e))
        return outer[-1] if outer else m.span()
    if rule.secret_group > 0:
        if rule.secret_group > m.re.groups:
            return (0, 0)
        return m.span(rule.secret_group)
    for g in range(1, m.re.groups + 1):
        s, e = m.span(g)
        if e > s:
            # a short first group is structure (a repeated `([a-z0-9]{4}-){3}`), not the secret:
            # gitleaks would report only that piece, ctxtap redacts the whole match (fail closed)
            return (s, e) if e - s >= MIN_SECRET_GROUP else m.span()
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


# Words every match of a rule spanning lines contains (lower case; the rules ignore case), read off
# the rule's regex: both of its alternatives name `kind:` and `data:`. A window around the keyword
# (`secret`, a common word in code) without them is not worth the rule's backtracking search
# (~0.2 ms per 2 KB window). tests/redaction/test_redaction_rules.py checks them against the regexes.
LINES_NEED: dict[str, tuple[bytes, ...]] = {"kubernetes-secret-yaml": (b"kind:", b"data:")}

_TOKEN_TAIL = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_B64_TAIL = frozenset(_TOKEN_TAIL | frozenset(b"+/="))
_FALLBACK_WINDOW = 1024


class GitleaksDetector:
    """The rule set's triggers for the engine, and the verification of what they found.

    A rule found at a vendor's name (`Rule.anchored`: Kingfisher's context rules) has no trigger of its
    own: every such name is one literal of a single trigger, and a hit's name says which rules to match
    there (hundreds of triggers, or their any-character runs, cost the engine far more)."""

    def __init__(self, ruleset: RuleSet) -> None:
        self.ruleset = ruleset
        self.triggers: list[Trigger] = []
        rules = ruleset.rules
        self._rule_of: list[int] = [i for i, rule in enumerate(rules) if not rule.anchored]  # by trigger
        # Rules that span lines (`kind: Secret` ... `data:`): inside a JSON string their newlines are escapes.
        self._multiline_order = [
            (t, i) for t, i in enumerate(self._rule_of)
            if "(?s" in rules[i].regex or "\\n" in rules[i].regex or "\\r" in rules[i].regex
        ]
        self.multiline = frozenset(i for _, i in self._multiline_order)
        self._lines_need = {i: LINES_NEED[r.id] for i, r in enumerate(rules) if r.id in LINES_NEED}
        for i in self._rule_of:
            rule = rules[i]
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
        self._named: dict[bytes, list[Rule]] = {}  # a vendor's name (lower case) -> the rules it starts
        for rule in rules:
            if rule.anchored:
                for name in rule.keywords:
                    self._named.setdefault(name, []).append(rule)
        # the names' lengths by their last byte: a hit's end says which lengths to look up
        self._lengths_by_last: dict[int, tuple[int, ...]] = {}
        for name in self._named:
            for last in {name[-1], bytes([name[-1]]).upper()[0]}:
                known = self._lengths_by_last.get(last, ())
                self._lengths_by_last[last] = tuple(sorted({*known, len(name)}))
        if self._named:
            names = tuple(sorted(self._named))
            # no JSON string is opened for a name: the rules read an escaped `\n` as two characters
            self.triggers.append(Trigger(b"|".join(re.escape(k) for k in names), literals=names, window=0,
                                         caseless=True, opens=False))

    def lines_at(self, data: bytes, hits: list[tuple[int, list[tuple[int, int]]]]) -> list[int]:
        """Where a rule spanning lines (`kind: Secret` ... `data:`) would match once a JSON string's
        escaped newlines are decoded: its regex is tried on the bytes around the keyword with those
        escapes turned back into whitespace, and only there is the string worth opening (opening every
        string with a keyword in it costs a third of the scan on agent bodies)."""
        out: list[int] = []
        for index, found in hits:
            if index not in self.multiline:
                continue
            verifier = self.ruleset.rules[index].verifier
            need = self._lines_need.get(index, ())
            for start, end in found:
                pos = max(start, end - 1)
                window = data[max(0, pos - _LINES_REACH) : pos + _LINES_REACH]
                if b"\\n" not in window or (need and not all(word in window.lower() for word in need)):
                    continue
                lines = _ESCAPED_SPACE.sub(_whitespace, window)
                if verifier.search(lines) or ((listing := without_line_numbers(lines)) is not None
                                              and verifier.search(listing[0])):
                    out.append(pos)
        return out

    def find_all(self, data: bytes, hits: TriggerHits, out: list[Span]) -> None:
        """`find` with a list of hits per trigger (the detector contract): the rules that matched, in
        order, then the rules found at a vendor's name."""
        plain = len(self._rule_of)
        self.find(data, [(self._rule_of[t], found) for t, found in enumerate(hits[:plain]) if found], out)
        if self._named and hits[plain]:
            self.find_named(data, hits[plain], out)

    def lines_at_all(self, data: bytes, hits: TriggerHits) -> list[int]:
        """`lines_at` with a list of hits per trigger (the detector contract)."""
        return self.lines_at(data, [(index, hits[t]) for t, index in self._multiline_order if hits[t]])

    def find_named(self, data: bytes, found: list[tuple[int, int]], out: list[Span]) -> None:
        """Append a span per finding of a rule at the vendor's name that ends at each hit's end: its regex
        matched there (it starts with the name), then gitleaks' checks and ctxtap's value checks."""
        n = len(data)
        glob = self.ruleset.global_allowlist
        for _, end in found:
            for length in self._lengths_by_last.get(data[end - 1], ()):
                start = end - length
                rules = self._named.get(data[start:end].lower()) if start >= 0 else None
                for rule in rules or ():
                    hi = min(n, start + rule.max_width + 8)
                    m = rule.verifier.match(data, start, hi)
                    if m is None:
                        continue
                    for f in _findings(rule, data, [m], hi, glob):
                        stop = _first_space(data, f.start, f.end)
                        if stop > f.start:
                            out.append(Span(f.start, stop, rule.id, PRIORITY_GENERIC))

    def find(self, data: bytes, hits: list[tuple[int, list[tuple[int, int]]]], out: list[Span]) -> None:
        """Append a span per verified finding; `hits`: (rule index, its trigger's matches) of the
        rules that matched only, by index (most of the ~220 rules match nothing in a body)."""
        n = len(data)
        glob = self.ruleset.global_allowlist
        rules = self.ruleset.rules
        for index, found in hits:
            rule = rules[index]
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
                    if rule.secret_group == LAST_GROUP:
                        end = _first_space(data, f.start, end)  # `password\s+([^\s]+)` over a closing quote
                    if end > f.start:
                        out.append(Span(f.start, end, rule.id, priority))


_SPACE_RE = re.compile(rb"[\s\"'`]|\\[nrt\"]")


def _first_space(data: bytes, start: int, end: int) -> int:
    """Where a context rule's secret ends: at its first whitespace or quote, raw or JSON-escaped. Kingfisher's
    value classes are loose (`[^;]{1,100}` runs on into the sentence after an Azure key, `[^\\s]+` over a
    JSON string's closing quote); no key has a space, and a quote ends the string that holds it."""
    m = _SPACE_RE.search(data, start, end)
    return m.start() if m is not None else end


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


_NAME_RE = re.compile(rb"[\w.\-]{1,160}")
_NAME_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")


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
    if is_non_secret_value(value.strip(b"\"'`"), True, b""):  # some rules' secret group holds the quotes
        return False
    if rule.id == GENERIC_RULE:
        return looks_random(value) and not UUID_RE.fullmatch(value)
    return True


def rules_detector(ruleset: RuleSet) -> Detector:
    """The vendored rule catalogue (gitleaks' rules, Kingfisher's added) as one detector of the registry.

    Made per rule set (the scanner's; tests build scanners of other sets). Its triggers are numbered
    after every other detector's (the catalogue grows with each refresh, ctxtap's own numbers stay),
    take their escape-tolerant form themselves (a hit is only a place to verify the rule's regex),
    and its multi-line rules tell the JSON-string step which strings to open (`lines_at`).
    """
    rules = GitleaksDetector(ruleset)
    return Detector(
        "rule-catalogue",
        tuple(rules.triggers),
        rules.find_all,
        examples=RULE_EXAMPLES,
        near_misses=RULE_NEAR_MISSES,
        numbered_last=True,
        tolerant_triggers=True,
        lines_at=rules.lines_at_all,
    )


# Formats and contexts only a vendored rule knows (ctxtap's own detectors have no such format).
RULE_EXAMPLES: tuple[str, ...] = samples(
    "the client uses p8e-<lower:32> to sign in",  # gitleaks' adobe-client-secret
    "deployed with CLOJARS_<lower:60>",  # gitleaks' clojars-api-token
    'BUNDLE_GEMS__CONTRIBSYS__COM: "<hex:8>:<hex:8>"\n',  # gitleaks' sidekiq-secret
    "CloudSmith <hex:40> (staging)",  # Kingfisher's cloudsmith.1: a vendor's name, then its key
    '{"content": "search: Algolia\\n  ab<lower:30>\\n"}',  # algolia.1, in a JSON string
)
RULE_NEAR_MISSES: tuple[str, ...] = (
    '{"password": "unreserved"}',  # a word, with its quotes in the rule's secret group
    "api_key = os.environ['API_KEY']",
    '<add key="ClearTextPassword" value="${NUGET_PASSWORD}" />',
    "see the cloudsmith docs for the CLOUDSMITH_API_KEY_FROM_THE_VAULT setting",  # a name, no key
    "mycloudsmith 7f3a9c2e1b8d4f60a5e27f3a9c2e1b8d4f60a5e2",  # the name inside another word
)
