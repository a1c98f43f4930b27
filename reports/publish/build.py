"""Turn one capture into per-client attachment data: block order and wording, nothing personal.

What an attachment covers (the `ctxtap publish --help` text says the same):

* every thread of the client (main loop, subagents), in order of first request;
  each request lists all its blocks in observed order (path, kind, role, the
  six attributes, size), each pointing at a content entry; the first request
  of a thread brings every content, later requests mark what is `new` (not at
  the same position in the thread's previous request) and the Markdown shows
  only those. A later request lists only the blocks that differ from the
  previous request's block at the same position, each as a row of
  `block_fields`; the rest are `carried`, as ranges of positions (`[[0, 118]]`),
  and `full_blocks` rebuilds the whole list as records. An agent resends its history with every call: listing every block of
  every request made a 489-request attachment 46 MB;
* side requests (titles, warmups, probes, compaction) listed separately, in full;
* per request: endpoint, model, purpose, usage, the request headers (first
  request of a thread in full, later ones only what changed), the body's other
  fields (same rule) and the analyzer's divergence summary.

Contents are content-addressed within the attachment (`c1`, `c2`...; never the
analyzer's hashes, which are hashes of the unredacted text). Every string is
credential-redacted and pseudonymised before it gets here; structured values
(tool definitions, calls, body fields) are pseudonymised as JSON text before
being parsed, so `"device_id": "..."` keeps the context that identifies it.
"""

from __future__ import annotations

import json
import operator
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from ctxtap.analysis.blocks.sequences import shared_prefix
from ctxtap.analysis.db import fetch_rows
from ctxtap.analysis.protocols.registry import content_fields, replayed_call
from ctxtap.capture.store import Capture

FORMAT = "ctxtap-attachment/2"  # 2: later requests list changed blocks, `carried` ranges the rest
# Transport headers that say nothing about context assembly.
DROPPED_HEADERS = frozenset(
    {"content-length", "connection", "sec-websocket-key", "sec-websocket-accept", "transfer-encoding",
     "keep-alive", "te", "upgrade"}
)
_SCHEMA_KEYS = ("input_schema", "parameters", "inputSchema", "format", "schema", "parametersJsonSchema")
_OPAQUE_RE = re.compile(r"[A-Za-z0-9+/=_-]{256,}")
_BLOCK_COLUMNS = (
    "request_id", "position", "path", "kind", "wire_type", "role", "source", "authority", "scope",
    "lifetime", "content_type", "content_hash", "bytes", "tokens_estimated", "cache_breakpoint",
    "tool_name", "call_id", "is_error",
)
_REQUEST_COLUMNS = (
    "request_id", "flow_id", "ws_index", "session_id", "thread_id", "thread_kind", "seq_in_thread",
    "turn_index", "ts_start", "duration_ms", "client", "client_version", "provider", "api", "transport",
    "endpoint", "model", "purpose", "purpose_rule", "status", "error_code", "input_tokens_reported",
    "cache_read_tokens", "cache_write_tokens", "output_tokens", "input_tokens_estimated", "n_blocks",
    "n_tools", "stop_reason", "n_tool_calls",
)


@dataclass(frozen=True)
class BuildOptions:
    elide_tool_results: bool = False
    structure_only: bool = False
    schemas: bool = False


@dataclass
class CaptureData:
    """What the attachment is built from, read once (raw: nothing pseudonymised yet)."""

    requests: list[dict[str, Any]]
    blocks: dict[str, list[dict[str, Any]]]
    texts: dict[str, str]
    flows: dict[str, dict[str, Any]]
    ws_bodies: dict[tuple[str, int], bytes]
    divergence: dict[str, dict[str, Any]]
    capture: Capture

    def clients(self) -> list[str]:
        return sorted({r["client"] or "unknown" for r in self.requests})

    def request_body(self, request: dict[str, Any]) -> bytes | None:
        if request.get("ws_index") is not None:
            return self.ws_bodies.get((request["flow_id"], int(request["ws_index"])))
        flow = self.flows.get(request["flow_id"])
        return self.capture.body(flow["request_body_id"]) if flow else None

    def request_headers(self, request: dict[str, Any]) -> list[tuple[str, str]]:
        flow = self.flows.get(request["flow_id"])
        if not flow:
            return []
        return [(str(k), str(v)) for k, v in json.loads(flow["request_headers"] or "[]")]

    def raw_strings(self) -> Iterable[str]:
        """Everything an attachment may quote, for learning who the user is before rewriting."""
        yield from self.texts.values()
        for flow in self.flows.values():
            yield flow.get("url") or ""
        previous = ""
        for request in self.requests:
            body = self.request_body(request)
            if body:
                text = body.decode("utf-8", "replace")
                # An agent resends its history: what a body shares with the one before was read then
                # (less a margin, so a value cut by the boundary is read whole).
                shared = shared_prefix(previous, text)
                yield text[max(0, shared - _LEARN_MARGIN):]
                previous = text
            yield request.get("session_id") or ""


