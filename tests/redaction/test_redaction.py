"""Credential redaction: every format in every placement, stable placeholders, no false alarms."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import random
import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxtap.redaction import KINDS, PLACEHOLDER_RE, RULESET_VERSION, Redactor
from tests.secret_corpus import (
    BODY_PLACEMENTS,
    Secret,
    generate_secrets,
    negative_corpus,
    plant_everywhere,
    plant_header,
    plant_many,
    plant_sse_split,
    plant_url_query,
    plant_url_userinfo,
    secret_kinds,
    sse_joined_text,
)

KEY = b"\x01" * 32
SECRETS = generate_secrets(seed=0)
PLANTED = plant_everywhere(SECRETS)
TOKEN_SECRETS = [s for s in SECRETS if s.token]


@pytest.fixture
def redactor() -> Redactor:
    return Redactor(KEY, "capture-1")


def _placeholders(data: bytes | str) -> list[str]:
    raw = data.encode() if isinstance(data, str) else data
    return [m.group().decode() for m in PLACEHOLDER_RE.finditer(raw)]


def _kinds(data: bytes | str) -> set[str]:
    return {p.split(":")[1] for p in _placeholders(data)}


# --- the corpus itself --------------------------------------------------------------------


def test_corpus_covers_many_formats_deterministically() -> None:
    assert len(secret_kinds()) >= 25
    assert generate_secrets(3) == generate_secrets(3)
    assert generate_secrets(3) != generate_secrets(4)
    assert set(secret_kinds()) <= set(KINDS)
    assert len(BODY_PLACEMENTS) >= 10


def test_ruleset_version_is_stamped() -> None:
    assert re.fullmatch(r"creds-\d{4}\.\d{1,2}\.\d+", RULESET_VERSION)


# --- every format in every placement --------------------------------------------------------


@pytest.mark.parametrize("secret", SECRETS, ids=[f"{i}-{s.kind}" for i, s in enumerate(SECRETS)])
def test_every_body_placement_is_redacted_with_its_kind(secret: Secret, redactor: Redactor) -> None:
    failures = []
    for planted in (p for p in PLANTED if p.secret is secret):
        out = redactor.redact_bytes(planted.data)
        leaks = planted.leaks(out)
        if leaks or planted.expected_kind not in _kinds(out):
            failures.append((planted.placement, planted.expected_kind, sorted(_kinds(out)), leaks[:1]))
    assert not failures


@pytest.mark.parametrize("style", ["bearer", "x-api-key", "cookie", "basic"])
def test_header_placements(style: str, redactor: Redactor) -> None:
    failures = []
    for secret in TOKEN_SECRETS:
        headers, expected = plant_header(secret, style)
        out = redactor.redact_headers(headers)
        text = "\n".join(f"{k}: {v}" for k, v in out)
        if secret.value in text or expected not in _kinds(text):
            failures.append((secret.kind, expected, text))
        assert [k for k, _ in out] == [k for k, _ in headers]
        assert out[0] == headers[0] and out[2:] == headers[2:]  # host, content-type, request id untouched
    assert not failures


@pytest.mark.parametrize("param", ["api_key", "key", "access_token", "password"])
def test_url_query_placements(param: str, redactor: Redactor) -> None:
    failures = []
    for secret in TOKEN_SECRETS:
        url, expected = plant_url_query(secret, param)
        out = redactor.redact_url(url)
        if secret.value in out or expected not in _kinds(out) or not out.endswith("&page=2#top"):
            failures.append((secret.kind, expected, out))
    assert not failures


def test_url_userinfo_placements(redactor: Redactor) -> None:
    failures = []
    for secret in TOKEN_SECRETS + [s for s in SECRETS if s.kind == "url-password"]:
        url, expected = plant_url_userinfo(secret)
        out = redactor.redact_url(url)
        if (
            secret.value in out
            or expected not in _kinds(out)
            or not out.startswith("https://deploy:%5BREDACTED:")
        ):
            failures.append((secret.kind, expected, out))
    assert not failures


def test_many_secrets_per_body_recall() -> None:
    redactor = Redactor(KEY, "recall")
    secrets = generate_secrets(seed=11, copies=3)
    found = total = 0
    for body, group in plant_many(secrets, seed=11):
        out = redactor.redact_bytes(body)
        for secret in group:
            total += 1
            found += all(f.encode() not in out for f in secret.fragments())
    assert found / total >= 0.99, f"recall {found}/{total}"


def test_secret_streamed_across_sse_deltas(redactor: Redactor) -> None:
    secret = next(s for s in SECRETS if s.kind == "anthropic-key")
    planted = plant_sse_split(secret, "anthropic")
    assert secret.value.encode() not in planted.data  # no single event holds it
    out = redactor.redact_bytes(planted.data)
    joined = sse_joined_text(out)
    assert secret.value.encode() not in joined and b"[REDACTED:anthropic-key:" in joined
    assert joined.startswith(b"Found it in the config: ") and joined.endswith(b" -- rotate it.")
    for line in out.decode().splitlines():
        if line.startswith("data: "):
            json.loads(line[6:])  # every event is still valid JSON
    assert redactor.redact_bytes(out) == out


# --- the placeholder --------------------------------------------------------------------------


def test_placeholder_hash_is_keyed_hmac_of_capture(redactor: Redactor) -> None:
    token = "ghp_" + "a1B2" * 9
    out = redactor.redact_text(f"token {token} end")
    capture_key = hmac.new(KEY, b"capture-1", hashlib.sha256).digest()
    digest = hmac.new(capture_key, token.encode(), hashlib.sha256).hexdigest()[:6]
    assert out == f"token [REDACTED:github-token:{digest}] end"


def test_equal_secrets_get_equal_placeholders_across_placements(redactor: Redactor) -> None:
    token = next(s for s in SECRETS if s.kind == "openai-key").value
    header = redactor.redact_headers([("Authorization", f"Bearer {token}")])[0][1].split(" ", 1)[1]
    body = _placeholders(redactor.redact_bytes(json.dumps({"content": f"key={token}"}).encode()))
    nested = _placeholders(redactor.redact_bytes(json.dumps({"c": json.dumps({"api_key": token})}).encode()))
    url = _placeholders(redactor.redact_url(f"https://x.example/?api_key={token}"))
    assert {header, *body, *nested, *url} == {header}


def test_equal_private_keys_match_raw_and_escaped(redactor: Redactor) -> None:
    pem = next(s for s in SECRETS if s.kind == "private-key").value
    raw = _placeholders(redactor.redact_text(f"key:\n{pem}\n"))
    escaped = _placeholders(redactor.redact_bytes(json.dumps({"content": pem}).encode()))
    twice = _placeholders(redactor.redact_bytes(json.dumps({"c": json.dumps({"content": pem})}).encode()))
    assert len(raw) == 1 and raw == escaped == twice


def test_different_secrets_get_different_placeholders(redactor: Redactor) -> None:
    tokens = [s.value for s in SECRETS if s.kind == "github-token"]
    out = redactor.redact_text(" ".join(tokens))
    assert len(set(_placeholders(out))) == len(tokens)


def test_capture_id_and_key_scope_the_hash() -> None:
    text = "AKIAQWERTYUIOPASDFGH"
    a = Redactor(KEY, "capture-1").redact_text(text)
    assert Redactor(KEY, "capture-1").redact_text(text) == a
    assert Redactor(KEY, "capture-2").redact_text(text) != a
    assert Redactor(b"\x02" * 32, "capture-1").redact_text(text) != a
    assert _kinds(a) == {"aws-access-key"}


def test_counts_by_kind(redactor: Redactor) -> None:
    gh = "ghp_" + "Z9y8" * 9
    redactor.redact_text(f"{gh} {gh} AKIAQWERTYUIOPASDFGH")
    redactor.redact_headers([("x-api-key", "client-abcdefghijklmnop")])
    assert redactor.counts["github-token"] == 2
    assert redactor.counts["aws-access-key"] == 1
    assert redactor.counts["api-key"] == 1


# --- headers ----------------------------------------------------------------------------------


def test_header_names_decide(redactor: Redactor) -> None:
    headers = [
        ("statsig-api-key", "client-MkRuleRQBd6qakfnDYqJVR9JuXcY57Ljly3vi5JVUIO"),
        ("x-goog-api-key", "plain-looking-value"),
        ("api-key", "abc"),
        ("Proxy-Authorization", "Basic ZGVwbG95OnMzY3JldA=="),
        ("x-amz-security-token", "FwoGZXIvYXdzEBY"),
        ("ocp-apim-subscription-key", "0123456789abcdef0123456789abcdef"),
        ("x-hub-signature-256", "sha256=abcdef0123"),
        ("Set-Cookie", "sid=abc123; Path=/; HttpOnly; Secure"),
        ("Cookie", "theme=dark; session=s3cr3t-session"),
        ("authorization", "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLWJ5dGVz"),
    ]
    out = dict(redactor.redact_headers(headers))
    assert out["statsig-api-key"].startswith("[REDACTED:api-key:")
    assert out["x-goog-api-key"].startswith("[REDACTED:api-key:")
    assert out["api-key"].startswith("[REDACTED:api-key:")
    assert out["Proxy-Authorization"].startswith("Basic [REDACTED:basic-auth:")
    assert out["x-amz-security-token"].startswith("[REDACTED:aws-session-token:")
    assert out["ocp-apim-subscription-key"].startswith("[REDACTED:api-key:")
    assert out["x-hub-signature-256"].startswith("[REDACTED:signature:")
    assert re.fullmatch(r"sid=\[REDACTED:cookie:[0-9a-f]{6}\]; Path=/; HttpOnly; Secure", out["Set-Cookie"])
    assert re.fullmatch(r"theme=\[REDACTED:cookie:\w+\]; session=\[REDACTED:cookie:\w+\]", out["Cookie"])
    assert out["authorization"].startswith("Bearer [REDACTED:jwt:")


def test_ordinary_headers_are_kept(redactor: Redactor) -> None:
    headers = [
        ("X-Claude-Code-Session-Id", "0030e94e-4049-46f0-9e37-62b791f0b167"),
        ("session-id", "01a228c2-9f93-77e1-b4ec-bc11abcdef12"),
        ("thread-id", "01a228c2-b15b-7ed0-ad59-0dbbabcdef12"),
        ("x-request-id", "req_011CUmGzRjbRzQy2hqS7PwkL"),
        ("x-client-request-id", "4f1c2a9e-8a57-4bb0-9a9c-2f1d9b1f0c11"),
        ("anthropic-version", "2023-06-01"),
        ("User-Agent", "claude-cli/2.1.332 (external, cli)"),
        (":authority", "api.anthropic.com"),
        ("x-ratelimit-remaining-tokens", "39000"),
        ("anthropic-ratelimit-input-tokens-limit", "400000"),
        ("Sec-WebSocket-Key", "oBDVpDTX+c/PaWyHzB8mQg=="),
        ("idempotency-key", "stainless-node-retry-8f1c9e0a-2b3c"),
        ("www-authenticate", 'Bearer realm="api", error="invalid_token"'),
        (
            "x-codex-turn-metadata",
            '{"installation_id":"0570f025-992a-4cf5-9af9-67e29610f1c1","session_id":"01a2"}',
        ),
        ("Content-Type", "application/json"),
    ]
    assert redactor.redact_headers(headers) == headers


def test_other_headers_are_scanned(redactor: Redactor) -> None:
    token = "ghp_" + "Q1w2" * 9
    out = redactor.redact_headers([("x-debug", f"using {token}")])
    assert out[0][1].startswith("using [REDACTED:github-token:")


# --- URLs ---------------------------------------------------------------------------------------


def test_url_edits_keep_everything_else(redactor: Redactor) -> None:
    url = "https://bob:hunter2-Pa55@example.com:8443/v1/x?beta=true&sig=abcDEF123%2Bghi%3D%3D456789&q=a%20b#frag"
    out = redactor.redact_url(url)
    assert re.fullmatch(
        r"https://bob:%5BREDACTED:url-password:\w{6}%5D@example\.com:8443/v1/x\?beta=true"
        r"&sig=\[REDACTED:azure-sas-signature:\w{6}\]&q=a%20b#frag",
        out,
    )
    assert redactor.redact_url("https://api.anthropic.com/v1/messages?beta=true") == (
        "https://api.anthropic.com/v1/messages?beta=true"
    )
    assert redactor.redact_url("/v1/responses") == "/v1/responses"


def test_redacted_urls_still_parse(redactor: Redactor) -> None:
    """Brackets in the authority mean IPv6 to `urlsplit`, so placeholders there are percent-encoded."""
    for url in (
        "https://deploy:s3cr3t-Pa55word@git.example.com/org/repo.git",
        "https://ghp_" + "R2d2" * 9 + "@github.com/org/repo.git",
        "http://[::1]:8080/v1/chat/completions?api_key=abcdef1234567890XYZ",
    ):
        out = redactor.redact_url(url)
        parts = urlsplit(out)
        assert parts.hostname in ("git.example.com", "github.com", "::1")
        assert "REDACTED" in out and redactor.redact_url(out) == out
    location = redactor.redact_headers([("Location", "https://u:pw-12345678@h.example/next")])[0][1]
    assert (
        location.startswith("https://u:%5BREDACTED:url-password:")
        and urlsplit(location).hostname == "h.example"
    )


def test_url_fragment_tokens_and_path_tokens(redactor: Redactor) -> None:
    out = redactor.redact_url(
        "https://app.example/cb#access_token=ya29.a0AfH6SMBx3dK9_longtokenvalue1234&token_type=Bearer"
    )
    assert "[REDACTED:google-oauth-token:" in out and out.endswith("&token_type=Bearer")
    gh = "ghp_" + "P4th" * 9
    out = redactor.redact_url(f"https://git.example/{gh}/org/repo.git")
    assert (
        gh not in out
        and out.startswith("https://git.example/[REDACTED:github-token:")
        and out.endswith("/org/repo.git")
    )
    bot = "123456789:AA" + "b" * 33
    out = redactor.redact_url(f"https://api.telegram.org/bot{bot}/sendMessage")
    assert bot not in out and "[REDACTED:telegram-bot-token:" in out


def test_url_user_names_and_placeholder_passwords_are_kept(redactor: Redactor) -> None:
    for url in (
        "ssh://git@github.com/org/repo.git",
        "https://alice@example.com/",
        "postgres://user:<password>@localhost:5432/app",
        "postgres://app:${DB_PASSWORD}@db:5432/app",
        "https://example.com/search?q=token&page=2",
    ):
        assert redactor.redact_url(url) == url


def test_url_passwords_that_are_words_fail_closed(redactor: Redactor) -> None:
    """`password` or `changeme` may be the real password: only templates (`${X}`, `<x>`, `***`) are kept."""
    for word in ("password", "pass", "changeme", "secret"):
        out = redactor.redact_url(f"postgres://user:{word}@localhost:5432/app")
        assert f":{word}@" not in out and "REDACTED:url-password:" in out


# --- what must stay ----------------------------------------------------------------------------


def test_analysis_fields_survive(redactor: Redactor) -> None:
    body = {
        "model": "gpt-5.1-codex",
        "prompt_cache_key": "019a22c2-9f93-77e1-b4ec-bc11abcdef12",
        "max_tokens": 32000,
        "max_output_tokens": 32000,
        "max_completion_tokens": 1024,
        "usage": {"input_tokens": 1520, "cache_read_input_tokens": 14336, "cache_creation_input_tokens": 0},
        "idempotency_key": "4f1c2a9e-8a57-4bb0-9a9c-2f1d9b1f0c11",
        "session_id": "0030e94e-4049-46f0-9e37-62b791f0b167",
        "next_page_token": "CiAKGjBpNDd2Nmp2Zml2cXRpYjRhZmVhZGVkZWFkEAE",
        "key": "session.id",
        "thinking": {
            "type": "thinking",
            "thinking": "…",
            "signature": "EqoBCkgIARABGAIiQL8jZ2XkQk9mJb0u8yVhQ7t1+K2v",
        },
        "tokenizer": {"bos_token": "<s>", "eos_token": "</s>", "pad_token": "[PAD]"},
        "commit": "9fceb02d0ae598e95dc970b74767f19372d61af8",
        "image": base64.b64encode(random.Random(1).randbytes(20_000)).decode(),
    }
    data = json.dumps(body).encode()
    assert redactor.redact_bytes(data) == data


def test_not_secret_values_are_kept(redactor: Redactor) -> None:
    for text in (
        "API_KEY=${OPENAI_API_KEY}",
        "password: <redacted>",
        "DB_PASSWORD=***",
        "token = [REDACTED:github-token:3fa2c1]",
        "SECRET_KEY=",
        "api_key: null",
        "GITHUB_TOKEN=true",
        "MAX_TOKENS=4096",
        "password = getpass.getpass()",
        "token: str = ''",
        "api_key = os.environ['OPENAI_API_KEY']",
        "const cfg = { apiKey: process.env.OPENAI_API_KEY };",
        "OPENAI_API_KEY=your-api-key-here",
        "if password == expected:",
    ):
        assert redactor.redact_text(text) == text, text


def test_git_sha_is_an_aws_secret_only_in_aws_context(redactor: Redactor) -> None:
    sha = "9fceb02d0ae598e95dc970b74767f19372d61af8"
    assert redactor.redact_text(f"commit {sha}\nAuthor: Alice") == f"commit {sha}\nAuthor: Alice"
    assert redactor.redact_text(f"aws_secret_access_key = {sha}") == (
        f"aws_secret_access_key = {_placeholders(redactor.redact_text(f'aws_secret_access_key = {sha}'))[0]}"
    )
    assert _kinds(redactor.redact_text(f"aws_secret_access_key = {sha}")) == {"aws-secret-key"}


def test_escaped_and_double_escaped_json_values(redactor: Redactor) -> None:
    inner = json.dumps({"api_key": "Zq8vX2mL0pR7sT4u", "model": "m"})
    once = json.dumps({"content": inner}).encode()
    twice = json.dumps({"content": json.dumps({"log": inner})}).encode()
    for data in (once, twice):
        out = redactor.redact_bytes(data)
        assert b"Zq8vX2mL0pR7sT4u" not in out and _kinds(out) == {"generic-secret"}
        assert out.count(b"model") == 1


def test_env_file_inside_json_string(redactor: Redactor) -> None:
    content = "APP_ENV=dev\nAWS_SECRET_ACCESS_KEY=FAKEVTxuldNnVLX6nT+zpIPCA1scoD+pFzjNq2sh\nLOG_LEVEL=debug\n"
    out = redactor.redact_bytes(json.dumps({"content": content}).encode())
    assert b"FAKEVTxuldNnVLX6nT" not in out
    assert b"AWS_SECRET_ACCESS_KEY=[REDACTED:aws-secret-key:" in out
    assert b"APP_ENV=dev" in out and b"LOG_LEVEL=debug" in out


@pytest.mark.parametrize("line, password", [
    ("DB_PASSWORD=Xk9&mP2<qR7>vL4!", "Xk9&mP2<qR7>vL4!"),
    ("export MYSQL_PWD=Qz&8<rT4>wK2x", "Qz&8<rT4>wK2x"),
    ("SECRET_KEY=a8&Kq2!zP9;w", "a8&Kq2!zP9;w"),
    ("export DB_PASS=Xk9&&mP2", "Xk9&&mP2"),
    ("API_KEY=4nXYKv]mHDeom5esrt30Ea7]4QEfMg6", "4nXYKv]mHDeom5esrt30Ea7]4QEfMg6"),  # a closer inside the value
    ("export DB_PASSWORD=ab]cd[ef9Xy", "ab]cd[ef9Xy"),
    ("SECRET_KEY=Qz8)mP2}vL4x9", "Qz8)mP2}vL4x9"),
])
def test_an_env_value_with_shell_symbols_is_redacted_whole(redactor: Redactor, line: str, password: str) -> None:
    """Generated passwords hold `&`, `<`, `>`, `;`: in an env file the value runs to the space, so
    the cut at the first symbol left the whole password on disk (its head too short to count)."""
    content = f"APP_ENV=dev\n{line}\nLOG_LEVEL=debug\n"
    for data in (content.encode(), json.dumps({"content": content}).encode()):
        out = redactor.redact_bytes(data)
        shown = json.loads(out)["content"] if data.startswith(b"{") else out.decode()
        assert password not in shown and password[4:] not in shown and "[REDACTED:" in shown
        assert "APP_ENV=dev" in shown and "LOG_LEVEL=debug" in shown


def test_a_symbol_then_a_space_still_ends_an_env_value(redactor: Redactor) -> None:
    out = redactor.redact_bytes(b"DB_PASSWORD=hunter2isLong; make test\nTOKEN_X=abcdefghij12345678 && make\n")
    assert out.count(b"[REDACTED:") == 2 and b"]; make test\n" in out and b"] && make\n" in out


@pytest.mark.parametrize("code", [
    "connect(api_key=Xk9mP2qR7vL4zz)\n", "client = f(g(API_TOKEN=Xk9mP2qR7vL4zz))\n",
    "[API_KEY=Xk9mP2qR7vL4zz](https://docs.example.com/keys)\n", "{password=Xk9mP2qR7vL4zz}, next\n",
])
def test_an_expression_closer_after_a_value_still_ends_it(redactor: Redactor, code: str) -> None:
    """Only a closer with a letter or digit right after it is the value's: an expression's own closer is kept."""
    out = redactor.redact_text(code)
    assert "Xk9mP2qR7vL4zz" not in out and out.split("]", 1)[1][:1] in (")", "]", "}"), out


@pytest.mark.parametrize("text, password", [
    ("the new password: Qz&8mP2<vL4!x is set", "Qz&8mP2<vL4!x"),
    ("ok, db_password: Xk9&mP2<qR7>vL4! for staging", "Xk9&mP2<qR7>vL4!"),
    ("I set PASSWORD=Qz;8mP2&&vL4x9 yesterday", "Qz;8mP2&&vL4x9"),
    ("(admin password: a8&Kq2!zP9;w)", "a8&Kq2!zP9;w"),
])
def test_a_password_with_symbols_in_prose_is_redacted_whole(redactor: Redactor, text: str, password: str) -> None:
    """In a chat message or a log line (not at a line start) a bare value was cut at its first
    `&`, `<`, `>` or `;`: too short a head to count, so the whole password stayed on disk."""
    for data in (text.encode(), json.dumps({"content": text}).encode()):
        out = redactor.redact_bytes(data)
        shown = json.loads(out)["content"] if data.startswith(b"{") else out.decode()
        assert password not in shown and password[3:] not in shown and "[REDACTED:" in shown


@pytest.mark.parametrize("text, kept", [
    ("https://x/login?password=Qz8mP2vL4x9&user=bob", "&user=bob"),  # the next query parameter
    ("see ?password=Qz8mP2vL4x9&amp;next=1", "&amp;next=1"),
    ("Server=db;Password=Qz8mP2vL4x9;User Id=sa", ";User Id=sa"),  # the next field
    ("<td>password: Qz8mP2vL4x9</td><td>x", "</td><td>x"),  # a tag after the value
    ("the password: Qz8mP2vL4x9; then run make", "; then run make"),
])
def test_what_follows_a_value_with_symbols_is_kept(redactor: Redactor, text: str, kept: str) -> None:
    out = redactor.redact_text(text)
    assert "Qz8mP2vL4x9" not in out and out.endswith(kept), out


@pytest.mark.parametrize("url, password", [
    ("postgres://app:Xk9<mP2>qR7@db.internal:5432/app", "Xk9<mP2>qR7"),
    ("mysql://root:p(ss)[w0]{rd}9@127.0.0.1/shop", "p(ss)[w0]{rd}9"),
    ("amqp://bot:Zq8>vL4<Wn2@rabbit/", "Zq8>vL4<Wn2"),
])
def test_a_url_password_with_brackets_is_redacted(redactor: Redactor, url: str, password: str) -> None:
    """Generated passwords hold `<>()[]{}`: the URL rule stopped at them and found no `@`, so the
    whole password stayed (in a tool result, a .env, a JSON string)."""
    for data in (url.encode(), f"DATABASE_URL={url}\n".encode(), json.dumps({"content": url}).encode()):
        out = redactor.redact_bytes(data).decode()
        assert password not in out and password[3:] not in out and "[REDACTED:" in out, out


@pytest.mark.parametrize("text", [
    "postgres://<user>:<password>@host:5432/db",
    "postgres://${DB_USER}:${DB_PASS}@db/app",
    "redis://:{password}@cache:6379",
    "see https://example.com:443 (or mail ops@example.com)",
])
def test_url_templates_are_not_redacted(redactor: Redactor, text: str) -> None:
    assert redactor.redact_text(text) == text


def test_binary_without_secrets_round_trips(redactor: Redactor) -> None:
    blob = random.Random(7).randbytes(200_000)
    assert redactor.redact_bytes(blob) == blob
    mutable = bytearray(b"key ghp_" + b"x1Y2" * 9 + b" end")
    before = bytes(mutable)
    out = redactor.redact_bytes(mutable)
    assert bytes(mutable) == before and b"ghp_" not in out


# --- false positives -----------------------------------------------------------------------------


def test_false_positive_rate_on_negative_corpus(redactor: Redactor) -> None:
    docs = negative_corpus(seed=0, stdlib_files=200)
    flagged = [name for name, data in docs if redactor.redact_bytes(data) != data]
    rate = len(flagged) / len(docs)
    print(f"false positives: {len(flagged)}/{len(docs)} files ({rate:.2%}): {flagged}")
    assert len(docs) >= 200
    assert rate <= 0.01, flagged


# --- idempotence and robustness -----------------------------------------------------------------


def test_redacting_twice_changes_nothing(redactor: Redactor) -> None:
    for planted in PLANTED:
        once = redactor.redact_bytes(planted.data)
        assert redactor.redact_bytes(once) == once, planted.placement


ATOMS = sorted(
    {s.surface for s in SECRETS if len(s.surface) < 400}
    | {s.in_context for s in SECRETS if len(s.in_context) < 400}
    | {"\\n", '\\"', '"', "'", " ", "=", ":", "\n", "%3D", "\\u0022", ".", "~", "/", "+", "@", "?", "&"}
    | {"api_key", "PASSWORD", "token", "://", "Bearer ", "[REDACTED:", "]", "-----BEGIN RSA PRIVATE KEY-----"}
    | {
        "-----END RSA PRIVATE KEY-----",
        "eyJ",
        "sk-",
        "AKIA",
        "sig=",
        "Q~",
        "AccountKey=",
        "abcdef0123456789xyz",
        'data: {"type":"x","delta":"',
        '"}\n\n',
        "event: e\n",
    }
)
secretish_text = st.lists(st.one_of(st.sampled_from(ATOMS), st.text(max_size=6)), max_size=14).map("".join)
# REDACTION_EXAMPLES=5000 for a longer hunt.
_settings = settings(
    max_examples=int(os.environ.get("REDACTION_EXAMPLES", "300")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@_settings
@given(st.binary(max_size=3000))
def test_any_bytes(data: bytes) -> None:
    r = Redactor(KEY, "h")
    once = r.redact_bytes(data)
    assert isinstance(once, bytes) and r.redact_bytes(once) == once


@_settings
@given(st.text(max_size=2000))
def test_any_text(text: str) -> None:
    r = Redactor(KEY, "h")
    once = r.redact_text(text)
    assert isinstance(once, str) and r.redact_text(once) == once


@pytest.mark.parametrize("text", [
    "PRIVATE 000000000000AAAA://0TOKEN=000=",  # a run after a secret's word that is no value, cut by a placeholder
    "acme SECRET 9fQ2x7Lmn4Pq8Rs2://x/TOKEN=9fQ2x7Lmn4Pq8Rs2Tv6W",
    "aws_secret_access_key Xy7!abcdefgh(TOKEN=000=)",
])
def test_a_value_cut_by_a_placeholder_is_judged_as_before(text: str) -> None:
    """Found by Hypothesis: a bare value after a secret's word that fails its test whole must not pass it as a
    shorter piece once the rest of its run is a placeholder (`{m,n}+`), or redacting twice changes the text."""
    r = Redactor(KEY, "h")
    once = r.redact_text(text)
    assert r.redact_text(once) == once
    assert r.redact_headers([("x-note", text)]) == r.redact_headers(r.redact_headers([("x-note", text)]))


@_settings
@given(secretish_text)
def test_secret_laden_text_is_idempotent(text: str) -> None:
    r = Redactor(KEY, "h")
    once = r.redact_text(text)
    assert r.redact_text(once) == once
    once_b = r.redact_bytes(text.encode("utf-8", "surrogatepass"))
    assert r.redact_bytes(once_b) == once_b


@_settings
@given(
    st.lists(
        st.tuples(
            st.one_of(
                st.text(max_size=30),
                st.sampled_from(
                    ["Authorization", "Cookie", "Set-Cookie", "x-api-key", "statsig-api-key", "x-request-id"]
                ),
            ),
            st.one_of(st.text(max_size=200), secretish_text),
        ),
        max_size=8,
    )
)
def test_any_headers(headers: list[tuple[str, str]]) -> None:
    r = Redactor(KEY, "h")
    once = r.redact_headers(headers)
    assert [k for k, _ in once] == [k for k, _ in headers]
    assert r.redact_headers(once) == once


@_settings
@given(
    st.one_of(
        st.text(max_size=300),
        secretish_text.map(lambda s: "https://" + s),
        st.from_regex(
            r"https?://[a-z:@%0-9.\[\]]{0,30}/[a-z/]{0,10}(\?[a-z_]{1,8}=[A-Za-z0-9%_.~+/=-]{0,40}(&[a-z_]{1,8}=[^&#]{0,20}){0,3})?(#.{0,20})?",
            fullmatch=True,
        ),
    )
)
def test_any_url(url: str) -> None:
    r = Redactor(KEY, "h")
    once = r.redact_url(url)
    assert isinstance(once, str) and r.redact_url(once) == once
    try:
        urlsplit(url)
    except ValueError:
        return
    urlsplit(once)  # a URL that parsed before redaction still parses


def test_never_raises_on_wrong_types() -> None:
    r = Redactor(KEY)
    assert isinstance(r.redact_bytes(None), bytes)  # type: ignore[arg-type]
    assert isinstance(r.redact_text(None), str)  # type: ignore[arg-type]
    assert isinstance(r.redact_url(None), str)  # type: ignore[arg-type]
    assert len(r.redact_headers([("a", None)])) == 1  # type: ignore[list-item]
    assert r.redact_headers(None) == []  # type: ignore[arg-type]
    assert len(r.redact_headers([("only-a-name",), 3])) == 2  # type: ignore[list-item]
    assert r.redact_bytes(b"") == b"" and r.redact_text("") == "" and r.redact_headers([]) == []


# --- an independent scanner agrees ---------------------------------------------------------------


def test_detect_secrets_finds_nothing_after_redaction(redactor: Redactor) -> None:
    # detect-secrets is a runtime dependency (publish's final scan): a missing install must fail here.
    from detect_secrets import settings as ds_settings
    from detect_secrets.core import scan
    plugins = [
        {"name": n}
        for n in (
            "AWSKeyDetector AzureStorageKeyDetector BasicAuthDetector DiscordBotTokenDetector GitHubTokenDetector "
            "GitLabTokenDetector JwtTokenDetector KeywordDetector MailchimpDetector NpmDetector OpenAIDetector "
            "PrivateKeyDetector PypiTokenDetector SendGridDetector SlackDetector SquareOAuthDetector "
            "StripeDetector TelegramBotTokenDetector TwilioKeyDetector"
        ).split()
    ]
    before = after = 0
    leftovers = []
    with ds_settings.transient_settings({"plugins_used": plugins}):
        for planted in PLANTED:
            before += sum(1 for line in planted.data.decode().splitlines() for _ in scan.scan_line(line))
            out = redactor.redact_bytes(planted.data).decode()
            for line in out.splitlines():
                for found in scan.scan_line(line):
                    after += 1
                    leftovers.append((planted.placement, found.type, line[:160]))
    assert before > 300
    assert after == 0, leftovers[:5]


# --- real client traffic (shared recordings, when present) ---------------------------------------


def _shared_real_clients() -> Path | None:
    candidates = [
        os.environ.get("CTXTAP_SHARED", ""),
        Path(__file__).resolve().parents[3] / "shared",
        "/work/shared",
    ]
    for candidate in candidates:
        if candidate and (Path(candidate) / "real-clients").is_dir():
            return Path(candidate) / "real-clients"
    return None


def test_real_client_traffic_loses_its_dummy_keys_and_nothing_else() -> None:
    base = _shared_real_clients()
    if base is None:
        pytest.skip("shared real-client recordings not present")
    from mitmproxy import http, io

    fake = re.compile(rb"[A-Za-z0-9_+/\-]*FAKE[A-Za-z0-9_+/\-]*|S3cr3t-Pa55")
    r = Redactor(KEY, "real")
    checked = changed_without_secret = 0
    for path in sorted(base.glob("*/*/flows.mitm")):
        with path.open("rb") as fh:
            for flow in io.FlowReader(fh).stream():
                if not isinstance(flow, http.HTTPFlow):
                    continue
                parts: list[bytes] = [flow.request.get_content(strict=False) or b""]
                if flow.response is not None:
                    parts.append(flow.response.get_content(strict=False) or b"")
                if flow.websocket is not None:
                    parts += [m.content for m in flow.websocket.messages]
                for part in parts:
                    out = r.redact_bytes(part)
                    checked += 1
                    assert not fake.search(out), (path, fake.search(out))
                    if out != part and not fake.search(part):
                        changed_without_secret += 1
                headers = list(flow.request.headers.items(multi=True))
                out_headers = r.redact_headers(headers)
                assert not any(fake.search(v.encode()) for _, v in out_headers)
                assert r.redact_url(flow.request.pretty_url) == flow.request.pretty_url
    assert checked > 50
    assert changed_without_secret == 0


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(["key", "KEY", "Token", "passw", "://", "sk-", "ghp_", "secret", "x", " ", "=", "\n",
                                 "é", "AKIA", "auth"]), max_size=60).map("".join))
def test_the_fallback_finds_every_literal_as_the_per_literal_sweep_does(text: str) -> None:
    """The pure-Python engine's one-pass literal search (Aho-Corasick) yields exactly the occurrences,
    overlapping ones included, that one `bytes.find` sweep per literal yields, and so the same hits."""
    from ctxtap.redaction.scanner import Scanner, get_scanner

    engine = Scanner(get_scanner().ruleset, backend="python").engine
    data = text.encode()
    one_pass = sorted((pos, lit) for pos, lit, _ in engine._occurrences(data))

    def sweep(body: bytes):
        for (lit, caseless), ids in engine._by_literal.items():
            hay = body.lower() if caseless else body
            pos = hay.find(lit)
            while pos >= 0:
                yield pos, lit, ids
                pos = hay.find(lit, pos + 1)

    assert one_pass == sorted((pos, lit) for pos, lit, _ in sweep(data))
    hits = engine.scan(data).by_trigger
    engine._occurrences = sweep  # the same scan, its literals found by the sweeps
    assert engine.scan(data).by_trigger == hits


_NAME_PIECES = ["api", "API", "_key", "Key", "token", "secret", "auth", "passwd", "password", "access", "creds",
                "twitter", "sumo", "x", "ab", "-", ".", "_", " ", "=", ":", ":=", '"', "'", "\\\"", "\\n", "\n", ",",
                "é", "abcdEFGH12345678", "9f8e7d6c5b4a39281706", "Zz0-._"]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_NAME_PIECES), max_size=80).map("".join), st.integers(0, 60), st.integers(0, 60),
       st.randoms(use_true_random=False))
def test_the_fallbacks_prefixed_search_is_finditer(text: str, cut_lo: int, cut_hi: int, rnd) -> None:
    """gitleaks' semi-generic regexes (a lazy `[\\w.-]{0,50}?` name prefix, then the rest) are searched
    by the fallback from where their rest matches: the same matches, groups and all, as `finditer`
    in any window, for every such rule."""
    from ctxtap.redaction.engine import _prefixed_finditer
    from ctxtap.redaction.scanner import Scanner, get_scanner

    engine = Scanner(get_scanner().ruleset, backend="python").engine
    assert len(engine._rests) > 50  # the shape is recognised (96 rules of gitleaks' today)
    data = text.encode()
    lo, hi = min(cut_lo, len(data)), max(min(len(data) - cut_hi, len(data)), 0)
    for i in rnd.sample(sorted(engine._rests), 12):
        regex, rest = engine._regexes[i], engine._rests[i]
        expected = [(m.span(), m.groups()) for m in regex.finditer(data, lo, hi)]
        assert [(m.span(), m.groups()) for m in _prefixed_finditer(regex, rest, data, lo, hi)] == expected


def test_the_prefixed_search_finds_the_generic_rules_matches() -> None:
    """The generic rule through the fallback: a name far into a word run, one at the window's start,
    two matches in a row, a prefix longer than fifty word characters."""
    from ctxtap.redaction.engine import _prefixed_finditer
    from ctxtap.redaction.scanner import Scanner, get_scanner

    engine = Scanner(get_scanner().ruleset, backend="python").engine
    generic = next(i for i, r in engine._rests.items() if b"credential|creds|key" in engine._regexes[i].pattern)
    regex, rest = engine._regexes[generic], engine._rests[generic]
    data = (b'x = 1\nmy_service.api_key = "Zk39fjs8dk2LLqp0xYz"\nTOKEN: Qw9eR8tY7uI6oP5aS4dF\n'
            + b"w" * 70 + b'_secret="abcdefghij0123456789"\n')
    expected = [m.span() for m in regex.finditer(data)]
    assert len(expected) == 3
    assert [m.span() for m in _prefixed_finditer(regex, rest, data, 0, len(data))] == expected
    assert [m.span() for m in _prefixed_finditer(regex, rest, data, 13, len(data))] == [
        m.span() for m in regex.finditer(data, 13, len(data))]
