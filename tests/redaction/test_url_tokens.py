"""A random token in a URL's path (a webhook, a reset link) never reaches disk; the URL around it stays.

The tokens are drawn here at random, so no list of hosts or heads could find them: every placement
of the secret matrix (headers, query strings, JSON strings, tool results, SSE and WebSocket deltas
split inside the token, compressed bodies) through the capture writer.
"""

from __future__ import annotations

import random
import string
from pathlib import Path

from ctxtap.redaction import Redactor
from ctxtap.redaction.scanner import find_spans
from tests.secret_examples.matrix import Example, MatrixRun, run_matrix

HOSTS = ("hooks.qzv.example/services/T0QZ1/B0QZ2", "relay.qzv.example/trigger/deploy/with/key",
         "qzv.example/reset-password", "qzv.example:8443/w")


def _urls(seed: int) -> list[tuple[str, str]]:
    """(token, URL): base62 and lower-case base36 tokens of 22 to 44 characters, after a query or not."""
    rng = random.Random(seed)
    out = []
    for i, host in enumerate(HOSTS * 2):
        alphabet = string.ascii_letters + string.digits if i % 2 == 0 else string.ascii_lowercase + string.digits
        n = rng.choice((22, 32, 44)) if i % 2 == 0 else 44
        token = rng.choice(string.ascii_letters) + "".join(rng.choice(alphabet) for _ in range(n - 1))
        out.append((token, f"https://{host}/{token}" + ("?lang=en" if i >= len(HOSTS) else "")))
    return out


def _through_the_writer(tmp_path: Path, kind: str, name: str, texts: list[tuple[str, str, str]]) -> MatrixRun:
    """Each (token, URL, text holding it) in every placement of the secret matrix, through the capture
    writer: the run, after asserting that no token reached disk in any."""
    examples = [
        Example(id=f"{kind}:{i}", source="ctxtap", family="url-token", label="tp", cls="self-identifying",
                text=text, secret=token, name=name, file="tests/redaction/test_url_tokens.py", line=1, token=url)
        for i, (token, url, text) in enumerate(texts)
    ]
    run = run_matrix(tmp_path / "cap", examples, positions=3)
    assert sorted({(run.cases[i].example.secret, run.cases[i].placement) for i in run.leaks}) == []
    return run


def test_every_placement_through_the_writer(tmp_path: Path) -> None:
    run = _through_the_writer(tmp_path, "url-token", "webhook", [(t, u, u) for t, u in _urls(seed=5)])
    assert {"header-neutral", "query-encoded", "tool-json", "json-escaped", "prose", "sse-split2",
            "ws-split"} <= {c.placement for c in run.cases}


def test_only_the_segment_goes_and_twice_changes_nothing() -> None:
    redactor = Redactor(b"k" * 32, "t")
    token, url = _urls(seed=9)[0]
    text = f'{{"content": "see {url}\\nthen retry"}}'
    once = redactor.redact_text(text)
    assert token not in once
    assert once.startswith('{"content": "see https://hooks.qzv.example/services/T0QZ1/B0QZ2/[REDACTED:url-token:')
    assert once.endswith('\\nthen retry"}')
    assert redactor.redact_text(once) == once
    # the request URL itself (the proxy's record of where a call went)
    assert redactor.redact_url(url + "?page=2").startswith("https://hooks.qzv.example/services/T0QZ1/B0QZ2/[REDACTED:")


def test_segments_that_are_no_token_stay() -> None:
    kept = (
        "https://github.com/org/repo/commit/3f786850e387550fdab836ed7e6dc881de23001b",  # hex: a commit
        "https://files.example/packages/3f/78/6850e387550fdab836ed7e6dc881de23001b7f9a1c4e5d2b3a/pkg-1.0.whl",
        "https://docs.example/api/RequestHandlerFactoryBuilder2/",  # a name made of words
        "https://example.com/items/550e8400-e29b-41d4-a716-446655440000/edit",  # a UUID
        "https://example.com/blog/ten-ways-to-configure-your-proxy-in-2024",  # a slug
        "https://cdn.example/assets/app.3f786850e387550fdab836ed.js",  # a file with its hash
        "https://example.com/static/QzvAbstractFactory2024Edition.png",  # a file name
    )
    for url in kept:
        assert find_spans(url.encode()) == [], url


