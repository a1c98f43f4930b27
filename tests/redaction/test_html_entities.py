"""Code and config shown in a web page (quotes and tags as HTML character references) hide no secret.

An agent that fetches a page sends it on as a tool result: the rules that read a credential's name by
its quotes or tags must see through `&quot;`, `&#39;` and `&lt;`, and only the secret may change.
"""

from __future__ import annotations

import json
import random
import string

from ctxtap.redaction import Redactor
from ctxtap.redaction.html_entities import entity_decode


def _password(rng: random.Random) -> str:
    """A password that reads as one (both cases, digits): no format marks it, only its name does."""
    return rng.choice(string.ascii_uppercase) + "".join(rng.choice(string.ascii_letters + string.digits)
                                                        for _ in range(11)) + rng.choice(string.digits)


def _page(secrets: list[str]) -> str:
    a, b, c, d = secrets
    return (
        "<html><body><h1>Deploying the app</h1>\n"
        "<p>Put this in &quot;config.json&quot; and press &quot;Save&quot;:</p>\n"
        f"<pre>{{&quot;service&quot;: &quot;api&quot;, &quot;db_password&quot;: &quot;{a}&quot;}}</pre>\n"
        f"<pre><code>export DB_PASSWORD=&quot;{b}&quot;\nnpm start</code></pre>\n"
        f"<pre>&lt;settings&gt;&lt;password&gt;{c}&lt;/password&gt;&lt;/settings&gt;</pre>\n"
        f"<td>smtp_password: &#39;{d}&#39;</td>\n"
        "<code>if (a &lt; b &amp;&amp; c &gt; d) { return &quot;ok&quot;; }</code>\n"
        "</body></html>\n"
    )


def test_secrets_in_a_fetched_page_never_reach_disk() -> None:
    rng = random.Random(3)
    secrets = [_password(rng) for _ in range(4)]
    page = _page(secrets)
    redactor = Redactor(b"k" * 32, "html")
    for body in (page, json.dumps({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_01", "content": f"$ curl -s https://docs.qzv.example\n{page}"}]})):
        out = redactor.redact_text(body)
        assert [s for s in secrets if s in out] == [], out
        assert out.count("[REDACTED:") == 4
        assert redactor.redact_text(out) == out
    # only the secrets changed: the page around them is as it was
    out = redactor.redact_text(page)
    for line_in, line_out in zip(page.splitlines(), out.splitlines(), strict=True):
        if not any(s in line_in for s in secrets):
            assert line_in == line_out


def test_a_page_that_holds_no_secret_stays() -> None:
    page = ("<p>Set the &quot;password&quot; field, then press &quot;Save&quot;.</p>\n"
            "<title>Tom &amp; Jerry&#39;s &quot;Password Manager&quot; review</title>\n"
            "<code>if (a &lt; b &amp;&amp; c &gt; d) { return &quot;ok&quot;; }</code>\n"
            "<pre>&lt;input type=&quot;password&quot; name=&quot;password&quot; required&gt;</pre>\n")
    assert Redactor(b"k" * 32, "html").redact_text(page) == page


def test_decoding_maps_every_byte_back() -> None:
    rng = random.Random(5)
    pieces = ["&quot;", "&#39;", "&#x27;", "&lt;", "&gt;", "&amp;", "&nbsp;", "&eacute;", "&bogus;", "&#0;", "a",
              "b", " ", "=", "&", ";", "#"]
    for _ in range(500):
        raw = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 30))).encode()
        decoded, origin = entity_decode(raw)
        assert len(origin) == len(decoded) + 1 and origin[-1] == len(raw)
        for i, byte in enumerate(decoded):
            at = origin[i]
            assert raw[at] == byte or raw[at] == ord("&"), (raw, i)  # itself, or the reference it stands for
            assert origin[i] < origin[i + 1]
