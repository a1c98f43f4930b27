"""Credential literals in code: one compared with a credential's variable (`if ("hunter2" == password)`),
and the password of a user and password pair handed to an auth call (`HTTPBasicAuth("alice", "pw")`).

Code that checks a hard-coded password writes the literal on either side of
the comparison. `password == "x"` is an assignment-like form (see
`redaction.assignments`); this module covers the literal written first, as
in Yoda conditions and in tests: the name after the operator says the
literal is a secret.

The pair is a class, not a list of libraries: a call or keyword whose name ends in `auth` or
`credential(s)` given two string literals (`auth=("alice", "pw")`, `BasicAuth(...)`,
`SetBasicAuth(...)`, `NetworkCredential(...)`, `UsernamePasswordCredentials(...)`) holds a user
and a password, in that order.
"""

from __future__ import annotations

import re

from ctxtap.redaction.detector import Detector, TriggerHits, samples
from ctxtap.redaction.engine import Trigger
from ctxtap.redaction.false_positives import is_non_secret_literal
from ctxtap.redaction.names import strong_name_kind
from ctxtap.redaction.spans import PRIORITY_ASSIGNMENT, Span

# A closing quote (the literal's), a comparison, the first character of a name.
TRIGGERS: tuple[Trigger, ...] = (
    Trigger(rb"[\"'`][ \t]{0,4}[!=]==?[ \t]{0,4}[A-Za-z_$]", literals=(b"==", b"!="), window=12),
    # an auth call or keyword given a literal: `HTTPBasicAuth("alice", ...`, `auth=('alice', ...`
    Trigger(rb"(?:auth|credentials?)[ \t]*(?:=[ \t]*)?[(\[][ \t]*\\*[\"'`]", literals=(b"auth", b"credential"),
            window=40, caseless=True),
)

_NAME_RE = re.compile(rb"[A-Za-z_$][A-Za-z0-9_$]*(?:\.[A-Za-z_$][A-Za-z0-9_$]*)*")
# The literal before the operator, quotes possibly escaped (code inside a JSON string), anchored at its end.
_LITERAL_RE = re.compile(rb"(?P<esc>\\*)(?P<q>[\"'`])(?P<v>[^\s\"'`\\]{4,256})(?P=esc)(?P=q)[ \t]{0,4}[!=]==?[ \t]{0,4}\Z")
_REACH = 300
# After the first literal's opening quote: the user, its closing quote, a comma, the password literal, the end.
_PAIR_RE = re.compile(rb"(?P<user>[^\s\"'`\\]{1,64})\\*[\"'`][ \t]*,[ \t]*(?P<esc>\\*)(?P<q>[\"'`])"
                      rb"(?P<v>[^\s\"'`\\]{4,256})(?P=esc)(?P=q)[ \t]*[,)\]]")


def find_comparison_spans(data: bytes, hits: TriggerHits, out: list[Span]) -> None:
    """Append spans of literals compared with a strong name and of auth calls' passwords; `hits[i]` are where
    `TRIGGERS[i]` matched."""
    for _, end in hits[1]:
        m = _PAIR_RE.match(data, end)
        if m is not None and not is_non_secret_literal(m.group("v"), b"pass"):
            out.append(Span(m.start("v"), m.end("v"), "password", PRIORITY_ASSIGNMENT))
    for _, end in hits[0]:
        name_start = end - 1
        name = _NAME_RE.match(data, name_start)
        if name is None or (name.end() < len(data) and data[name.end()] in b"(["):
            continue  # `"x" == get_password()`: a call, not the variable
        named = strong_name_kind(name.group().rsplit(b".", 1)[-1])
        if named is None:
            continue
        lo = max(0, name_start - _REACH)
        m = _LITERAL_RE.search(data[lo:name_start])
        if m is None or is_non_secret_literal(m.group("v"), named[1]):
            continue
        out.append(Span(lo + m.start("v"), lo + m.end("v"), named[0], PRIORITY_ASSIGNMENT))


DETECTOR = Detector(
    "comparisons",
    TRIGGERS,
    find_comparison_spans,
    examples=samples(
        'if ("<mixed:14>" == password) {',
        'if ("<mixed:14>" !== my_password_sec) {',
        'HTTPBasicAuth("alice", "<mixed:14>")',
        "requests.get(url, auth=('alice', '<mixed:14>'))",
    ),
    near_misses=(
        "if (name == password) {",
        'if ("expected" == get_password()) {',
        'requests.get(u, auth=("alice", "password"))',
        "req.SetBasicAuth(user, pass)",
        'auth("login", "Please sign in")',
    ),
)
