"""Secrets whose shape is hidden by how the traffic carries them: JSON escapes, percent-encoding,
one-line bodies, a rule's own end group, a short first group."""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest

from ctxtap.redaction import Redactor
from ctxtap.redaction.json_escapes import json_unescape

KEY = b"\x07" * 32


@pytest.fixture(scope="module")
def redactor() -> Redactor:
    return Redactor(KEY, "escapes")


def _body(*texts: str) -> bytes:
    return json.dumps({"messages": [{"role": "user", "content": t} for t in texts]}).encode()


def test_json_unescape_maps_every_byte_back() -> None:
    raw = rb'a\"b\\c\u00e9\ud83d\ude00\n'
    decoded, origin = json_unescape(raw)
    assert decoded == 'a"b\\cé😀\n'.encode()
    assert len(origin) == len(decoded) + 1 and origin[-1] == len(raw)
    assert raw[origin[1] : origin[2]] == b'\\"'  # the quote came from its escape
    assert raw[origin[decoded.index("é".encode())]:].startswith(b"\\u00e9")


@pytest.mark.parametrize("text,secret", [
    ('curl -u ":d2LkV78zLx!t"', "d2LkV78zLx!t"),
    ('<add key="ClearTextPassword" value="TestSourcePassword" />', "TestSourcePassword"),
    ('curl -H "Authorization: Api-Token 22cb987851bc5659l29114c62e60c79abd0d2c08"', "22cb987851bc5659l29114c62e60c79abd0d2c08"),
])
def test_escaped_quotes_do_not_hide_a_rule(redactor: Redactor, text: str, secret: str) -> None:
    out = redactor.redact_bytes(_body(text))
    assert secret.encode() not in out and b"[REDACTED:" in out
    json.loads(out)  # the placeholder replaced whole escapes: still valid JSON


def test_json_inside_json_is_opened_too(redactor: Redactor) -> None:
    inner = json.dumps({"cfg": '<add key="Password" value="CleartextPassword1" />'})
    out = redactor.redact_bytes(_body(inner))
    assert b"CleartextPassword1" not in out
    assert json.loads(json.loads(out)["messages"][0]["content"])["cfg"].startswith('<add key="Password" value="[REDACTED:')


def test_ordinary_escaped_json_is_left_as_it_was(redactor: Redactor) -> None:
    body = _body(json.dumps({"path": "C:\\Users\\me", "quote": 'he said "hi"', "é": "\u00e9"}))
    assert redactor.redact_bytes(body) == body


def test_two_commands_on_one_line_are_both_found(redactor: Redactor) -> None:
    out = redactor.redact_bytes(_body("curl --cacert ca.crt -u elastic:P@ssw0rd$1 -- first",
                                      "curl --user roger23@gmail.com:pQ9wTxu4Fg -- second"))
    assert b"elastic:" not in out and b"P@ssw0rd" not in out and b"pQ9wTxu4Fg" not in out


def test_a_rules_own_end_group_also_ends_at_a_quote(redactor: Redactor) -> None:
    out = redactor.redact_bytes(_body("http://cafeb4b3:d3adb33f@enterprise.contribsys.com"))
    assert b"cafeb4b3" not in out and b"[REDACTED:sidekiq-sensitive-url:" in out


def test_a_short_first_group_is_structure_and_the_whole_match_is_redacted(redactor: Redactor) -> None:
    hook = ("https://mycompany.webhook.office.com/webhookb2/7c1w1y0c-fopx-t2uw-p0zn-40le672b9d8z@"
            "mjlc6k7r-2w8a-6zcm-6ylu-q2ycq8o1ncxx/IncomingWebhook/h0ftdsb8xpmjt3yba2n0de9m7hkbx5ie/"
            "5lz8zy0e-x9ry-5hrt-mhc4-f2hh3p3rbpin")
    out = redactor.redact_text(f"posted to {hook} today")
    assert out.startswith("posted to [REDACTED:microsoft-teams-webhook:") and out.endswith("] today")
    assert "webhookb2" not in out and "40le672b9d8z" not in out


@pytest.mark.parametrize("value", [
    'curl -u ":d2LkV78zLx!t"',
    "110201543:AAHdqTcvCH1vGWJxfSe1ofSAs0K5PALDsaw",
    '"secret_key" => "sk_ubb4yN3mzqGR2x8#P7r5&@*xC$utE"',
])
def test_percent_encoded_query_values_are_scanned_under_any_name(redactor: Redactor, value: str) -> None:
    url = f"https://example.googleapis.com/v1/m:gen?ref={quote(value, safe='')}&page=2"
    out = redactor.redact_url(url)
    assert "REDACTED:" in out and out.endswith("&page=2")
    assert quote(value, safe="") not in out


def test_plain_query_values_stay(redactor: Redactor) -> None:
    url = "https://example.com/search?ref=plain%20words%20here&q=a+b"
    assert redactor.redact_url(url) == url


