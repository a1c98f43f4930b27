"""Tokens filed under a host's name: Composer's `auth.json` and `composer config`, by the format.

Composer keeps a registry's credentials in a map from host to token under a key that says what kind of
credential it is (`"github-oauth": {"github.com": "<token>"}`, `gitlab-oauth`, `gitlab-token`,
`bearer`), in `auth.json`, in `COMPOSER_AUTH`, and on the command line as
`composer config [-g] github-oauth.github.com <token>`. The token's own name is a host, which no
credential-name rule reads, and a classic GitHub OAuth token is 40 hex, which no format rule takes
alone. Here the map's name says what its values are: every string filed under a host in it (a name with a
dot, no spaces) is a token. `http-basic` maps hosts to `username`/`password` objects, which the name
rules read already.
"""

from __future__ import annotations

import re

from ctxtap.redaction.detector import Detector, TriggerHits, samples
from ctxtap.redaction.engine import Trigger
from ctxtap.redaction.spans import PRIORITY_ASSIGNMENT, Span

KIND = "generic-secret"
_MAP_NAME = rb"(?:[a-z]+-(?:oauth|token)|bearer)"
TRIGGERS: tuple[Trigger, ...] = (
    # the map in JSON (escaped in a tool result: the JSON-string opener decodes it first)
    Trigger(rb'"' + _MAP_NAME + rb'"[ \t]*:[ \t\r\n]*\{', literals=(b"-oauth", b"-token", b"bearer"), window=80),
    # `composer config github-oauth.github.com <token>`
    Trigger(_MAP_NAME + rb"\.[a-z0-9\-]+\.[a-z0-9.\-]+[ \t]+", literals=(b"-oauth.", b"-token.", b"bearer."),
            window=300, opens=False),
)
_HOST = rb"[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)+(?::[0-9]{1,5})?"
_TOKEN = rb"(?P<v>[A-Za-z0-9_.~+/=\-]{8,512})"  # not a reference (`${GITHUB_TOKEN}`) or a template (`<token>`)
_MEMBER_RE = re.compile(rb'"' + _HOST + rb'"[ \t\r\n]*:[ \t\r\n]*"' + _TOKEN + rb'"')
_ARGUMENT_RE = re.compile(rb"(?P<q>[\"']?)" + _TOKEN + rb"(?P=q)(?=\s|$|[;&|)])")
_CONFIG_BEFORE_RE = re.compile(rb"config(?:[ \t]+--?[a-z\-]+)*[ \t]+$")  # `composer config -g`, `--global`
_REACH = 4096  # how far a map's members may run


def find_host_token_spans(data: bytes, hits: TriggerHits, out: list[Span]) -> None:
    """Append each token of a map from hosts to tokens (`hits[0]`: the map's name to its `{`) and the token
    given to `composer config <map>.<host>` (`hits[1]`: ends before the token)."""
    for _, end in hits[0]:
        close = data.find(b"}", end, end + _REACH)
        nested = data.find(b"{", end, close if close >= 0 else end + _REACH)
        stop = close if nested < 0 else nested  # a host's object (`gitlab-token` with a username) is the name rules'
        if stop < 0:
            continue
        for m in _MEMBER_RE.finditer(data, end, stop):
            out.append(Span(m.start("v"), m.end("v"), KIND, PRIORITY_ASSIGNMENT))
    for _, end in hits[1]:
        name_at = max(data.rfind(b" ", max(0, end - 300), end - 1), data.rfind(b"\t", max(0, end - 300), end - 1))
        before = data[max(0, name_at - 80) : name_at + 1]
        if not _CONFIG_BEFORE_RE.search(before):
            continue  # the map's name and a host, but not given to `config`
        m = _ARGUMENT_RE.match(data, end)
        if m is not None:
            out.append(Span(m.start("v"), m.end("v"), KIND, PRIORITY_ASSIGNMENT))


DETECTOR = Detector(
    "host-tokens",
    TRIGGERS,
    find_host_token_spans,
    examples=samples(
        '{\n  "github-oauth": {\n    "github.com": "<hex:40>"\n  }\n}',  # auth.json
        '{"bearer": {"repo.example.org": "<alnum:32>"}, "gitlab-oauth": {"gitlab.com": "<hex:64>"}}',
        "composer config -g github-oauth.github.com <hex:40>",
        "composer config --global gitlab-token.gitlab.example.com <alnum:20>",
    ),
    near_misses=(
        '{"github-oauth": {}, "gitlab-domains": ["gitlab.example.com"]}',
        '{"github-oauth": {"github.com": "${GITHUB_TOKEN}"}}',  # a reference
        "composer config --list | grep github-oauth.github.com and more",
        '"require": {"monolog/monolog": "^3.0", "vendor/package-name": "dev-main"}',
    ),
)
