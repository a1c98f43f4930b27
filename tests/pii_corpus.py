"""Deterministic synthetic users and the personal data agents leak about them, for publish tests.

    people = generate_people(seed=3, n=2)
    items = pii_items(people[0], seed=3)            # every PII kind, with its header form
    har = build_har(people[0], items, secrets, protocol="messages")
    leaks = find_leaks(values, published_text)      # what survived, in any escaped form

Every value is random and fake. Names are built from syllables so they are
neither dictionary words nor anybody's likely name; each value is distinctive
enough that finding it in an output means it leaked, not that it collided.

`PLACEMENTS` are where a capture carries text: system text, the environment
block, tool results, tool-call arguments and request headers. `build_har`
plants every item and every secret in every placement that can hold it, and
tags each placement with a marker so a test can prove the placement was
published (and not merely dropped).
"""

from __future__ import annotations

import email.utils
import ipaddress
import json
import random
import re
import string
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from tests.secret_corpus import Secret

PLACEMENTS: tuple[str, ...] = ("system", "environment", "tool_result", "tool_arguments", "headers")
_SYLLABLES = "ka ro vel mi quo zan tor bex lu dri fen sol yra gim nox pel ward ith osk uma".split()
_DOMAINS = ("corpmail.test", "mailbox-example.net", "fastpost.dev", "inbox.example.org")


@dataclass(frozen=True)
class Person:
    """One synthetic user and machine."""

    user: str
    first: str
    last: str
    email: str
    host: str
    account: str  # forge account (GitHub owner)
    repo: str

    @property
    def full_name(self) -> str:
        return f"{self.first} {self.last}"

    @property
    def home(self) -> str:
        return f"/home/{self.user}"


@dataclass(frozen=True)
class PiiItem:
    """One personal value and how it shows up.

    kind: the spec's class (email, user-path, user-bare, host, home-path, temp-path, session-id...).
    value: what must not survive in any published file.
    text: a line of text carrying it with realistic context.
    header: a request header carrying it.
    """

    kind: str
    value: str
    text: str
    header: tuple[str, str]


def _word(rng: random.Random, parts: int) -> str:
    return "".join(rng.choice(_SYLLABLES) for _ in range(parts))