_rows = fetch_rows
_LEARN_MARGIN = 512  # longer than any value the identity rules learn (a home path, a prompt, a host)


def _columns(con: duckdb.DuckDBPyConnection, view: str, wanted: Iterable[str]) -> str:
    have = {row[0] for row in con.execute(f"DESCRIBE {view}").fetchall()}
    return ", ".join(c if c in have else f"NULL AS {c}" for c in wanted)


def load_capture(capture_dir: Path, con: duckdb.DuckDBPyConnection) -> CaptureData:
    """Requests, blocks, texts, headers and bodies of one analysed capture."""
    requests = _rows(con, f"SELECT {_columns(con, 'requests', _REQUEST_COLUMNS)} FROM requests "
                          "ORDER BY ts_start, request_id")
    blocks: dict[str, list[dict[str, Any]]] = {}
    for row in _rows(con, f"SELECT {_columns(con, 'blocks', _BLOCK_COLUMNS)} FROM blocks "
                          "ORDER BY request_id, position"):
        blocks.setdefault(row["request_id"], []).append(row)
    try:  # a block's sections (several sources in one block), in order
        for rid, position, source, label, nbytes, tokens in con.execute(
                "SELECT request_id, position, source, label, bytes, tokens_estimated FROM segments "
                "WHERE occurrence_id IN (SELECT occurrence_id FROM t_block_segments GROUP BY occurrence_id "
                "HAVING count(*) > 1) ORDER BY request_id, position, segment_index").fetchall():
            for b in blocks.get(rid, []):
                if b["position"] == position:
                    b.setdefault("segments", []).append(
                        {"source": source, "label": label or None, "bytes": nbytes, "tokens_estimated": tokens})
    except duckdb.Error:
        pass  # an analysis from before segments
    texts = {h: t or "" for h, t in con.execute("SELECT content_hash, text FROM t_block_content").fetchall()}
    divergence: dict[str, dict[str, Any]] = {}
    try:
        for row in _rows(con, "SELECT request_id, divergence_kind, divergence_summary, first_divergent_path, "
                              "cache_status, miss_cause FROM prefix"):
            divergence[row["request_id"]] = row
    except duckdb.Error:
        pass  # an analysis without the prefix view: no divergence summaries
    capture = Capture.open(capture_dir)
    flows = {f["flow_id"]: f for f in capture.flows().to_pylist()}
    wanted = {(r["flow_id"], int(r["ws_index"])) for r in requests if r.get("ws_index") is not None}
    ws_bodies: dict[tuple[str, int], bytes] = {}
    if wanted:
        for msg in capture.ws_messages().to_pylist():
            key = (msg["flow_id"], int(msg["idx"]))
            if key in wanted:
                ws_bodies[key] = capture.body(msg["body_id"]) or b""
    return CaptureData(requests, blocks, texts, flows, ws_bodies, divergence, capture)


# --- the cleaning functions the builder is given ------------------------------------------------


@dataclass
class Cleaner:
    """Credential redaction then pseudonymisation, for text and for JSON given as text."""

    text_fn: Callable[[str], str]
    json_text_fn: Callable[[str], str]
    headers_fn: Callable[[list[tuple[str, str]]], list[tuple[str, str]]]
    session_fn: Callable[[str], str]

    def text(self, value: str | None) -> str:
        if not value:
            return value or ""
        if _OPAQUE_RE.fullmatch(value.strip()):
            return f"(opaque: {len(value)} bytes)"
        return _strip_opaque(self.text_fn(value))

    def json(self, raw: str) -> Any:
        """Parse JSON text after cleaning it as text (keys keep their context); None if not JSON."""
        try:
            json.loads(raw)
        except (ValueError, TypeError):
            return None
        cleaned = self.json_text_fn(raw)
        try:
            value = json.loads(cleaned)
        except ValueError:
            return None
        return _strip_opaque(value)


