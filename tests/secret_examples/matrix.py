"""Every vendored example secret in every placement an agent's traffic has, through the real writer.

    cases, leaks, seconds = run_matrix(tmp_dir, positions=None)   # None: every split position

Each placement builds writer events (requests with headers, URLs and bodies;
streamed SSE responses fed in network-sized cuts; WebSocket messages) for
many cases at once; they go through an in-process `CaptureWriter`, the
capture is finalized, and then what is on disk is read the way an attacker
would: every Parquet cell, every body through the capture reader
(zstd-delta decoded), JSON strings unescaped (nested JSON too), percent
escapes decoded, SSE and WebSocket deltas joined per stream. A case leaks if
any 8-byte fragment of its secret (the whole secret if shorter) is found in
its flow's view, unless that fragment is ordinary text (it also occurs in the
placement's own wording).
"""

from __future__ import annotations

import gzip
import json
import math
import random
import re
import time
import zlib
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, unquote_to_bytes, urlsplit

import ahocorasick
import zstandard

from ctxtap import redaction
from ctxtap.capture.events import (
    RequestEvent,
    ResponseChunk,
    ResponseEvent,
    StreamStart,
    WsEndEvent,
    WsMessageEvent,
)
from ctxtap.capture.finalize import finalize
from ctxtap.capture.manifest import Manifest
from ctxtap.capture.store import Capture
from ctxtap.capture.writer import CaptureWriter
from ctxtap.redaction.kingfisher import fixed_heads
from ctxtap.redaction.scanner import get_scanner

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE / "examples.jsonl"
KEY = b"\x07" * 32
FRAGMENT = 8
_PLACEHOLDER = re.compile(r"\[REDACTED:[a-z0-9-]{1,48}:[0-9a-f]{6}\]")
PER_FLOW = 40

# placement -> (group for the table, whether a credential name is present)
PLACEMENTS: dict[str, tuple[str, bool]] = {
    "header-named": ("header", True),
    "header-neutral": ("header", False),
    "query-named": ("query", True),
    "query-neutral": ("query", False),
    "query-encoded": ("query", True),
    "prose": ("body", False),
    "tool-json": ("body", True),
    "json-escaped": ("body", True),
    "env-named": ("body", True),
    "env-neutral": ("body", False),
    "yaml": ("body", True),
    "toml": ("body", True),
    "upstream": ("body", True),
    "tool-read": ("body", True),
    "gzip-body": ("body", True),
    "zstd-body": ("body", True),
    "sse-whole": ("stream", True),
    "sse-split2": ("stream", True),
    "sse-split3": ("stream", True),
    "ws-whole": ("stream", True),
    "ws-split": ("stream", True),
    "ws-client": ("stream", True),
}
SSE_SHAPES = ("anthropic-text", "anthropic-tool", "responses-text", "responses-args", "chat-content",
              "chat-tool", "chat-reasoning", "gemini-text", "gemini-codeassist")


@dataclass(frozen=True)
class Example:
    id: str
    source: str
    family: str
    label: str
    cls: str
    text: str
    secret: str | None
    name: str
    file: str
    line: int
    token: str | None = None  # what carries a self-identifying format (see annotate.py); the secret by default


def carried(ex: Example) -> str:
    """The value a placement carries: a self-identifying example's token, else its secret."""
    assert ex.secret is not None
    return ex.token if ex.cls == "self-identifying" and ex.token and ex.secret in ex.token else ex.secret


def load_examples(path: Path = EXAMPLES) -> tuple[dict, list[Example]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])["header"]
    fields = Example.__dataclass_fields__
    return header, [Example(**{k: v for k, v in json.loads(line).items() if k in fields}) for line in lines[1:]]


KINGFISHER = HERE.parents[1] / "redaction" / "rules" / "kingfisher.json"


# Written by hand, not drawn at random: placeholders' words, a character four times, a piece written twice,
# an alphabet or number line written out. Independent of the detector's own tests; chance puts none of
# these in a random key of this length once in a thousand.
_HAND_WORDS = ("example", "sample", "dummy", "fake", "hello", "world", "your", "placeholder", "changeme", "redacted")
_SAME_CHAR_RE = re.compile(r"(.)\1{3}")


