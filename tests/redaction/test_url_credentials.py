"""URL passwords holding `#`, `@`, `/`, `?`, `:` or a space never reach disk, nor a published attachment.

A URL parser ends the authority at `#`, `/` or `?`: a password cut there was stored in clear, and
publish's pseudonymiser then took its tail before `@db...` for an e-mail address and shipped the rest.
Each password below is written raw and percent-encoded, and carried in every placement of the secret
matrix (headers, query strings, JSON strings, tool results, SSE and WebSocket deltas split inside
the password, compressed bodies) through the capture writer; then in a HAR through `ctxtap import`
and `publish`, and with credential redaction switched off, where publish's final scan must refuse.
"""

from __future__ import annotations

import json
import random
import string
from pathlib import Path
from urllib.parse import quote

import pytest

from ctxtap.redaction.personal.identity import Identity
from ctxtap.redaction.personal.pii import PiiRedactor
from ctxtap.redaction.publish_scan import scan_tree, scan_url_passwords
from ctxtap.redaction.scanner import find_spans
from ctxtap.redaction.url_credentials import find_url_passwords, is_template_password
from ctxtap.reports.publish.publisher import publish
from tests.proxyharness import all_stored_bytes, run_ctxtap
from tests.secret_examples.matrix import Example, run_matrix

SPECIALS = ("#", "@", "/", "?", ":", " ")


def _password(rng: random.Random, special: str) -> str:
    body = "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(14))
    return body[:5] + special + body[5:]


def _cases(seed: int = 7) -> list[tuple[str, str]]:
    """(password as written in the URL, URL) for each special character, raw and percent-encoded."""
    rng = random.Random(seed)
    out = []
    for special in SPECIALS:
        for encoded in (False, True):
            pw = _password(rng, special)
            written = quote(pw, safe="") if encoded else pw
            port = ":5432" if special == " " or rng.random() < 0.5 else ""
            out.append((written, f"postgres://app_user:{written}@db.internal{port}/app"))
    return out


@pytest.mark.parametrize(("password", "url"), _cases())
def test_the_whole_password_is_found_raw_and_in_json(password: str, url: str) -> None:
    for text in (f"DATABASE_URL={url}\n", json.dumps({"content": f"$ env\nDATABASE_URL={url}\nok"}),
                 json.dumps({"r": json.dumps({"dsn": url})})):
        data = text.encode()
        found = [data[s.start : s.end] for s in find_spans(data) if s.kind == "url-password"]
        # JSON escapes nothing in these passwords but `\\"`; the span is the password as written
        assert [f.decode() for f in found] == [json.dumps(password)[1:-1]], text


@pytest.mark.parametrize("text", [
    "https://unpkg.com/@scope/pkg@1.2.3",
    "https://unpkg.com:443/@scope/pkg@1.2.3",
    "git@github.com:org/repo.git",
    "npm:@scope/name@^2",
    "write to alice.smith@example.com today",
    "alice@devbox:~/src$ make test",
    "see https://example.com:443 (or mail ops@example.com)",
    "http://host:8080/path?email=a@b.example",
    "https://user@example.com/path",
    "postgres://app:${DB_PASSWORD}@db:5432/app",
    "postgres://<user>:<password>@host:5432/db",
    "redis://:{password}@cache:6379",
    "ftp://x://u@h",
])
def test_not_credentials(text: str) -> None:
    data = text.encode()
    assert find_url_passwords(data) == []
    assert [s for s in find_spans(data) if s.kind == "url-password"] == []


def test_templates_are_shapes_not_first_characters() -> None:
    for template in (b"${DB_PASS}", b"$DB_PASS", b"<password>", b"{{ pw }}", b"****", b"your-password",
                     b"%5BREDACTED:url-password:3fa2c1%5D"):
        assert is_template_password(template), template
    for real in (b"$uperS3cret!", b"<9fK2>x", b"{x}Q7z@1", b"[7Gq]", b"$ecret"):
        assert not is_template_password(real), real


def test_pseudonymiser_never_makes_an_email_of_a_password() -> None:
    pii = PiiRedactor(numbered=True)
    out = pii.redact_text("DATABASE_URL=postgres://app:Vk7#q2xLt4@db.internal:5432/app and bob@corp.example")
    assert "Vk7#q2xLt4@" in out  # left whole for the credential pass and the final scan
    assert "bob@corp.example" not in out


def test_final_scan_sees_a_password_whatever_the_host_became() -> None:
    for text in (b"postgres://<user-1>:Vk7#q2xLt4@<host-2>:5432/app",
                 b'{"c": "postgres://app:Vk7/q2xLt4@db.internal/app\\nnext"}',
                 b'"{\\"u\\": \\"redis://:a@b?c@cache:6379\\"}"'):
        assert scan_url_passwords(text, "f.json"), text
    assert scan_url_passwords(b"postgres://app:[REDACTED:url-password:3fa2c1]@db/app", "f") == []


def test_every_placement_through_the_writer(tmp_path: Path) -> None:
    """The secret matrix's placements, split at every position of each password."""
    examples = [
        Example(id=f"url-pw:{i}", source="ctxtap", family="url-password", label="tp", cls="self-identifying",
                text=url, secret=pw, name="database", file="tests/redaction/test_url_credentials.py", line=1, token=url)
        for i, (pw, url) in enumerate(_cases(seed=11))
    ]
    run = run_matrix(tmp_path / "cap", examples, positions=None)
    leaked = sorted({(run.cases[i].example.secret, run.cases[i].placement) for i in run.leaks})
    assert leaked == []
    placements = {c.placement for c in run.cases}
    assert {"header-neutral", "query-neutral", "tool-json", "json-escaped", "prose", "sse-split2", "sse-split3",
            "ws-split"} <= placements


