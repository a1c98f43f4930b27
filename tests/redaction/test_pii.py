"""PII pseudonymisation: every kind, stable placeholders, escapes respected, never raises, idempotent."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxtap.redaction import Redactor
from ctxtap.redaction.personal.identity import Identity
from ctxtap.redaction.personal.pii import PII_KINDS, PII_PLACEHOLDER_RE, PiiRedactor
from ctxtap.redaction.publish_scan import Finding, scan_tree
from tests.pii_corpus import PII_KINDS_COVERED, generate_people, pii_items

KEY = b"\x03" * 32
ENV = (
    "Primary working directory: /home/alice/work/demo-repo\n"
    "Git user: Alice Liddell\n"
    "origin\tgit@github.com:alice-liddell/demo-repo.git (fetch)\n"
)


def numbered(identity_text: str = ENV) -> PiiRedactor:
    pii = PiiRedactor(numbered=True)
    pii.learn_text(identity_text)
    return pii


# --- each kind -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "gone", "kind"),
    [
        ("Maintainer: alice.liddell@example.com", "alice.liddell@example.com", "email"),
        ("mail=alice.liddell%40example.com&x=1", "alice.liddell", "email"),
        ("cwd /home/alice/work", "/home/alice", "path-home"),
        ("cwd /Users/alice/work", "/Users/alice", "path-home"),
        ("cwd C:\\Users\\alice\\work", "alice", "path-home"),
        ("ls ~alice/notes", "~alice", "path-home"),
        ("Logged in as alice.", "alice", "user"),
        ("Hi Alice Liddell, thanks", "Alice Liddell", "name"),
        ("alice@alice-laptop:~/work$ ls", "alice-laptop", "host"),
        ("wrote /tmp/tmp.Xk2f9QaB7c/build.log", "tmp.Xk2f9QaB7c", "path-tmp"),
        ("/var/folders/x3/abcdefgh12345678/T/item", "abcdefgh12345678", "path-tmp"),
        ('"session_id": "0030e94e-4049-46f0-9e37-62b791f0b167"', "0030e94e", "session"),
        ("device_id=6cdaf5a1a2a36fdad8f91e5c5d7ffb6ac99b2afa6526d9b8f4f5e2fa33cc8d3b", "6cdaf5a1", "device"),
        ('{"installation_id":"0570f025-992a-4cf5-9af9-67e29610f1c1"}', "0570f025", "installation"),
        ("request req_011CVx8bQ1h2a3B4c5D6e7F8", "req_011CVx8bQ1h2a3B4c5D6e7F8", "request"),
        ("trace 98c7b1d2-3e4f-4a5b-8c6d-7e8f9a0b1c2d done", "98c7b1d2", "uuid"),
        ("Connection from 81.2.69.160 port 22", "81.2.69.160", "ip"),
        ("inet 192.168.1.23/24", "192.168.1.23", "ip"),
        ("inet6 2001:db8:85a3::8a2e:370:7334/64", "2001:db8:85a3::8a2e:370:7334", "ip"),
        ("link/ether 3c:22:fb:12:34:56 brd", "3c:22:fb:12:34:56", "device"),
        ("call +44 20 7946 0321 now", "7946 0321", "phone"),
        ("git@github.com:alice-liddell/demo-repo.git", "alice-liddell", "account"),
        ("https://github.com/alice-liddell/demo-repo/pull/3", "alice-liddell", "account"),
        ("X-Msh-Device-Name: alice-laptop", "alice-laptop", "host"),
    ],
)
def test_each_kind_is_replaced(text: str, gone: str, kind: str) -> None:
    pii = numbered()
    out = pii.redact_text(text)
    assert gone.lower() not in out.lower(), out
    assert f"<{kind}-" in out, out


def test_corpus_covers_every_kind_the_spec_names() -> None:
    items = pii_items(generate_people(5)[0], seed=5)
    assert {i.kind for i in items} == set(PII_KINDS_COVERED)
    assert len(PII_KINDS_COVERED) >= 20


def test_learned_identity_comes_from_the_traffic() -> None:
    identity = Identity()
    identity.learn_text(ENV + "alice@alice-laptop:~$ whoami\n")
    identity.learn_headers([("X-Msh-Device-Name", "alice-laptop")])
    identity.refresh_accounts()
    assert identity.users == {"alice"}
    assert identity.hosts == {"alice-laptop"}
    assert identity.names == {"Alice Liddell"}
    assert "alice-liddell" in identity.accounts


def test_bare_names_only_once_known() -> None:
    assert PiiRedactor(numbered=True).redact_text("alice went home") == "alice went home"
    assert PiiRedactor(numbered=True).redact_text("see /home/alice and alice went") == (
        "see <path-home-1> and <user-1> went"
    )


def test_generic_and_vendor_values_stay() -> None:
    pii = numbered()
    for text in (
        "Co-Authored-By: Claude <noreply@anthropic.com>",
        "ssh -T git@github.com",
        "see https://github.com/anthropics/claude-code/issues",
        "cd /home/runner/work && ls /root",
        "listen on 127.0.0.1:8080 or 0.0.0.0",
        "python 3.11.4.1 and section 8.2.4.44",
        "x = a::b; std::vector<int> v; t = 12:30:45",
        "commit 5d3403441e56c884a8505f9b1b664223f9e89e7f",
        "the laptop closed and the desktop slept",
        "icon@2x.png and @scope/pkg@1.2.3",
    ):
        assert pii.redact_text(text) == text, text


def test_placeholders_are_stable_and_shared_across_texts() -> None:
    pii = numbered()
    a = pii.redact_text("/home/alice/x and alice.liddell@example.com")
    b = pii.redact_text("mail alice.liddell@example.com from /home/alice/y")
    assert "<email-1>" in a and "<email-1>" in b
    assert a.split()[0].startswith("<path-home-1>") and "<path-home-1>/y" in b


def test_first_context_names_the_kind() -> None:
    pii = PiiRedactor(numbered=True)
    uid = "0030e94e-4049-46f0-9e37-62b791f0b167"
    assert pii.redact_headers([("X-Claude-Code-Session-Id", uid)]) == [("X-Claude-Code-Session-Id", "<session-1>")]
    assert pii.redact_text(f"trace {uid}") == "trace <session-1>"


def test_headers_by_name() -> None:
    pii = PiiRedactor(numbered=True)
    out = dict(pii.redact_headers([
        ("X-Msh-Device-Name", "alice-laptop"),
        ("X-Msh-Device-Id", "d3fc6f94-7d64-43a8-8231-e063fc1aee49"),
        ("x-codex-window-id", "01a228c2-9f93-77e1-b4ec-bc1155ce3e77:0"),
        ("x-client-request-id", "abc123def456"),
        ("User-Agent", "kimi-code-cli/2.1.0"),
        ("x-api-key", "[REDACTED:anthropic-key:3fa2c1]"),
    ]))
    assert out["X-Msh-Device-Name"] == "<host-1>"
    assert out["X-Msh-Device-Id"] == "<device-1>"
    assert out["x-codex-window-id"] == "<session-1>:0"
    assert out["x-client-request-id"] == "<request-1>"
    assert out["User-Agent"] == "kimi-code-cli/2.1.0"
    assert out["x-api-key"] == "[REDACTED:anthropic-key:3fa2c1]"
    # the header taught the host: its bare name goes everywhere after
    assert pii.redact_text("ping alice-laptop") == "ping <host-1>"


def test_json_escapes_survive_in_bytes() -> None:
    body = json.dumps({
        "content": "Author: Alice Liddell <alice.liddell@example.com>\nUSER=alice\n/home/alice/x\n"
                   "origin\tgit@github.com:alice-liddell/r.git",
        "inner": json.dumps({"device_id": "6cdaf5a1a2a36fdad8f91e5c5d7ffb6ac99b2afa6526d9b8f4f5e2fa33cc8d3b"}),
    }).encode()
    out = PiiRedactor(KEY, "cap").redact_bytes(body)
    decoded = json.loads(out)  # still valid JSON
    text = json.dumps(decoded)
    for gone in ("alice", "Liddell", "6cdaf5a1"):
        assert gone.lower() not in text.lower()
    assert "\\ngit@" not in text and "git@github.com:<account-" in decoded["content"]


def test_keyed_placeholders_at_capture_time_renumber_when_published() -> None:
    capture = PiiRedactor(KEY, "capture-1")
    recorded = capture.redact_text("/home/alice/x alice.liddell@example.com")
    assert PII_PLACEHOLDER_RE.search(recorded) and "<email-" in recorded and "-1>" not in recorded
    again = PiiRedactor(KEY, "capture-1").redact_text("alice.liddell@example.com")
    assert again == recorded.split()[1]  # keyed: the same value, the same placeholder, no shared state
    published = PiiRedactor(numbered=True).redact_text(recorded + " " + recorded)
    assert published == "<path-home-1>/x <email-1> <path-home-1>/x <email-1>"


def test_counts_by_kind_and_rule_never_values() -> None:
    pii = numbered()
    pii.redact_text("alice.liddell@example.com /home/alice")
    assert pii.counts["email"] == 1 and pii.counts["path-home"] == 1
    assert pii.rule_counts["email/email"] == 1 and pii.rule_counts["path-home/home-posix"] == 1
    assert all("alice" not in key for key in [*pii.counts, *pii.rule_counts])
    assert set(pii.counts) <= set(PII_KINDS)


def test_credential_and_pii_placeholders_coexist() -> None:
    cred = Redactor(KEY, "c")
    pii = numbered()
    text = "export GITHUB_TOKEN=ghp_" + "a1B2" * 9 + " && cd /home/alice"
    out = pii.redact_text(cred.redact_text(text))
    assert "[REDACTED:github-token:" in out and "<path-home-1>" in out
    assert pii.redact_text(out) == out


def test_skip_kinds_leaves_them_for_the_scan(tmp_path) -> None:
    pii = PiiRedactor(numbered=True, skip_kinds={"email"})
    out = pii.redact_text("write to alice.liddell@example.com from /home/alice")
    assert "alice.liddell@example.com" in out and "<path-home-1>" in out
    (tmp_path / "a.md").write_text("line one\n" + out + "\n")
    findings = scan_tree(tmp_path, pii.identity)
    assert Finding("a.md", 2, "pii", "email/email") in findings


# --- properties ----------------------------------------------------------------------------------

_FRAGMENTS = st.sampled_from([
    "/home/alice/", "alice", "Alice Liddell", "alice.liddell@example.com", "alice-laptop", "alice@alice-laptop:~$",
    "0030e94e-4049-46f0-9e37-62b791f0b167", "192.168.1.23", "81.2.69.160", "fe80::1ff:fe23:4567:890a",
    "git@github.com:alice-liddell/r.git", "https://github.com/alice/x", "C:\\Users\\alice\\", "~alice/",
    "/tmp/tmp.abc123XYZ/", "device_id=", '"session_id": "', "req_011CVx8bQ1h2a3B4c5D6", "\\n", "\\\\", "\\u003c",
    "<user-1>", "<email-3fa2c1>", "[REDACTED:github-token:3fa2c1]", "USER=", "HOSTNAME=", "Git user: ", " ",
    "\n", "\t", "\"", "@", ":", "/", "-", ".", "+44 20 7946 0321", "%40", "é", "\udc80",
])
_TEXTS = st.one_of(st.text(max_size=200), st.lists(_FRAGMENTS | st.text(max_size=8), max_size=30).map("".join))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_TEXTS)
def test_never_raises_and_is_idempotent_numbered(text: str) -> None:
    pii = PiiRedactor(numbered=True)
    once = pii.redact_text(text)
    assert isinstance(once, str)
    assert pii.redact_text(once) == once


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_TEXTS)
def test_never_raises_and_is_idempotent_keyed_bytes(text: str) -> None:
    pii = PiiRedactor(KEY, "cap")
    raw = text.encode("utf-8", "surrogatepass")
    once = pii.redact_bytes(raw)
    assert isinstance(once, bytes)
    assert pii.redact_bytes(once) == once


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.text(max_size=30), _TEXTS), max_size=8))
def test_headers_never_raise_and_are_idempotent(headers: list[tuple[str, str]]) -> None:
    pii = PiiRedactor(numbered=True)
    once = pii.redact_headers(headers)
    assert [k for k, _ in once] == [k for k, _ in headers]
    assert pii.redact_headers(once) == once


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=300))
def test_binary_never_raises(data: bytes) -> None:
    out = PiiRedactor(KEY, "cap").redact_bytes(data)
    assert isinstance(out, bytes)


def test_garbage_input_becomes_a_placeholder_not_an_exception() -> None:
    pii = PiiRedactor(numbered=True)
    assert pii.redact_bytes(object()).startswith(b"<unscannable-")  # type: ignore[arg-type]
    assert pii.redact_headers(object()) == []  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "text",
    [
        "Alpha Beta Gamma Delta " * 10000,
        "Alpha Beta Gamma Delta <a@b.co> " * 5000,
        "a@b@c@d@" * 25000,
        "1:2:3:4:5:" * 20000,
        "~a~b/" * 30000,
        "C:\\Users\\" * 20000,
        "session_id=session_id=" * 10000,
        "a" * 200000 + "@example.com",
        "a-" * 100000 + "laptop",
        "alice-bob-carol-" * 15000,
    ],
    ids=["caps", "caps-address", "ats", "colons", "tildes", "users", "id-keys", "long-local", "host-tail", "words"],
)
def test_adversarial_inputs_stay_linear(text: str) -> None:
    """No rule backtracks: 200 KB of worst-case shapes in well under a second each."""
    import time

    pii = numbered()
    start = time.perf_counter()
    pii.redact_text(text)
    assert time.perf_counter() - start < 2.0