def _strip_opaque(value: Any) -> Any:
    """Opaque blobs reduced to their size; lone surrogates (from `\\ud800` escapes) made printable."""
    if isinstance(value, str):
        value = value.encode("utf-8", "replace").decode("utf-8")
        return _OPAQUE_RE.sub(lambda m: f"(opaque: {len(m.group())} bytes)", value)
    if isinstance(value, list):
        return [_strip_opaque(v) for v in value]
    if isinstance(value, dict):
        return {_strip_opaque(k): _strip_opaque(v) for k, v in value.items()}
    return value


# --- contents -------------------------------------------------------------------------------------


def tool_entry(obj: Any, schemas: bool, fallback_name: str | None = None) -> dict[str, Any]:
    """A tool definition as name, description, optional schema, flags and nested tools."""
    if not isinstance(obj, dict):
        return {"name": fallback_name, "text": obj if isinstance(obj, str) else json.dumps(obj)}
    fn = obj["function"] if isinstance(obj.get("function"), dict) else obj
    entry: dict[str, Any] = {"name": fn.get("name") or obj.get("name") or fallback_name}
    if isinstance(obj.get("type"), str) and obj["type"] != "function":
        entry["type"] = obj["type"]
    if "description" in fn:
        entry["description"] = fn.get("description")
    flags = {k: v for src in (obj, fn) for k, v in src.items()
             if k not in ("name", "description", "type", "function", "tools", "functionDeclarations",
                          *_SCHEMA_KEYS) and isinstance(v, str | int | float | bool)}
    if flags:
        entry["flags"] = flags
    found = {k: fn[k] for k in _SCHEMA_KEYS if k in fn}
    if found:
        if schemas:
            entry["schema"] = found if len(found) > 1 else next(iter(found.values()))
        else:
            entry["schema_omitted"] = sorted(found)
    nested = fn.get("tools") if isinstance(fn.get("tools"), list) else fn.get("functionDeclarations")
    if isinstance(nested, list):
        entry["tools"] = [tool_entry(t, schemas) for t in nested]
    return entry


def call_entry(obj: Any, tool_name: str | None, call_id: str | None) -> dict[str, Any]:
    """A tool call as name, call id and arguments (parsed when they are JSON text)."""
    if not isinstance(obj, dict):
        return {"name": tool_name, "call_id": call_id, "arguments": obj}
    call = replayed_call(obj)
    arguments: Any = call.arguments if call is not None else None
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments)
            if isinstance(parsed, dict | list):
                arguments = parsed
        except ValueError:
            pass
    entry = {"name": (call.name if call else None) or obj.get("name") or tool_name, "call_id": call_id,
             "arguments": arguments}
    if obj.get("type"):
        entry["type"] = obj["type"]
    return entry