def _har(cases: list[tuple[str, str]], path: Path) -> Path:
    """One Anthropic exchange per URL: in a neutral header, the request URL's query, a tool result's
    JSON string, and streamed back in text and tool-argument deltas cut inside the password."""
    entries = []
    for n, (pw, url) in enumerate(cases):
        body = {"model": "claude-sonnet-4-5", "max_tokens": 64, "stream": True, "messages": [
            {"role": "user", "content": "What is the database URL?"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_01", "name": "Bash",
                                               "input": {"command": "cat .env"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01",
                                          "content": f"APP_ENV=dev\nDATABASE_URL={url}\nPORT=8080\n"}]}]}
        cut = url.index(pw) + len(pw) // 2
        args = json.dumps({"command": f"psql '{url}'"})
        acut = args.index(json.dumps(pw)[1:-1]) + 3
        events = [("message_start", {"type": "message_start", "message": {
            "id": f"msg_{n}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [],
            "usage": {"input_tokens": 50, "output_tokens": 1}}})]
        events.append(("content_block_start", {"type": "content_block_start", "index": 0,
                                                "content_block": {"type": "text", "text": ""}}))
        for piece in (f"It is {url[:cut]}", f"{url[cut:]} as configured."):
            events.append(("content_block_delta", {"type": "content_block_delta", "index": 0,
                                                    "delta": {"type": "text_delta", "text": piece}}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": 0}))
        events.append(("content_block_start", {"type": "content_block_start", "index": 1, "content_block": {
            "type": "tool_use", "id": "toolu_02", "name": "Bash", "input": {}}}))
        for piece in (args[:acut], args[acut:]):
            events.append(("content_block_delta", {"type": "content_block_delta", "index": 1,
                                                    "delta": {"type": "input_json_delta", "partial_json": piece}}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": 1}))
        events.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use"},
                                         "usage": {"output_tokens": 30}}))
        events.append(("message_stop", {"type": "message_stop"}))
        sse = "".join(f"event: {name}\ndata: {json.dumps(ev)}\n\n" for name, ev in events)
        entries.append({
            "startedDateTime": f"2026-12-01T10:00:{n:02d}Z", "time": 100,
            "request": {"method": "POST", "url": f"https://api.anthropic.com/v1/messages?dsn={quote(url, safe='')}",
                        "headers": [{"name": "User-Agent", "value": "claude-cli/2.1.0 (external, cli)"},
                                    {"name": "Content-Type", "value": "application/json"},
                                    {"name": "X-Client-Data", "value": url}],
                        "postData": {"mimeType": "application/json", "text": json.dumps(body)}},
            "response": {"status": 200, "headers": [{"name": "content-type", "value": "text/event-stream"}],
                         "content": {"mimeType": "text/event-stream", "text": sse}},
        })
    path.write_text(json.dumps({"log": {"version": "1.2", "entries": entries}}))
    return path


def _fragments(pw: str) -> set[str]:
    return {pw[i : i + 8] for i in range(len(pw) - 7)} | {pw}


def _leaks(blobs: list[tuple[str, bytes]], cases: list[tuple[str, str]]) -> list[tuple[str, str]]:
    out = []
    for name, data in blobs:
        text = data.decode("utf-8", "replace")
        views = (text, text.replace("\\/", "/"), json.loads(json.dumps(text)))
        for pw, _ in cases:
            if any(f in view for f in _fragments(pw) for view in views):
                out.append((pw, name))
    return out


def test_import_and_publish_keep_every_password_off_disk(ctxtap_config, tmp_path: Path) -> None:
    cases = _cases(seed=23)
    capture = tmp_path / "cap"
    run_ctxtap(["import", str(_har(cases, tmp_path / "urls.har")), "--out", str(capture)], ctxtap_config)
    assert _leaks(all_stored_bytes(capture), cases) == []
    out = tmp_path / "published"
    result = publish(capture, out)
    assert result.files
    assert _leaks([(str(p), p.read_bytes()) for p in out.rglob("*") if p.is_file()], cases) == []


def test_final_scan_refuses_what_the_pseudonymiser_alone_leaves(tmp_path: Path) -> None:
    """Without the credential pass, pseudonymised text still carries each password: the gate names it
    (file, line, kind), never the value."""
    cases = [c for c in _cases(seed=31) if "%" not in c[0]]
    pii = PiiRedactor(numbered=True)
    out = tmp_path / "attachment"
    out.mkdir()
    text = "\n".join(f"DATABASE_URL={url} # owner: ops.team@corp.example" for _, url in cases)
    (out / "session.md").write_text(pii.redact_text(text))
    (out / "session.json").write_text(json.dumps({"tool_result": pii.redact_text(text)}))
    findings = scan_tree(out, Identity(), use_detect_secrets=False)
    url_findings = {(f.file, f.line) for f in findings if f.kind == "url-password"}
    assert {("session.md", n) for n in range(1, len(cases) + 1)} <= url_findings
    assert ("session.json", 1) in url_findings
    assert not any(pw in str(f) for f in findings for pw, _ in cases)