def _userinfo_urls(seed: int) -> list[tuple[str, str]]:
    """(token, URL): a token drawn at random as a URL's userinfo, no password (base62, hex as old GitHub tokens
    and Sentry DSN keys are)."""
    rng = random.Random(seed)
    out = []
    for i, host in enumerate(("github.com/org/repo.git", "o4504.ingest.qzv.example/4505", "git.qzv.example:8443/r")):
        alphabet = string.ascii_letters + string.digits if i != 1 else "0123456789abcdef"
        n = (24, 32, 40)[i]
        token = rng.choice("abcdef") + rng.choice(string.digits) + "".join(rng.choice(alphabet) for _ in range(n - 2))
        out.append((token, f"https://{token}@{host}"))
    return out


def test_a_token_as_the_userinfo_never_reaches_disk(tmp_path: Path) -> None:
    _through_the_writer(tmp_path, "url-userinfo", "clone", [(t, u, f"git clone {u}") for t, u in _userinfo_urls(seed=3)])
    redactor = Redactor(b"k" * 32, "t")
    token, url = _userinfo_urls(seed=4)[0]
    once = redactor.redact_text(f"remote: {url}")
    assert token not in once and once.startswith("remote: https://[REDACTED:") and once.endswith("@github.com/org/repo.git")


def test_a_userinfo_that_is_a_name_stays() -> None:
    for url in ("https://deployuser2024production@git.example.com/org/repo.git",
                "https://AbstractSingletonProxyFactoryBean@host.example/r",
                "https://unpkg.com/@babel/core@7.24.0/lib/index.js",
                "https://jenkinsbuildagent01@ci.example.com/job/x"):
        assert find_spans(url.encode()) == [], url


def _hook_urls(seed: int) -> list[tuple[str, str]]:
    """(token, URL): a hook's URL whose secret has an alphabet no other rule takes in a path (hex, a UUID,
    lower-case base36, base64url with its separators), after a hook's name or under a hook's host."""
    rng = random.Random(seed)

    def drawn(alphabet: str, n: int) -> str:
        return rng.choice("abcdef") + rng.choice("0123456789") + "".join(rng.choice(alphabet) for _ in range(n - 2))

    hexd, base36 = "0123456789abcdef", string.ascii_lowercase + string.digits
    uuid = "-".join(drawn(hexd, n) for n in (8, 4, 4, 4, 12))
    b64url = drawn(string.ascii_letters + string.digits + "-_", 60)
    return [
        (t := drawn(hexd, 32), f"https://acme.qzv.example/webhook/{t}"),
        (uuid, f"https://flows.qzv.example/api/hooks/{uuid}"),
        (t := drawn(base36, 26), f"https://chat.qzv.example/hooks/{t}"),
        (b64url, f"https://qzv.example/api/webhooks/{rng.randrange(10**17, 10**18)}/{b64url}"),
        (t := drawn(base36, 32), f"https://hook.eu1.qzv.example/{t}"),
        (t := drawn(hexd, 40), f"https://api.qzv.example/v1/keys/{t}?expand=owner"),
    ]


def test_a_hooks_secret_segment_never_reaches_disk(tmp_path: Path) -> None:
    """A segment after a hook's name, or under a hook's host, that is hex, a UUID or drawn at random."""
    _through_the_writer(tmp_path, "url-hook", "webhook", [(t, u, f"curl -X POST {u}") for t, u in _hook_urls(seed=11)])
    token, url = _hook_urls(seed=12)[0]
    once = Redactor(b"k" * 32, "t").redact_text(f"post to {url} now")
    assert token not in once and once.startswith("post to https://acme.qzv.example/webhook/[REDACTED:url-token:")


def test_what_a_hooks_url_holds_besides_its_secret_stays() -> None:
    for url in ("https://docs.qzv.example/en/webhooks/using-webhooks/creating-webhooks-for-a-repository",
                "https://api.qzv.example/repos/octo/hello/hooks/123456789012345678",
                "https://qzv.example/webhooks/stripe_payment_intent_succeeded",
                "https://github.com/facebook/react/tree/main/src/hooks/useSyncExternalStore2",
                "https://vault.qzv.example/v1/secrets/data/payments-service-production",
                "https://hooks.qzv.example/static/app.min.js",
                "https://api.qzv.example/v1/tokens/{token_id}/revoke"):
        assert find_spans(url.encode()) == [], url