def _hex(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


def _alnum(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(n))


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def generate_people(seed: int = 0, n: int = 1) -> list[Person]:
    rng = random.Random(seed)
    people = []
    for i in range(n):
        first = _word(rng, 3).capitalize()
        last = _word(rng, 3).capitalize()
        user = first.lower() + (str(rng.randint(2, 99)) if i % 2 else "")
        account = user if i % 2 == 0 else f"{first.lower()}-{last.lower()}"
        people.append(Person(
            user=user, first=first, last=last,
            email=f"{first.lower()}.{last.lower()}{rng.randint(1, 9)}@{rng.choice(_DOMAINS)}",
            host=f"{user}-{rng.choice(['laptop', 'thinkpad', 'desktop', 'workstation'])}",
            account=account, repo=f"{_word(rng, 2)}-service",
        ))
    return people


def pii_items(person: Person, seed: int = 0) -> list[PiiItem]:
    """Every PII kind the publish spec names, each with text and header forms."""
    rng = random.Random(seed * 7919 + len(person.user))
    p = person
    proj = _word(rng, 2)
    tmp = f"tmp.{_alnum(rng, 10)}"
    mac_tmp = _alnum(rng, 24).lower()
    session, install, trace = _uuid(rng), _uuid(rng), _uuid(rng)
    device = _hex(rng, 64)
    request = "req_" + _alnum(rng, 24)
    public_ip = f"{rng.randint(11, 99)}.{rng.randint(1, 254)}.{rng.randint(1, 254)}.{rng.randint(1, 254)}"
    private_ip = f"192.168.{rng.randint(0, 254)}.{rng.randint(2, 254)}"
    ipv6 = f"2001:db8:{_hex(rng, 4)}:{_hex(rng, 4)}::{_hex(rng, 3)}"
    mac = ":".join(_hex(rng, 2) for _ in range(6))
    phone = f"+44 20 7946 {rng.randint(1000, 9999)}"
    remote = f"git@github.com:{p.account}/{p.repo}.git"
    return [
        PiiItem("email", p.email, f"Contact {p.email} for access.", ("X-User-Email", p.email)),
        PiiItem("user-path-posix", p.user, f"cwd: /home/{p.user}/src/{proj}",
                ("X-Workspace-Root", f"/home/{p.user}/src/{proj}")),
        PiiItem("user-path-macos", p.user, f"cache: /Users/{p.user}/Library/Caches/{proj}",
                ("X-Cache-Dir", f"/Users/{p.user}/Library/Caches/{proj}")),
        PiiItem("user-path-windows", p.user, f"config: C:\\Users\\{p.user}\\AppData\\Roaming\\{proj}",
                ("X-Config-Dir", f"C:\\Users\\{p.user}\\AppData\\Roaming\\{proj}")),
        PiiItem("user-path-tilde", p.user, f"$ ls ~{p.user}/notes", ("X-Notes-Dir", f"~{p.user}/notes")),
        PiiItem("user-bare", p.user, f"Logged in as {p.user}.", ("X-Os-User", p.user)),
        PiiItem("full-name", p.full_name, f"Git user: {p.full_name}", ("X-Git-Author", p.full_name)),
        PiiItem("host-device-name", p.host, f"Hostname: {p.host}", ("X-Msh-Device-Name", p.host)),
        PiiItem("host-prompt", p.host, f"{p.user}@{p.host}:~/src/{proj}$ make test",
                ("X-Shell-Prompt", f"{p.user}@{p.host}:~$")),
        PiiItem("home-path", f"/home/{p.user}", f"HOME=/home/{p.user}", ("X-Home", f"/home/{p.user}")),
        PiiItem("temp-path", tmp, f"log written to /tmp/{tmp}/build.log", ("X-Build-Log", f"/tmp/{tmp}/build.log")),
        PiiItem("temp-path-macos", mac_tmp, f"/var/folders/x3/{mac_tmp}/T/TemporaryItems",
                ("X-Scratch", f"/var/folders/x3/{mac_tmp}/T")),
        PiiItem("session-id", session, f'"session_id": "{session}"', ("X-Session-Id", session)),
        PiiItem("device-id", device, f"device_id={device}", ("X-Device-Id", device)),
        PiiItem("request-id", request, f"request-id: {request}", ("X-Request-Id", request)),
        PiiItem("installation-id", install, f'{{"installation_id":"{install}"}}', ("X-Installation-Id", install)),
        PiiItem("uuid", trace, f"trace {trace} closed", ("X-Trace", trace)),
        PiiItem("ip-public", public_ip, f"Connection from {public_ip} port 51234",
                ("X-Forwarded-For", public_ip)),
        PiiItem("ip-private", private_ip, f"inet {private_ip}/24 brd 192.168.255.255", ("X-Real-Ip", private_ip)),
        PiiItem("ipv6", ipv6, f"inet6 {ipv6}/64 scope global", ("X-Client-Ip6", ipv6)),
        PiiItem("mac", mac, f"link/ether {mac} brd ff:ff:ff:ff:ff:ff", ("X-Hw-Addr", mac)),
        PiiItem("phone", phone, f"On call: {phone}", ("X-On-Call", phone)),
        PiiItem("git-remote-scp", p.account, f"origin\t{remote} (fetch)", ("X-Git-Remote", remote)),
        PiiItem("git-remote-https", p.account, f"see https://github.com/{p.account}/{p.repo}/pull/12",
                ("X-Pr-Url", f"https://github.com/{p.account}/{p.repo}/pull/12")),
    ]


PII_KINDS_COVERED = (
    "email", "user-path-posix", "user-path-macos", "user-path-windows", "user-path-tilde", "user-bare",
    "full-name", "host-device-name", "host-prompt", "home-path", "temp-path", "temp-path-macos", "session-id",
    "device-id", "request-id", "installation-id", "uuid", "ip-public", "ip-private", "ipv6", "mac", "phone",
    "git-remote-scp", "git-remote-https",
)


# --- captures ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Plant:
    """One value planted in one placement; `marker` proves the placement reached the output."""

    what: str  # "pii" or "secret"
    kind: str
    value: str
    placement: str
    marker: str
    fragments: tuple[str, ...]


def _marker(i: int) -> str:
    return f"PLANT{i:04d}"


def _marked(header: str, marker: str) -> str:
    """`X-Device-Id` -> `X-PLANT0070-Device-Id`: the name keeps its meaning and ending."""
    return f"X-{marker}-{header[2:] if header.lower().startswith('x-') else header}"


def _secret_header(i: int, secret: Secret) -> tuple[str, str] | None:
    if not secret.token or "\n" in secret.value:
        return None
    return ("X-Upstream-Token", secret.value)


def plan(person: Person, items: list[PiiItem], secrets: list[Secret]) -> list[tuple[Plant, str | tuple[str, str]]]:
    """Every (item or secret) x placement, with the text or header that carries it."""
    out: list[tuple[Plant, str | tuple[str, str]]] = []
    n = 0
    for item in items:
        for placement in PLACEMENTS:
            n += 1
            marker = _marker(n)
            plant = Plant("pii", item.kind, item.value, placement, marker, (item.value,))
            if placement == "headers":
                out.append((plant, (_marked(item.header[0], marker), item.header[1])))
            else:
                out.append((plant, f"[{marker}] {item.text}"))
    for i, secret in enumerate(secrets):
        for placement in PLACEMENTS:
            n += 1
            marker = _marker(n)
            plant = Plant("secret", secret.kind, secret.value, placement, marker, tuple(secret.fragments()))
            if placement == "headers":
                header = _secret_header(i, secret)
                if header is not None:
                    out.append((plant, (_marked(header[0], marker), header[1])))
            else:
                out.append((plant, f"[{marker}] {secret.in_context}"))
    return out


def _texts(planned: list[tuple[Plant, Any]], placement: str) -> list[str]:
    return [carrier for plant, carrier in planned if plant.placement == placement]


def _entry(url: str, headers: list[tuple[str, str]], body: dict[str, Any], response: dict[str, Any],
           started: float) -> dict[str, Any]:
    return {
        "startedDateTime": datetime.fromtimestamp(started, UTC).isoformat().replace("+00:00", "Z"),
        "time": 800,
        "request": {
            "method": "POST", "url": url, "httpVersion": "HTTP/1.1",
            "headers": [{"name": k, "value": v} for k, v in headers],
            "postData": {"mimeType": "application/json", "text": json.dumps(body)},
        },
        "response": {
            "status": 200, "statusText": "OK", "httpVersion": "HTTP/1.1",
            "headers": [{"name": "content-type", "value": "application/json"}],
            "content": {"mimeType": "application/json", "text": json.dumps(response)},
        },
        "timings": {"send": 1, "wait": 700, "receive": 99},
    }


def _messages_entry(person: Person, planned: list[tuple[Plant, Any]], started: float) -> dict[str, Any]:
    system = "You are a coding agent. Deployment notes follow.\n" + "\n".join(_texts(planned, "system"))
    env = "<env>\nPlatform: linux\n" + "\n".join(_texts(planned, "environment")) + "\n</env>"
    args = "cat <<'EOF' > notes.txt\n" + "\n".join(_texts(planned, "tool_arguments")) + "\nEOF"
    result = "\n".join(_texts(planned, "tool_result"))
    body = {
        "model": "claude-sonnet-4-5", "max_tokens": 1024, "stream": False,
        "system": [{"type": "text", "text": system}],
        "tools": [{"name": "Bash", "description": "Run a shell command.",
                   "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": env},
                                         {"type": "text", "text": "Look around and tell me what is here."}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_01", "name": "Bash",
                                               "input": {"command": args}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": result}]},
        ],
    }
    headers = [("Host", "api.anthropic.com"), ("User-Agent", "claude-cli/2.1.0 (external, cli)"),
               ("Content-Type", "application/json"), ("anthropic-version", "2023-06-01"),
               ("x-api-key", "sk-ant-api03-" + "x" * 90 + "AA")]
    headers += [h for plant, h in planned if plant.placement == "headers"]
    response = {"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                "content": [{"type": "text", "text": "Done."}], "stop_reason": "end_turn",
                "usage": {"input_tokens": 1000, "output_tokens": 5}}
    return _entry("https://api.anthropic.com/v1/messages", headers, body, response, started)


def _chat_entry(person: Person, planned: list[tuple[Plant, Any]], started: float) -> dict[str, Any]:
    system = "You are Kimi Code CLI. Deployment notes follow.\n" + "\n".join(_texts(planned, "system"))
    env = "<system-reminder>\n" + "\n".join(_texts(planned, "environment")) + "\n</system-reminder>"
    args = json.dumps({"command": "cat <<'EOF' > notes.txt\n" + "\n".join(_texts(planned, "tool_arguments"))
                       + "\nEOF"})
    body = {
        "model": "kimi-for-coding", "stream": False,
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": "Look around and tell me what is here."},
            {"role": "user", "content": env},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "Bash", "arguments": args}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "\n".join(_texts(planned, "tool_result"))},
        ],
        "tools": [{"type": "function", "function": {"name": "Bash", "description": "Run a shell command.",
                                                    "parameters": {"type": "object"}}}],
    }
    headers = [("host", "api.kimi.com"), ("User-Agent", "kimi-code-cli/2.1.0"), ("X-Msh-Platform", "kimi_code_cli"),
               ("content-type", "application/json"), ("authorization", "Bearer sk-" + "y" * 48)]
    headers += [h for plant, h in planned if plant.placement == "headers"]
    response = {"id": "chatcmpl-1", "object": "chat.completion", "model": "kimi-for-coding",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "Done."},
                             "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1000, "completion_tokens": 5, "total_tokens": 1005}}
    return _entry("https://api.kimi.com/coding/v1/chat/completions", headers, body, response, started)