def written_by_hand(secret: str) -> bool:
    """Is this example's secret a placeholder a person typed (`AKIAZZZZ...`, `glpat-hellOworld380_testin`)
    rather than a key drawn at random? Such examples test a rule's pattern; no format-based detector can tell
    them from prose without a list of heads, so they are counted apart as well as in the total."""
    s = secret.lower()
    if _SAME_CHAR_RE.search(secret) or any(w in s for w in _HAND_WORDS):
        return True
    if any(s[i : i + 5] in s[i + 5 :] for i in range(len(s) - 9)):
        return True
    steps = [ord(b) - ord(a) for a, b in zip(secret, secret[1:], strict=False)]
    return any(steps[i] == steps[i + 1] == steps[i + 2] and abs(steps[i]) == 1 for i in range(len(steps) - 2))


def kingfisher_examples(path: Path = KINGFISHER) -> list[Example]:
    """The vendored second catalogue's own examples as true positives (source `kingfisher`): the value is
    its rule's last group (or whole match) in the example. Classed by what the catalogues themselves say:

    - self-identifying: it starts with one of the fixed heads the catalogue reads from its rule
      (`kingfisher.secret_prefix`) and the rule finds it with nothing around it;
    - name-marked: the rule wants the vendor's name near the value (`checkout ... pk_...`: a
      context rule whose generic head many vendors share);
    - unmarked: the catalogue does not claim it (a low-confidence rule: `password123`; a value Kingfisher
      itself drops, `kingfisher_reports`), or it holds a stopword of gitleaks' global allowlist (the
      written-out alphabet: a placeholder by the vendored catalogues' own word).

    Identifier helpers (`visible: false`, not secrets) and rules whose regex Python cannot read are left out."""
    out: list[Example] = []
    stopwords = _global_stopwords()
    for rule in json.loads(path.read_text())["rules"]:
        if str(rule.get("skip", "")).startswith(("identifier helper", "regex not readable")):
            continue
        try:
            rx = re.compile(rule["pattern"])
        except re.error:
            continue
        heads = [h.lower() for h in fixed_heads(rule["pattern"])]
        for i, text in enumerate(rule.get("examples", [])):
            m = rx.search(text)
            groups = [g for g in m.groups() if g] if m else []
            secret = (groups[-1] if groups else m.group(0)).lstrip("=:") if m else None  # the last group: a value after its user
            if not secret or len(secret) < 8:
                continue
            token = None
            if (password := _url_password(secret)) is not None:  # a connection string: its password is the secret
                token, secret = secret, password
            if (rule.get("skip") == "low confidence" or any(w in secret.lower() for w in stopwords)
                    or not kingfisher_reports(secret, rule.get("min_entropy") or 0.0)):
                cls = "unmarked"
            elif (token or secret).lower().startswith(tuple(heads) or ("\0",)) and rx.search(f" {token or secret} "):
                cls = "self-identifying"
            else:
                cls = "name-marked"
            out.append(Example(id=f"{rule['id']}:tp:{i}", source="kingfisher", family=rule["id"], label="tp",
                               cls=cls, text=text, secret=secret, name=rule["name"], file=rule["file"], line=0,
                               token=token))
    return out


def kingfisher_reports(secret: str, min_entropy: float) -> bool:
    """Would Kingfisher report this secret of one of its rules? Its matcher drops a match whose secret's
    Shannon entropy is at or under the rule's `min_entropy` (a username, `$Password`, `%nothing%` in some
    rules' own examples): gitleaks' rules are read with their entropy floor (`annotate`), and so are
    Kingfisher's. (Its safe list of placeholders is not applied: those count apart as written by hand.)"""
    counts = Counter(secret)
    return -sum(c / len(secret) * math.log2(c / len(secret)) for c in counts.values()) > min_entropy


def _url_password(value: str) -> str | None:
    """The password of a URL with credentials (`postgres://user:pw@host`): the user and host are not secret."""
    if "://" not in value or "@" not in value:
        return None
    try:
        password = urlsplit(value).password
    except ValueError:
        return None
    return password if password and len(password) >= 4 else None


def _global_stopwords() -> tuple[str, ...]:
    """gitleaks' global allowlist stopwords, as the redactor loaded them for both vendored catalogues."""
    allowlist = get_scanner().ruleset.global_allowlist
    return tuple(w.decode().lower() for w in allowlist.stopwords) if allowlist else ()