def shape_of(value: Any) -> Any:
    """Arguments with every value replaced by its type and size (`--structure-only`)."""
    if isinstance(value, dict):
        return {k: shape_of(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shape_of(v) for v in value]
    if isinstance(value, str):
        return f"(string: {len(value)} chars)"
    if value is None:
        return None
    return f"({type(value).__name__})"


def result_entry(text: str, is_error: Any, options: BuildOptions) -> dict[str, Any]:
    entry: dict[str, Any] = {"is_error": bool(is_error)} if is_error is not None else {}
    if options.elide_tool_results or options.structure_only:
        entry["elided"] = {"bytes": len(text.encode("utf-8", "surrogatepass")), "lines": text.count("\n") + 1}
    else:
        entry["text"] = text
    return entry


# --- the attachment -------------------------------------------------------------------------------


@dataclass
class AttachmentBuilder:
    """Builds one client's attachment dict from `CaptureData`, using `cleaner` on every string."""

    data: CaptureData
    cleaner: Cleaner
    options: BuildOptions
    contents: dict[str, dict[str, Any]] = field(default_factory=dict)
    _content_ids: dict[tuple[str, str | None, str | None], str] = field(default_factory=dict)
    _headers_cache: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    _fields_cache: dict[str, dict[str, Any]] = field(default_factory=dict)
    _keys: dict[str, dict[int, tuple]] = field(default_factory=dict)  # the previous request's block keys

    def build(self, client: str) -> dict[str, Any]:
        requests = [r for r in self.data.requests if (r["client"] or "unknown") == client]
        t0 = min((r["ts_start"] or 0.0 for r in requests), default=0.0)
        threads: dict[str, list[dict[str, Any]]] = {}
        for r in requests:
            threads.setdefault(r["thread_id"] or "", []).append(r)
        out_threads, side = [], []
        order = {r["request_id"]: i for i, r in enumerate(requests, 1)}  # `n`: chronological within the client
        for thread_id, rows in threads.items():
            rows.sort(key=lambda r: (r["seq_in_thread"] or 0, r["ts_start"] or 0.0))
            kind = rows[0]["thread_kind"] or "main"
            entries = []
            previous: dict[str, Any] | None = None
            for r in rows:
                full = kind == "side" or previous is None
                entries.append(self._request(r, order[r["request_id"]], t0, previous, full))
                previous = r
            record = {"thread": self.cleaner.session_fn(thread_id), "session": self.cleaner.session_fn(
                rows[0]["session_id"] or ""), "kind": kind, "requests": entries}
            (side if kind == "side" else out_threads).append(record)
        versions = sorted({r["client_version"] for r in requests if r["client_version"]})
        return {
            "format": FORMAT,
            "client": client,
            "client_versions": versions,
            "apis": sorted({r["api"] for r in requests if r["api"]}),
            "models": sorted({r["model"] for r in requests if r["model"]}),
            "options": {"elide_tool_results": self.options.elide_tool_results,
                        "structure_only": self.options.structure_only, "schemas": self.options.schemas},
            "summary": {
                "sessions": len({r["session_id"] for r in requests}),
                "threads": len(out_threads),
                "requests": len(requests),
                "side_requests": sum(len(t["requests"]) for t in side),
            },
            "block_fields": list(BLOCK_FIELDS),
            "threads": out_threads,
            "side_requests": side,
            "contents": self.contents,
        }

    # --- one request --------------------------------------------------------------------------

    def _request(self, r: dict[str, Any], n: int, t0: float, previous: dict[str, Any] | None,
                 full: bool) -> dict[str, Any]:
        blocks = self.data.blocks.get(r["request_id"], [])
        before = {b["position"]: b["content_hash"] for b in self.data.blocks.get(previous["request_id"], [])} \
            if previous is not None else {}
        entry: dict[str, Any] = {
            "n": n,
            "seq_in_thread": r["seq_in_thread"],
            "turn": r["turn_index"],
            "t_offset_ms": round(((r["ts_start"] or t0) - t0) * 1000, 1),
            "duration_ms": _round(r["duration_ms"]),
            "purpose": r["purpose"],
            "purpose_rule": r["purpose_rule"],
            "api": r["api"],
            "endpoint": r["endpoint"],
            "transport": r["transport"],
            "model": r["model"],
            "status": r["status"],
            "usage": {k: r[k] for k in ("input_tokens_reported", "cache_read_tokens", "cache_write_tokens",
                                        "output_tokens", "input_tokens_estimated")},
            "stop_reason": r["stop_reason"],
            "n_tool_calls": r["n_tool_calls"],
            "n_blocks": len(blocks),
            "n_new_blocks": sum(1 for b in blocks if before.get(b["position"]) != b["content_hash"]),
            "in_full": full,
        }
        if r["error_code"]:
            entry["error_code"] = r["error_code"]
        flow = self.data.flows.get(r["flow_id"]) or {}
        entry["request_line"] = self.cleaner.text(f"{flow.get('method') or ''} {flow.get('url') or ''}".strip())
        div = self.data.divergence.get(r["request_id"])
        if div and previous is not None:
            entry["divergence"] = {
                "kind": div.get("divergence_kind"),
                "first_path": div.get("first_divergent_path"),
                "summary": self.cleaner.text(div.get("divergence_summary")) or None,
                "cache_status": div.get("cache_status"),
                "miss_cause": div.get("miss_cause"),
            }
        entry["headers"] = self._headers(r, previous, full)
        entry["parameters"] = self._parameters(r, previous, full)
        keys = [_block_key(b) for b in blocks]
        same = {} if full or previous is None else self._keys.get(previous["request_id"], {})
        carried = [b["position"] for b, key in zip(blocks, keys, strict=True) if same.get(b["position"]) == key]
        self._keys = {r["request_id"]: {b["position"]: key for b, key in zip(blocks, keys, strict=True)}}
        kept = set(carried)
        entry["blocks"] = [_row(self._block(b, before)) for b in blocks if b["position"] not in kept]
        entry["carried"] = ranges_of(carried)
        return entry

    def _clean_headers(self, r: dict[str, Any]) -> list[tuple[str, str]]:
        flow_id = r["flow_id"]
        if flow_id not in self._headers_cache:
            self._headers_cache[flow_id] = [
                (_strip_opaque(k), _strip_opaque(v)) for k, v in self.cleaner.headers_fn(self.data.request_headers(r))
                if k.lower() not in DROPPED_HEADERS
            ]
        return self._headers_cache[flow_id]

    def _headers(self, r: dict[str, Any], previous: dict[str, Any] | None, full: bool) -> dict[str, Any]:
        now = self._clean_headers(r)
        if full or previous is None:
            return {"all": [list(h) for h in now]}
        if previous["flow_id"] == r["flow_id"]:
            return {"same_connection": True}
        before = self._clean_headers(previous)
        changed = [list(h) for h in now if h not in before]
        removed = sorted({k for k, _ in before} - {k for k, _ in now})
        return {"changed": changed, "removed": removed}

    def _body_fields(self, r: dict[str, Any]) -> dict[str, Any]:
        cached = self._fields_cache.get(r["request_id"])
        if cached is not None:
            return cached
        fields: dict[str, Any] = {}
        body = self.data.request_body(r)
        if body:
            try:
                raw = json.loads(body)
            except ValueError:
                raw = None
            if isinstance(raw, dict):
                # Only the non-content fields are cleaned (and counted): the blocks are cleaned as blocks.
                blocks = content_fields()  # request-body fields that hold the blocks, for every protocol
                others = json.dumps({k: v for k, v in raw.items() if k not in blocks}, ensure_ascii=False)
                parsed = self.cleaner.json(others)
                fields = parsed if isinstance(parsed, dict) else {}
        self._fields_cache[r["request_id"]] = fields
        return fields

    def _parameters(self, r: dict[str, Any], previous: dict[str, Any] | None, full: bool) -> dict[str, Any]:
        now = self._body_fields(r)
        if full or previous is None:
            return {"all": now}
        before = self._body_fields(previous)
        return {
            "changed": {k: v for k, v in now.items() if before.get(k, object()) != v},
            "removed": sorted(set(before) - set(now)),
        }

    def _block(self, b: dict[str, Any], before: dict[int, str]) -> dict[str, Any]:
        """One block's record (a carried one is the previous request's record, left out)."""
        entry: dict[str, Any] = {
            "position": b["position"],
            "path": b["path"],
            "kind": b["kind"],
            "wire_type": b["wire_type"],
            "role": b["role"],
            "source": b["source"],
            "authority": b["authority"],
            "scope": b["scope"],
            "lifetime": b["lifetime"],
            "content_type": b["content_type"],
            "bytes": b["bytes"],
            "tokens_estimated": b["tokens_estimated"],
            "new": before.get(b["position"]) != b["content_hash"],
        }
        if b.get("segments"):  # sources inside the block, in order (sizes of the original text)
            entry["segments"] = [{k: (self.cleaner.text(v) if k == "label" and v else v) for k, v in g.items()
                                  if v is not None} for g in b["segments"]]
        if b["cache_breakpoint"]:
            entry["cache_breakpoint"] = b["cache_breakpoint"]
        if b["tool_name"]:
            entry["tool_name"] = self.cleaner.text(b["tool_name"])
        if b["call_id"]:
            entry["call_id"] = self.cleaner.text(b["call_id"])
        entry["content"] = self._content(b)
        return entry

    def _content(self, b: dict[str, Any]) -> str:
        key = (b["content_hash"], b["tool_name"], b["call_id"])
        cid = self._content_ids.get(key)
        if cid is not None:
            return cid
        cid = f"c{len(self._content_ids) + 1}"
        self._content_ids[key] = cid
        self.contents[cid] = self._make_content(b)
        return cid

    def _make_content(self, b: dict[str, Any]) -> dict[str, Any]:
        raw = self.data.texts.get(b["content_hash"], "")
        kind = b["kind"]
        tool_name = self.cleaner.text(b["tool_name"]) if b["tool_name"] else None
        call_id = self.cleaner.text(b["call_id"]) if b["call_id"] else None
        if kind == "tool_definition":
            parsed = self.cleaner.json(raw)
            tool = tool_entry(parsed if parsed is not None else self.cleaner.text(raw), self.options.schemas,
                              tool_name)
            if self.options.structure_only:
                tool = {k: v for k, v in tool.items() if k in ("name", "type", "tools", "schema_omitted")}
            return {"kind": kind, "tool": tool}
        if kind == "tool_call":
            parsed = self.cleaner.json(raw)
            call = call_entry(parsed if parsed is not None else self.cleaner.text(raw), tool_name, call_id)
            if self.options.structure_only:
                call["arguments"] = shape_of(call["arguments"])
            return {"kind": kind, "call": call}
        if kind == "tool_result":
            return {"kind": kind, "result": result_entry(self.cleaner.text(raw), b["is_error"], self.options)}
        return {"kind": kind, "text": self.cleaner.text(raw)}


def _round(value: Any) -> Any:
    return round(value, 1) if isinstance(value, float) else value


_KEY_COLUMNS = operator.itemgetter(*(c for c in _BLOCK_COLUMNS if c != "request_id"))


def _block_key(b: dict[str, Any]) -> tuple:
    """What a block's record is made of: equal keys at one position give equal records (compared,
    never hashed: segments stay lists)."""
    return (*_KEY_COLUMNS(b), b.get("segments"))


def ranges_of(positions: list[int]) -> list[list[int]]:
    """Sorted positions as inclusive ranges: [0, 1, 2, 5] -> [[0, 2], [5, 5]]."""
    out: list[list[int]] = []
    for p in sorted(positions):
        if out and p == out[-1][1] + 1:
            out[-1][1] = p
        else:
            out.append([p, p])
    return out


# A block is written as a row of these fields (`block_fields` in the attachment), not as an object:
# the names repeated in every record were 45 % of the blocks' bytes. Absent optional fields are null.
BLOCK_FIELDS = ("position", "path", "kind", "wire_type", "role", "source", "authority", "scope", "lifetime",
                "content_type", "bytes", "tokens_estimated", "new", "segments", "cache_breakpoint", "tool_name",
                "call_id", "content")
_OPTIONAL = frozenset({"segments", "cache_breakpoint", "tool_name", "call_id"})


def _row(record: dict[str, Any]) -> list[Any]:
    return [record.get(f) for f in BLOCK_FIELDS]


def block_records(req: dict[str, Any], fields: list[str] | tuple[str, ...] = BLOCK_FIELDS) -> list[dict[str, Any]]:
    """A request's listed blocks as records (optional fields left out where null)."""
    return [{f: v for f, v in zip(fields, row, strict=True) if v is not None or f not in _OPTIONAL}
            for row in req["blocks"]]


def full_blocks(thread: dict[str, Any], fields: list[str] | tuple[str, ...] = BLOCK_FIELDS) -> list[list[dict[str, Any]]]:
    """Every request's whole block list as records, in observed order, rebuilt from an attachment's
    thread (`fields`: the attachment's `block_fields`): carried positions take the previous request's
    record (marked not new)."""
    out: list[list[dict[str, Any]]] = []
    previous: dict[int, dict[str, Any]] = {}
    for req in thread["requests"]:
        current = {b["position"]: b for b in block_records(req, fields)}
        for first, last in req.get("carried", []):
            for p in range(first, last + 1):
                current[p] = {**previous[p], "new": False}
        blocks = [current[p] for p in sorted(current)]
        out.append(blocks)
        previous = current
    return out