def build_har(person: Person, planned: list[tuple[Plant, Any]], protocol: str, path: Path) -> Path:
    """A HAR file with one model request carrying every planted value in its placement."""
    started = 1_790_000_000.0
    entry = (_messages_entry if protocol == "messages" else _chat_entry)(person, planned, started)
    har = {"log": {"version": "1.2", "creator": {"name": "ctxtap-pii-corpus", "version": "1"}, "entries": [entry]}}
    path.write_text(json.dumps(har))
    return path


# --- measuring ----------------------------------------------------------------------------------


def escaped_forms(value: str) -> set[str]:
    once = json.dumps(value)[1:-1]
    twice = json.dumps(once)[1:-1]
    return {value, once, twice, quote(value, safe="")}


def leaked(plant: Plant, published: str) -> bool:
    """Does any fragment of the planted value survive in the published text (any escaping)?"""
    lowered = published.lower()
    for fragment in plant.fragments:
        for form in escaped_forms(fragment):
            if plant.what == "pii" and form.lower() in lowered or plant.what == "secret" and form in published:
                return True
    return False


# --- an independent judge of what a replacement replaced ----------------------------------------

_EMAILISH_RE = re.compile(r"[^\s<>\"'(),;]+@[^\s<>\"'(),;]+")
_AUTHOR_LINE_RE = re.compile(r"(?im)^.*(?:author|maintainer|contributed by|copyright|written by|<[^>\s]+@[^>\s]+>).*$")