def distinct_secrets(examples: list[Example]) -> list[Example]:
    """One true positive per (source, family, secret): the unit every placement is scored on."""
    seen: set[tuple] = set()
    out = []
    for ex in examples:
        key = (ex.source, ex.family, ex.secret)
        if ex.label == "tp" and ex.secret and key not in seen:
            seen.add(key)
            out.append(ex)
    return out


@dataclass
class Case:
    example: Example
    placement: str
    detail: str = ""  # shape, split positions
    flow: str = ""


# --- the text each placement carries ------------------------------------------------------------


def _env_name(ex: Example) -> str:
    base = "".join(c if c.isalnum() else "_" for c in ex.name).strip("_").upper() or "SERVICE"
    return f"{base}_API_KEY"


def _shell(value: str) -> str:
    return json.dumps(value) if any(c in value for c in " \t\n'\"$`\\|&;<>()") else value


def in_context(ex: Example) -> str:
    """How a stream or a compressed body carries the secret: bare if it identifies itself, else named."""
    assert ex.secret is not None
    if ex.cls == "self-identifying":
        return carried(ex)
    return f"{_env_name(ex)}={_shell(ex.secret)}"


def body_text(ex: Example, placement: str) -> str:
    s = carried(ex)
    name = _env_name(ex).lower()
    if placement == "prose":
        return f"Here is what I found in the logs: {s} -- is it still valid?"
    if placement == "tool-json":
        return json.dumps({"service": ex.name, name: s, "region": "eu-west-1"}, indent=2)
    if placement == "json-escaped":
        return json.dumps({"request": json.dumps({"headers": {"accept": "*/*"}, name: s})})
    if placement == "env-named":
        return f"# .env\nAPP_ENV=development\n{_env_name(ex)}={_shell(s)}\nPORT=8080\n"
    if placement == "env-neutral":
        return f"# .env\nAPP_ENV=development\nSOME_NAME={_shell(s)}\nPORT=8080\n"
    if placement == "yaml":
        return f"service:\n  region: eu\n  {name}: {json.dumps(s) if any(c in s for c in ':#') else s}\n"
    if placement == "toml":
        return f"[service]\nregion = \"eu\"\n{name} = {json.dumps(s)}\n"
    if placement == "upstream":
        return ex.text
    if placement == "tool-read":  # the example's file as Claude Code's Read shows it: each line after its number
        return "".join(f"{n:>6}\u2192{line}" for n, line in enumerate(ex.text.splitlines(True), start=1))
    return f"$ cat config\n{in_context(ex)}\n"  # gzip-body, zstd-body


def _ordinary(ex: Example, placement: str) -> str:
    """The placement's own wording (secret cut out): fragments found in it are not leaks."""
    if placement.startswith(("header", "query")):
        return ""
    text = body_text(ex, placement) if placement in PLACEMENTS and PLACEMENTS[placement][0] == "body" \
        else in_context(ex)
    return text.replace(ex.secret or "\x00", "\x00")


# --- events ------------------------------------------------------------------------------------


class _Flows:
    """Builds writer events flow by flow."""

    def __init__(self) -> None:
        self.events: list[tuple[str, object]] = []  # ("submit"|"send", event)
        self.n = 0

    def flow_id(self) -> str:
        self.n += 1
        return f"f{self.n:05d}"

    def request(self, fid: str, *, headers=(), url="https://api.anthropic.com/v1/messages", body=b"{}",
                host="api.anthropic.com", websocket=False, path="/v1/messages") -> None:
        self.events.append(("submit", RequestEvent(
            flow_id=fid, seq=self.n, record_full=True, is_model=True, provider="anthropic", api="messages",
            endpoint="generate", websocket=websocket, method="GET" if websocket else "POST", scheme="https",
            host=host, port=443, path=path, url=url, upstream_url=None, http_version="HTTP/1.1",
            headers=[("content-type", "application/json"), *headers], body_in=body, body_out=body,
            ts_start=1.0, ts_end=1.0)))

    def response(self, fid: str, body: bytes, ctype="application/json", status=200, chunks: list[bytes] | None = None):
        headers = [("content-type", ctype)]
        if chunks is not None:
            self.events.append(("send", StreamStart(fid, ctype, None)))
            for chunk in chunks:
                self.events.append(("send", ResponseChunk(fid, chunk)))
        self.events.append(("submit", ResponseEvent(
            flow_id=fid, status=status, reason="OK", http_version="HTTP/1.1", headers=headers,
            body_in=None if chunks is not None else body, body_out=None if chunks is not None else body,
            streamed=chunks is not None, ts_headers=1.0, ts_first_byte=1.0, ts_end=1.0,
            chunked=chunks is not None)))