@pytest.mark.parametrize("secret,kind", [
    ("AKCxxxxxxxxxx", "artifactory-api-key"),
    ("AP6xxxxxxxxxx", "artifactory-password"),
    ("APBxxxxxxxxxx", "artifactory-password"),
    ("SKxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "twilio-key"),
    ("ACxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "twilio-key"),
    ("343ea45721923ed956e2b38c31db76aa-us30", "mailchimp-key"),
])
def test_detect_secrets_formats_gitleaks_lacks(redactor: Redactor, secret: str, kind: str) -> None:
    out = redactor.redact_text(f"x: {secret}")
    assert secret not in out and f"[REDACTED:{kind}:" in out


@pytest.mark.parametrize("word", ["APDUResponseHandler", "APACHE_LICENSE", "ACCOUNTING", "SKIPPED_TESTS_ARE_REPORTED_HERE_OK"])
def test_words_shaped_like_those_formats_stay(redactor: Redactor, word: str) -> None:
    assert redactor.redact_text(f"see {word} here") == f"see {word} here"


def test_the_c_decoder_gives_the_bytes_of_the_offset_decoder() -> None:
    """`decode_string` (json's C scanner, offsets left out) must equal `json_unescape`'s bytes,
    or spans found in an opened string would be mapped back onto the wrong escaped bytes."""
    import random

    from ctxtap.redaction.json_escapes import decode_string, json_unescape

    rnd = random.Random(7)
    pieces = ["\\\\", '\\"', "\\n", "\\t", "\\/", "a", "é", "\\u00e9", "\\ud83d\\ude00", "\\ud800", "\\udc00x",
              "\\x", "\\u12", "\x01", " ", "key=\\\"v\\\""]
    raws = [b"\xff\\\"abc", b"abc\\", b""]
    for _ in range(2000):
        raws.append("".join(rnd.choice(pieces) for _ in range(rnd.randint(1, 30))).encode("utf-8", "surrogatepass"))
    assert [decode_string(r) for r in raws] == [json_unescape(r)[0] for r in raws]


def _go_json(value: str) -> str:
    """How Go's encoding/json writes a string: `&`, `<` and `>` as `\\u00XX` (HTML-safe)."""
    return json.dumps(value).replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


@pytest.mark.parametrize("text, secret", [
    ("postgres://app:Xk9&mP2qR7vL4@db.internal/app", "Xk9&mP2qR7vL4"),
    ("redis://default:Xk9&mP2qR7@cache.internal:6379", "Xk9&mP2qR7"),
    ("\nDB_PASSWORD=Xk9&mP2<qR7>vL4!\n", "Xk9&mP2<qR7>vL4!"),
])
def test_a_secret_behind_go_style_unicode_escapes_is_found(text, secret):
    """A Go client's JSON writes `&` as `\\u0026`: the raw bytes no longer show the URL or the
    connection string a rule reads, so such strings are opened like those with escaped quotes."""
    body = ('{"messages": [{"role": "user", "content": ' + _go_json(f"connect with {text} please") + "}]}").encode()
    redactor = Redactor(b"k" * 32, "go")
    out = redactor.redact_bytes(body)
    content = json.loads(out)["messages"][0]["content"]
    assert secret not in content and "[REDACTED:" in content and redactor.redact_bytes(out) == out


def _php_json(value: object) -> str:
    """How PHP's json_encode writes by default: every `/` as `\\/` (WordPress and Laravel APIs answer so)."""
    return json.dumps(value).replace("/", "\\/")


@pytest.mark.parametrize("url, secret", [
    ("postgres://app:Xk9mP2qR7vL4@db.internal:5432/app", "Xk9mP2qR7vL4"),
    ("https://hooks.qzv.example/services/T0QZ1/B0QZ2/Q7k2m9x4LpR8sT3vW6yZ1bC5", "Q7k2m9x4LpR8sT3vW6yZ1bC5"),
    ("https://acme.qzv.example/webhook/9f2c4e6a8b0d1f3e5a7c9b1d3f5e7a9c", "9f2c4e6a8b0d1f3e5a7c9b1d3f5e7a9c"),
])
def test_a_url_behind_php_style_escaped_slashes_is_found(url: str, secret: str) -> None:
    """PHP's JSON writes `https:\\/\\/…`: the raw bytes show no `://` for a URL's rules to read, so a
    string holding two escaped slashes is opened like one with escaped quotes; raw, and as a tool's
    output inside an agent's request."""
    answer = _php_json({"data": {"id": 7, "callback": url, "links": {"self": "https://api.qzv.example/v1/items/7"}}})
    redactor = Redactor(b"k" * 32, "php")
    for body in (answer, json.dumps({"messages": [{"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_01", "content": f"$ curl -s api\n{answer}"}]}]})):
        out = redactor.redact_bytes(body.encode()).decode()
        assert secret not in out and "[REDACTED:" in out, body
        assert "items\\/7" in out or "items\\\\/7" in out  # what holds no secret stays as it was
        assert redactor.redact_bytes(out.encode()).decode() == out