def oracle_says_personal(kind: str, rule: str, value: str, document: str) -> bool:
    """Is `value` an instance of a class the spec asks to replace? Judged with stdlib parsers, not our rules.

    Shape classes are checked by parsing (e-mail, UUID, IP, MAC); temp and home paths by prefix;
    identifier fields by construction; a learned name only counts when it comes from an author or
    address line of the same document (that is a real person's name).
    """
    if kind == "email":
        candidate = value.replace("%40", "@")
        name, addr = email.utils.parseaddr(candidate)
        return addr == candidate and "." in addr.rsplit("@", 1)[-1]
    if rule == "uuid":
        try:
            uuid.UUID(value)
            return True
        except ValueError:
            return False
    if kind == "ip":
        try:
            ipaddress.ip_address(value.split("%", 1)[0])
            return True
        except ValueError:
            return False
    if rule == "mac":
        return len(value.replace("-", ":").split(":")) == 6
    if kind == "path-tmp":
        return value.startswith(("/tmp/", "/var/tmp/", "/private/", "/var/folders/", "/dev/shm/"))
    if kind == "path-home":
        return bool(re.match(r"(/home/|/Users/|[A-Za-z]:[\\/]+Users[\\/]|~)\w", value))
    if rule in ("id-field", "header-id", "provider-id"):
        return True
    if rule.startswith("learned-name") or kind == "name":
        lines = " ".join(_AUTHOR_LINE_RE.findall(document))
        return value.lower() in lines.lower()
    return False


_TOKEN_SPLIT_RE = re.compile(r"[\s'\"(),;<>\[\]{}`]+")


def oracle_finds_personal(document: str) -> bool:
    """Does a document hold personal data by the same stdlib judge (e-mail, UUID, IP, temp path, author)?

    Used to pick the strictly clean documents of the negative corpus: in those, any change at all
    is a false positive.
    """
    if re.search(r"(?im)^\W*(?:author|maintainer|written by|contributed by)\b", document):
        return True  # a person's name
    for candidate in re.findall(r"[0-9a-fA-F-]{36}", document):
        if oracle_says_personal("uuid", "uuid", candidate, document):
            return True
    for token in _TOKEN_SPLIT_RE.split(document):
        token = token.strip(".:")
        if len(token) < 7:
            continue
        if "@" in token and oracle_says_personal("email", "email", token, document):
            return True
        if token.count("-") == 4 and oracle_says_personal("uuid", "uuid", token, document):
            return True
        if (token.count(".") == 3 or token.count(":") >= 2) and oracle_says_personal("ip", "ip", token, document):
            return True
        if token.startswith(("/tmp/", "/var/tmp/", "/var/folders/")):
            return True
    return False