def _cuts(data: bytes, rng: random.Random) -> list[bytes]:
    """Network reads: random sizes, so cuts fall anywhere (inside events and inside secrets)."""
    out, i = [], 0
    while i < len(data):
        n = rng.choice((1, 7, 64, 700, 4096, 65536))
        out.append(data[i : i + n])
        i += n
    return out


def _groups(items: list, size: int) -> Iterator[list]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _groups_of_distinct_secrets(examples: list[Example], size: int) -> list[list[Example]]:
    """Groups of up to `size` examples, no secret twice in one group.

    Leaks are told apart by secret within a flow: examples sharing a value (detect-secrets
    writes one value in a hundred upstream lines; gitleaks gives one value as a URL and
    bare) must go to different flows, or one that leaks would count the others as leaked.
    """
    groups: list[list[Example]] = []
    held: list[set[str | None]] = []
    for ex in examples:
        for group, secrets in zip(groups, held, strict=True):
            if len(group) < size and ex.secret not in secrets:
                group.append(ex)
                secrets.add(ex.secret)
                break
        else:
            groups.append([ex])
            held.append({ex.secret})
    return groups


def split_positions(length: int, limit: int | None) -> list[int]:
    """Cut points inside a secret of `length` bytes: all of them, or `limit` spread evenly."""
    every = list(range(1, length))
    if limit is None or len(every) <= limit:
        return every
    if limit < 1:
        raise ValueError(f"split positions per secret must be at least 1, not {limit}")
    if limit == 1:
        return [every[len(every) // 2]]  # the middle (one point has no spread)
    step = (len(every) - 1) / (limit - 1)
    return sorted({every[round(i * step)] for i in range(limit)})


def _sse_events(shape: str, pieces: list[str], n: int) -> list[bytes]:
    """One content stream of `shape` carrying `pieces` as its deltas (stream number n)."""
    out = []
    for text in pieces:
        if shape == "anthropic-text":
            ev = {"type": "content_block_delta", "index": n, "delta": {"type": "text_delta", "text": text}}
            out.append(b"event: content_block_delta\ndata: " + json.dumps(ev).encode() + b"\n\n")
        elif shape == "anthropic-tool":
            ev = {"type": "content_block_delta", "index": n, "delta": {"type": "input_json_delta", "partial_json": text}}
            out.append(b"event: content_block_delta\ndata: " + json.dumps(ev).encode() + b"\n\n")
        elif shape in ("responses-text", "responses-args"):
            kind = "response.output_text.delta" if shape == "responses-text" else "response.function_call_arguments.delta"
            ev = {"type": kind, "sequence_number": 1, "item_id": f"item_{n}", "output_index": n, "content_index": 0,
                  "delta": text}
            out.append(f"event: {kind}\ndata: ".encode() + json.dumps(ev, separators=(",", ":")).encode() + b"\n\n")
        elif shape.startswith("chat"):
            if shape == "chat-tool":
                delta: dict = {"tool_calls": [{"index": n, "function": {"arguments": text}}]}
            else:
                delta = {"reasoning_content" if shape == "chat-reasoning" else "content": text}
            ev = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta}]}
            out.append(b"data: " + json.dumps(ev, separators=(",", ":")).encode() + b"\n\n")
        else:
            chunk = {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "index": n}],
                     "usageMetadata": {"promptTokenCount": 10}}
            if shape == "gemini-codeassist":
                chunk = {"response": chunk, "traceId": "t1"}
            out.append(b"data: " + json.dumps(chunk).encode() + b"\n\n")
    return out


_TOOL_SHAPES = ("anthropic-tool", "responses-args", "chat-tool")


def _stream_text(shape: str, ctx: str) -> str:
    """The text a stream carries for one case: prose, or a tool call's JSON arguments."""
    if shape in _TOOL_SHAPES:
        return json.dumps({"command": "echo " + ctx})
    return "Found it in the config: " + ctx + " -- rotate it."


