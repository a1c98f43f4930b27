"""Execution replay: re-send a recorded thread to a provider, optionally with a changed layout.

Each request is the stored raw body rebuilt by its protocol's serialiser (`Protocol.serialise`)
with edits at the blocks' position paths, so every byte not edited (key order, `cache_control`,
thinking signatures) is the recorded one. Tool results are the recorded ones: nothing runs.
Credentials come from the environment only (the capture holds none). A body that still holds a
redaction placeholder is refused unless the caller allows placeholders, so a secret is never
reconstructed and a placeholder is never sent by accident.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from ctxtap.analysis.blocks.volatile import PATTERNS
from ctxtap.analysis.cache import cachediag
from ctxtap.analysis.parsing.canonical import loads
from ctxtap.analysis.protocols import registry
from ctxtap.analysis.protocols.editing import (
    DropBlock,
    Edit,
    EditError,
    MoveBlock,
    ReplaceText,
    SetCacheBreakpoint,
    rebuild,
)
from ctxtap.redaction.placeholder import PLACEHOLDER_RE
from ctxtap.replay.cassette import Block, Cassette, Recorded
from ctxtap.wire.families import Provider, ws_terminal_types
from ctxtap.wire.families import provider as provider_facts

DROP_HEADERS = {"authorization", "x-api-key", "x-goog-api-key", "cookie", "proxy-authorization", "host",
                "content-length", "transfer-encoding", "content-encoding", "accept-encoding", "connection",
                "upgrade", "sec-websocket-key", "sec-websocket-version", "sec-websocket-extensions"}
TIME_KINDS = ("timestamp", "date", "time")
TEXT_KINDS = ("instruction_text", "message_text", "tool_result", "text")


class SendError(Exception):
    """The sequence cannot be re-sent as asked; the message says why and what to do."""


@dataclass
class Transforms:
    strip_timestamps: bool = False
    move_dynamic_after_breakpoint: bool = False
    sort_tools: bool = False
    drop_blocks: list[str] = field(default_factory=list)
    breakpoints: list[int] = field(default_factory=list)

    def names(self) -> list[str]:
        out = [n for n, on in (("strip-timestamps", self.strip_timestamps),
                               ("move-dynamic-after-breakpoint", self.move_dynamic_after_breakpoint),
                               ("sort-tools", self.sort_tools)) if on]
        out += [f"drop-block {p}" for p in self.drop_blocks] + [f"breakpoint {p}" for p in self.breakpoints]
        return out


@dataclass
class Planned:
    call: Recorded
    body: bytes
    edits: list[Edit]
    notes: list[str]
    placeholders: int
    tokens_estimated: int

    def describe(self) -> str:
        return self.call.describe()


_LABEL_ONLY = re.compile(r"^[\w\s'’()-]{0,40}[:=]\s*$")


def _remove_times(line: str) -> str:
    for kind, pattern in PATTERNS:
        if kind in TIME_KINDS:
            line = pattern.sub("", line)
    return line


def strip_times(text: str) -> str:
    """`text` without its dates and times: a line that only announces one ("Current time: ...") goes
    whole, so the text is what it was before the client started stamping it; elsewhere the value goes."""
    out = []
    for line in text.splitlines(keepends=True):
        stripped = _remove_times(line)
        if stripped != line and _LABEL_ONLY.match(stripped.rstrip("\n")):
            continue
        out.append(stripped)
    return "".join(out)


def _array_of(path: str) -> tuple[str, int] | None:
    """("system", 2) for "system[2]": the array a block is an element of, and its index."""
    if not path.endswith("]") or "[" not in path:
        return None
    head, _, index = path[:-1].rpartition("[")
    return (head, int(index)) if index.isdigit() else None


def _dynamic_paths(calls: list[Recorded]) -> set[str]:
    """Paths whose block changes from one request of the thread to the next."""
    seen: dict[str, set[str]] = {}
    for call in calls:
        for block in call.blocks:
            seen.setdefault(block.path, set()).add(block.content_hash)
    return {path for path, hashes in seen.items() if len(hashes) > 1}


def edits_for(call: Recorded, transforms: Transforms, dynamic: set[str]) -> tuple[list[Edit], list[str]]:
    """The edits the transforms ask of one request, and notes on what could not be applied."""
    edits: list[Edit] = []
    notes: list[str] = []
    blocks = call.blocks
    if transforms.strip_timestamps:
        for block in blocks:
            if block.kind in TEXT_KINDS and strip_times(block.text) != block.text:
                edits.append(ReplaceText(path=block.path, text=strip_times(block.text)))
    if transforms.sort_tools:
        tools = [b for b in blocks if b.kind == "tool_definition" and _array_of(b.path)]
        order = sorted(tools, key=lambda b: _tool_name(b))
        for target, block in enumerate(order):
            if block.path != tools[target].path:
                edits.append(MoveBlock(path=block.path, to=target))
    if transforms.move_dynamic_after_breakpoint:
        edits += _move_dynamic(blocks, dynamic, notes)
    for path in transforms.drop_blocks:
        edits.append(DropBlock(path=path))
    for pos in transforms.breakpoints:
        if 0 <= pos < len(blocks):
            edits.append(SetCacheBreakpoint(path=blocks[pos].path))
        else:
            notes.append(f"no block at position {pos} (the request has {len(blocks)}): breakpoint not set")
    return edits, notes


def _tool_name(block: Block) -> str:
    import json

    try:
        obj = json.loads(block.text)
    except ValueError:
        return block.text
    if isinstance(obj, dict):
        name = obj.get("name") or (obj.get("function") or {}).get("name")
        if isinstance(name, str):
            return name
    return block.text


def _move_dynamic(blocks: list[Block], dynamic: set[str], notes: list[str]) -> list[Edit]:
    """Blocks that change between requests, placed before the last breakpoint of their array, go after it."""
    edits: list[Edit] = []
    by_array: dict[str, list[tuple[int, Block]]] = {}
    for block in blocks:
        where = _array_of(block.path)
        if where:
            by_array.setdefault(where[0], []).append((where[1], block))
    for array, members in by_array.items():
        marks = [i for i, b in members if b.breakpoint]
        if not marks:
            continue
        last_mark, size = max(marks), max(i for i, _ in members) + 1
        movers = [b for i, b in members if i < last_mark and b.path in dynamic and b.kind in TEXT_KINDS]
        for block in movers:
            edits.append(MoveBlock(path=block.path, to=size - 1))
        if movers:
            notes.append(f"moved {len(movers)} changing block(s) of {array} after its last cache breakpoint")
    return edits


def plan(cassette: Cassette, calls: list[Recorded], transforms: Transforms) -> list[Planned]:
    """Each recorded request rebuilt with the transforms' edits (nothing is sent)."""
    dynamic = _dynamic_paths(calls) if transforms.move_dynamic_after_breakpoint else set()
    out: list[Planned] = []
    for call in calls:
        protocol = registry.get(call.api)
        if protocol is None:
            raise SendError(f"{call.describe()}: no serialiser for the {call.api} API")
        edits, notes = edits_for(call, transforms, dynamic)
        try:
            body = protocol.serialise(call.request_body, edits)
        except EditError as exc:
            raise SendError(f"{call.describe()}: cannot apply the transforms: {exc}") from None
        placeholders = len(PLACEHOLDER_RE.findall(body))
        out.append(Planned(call, body, edits, notes, placeholders, len(body) // 4))
    return out


def credentials(provider: str, upstream: str, environ: dict[str, str] | None = None) -> list[tuple[str, str]]:
    """The auth header for the provider from the environment; none for a loopback upstream without a key."""
    env = os.environ if environ is None else environ
    known = provider_facts(provider) or Provider(provider or "")
    names, header, template = known.credential_env, known.credential_header, known.credential_template
    for name in names:
        if env.get(name):
            return [(header, template.format(env[name]))]
    if urlsplit(upstream).hostname in ("127.0.0.1", "localhost", "::1"):
        return []
    wanted = " or ".join(names) or "the provider's API key variable"
    raise SendError(f"no credentials for {provider}: set {wanted} in the environment (the capture holds none, "
                    f"by design)")


def request_headers(recorded: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The recorded headers minus credentials, transfer framing and anything redacted."""
    return [(k, v) for k, v in recorded if k.lower() not in DROP_HEADERS and "REDACTED:" not in v]


def ask_diagnostics(call: Recorded, body: bytes, headers: list[tuple[str, str]],
                    baseline: str | None) -> tuple[bytes, list[tuple[str, str]]]:
    """The body (and headers) asking the provider why its cache missed against `baseline`, the new
    response id of the thread's previous request (`--diagnostics`); every other byte as recorded.
    Anthropic's beta header goes along where its docs still ask for it."""
    try:
        asked = cachediag.asking(call.api, loads(body), baseline)
    except ValueError:
        return body, headers
    if asked is None:
        return body, headers
    try:
        body = rebuild(body, asked)
    except EditError:
        return body, headers
    return body, cachediag.beta_header(headers) if call.api == "messages" else headers


def _response_id(call: Recorded, content_type: str | None, raw: bytes) -> str | None:
    """The id the provider gave its answer (the next request's diagnostics baseline)."""
    from ctxtap.wire.sse import is_sse_response

    protocol = registry.get(call.api)
    if protocol is None or not raw:
        return None
    try:
        return protocol.parse_response(raw, is_sse_response(content_type, raw), call.endpoint).response_id
    except Exception:  # a body the parser cannot read leaves the next request without a baseline
        return None


@dataclass
class SendResult:
    planned: Planned
    status: int | None  # HTTP status; 200 for a WebSocket turn that completed
    error: str | None = None


def _send_ws_turns(items: list[Planned], *, proxy_url: str, ca_file: str, headers: list[tuple[str, str]],
                   echo: Callable[[str], None], diagnostics: bool = False) -> list[SendResult]:
    """One recorded WebSocket's turns on one new socket, each continuation re-pointed at the new answer it
    continues (the provider never saw the recorded response ids)."""
    import json

    from ctxtap.modelserver.client import WsClient

    call = items[0].call
    ws = WsClient(f"wss://{call.host}{call.path}", headers=headers, proxy=proxy_url, ca_file=ca_file, timeout=300)
    new_ids: dict[str, str] = {}
    results: list[SendResult] = []
    try:
        ws.connect()
        for item in items:
            body = item.body
            previous = item.call.previous_response_id
            if previous and previous in new_ids:
                body = body.replace(previous.encode(), new_ids[previous].encode())
            if diagnostics:
                body, _ = ask_diagnostics(item.call, body, [], new_ids.get(results[-1].planned.call.response_id or "")
                                          if results else None)
            ws.send_text(body.decode("utf-8"))
            while True:
                event = json.loads(ws.recv_text())
                kind = event.get("type") if isinstance(event, dict) else None
                if kind in ws_terminal_types():
                    break
            rid = (event.get("response") or {}).get("id")
            if item.call.response_id and isinstance(rid, str):
                new_ids[item.call.response_id] = rid
            ok = kind == "response.completed"
            results.append(SendResult(item, 200 if ok else 400, None if ok else json.dumps(event)[:300]))
            echo(f"sent {item.describe()}: {kind}")
    except (OSError, ValueError) as exc:
        done = {id(r.planned) for r in results}
        results += [SendResult(i, None, str(exc)) for i in items if id(i) not in done]
        echo(f"WebSocket of {call.describe()} failed: {exc}")
    finally:
        ws.close()
    return results


def send_all(planned: list[Planned], *, proxy_url: str, ca_file: str, headers_of: Callable[[Recorded], list],
             auth: list[tuple[str, str]], echo: Callable[[str], None], diagnostics: bool = False,
             thread_of: Callable[[Recorded], str] | None = None) -> list[SendResult]:
    """Send the planned requests in order through the recording proxy; read each answer to its end.
    With `diagnostics`, each request asks the provider to compare it with its thread's previous
    answer (`thread_of` names a request's thread; default: all one thread)."""
    from ctxtap.modelserver.client import HttpClient

    results: list[SendResult] = []
    clients: dict[str, HttpClient] = {}
    sockets_done: set[str] = set()
    answered: dict[str, str] = {}  # thread -> the new response id of its last answered request
    try:
        for item in planned:
            call = item.call
            if call.websocket:
                if call.flow_id not in sockets_done:
                    sockets_done.add(call.flow_id)
                    turns = [p for p in planned if p.call.flow_id == call.flow_id]
                    results += _send_ws_turns(turns, proxy_url=proxy_url, ca_file=ca_file,
                                              headers=headers_of(call) + auth, echo=echo, diagnostics=diagnostics)
                continue
            client = clients.setdefault(call.host, HttpClient(f"https://{call.host}", proxy=proxy_url,
                                                               ca_file=ca_file, timeout=300))
            thread = thread_of(call) if thread_of else ""
            body, headers = item.body, headers_of(call)
            if diagnostics:
                body, headers = ask_diagnostics(call, body, headers, answered.get(thread))
            try:
                resp = client.request(call.method, call.path, body, headers + auth)
                raw = resp.body()
                if diagnostics and resp.status == 200:
                    new_id = _response_id(call, resp.header("content-type"), raw)
                    if new_id:
                        answered[thread] = new_id
                results.append(SendResult(item, resp.status))
                echo(f"sent {item.describe()}: HTTP {resp.status}")
            except OSError as exc:
                client.close()
                results.append(SendResult(item, None, str(exc)))
                echo(f"sent {item.describe()}: failed ({exc})")
    finally:
        for client in clients.values():
            client.close()
    return results


def _answered(row: dict) -> bool:
    """Answered: HTTP 200, or a WebSocket turn (on its 101 socket) that did not end in an error."""
    return row["status"] == 200 or (row["status"] == 101 and row["error_code"] is None)


def select(cassette: Cassette, source: Path, thread_id: str | None, session_id: str | None,
           request: str | None = None) -> tuple[list[Recorded], str]:
    """The recorded calls of one thread (default: the main thread with most requests), of a session (its id
    or a unique start of one), or one request (`request`: its number, `#N` or `SESSION#N`, or its id or a
    unique start of one, as `analysis.requestref` reads them), in order; only answered requests (a 429
    and its retry are one request)."""
    from ctxtap.analysis.build import ensure_analysis
    from ctxtap.analysis.db import connect, fetch_rows
    from ctxtap.analysis.threads.requestref import RefError, resolve_request, resolve_session

    ensure_analysis(source)
    con = connect([source])
    rows = fetch_rows(con, "SELECT request_id, flow_id, ws_index, thread_id, thread_kind, session_id, seq_in_session, "
                           "seq_in_thread, request_number, status, error_code FROM requests "
                           "ORDER BY seq_in_session, ts_start")
    try:
        if request:
            ref = resolve_request(con, cassette.capture_id, request, session_id)
        elif session_id:
            session_id = resolve_session(con, cassette.capture_id, session_id)
    except RefError as exc:
        raise SendError(str(exc)) from None
    if request:
        chosen = [r for r in rows if r["request_id"] == ref.request_id]
        label = f"request #{ref.request_number} of session {ref.session_id}"
        if chosen and not _answered(chosen[0]):
            raise SendError(f"{label} was not answered (HTTP {chosen[0]['status']}): nothing to re-send")
    elif session_id:
        chosen = [r for r in rows if r["session_id"] == session_id]
        label = f"session {session_id}"
    else:
        if thread_id is None:
            counts: dict[str, int] = {}
            for r in rows:
                if r["thread_kind"] == "main" and _answered(r):
                    counts[r["thread_id"]] = counts.get(r["thread_id"], 0) + 1
            if not counts:
                raise SendError("the capture has no answered main-thread requests to re-send")
            thread_id = max(counts, key=lambda t: counts[t])
        chosen = [r for r in rows if r["thread_id"] == thread_id]
        label = f"thread {thread_id}"
    if not chosen:
        raise SendError(f"no requests in {label}: list them with `ctxtap sql {source} \"SELECT DISTINCT thread_id, "
                        f"session_id FROM requests\"`")
    by_key = {c.key: c for c in cassette.calls}
    calls: list[Recorded] = []
    for r in chosen:
        if not _answered(r):
            continue
        key = r["flow_id"] if r["ws_index"] is None else f"{r['flow_id']}#{r['ws_index']}"
        call = by_key.get(key)
        if call is None:
            continue
        calls.append(call)
    if not calls:
        raise SendError(f"{label} has no answered requests to re-send")
    sockets = {c.flow_id for c in calls if c.websocket}
    if sockets:
        # a WebSocket's turns form one response chain (a warm-up included): re-send the socket's
        # answered turns from its first, so every continuation names a response the provider gave
        answered = {(r["flow_id"], r["ws_index"]) for r in rows if _answered(r)}
        last = {f: max(c.order for c in calls if c.flow_id == f) for f in sockets}
        chained = [c for c in cassette.calls if c.websocket and c.flow_id in sockets and c.order <= last[c.flow_id]
                   and (c.flow_id, int(c.key.split("#", 1)[1])) in answered]
        calls = sorted({c.key: c for c in [*calls, *chained]}.values(), key=lambda c: c.order)
    return calls, label
