"""Tokens Composer files under a host's name never reach disk; the hosts, the users and composer.json stay.

The tokens are drawn here at random: classic GitHub OAuth tokens (40 hex), GitLab's and a private
registry's (base62), which no format rule takes alone.
"""

from __future__ import annotations

import json
import random
import string

from ctxtap.redaction import Redactor
from ctxtap.redaction.scanner import find_spans


def _tokens(seed: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice("0123456789abcdef") for _ in range(40)),
            "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(20)),
            "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(32))]


def test_every_writing_of_a_hosts_token_goes() -> None:
    redactor = Redactor(b"k" * 32, "t")
    github, gitlab, bearer = _tokens(seed=1)
    auth = {"github-oauth": {"github.com": github}, "gitlab-token": {"gitlab.example.com": gitlab},
            "bearer": {"repo.example.org": bearer},
            "http-basic": {"repo.example.org": {"username": "deploy", "password": "Zq8xK2mP9vL4"}}}
    for text in (
        json.dumps(auth, indent=4),  # auth.json
        json.dumps({"type": "tool_result", "content": "cat ~/.composer/auth.json\n" + json.dumps(auth, indent=4)}),
        f"COMPOSER_AUTH='{json.dumps(auth)}' composer install --no-dev",
        f"composer config -g github-oauth.github.com {github} && composer config --global "
        f"gitlab-token.gitlab.example.com {gitlab}; composer config bearer.repo.example.org \"{bearer}\"",
    ):
        out = redactor.redact_text(text)
        for token in (github, gitlab, bearer):
            assert token not in out, text[:40]
        for kept in ("github.com", "gitlab.example.com", "repo.example.org"):
            assert kept in out
        assert redactor.redact_text(out) == out


def test_what_is_no_token_stays() -> None:
    for text in (
        json.dumps({"require": {"php": ">=8.1", "monolog/monolog": "^3.0", "vendor/package-name": "dev-main"},
                    "config": {"github-oauth": {}, "gitlab-domains": ["gitlab.example.com"]}}, indent=4),
        json.dumps({"github-oauth": {"github.com": "${GITHUB_TOKEN}"}}),
        "composer config --list | grep github-oauth.github.com and then some words",
    ):
        assert find_spans(text.encode()) == [], text