def _pieces_for(shape: str, ctx: str, secret: str, cuts: tuple[int, ...]) -> list[str]:
    text = _stream_text(shape, ctx)
    at = text.find(json.dumps(secret)[1:-1]) if shape in _TOOL_SHAPES else text.find(secret)
    if shape in _TOOL_SHAPES:
        encoded = json.dumps(secret)[1:-1]
        # cut the argument text on whole characters of the encoded secret (never inside an escape)
        marks = [0]
        i = 0
        while i < len(encoded):
            i += 6 if encoded[i] == "\\" and encoded[i + 1 : i + 2] == "u" else 2 if encoded[i] == "\\" else 1
            marks.append(i)
        pos = [at + marks[min(c, len(marks) - 1)] for c in cuts]
    else:
        pos = [at + c for c in cuts]
    bounds = [0, *pos, len(text)]
    return [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False) if b > a] or [text]


def build_events(examples: list[Example], positions: int | None, seed: int = 0) -> tuple[list, list[Case]]:
    """All placements of all distinct secrets; `positions` caps the split points per secret."""
    rng = random.Random(seed)
    flows = _Flows()
    cases: list[Case] = []
    secrets = distinct_secrets(examples)
    upstream = [ex for ex in examples if ex.label == "tp" and ex.secret]

    def add(case_list: list[Case], fid: str) -> None:
        for c in case_list:
            c.flow = fid
        cases.extend(case_list)

    # headers: many cases per request (repeated header names)
    for placement, header in (("header-named", "x-api-key"), ("header-neutral", "x-client-data")):
        for group in _groups_of_distinct_secrets(secrets, PER_FLOW):
            fid = flows.flow_id()
            flows.request(fid, headers=[(header, carried(ex)) for ex in group])
            flows.response(fid, b"{}")
            add([Case(ex, placement) for ex in group], fid)
    # query strings
    for placement, param in (("query-named", "api_key"), ("query-neutral", "ref"), ("query-encoded", "next")):
        for group in _groups_of_distinct_secrets(secrets, PER_FLOW):
            fid = flows.flow_id()
            values = [quote(in_context(ex) if placement == "query-encoded" else carried(ex), safe="") for ex in group]
            query = "&".join(f"{param}={v}" for v in values)
            flows.request(fid, url=f"https://generativelanguage.googleapis.com/v1beta/models/m:generateContent?{query}",
                          host="generativelanguage.googleapis.com", path=f"/v1beta/models/m:generateContent?{query}")
            flows.response(fid, b"{}")
            add([Case(ex, placement) for ex in group], fid)
    # request bodies: one tool result (or user message) per case
    body_placements = ("prose", "tool-json", "json-escaped", "env-named", "env-neutral", "yaml", "toml", "upstream",
                       "tool-read", "gzip-body", "zstd-body")
    for placement in body_placements:
        as_written = placement in ("upstream", "tool-read")
        for group in _groups_of_distinct_secrets(upstream if as_written else secrets, PER_FLOW):
            fid = flows.flow_id()
            messages = []
            for i, ex in enumerate(group):
                text = body_text(ex, placement)
                if placement == "prose":
                    messages.append({"role": "user", "content": text})
                else:
                    messages.append({"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": f"toolu_{i:02d}", "content": text}]})
            body = json.dumps({"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": messages}).encode()
            headers = []
            if placement == "gzip-body":
                body, headers = gzip.compress(body), [("content-encoding", "gzip")]
            elif placement == "zstd-body":
                body, headers = zstandard.ZstdCompressor().compress(body), [("content-encoding", "zstd")]
            flows.request(fid, headers=headers, body=body)
            flows.response(fid, b"{}")
            add([Case(ex, placement) for ex in group], fid)
    # SSE: many content streams per response; whole, and split at the chosen positions. Each secret
    # keeps one stream shape for its whole and split cases, so the two are compared like for like.
    by_shape: dict[str, list[tuple[Example, str, tuple[int, ...]]]] = defaultdict(list)
    for k, ex in enumerate(secrets):
        shape_cases = by_shape[SSE_SHAPES[k % len(SSE_SHAPES)]]
        n = len(ex.secret)
        shape_cases.append((ex, "sse-whole", ()))
        shape_cases += [(ex, "sse-split2", (p,)) for p in split_positions(n, positions)]
        if n > 2:
            shape_cases += [(ex, "sse-split3", (p, p + max(1, (n - p) // 2))) for p in split_positions(n - 1, positions)]
    for shape, shape_cases in by_shape.items():
        for group in _groups(shape_cases, PER_FLOW * 2):
            fid = flows.flow_id()
            events = [b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1"}}\n\n']
            group_cases = []
            for n, (ex, placement, cut) in enumerate(group):
                events += _sse_events(shape, _pieces_for(shape, in_context(ex), ex.secret, cut), n)
                group_cases.append(Case(ex, placement, f"{shape} {cut}"))
            events.append(b'event: message_stop\ndata: {"type":"message_stop"}\n\n')
            body = b"".join(events)
            flows.request(fid, body=b'{"stream": true}')
            flows.response(fid, body, ctype="text/event-stream", chunks=_cuts(body, rng))
            add(group_cases, fid)
    # WebSocket (Codex Responses over one socket): server deltas whole and split, client frames
    ws_cases: list[tuple[Example, str, tuple[int, ...]]] = []
    for ex in secrets:
        ws_cases.append((ex, "ws-whole", ()))
        ws_cases += [(ex, "ws-split", (p,)) for p in split_positions(len(ex.secret), positions)]
        ws_cases.append((ex, "ws-client", ()))
    for group in _groups(ws_cases, PER_FLOW * 2):
        fid = flows.flow_id()
        flows.request(fid, websocket=True, url="https://api.openai.com/v1/responses", host="api.openai.com",
                      path="/v1/responses")
        flows.response(fid, b"", status=101)
        group_cases = []
        frames: list[tuple[dict, bool]] = []
        for n, (ex, placement, cut) in enumerate(group):
            if placement == "ws-client":
                frames.append(({"type": "response.create", "model": "gpt-5", "previous_response_id": "resp_0",
                                "input": [{"type": "function_call_output", "call_id": f"call_{n}",
                                           "output": f"$ cat config\n{in_context(ex)}\n"}]}, True))
            else:
                for piece in _pieces_for("responses-text", in_context(ex), ex.secret, cut):
                    frames.append(({"type": "response.output_text.delta", "item_id": f"msg_{n}",
                                    "output_index": 0, "content_index": 0, "delta": piece}, False))
            group_cases.append(Case(ex, placement, str(cut)))
        frames.append(({"type": "response.completed", "response": {"id": "resp_1", "status": "completed"}}, False))
        for idx, (content, from_client) in enumerate(frames):
            data = json.dumps(content, separators=(",", ":")).encode()
            flows.events.append(("submit", WsMessageEvent(fid, idx, from_client, 1.0, True, data)))
        flows.events.append(("submit", WsEndEvent(fid, 2.0, 1000, True, len(frames))))
        add(group_cases, fid)
    return flows.events, cases


# --- what an attacker reads off the disk --------------------------------------------------------


def _strings(value, out: list[str], depth: int = 0) -> None:
    """Every string in a JSON value; strings that are themselves JSON are opened too."""
    if isinstance(value, str):
        out.append(value)
        s = value.strip()
        if depth < 4 and s[:1] in ("{", "[") and s[-1:] in ("}", "]"):
            try:
                _strings(json.loads(s), out, depth + 1)
            except ValueError:
                pass
    elif isinstance(value, dict):
        for k, v in value.items():
            out.append(str(k))
            _strings(v, out, depth)
    elif isinstance(value, list):
        for v in value:
            _strings(v, out, depth)


def _joined_deltas(events: list) -> list[str]:
    """Deltas of every stream shape, joined per stream (an independent reading, not the redactor's)."""
    streams: dict[tuple, list[str]] = defaultdict(list)
    for ev in events:
        if not isinstance(ev, dict):
            continue
        d = ev.get("delta")
        if isinstance(d, dict):
            for k in ("text", "partial_json", "thinking"):
                if isinstance(d.get(k), str):
                    streams[("a", ev.get("index"), k)].append(d[k])
        elif isinstance(d, str):
            streams[("r", ev.get("type"), ev.get("item_id"))].append(d)
        for ch in ev.get("choices") or []:
            cd = (ch or {}).get("delta") or {}
            for k in ("content", "reasoning_content"):
                if isinstance(cd.get(k), str):
                    streams[("c", k)].append(cd[k])
            for tc in cd.get("tool_calls") or []:
                args = ((tc or {}).get("function") or {}).get("arguments")
                if isinstance(args, str):
                    streams[("t", tc.get("index"))].append(args)
        root = ev.get("response") if isinstance(ev.get("response"), dict) else ev
        for cand in root.get("candidates") or []:
            for part in ((cand or {}).get("content") or {}).get("parts") or []:
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    streams[("g", cand.get("index"))].append(part["text"])
    joined = ["".join(v) for v in streams.values()]
    for text in list(joined):  # tool arguments are JSON once joined: read their strings too
        if text.lstrip()[:1] in ("{", "["):
            try:
                _strings(json.loads(text), joined)
            except ValueError:
                pass
    return joined


def body_views(data: bytes) -> list[str]:
    """A stored body as an attacker reads it: raw, percent-decoded, JSON strings, SSE deltas joined."""
    text = data.decode("utf-8", "replace")
    out = [text, unquote_to_bytes(data).decode("utf-8", "replace")]
    events = []
    if text.lstrip()[:1] in ("{", "["):
        try:
            events.append(json.loads(text))
        except ValueError:
            pass
    for line in text.splitlines():
        if line.startswith("data:"):
            try:
                events.append(json.loads(line[5:]))
            except ValueError:
                pass
    strings: list[str] = []
    for ev in events:
        _strings(ev, strings)
    out += strings
    out += [unquote_to_bytes(s.encode("utf-8", "surrogatepass")).decode("utf-8", "replace") for s in strings if "%" in s]
    out += _joined_deltas(events)
    return out


def flow_views(capture_dir: Path) -> dict[str, str]:
    """flow id -> everything stored for it, decoded every way, as one text."""
    cap = Capture.open(capture_dir)
    views: dict[str, list[str]] = defaultdict(list)
    for flow in cap.flows().to_pylist():
        fid = flow["flow_id"]
        for key, value in flow.items():
            if isinstance(value, str):
                views[fid] += [value, unquote_to_bytes(value.encode()).decode("utf-8", "replace")]
                if value[:1] in ("[", "{"):
                    try:
                        parsed = json.loads(value)
                    except ValueError:
                        continue
                    strings: list[str] = []
                    _strings(parsed, strings)
                    views[fid] += strings + [unquote_to_bytes(s.encode()).decode("utf-8", "replace") for s in strings]
            if key.endswith("body_id") and value is not None:
                views[fid] += body_views(cap.body(value) or b"")
    ws_events: dict[str, list] = defaultdict(list)
    for msg in cap.ws_messages().to_pylist():
        if msg.get("body_id") is None:
            continue
        data = cap.body(msg["body_id"]) or b""
        views[msg["flow_id"]] += body_views(data)
        try:
            ws_events[(msg["flow_id"], msg["from_client"])].append(json.loads(data))
        except ValueError:
            pass
    for (fid, _), events in ws_events.items():
        views[fid] += _joined_deltas(events)
    return {fid: "\n\x00\n".join(v) for fid, v in views.items()}


def _fragments(secret: str) -> list[str]:
    raw = secret.encode("utf-8").decode("latin-1")
    if len(raw) <= FRAGMENT:
        return [raw]
    return [raw[i : i + FRAGMENT] for i in range(len(raw) - FRAGMENT + 1)]


def find_leaks(cases: list[Case], views: dict[str, str]) -> set[int]:
    """Indexes of cases whose secret (or a fragment of it) is in their flow's view.

    A fragment counts only if it identifies one secret: fragments shared by
    several secrets (a common prefix such as `sk-ant-a`) or found in the
    wording the placements put around the secret are not evidence of a leak;
    the whole secret always is, unless it is itself a word of a placeholder kind
    (`password` in `url-password`), which the redaction counts name.
    """
    ordinary: dict[str, set[str]] = defaultdict(set)
    # placeholder kinds and redaction counts name rules (`aws-amazon-bedrock-api-key-short-lived`):
    # their words are the redactor's own text, not a leak
    kinds = " ".join(redaction.KINDS)
    rule_words = {kinds[i : i + FRAGMENT] for i in range(len(kinds) - FRAGMENT + 1)}
    for case in cases:
        text = _ordinary(case.example, case.placement).encode("utf-8").decode("latin-1")
        ordinary[case.example.secret or ""].update(text[i : i + FRAGMENT] for i in range(len(text) - FRAGMENT + 1))
    secrets = sorted({c.example.secret for c in cases if c.example.secret})
    users: dict[str, set[str]] = defaultdict(set)
    for secret in secrets:
        for frag in _fragments(secret):
            users[frag].add(secret)
    automaton = ahocorasick.Automaton()
    patterns: dict[str, set[str]] = defaultdict(set)
    for secret in secrets:
        if secret not in kinds:  # a secret that is a word of a kind (`password`) is seen in every count of it
            patterns[secret.encode("utf-8").decode("latin-1")].add(secret)
        for frag in _fragments(secret):
            if len(users[frag]) == 1 and frag not in ordinary[secret] and frag not in rule_words:
                patterns[frag].add(secret)
    for pattern, who in patterns.items():
        automaton.add_word(pattern, who)
    automaton.make_automaton()
    by_flow: dict[str, list[int]] = defaultdict(list)
    for i, case in enumerate(cases):
        by_flow[case.flow].append(i)
    leaks: set[int] = set()
    for fid, idxs in by_flow.items():
        # a placeholder's kind is the redactor's word (`url-password`), not the secret `password`
        view = _PLACEHOLDER.sub("[REDACTED]", views.get(fid, "")).encode("utf-8", "surrogatepass").decode("latin-1")
        found: set[str] = set()
        for _, who in automaton.iter(view):
            found |= who
        leaks.update(i for i in idxs if cases[i].example.secret in found)
    return leaks


@dataclass
class MatrixRun:
    cases: list[Case]
    leaks: set[int]
    seconds: dict[str, float] = field(default_factory=dict)
    stored_bytes: int = 0


def run_matrix(directory: Path, examples: list[Example] | None = None, positions: int | None = None,
               seed: int = 0) -> MatrixRun:
    """Build every case, write it through the capture writer, finalize, scan the disk."""
    if examples is None:
        examples = load_examples()[1]
    t0 = time.perf_counter()
    events, cases = build_events(examples, positions, seed)
    t1 = time.perf_counter()
    writer = CaptureWriter(directory, KEY, Manifest(capture_id="secret-examples"))
    last = None
    for how, event in events:
        if how == "send":
            writer.send(event)
        else:
            last = writer.submit(event)
    if last is not None:
        last.result(600)
    writer.close()
    finalize(directory)
    t2 = time.perf_counter()
    views = flow_views(directory)
    leaks = find_leaks(cases, views)
    t3 = time.perf_counter()
    stored = sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())
    return MatrixRun(cases, leaks, {"build": t1 - t0, "write": t2 - t1, "scan": t3 - t2}, stored)


def fp_examples(examples: list[Example]) -> list[Example]:
    return [ex for ex in examples if ex.label == "fp"]


def count_false_positives(examples: list[Example]) -> dict[str, tuple[int, int]]:
    """source -> (fps altered by the capture redactor, fps) for the upstream `fps` in a tool result."""
    from ctxtap.redaction import Redactor

    redactor = Redactor(KEY, "fps")
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for ex in fp_examples(examples):
        body = json.dumps({"role": "tool", "content": ex.text}).encode()
        out[ex.source][1] += 1
        if redactor.redact_bytes(body) != body:
            out[ex.source][0] += 1
    return {k: (v[0], v[1]) for k, v in out.items()}


def crc(text: str) -> int:  # stable small ids for reports
    return zlib.crc32(text.encode())


def leaked(secrets: list[str], texts: list[str]) -> set[str]:
    """The secrets any 8-byte fragment of which (the whole, if shorter) occurs in any of `texts`."""
    automaton = ahocorasick.Automaton()
    owners: dict[str, set[str]] = defaultdict(set)
    for secret in secrets:
        for frag in _fragments(secret):
            owners[frag].add(secret)
    for frag, who in owners.items():
        automaton.add_word(frag, who)
    automaton.make_automaton()
    found: set[str] = set()
    for text in texts:
        for _, who in automaton.iter(text.encode("utf-8", "surrogatepass").decode("latin-1")):
            found |= who
    return found
