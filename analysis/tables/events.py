"""`events`: the minimum trace of a run (the trace study's): when a task started, each model call
was asked and answered, each tool was proposed, allowed, started, finished and its result
returned, and when the task ended — one row per event, in order, with the evidence for it.

Three kinds of evidence, in this order of preference for tool timing:
- `client-telemetry`: what the client reported about itself (OTLP to ctxtap's receiver, or
  its vendor telemetry seen by the proxy): tool durations, permission decisions;
- `wire`: what the model traffic shows (request and response times, proposed calls, results);
- `inferred`: derived from the wire — a duration the client wrote inside a result
  (`Wall time: 0.02 seconds`), else only the gap from the call to its result, labelled so.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict

from ctxtap.analysis.tables.base import F64, I64, B, BuildContext, Columns, Row, S, Table

COLUMNS: Columns = [
    ("session_id", S, "Session (the trace)."),
    ("trace_id", S, "Trace id: the session id."),
    ("thread_id", S, "Thread the event belongs to (null for client events that name none)."),
    ("turn_index", I64, "1-based user turn within the session."),
    ("turn_id", S, "The client's own turn id where it sends one (Codex `turn_id`, Claude Code prompt id, "
                   "Gemini `user_prompt_id`), else `<session>:turn:<n>`."),
    ("turn_id_source", S, "`client` or `ctxtap` (numbered by ctxtap)."),
    ("seq", I64, "Monotonic position of the event in its session (0-based, by occurrence time)."),
    ("event", S, "`task_started`, `model_requested`, `model_responded`, `tool_requested`, `permission_decided`, "
                 "`tool_started`, `tool_finished`, `tool_result_returned`, `task_finished`."),
    ("ts", F64, "Unix time the event occurred."),
    ("ts_ingested", F64, "Unix time ctxtap got the evidence (the proxy saw the bytes, or the telemetry arrived)."),
    ("request_id", S, "Model call involved (`requests.request_id`)."),
    ("tool_call_id", S, "Tool call involved (`tool_calls.call_id`)."),
    ("tool_name", S, "Tool name."),
    ("predecessor_seq", I64, "seq of the event this one follows from (a call's request for its response, a tool's "
                             "start for its finish, the proposing response for a tool request...). Causal, not "
                             "temporal: a client that runs a tool while the response still streams (Claude Code) "
                             "reports a tool start earlier than the response end it follows from."),
    ("evidence", S, "`wire`, `client-telemetry` or `inferred`."),
    ("evidence_detail", S, "What exactly: the telemetry event name (`claude_code.tool_result`, "
                           "`tengu_tool_use_success`, `gemini_cli.tool_call`, `codex.tool_result`), "
                           "`result text: Wall time`, "
                           "`call->result gap`, `first request of the turn`, ..."),
    ("duration_ms", F64, "model_responded: the call's duration; tool_finished: the tool's duration by the "
                         "evidence named; permission_decided: how long the decision took, where reported."),
    ("decision", S, "permission_decided: `accept`, `reject`, `auto_accept`, ... as the client names it."),
    ("decision_source", S, "permission_decided: who decided (`config`, `user`, `hook`, ...), where reported."),
    ("success", B, "tool_finished: whether the tool succeeded, where reported."),
    ("telemetry_id", I64, "The telemetry payload that carried the evidence (telemetry.parquet), if any."),
]

_PARSER_ID = re.compile(r"^.+#(\d+)$")
_WALL_TIME = re.compile(r"Wall time:\s*([0-9]+(?:\.[0-9]+)?)\s*(ms|milliseconds|s|sec|seconds)\b", re.I)
_TOOL_EVENTS = {"tool_result", "claude_code.tool_result", "gemini_cli.tool_call", "codex.tool_result",
                "tengu_tool_use_success", "tengu_tool_use_error"}
_DECISION_EVENTS = {"tool_decision", "claude_code.tool_decision", "codex.tool_decision",
                    "tengu_tool_use_can_use_tool_allowed", "tengu_tool_use_can_use_tool_rejected",
                    "tengu_tool_use_rejected_in_prompt"}


def wall_time_ms(text: str | None) -> float | None:
    """A duration the client wrote into a tool result (`Wall time: 0.02 seconds`), in ms."""
    if not text:
        return None
    m = _WALL_TIME.search(text)
    if not m:
        return None
    value = float(m.group(1))
    return value if m.group(2).lower() in ("ms", "milliseconds") else value * 1000


def _num(value: object) -> float | None:
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def _flag(value: object) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    return None


def _telemetry(ctx: BuildContext) -> list[dict]:
    """Decoded tool and decision records of the client's telemetry, flattened to what events need."""
    try:
        table = ctx.capture.telemetry_records()
    except Exception:  # a damaged telemetry file must not stop the analysis
        return []
    received = {}
    try:
        received = {r["telemetry_id"]: r["ts_received"] for r in ctx.capture.telemetry().to_pylist()}
    except Exception:
        pass
    out = []
    for rec in table.to_pylist():
        span = _tool_span(rec, received)
        if span is not None:
            out.append(span)
            continue
        names = {rec.get("name"), rec.get("body")}
        if not names & (_TOOL_EVENTS | _DECISION_EVENTS):
            continue
        try:
            attrs = json.loads(rec.get("attributes") or "{}")
        except ValueError:
            continue
        meta = attrs.get("additional_metadata") if isinstance(attrs.get("additional_metadata"), dict) else {}
        a = {**attrs, **meta}
        name = next(n for n in (rec.get("body"), rec.get("name")) if n in _TOOL_EVENTS | _DECISION_EVENTS)
        out.append({
            "name": name, "kind": "tool" if name in _TOOL_EVENTS else "decision", "ts": rec.get("ts"),
            "ts_ingested": received.get(rec.get("telemetry_id")), "telemetry_id": rec.get("telemetry_id"),
            "call_id": a.get("tool_use_id") or a.get("toolUseID") or a.get("call_id") or a.get("callId"),
            "tool_name": a.get("tool_name") or a.get("toolName") or a.get("function_name"),
            "session": a.get("session.id") or a.get("session_id") or rec.get("trace_id"),
            "prompt_id": a.get("prompt.id") or a.get("prompt_id") or a.get("cc_prompt_id"),
            "duration_ms": _num(a.get("duration_ms") if a.get("duration_ms") is not None else a.get("durationMs")),
            "success": _flag(a.get("success")) if "success" in a else (
                True if name == "tengu_tool_use_success" else False if name == "tengu_tool_use_error" else None),
            "decision": a.get("decision") or a.get("decision_type") or (
                "accept" if name.endswith("_allowed") else "reject" if "reject" in name else None),
            "decision_source": a.get("source") or a.get("decision_source"),
        })
    return out


def _tool_span(rec: dict, received: dict) -> dict | None:
    """A GenAI tool span (`gen_ai.operation.name` `tool_call` / `execute_tool`, Gemini CLI's traces):
    the tool's own start and end."""
    if rec.get("kind") != "span" or rec.get("ts") is None or rec.get("ts_end") is None:
        return None
    try:
        a = json.loads(rec.get("attributes") or "{}")
    except ValueError:
        return None
    if a.get("gen_ai.operation.name") not in ("tool_call", "execute_tool"):
        return None
    status = a.get("otel.status_code")
    return {
        "name": f"span {rec.get('name')}", "kind": "tool", "ts": rec["ts_end"], "span_start": rec["ts"],
        "ts_ingested": received.get(rec.get("telemetry_id")), "telemetry_id": rec.get("telemetry_id"),
        "call_id": a.get("gen_ai.tool.call_id"), "tool_name": a.get("gen_ai.tool.name"),
        "session": a.get("gen_ai.conversation.id"), "prompt_id": None,
        "duration_ms": (rec["ts_end"] - rec["ts"]) * 1000,
        "success": None if status is None else status in ("STATUS_CODE_OK", "OK", 1),
        "decision": None, "decision_source": None,
    }


def _by_index(spans: dict[str, list[dict]], name: str | None, call_id: str, after: float | None) -> list[dict]:
    """A call the parser numbered (`run_shell_command#1`: no id on the wire, Gemini) and the client's
    span for it, whose id ends in the same index (`..._1`): the first such span starting after the call."""
    m = _PARSER_ID.match(call_id or "")
    queue = spans.get(name or "")
    if not m or not queue:
        return []
    for i, t in enumerate(queue):
        if str(t["call_id"] or "").endswith(f"_{m.group(1)}") and (after is None or t["span_start"] >= after - 1):
            return [queue.pop(i)]
    return []


def _result_texts(ctx: BuildContext) -> dict[tuple[str, str], str]:
    index_of = {rec.request_id: i for i, rec in enumerate(ctx.recs)}
    texts: dict[tuple[str, str], tuple[int, str]] = {}
    for occ in ctx.store.occurrences:
        if occ["kind"] != "tool_result" or not occ["call_id"]:
            continue
        first = index_of.get(occ["first_request_id"])
        if first is None:
            continue
        key = (ctx.recs[first].placement.session_id, occ["call_id"])
        if key not in texts or first < texts[key][0]:
            texts[key] = (first, ctx.store.content[occ["content_hash"]]["text"])
    return {k: v[1] for k, v in texts.items()}


class _Session:
    """Events of one session, numbered once all are known (occurrence order)."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.rows: list[Row] = []

    def add(self, event: str, ts: float | None, **fields) -> Row:
        row = {c[0]: None for c in COLUMNS}
        row.update(session_id=self.session_id, trace_id=self.session_id, event=event, ts=ts, **fields)
        if row["ts_ingested"] is None:
            row["ts_ingested"] = ts
        row["_order"] = len(self.rows)
        self.rows.append(row)
        return row


_RANK = {e: i for i, e in enumerate(["task_started", "model_requested", "model_responded", "tool_requested",
                                     "permission_decided", "tool_started", "tool_finished",
                                     "tool_result_returned", "task_finished"])}


def build(ctx: BuildContext) -> list[Row]:
    requests = {r["request_id"]: r for r in ctx.tables["requests"]}
    sessions: dict[str, _Session] = {}
    turn_ids: dict[tuple[str, int], tuple[str, str]] = {}
    responded: dict[str, Row] = {}
    by_turn: dict[tuple[str, int], list] = defaultdict(list)

    def session(sid: str) -> _Session:
        return sessions.setdefault(sid, _Session(sid))

    # --- model calls (wire) ---
    for rec in ctx.recs:
        pl, call = rec.placement, rec.call
        key = (pl.session_id, pl.turn_index)
        if key not in turn_ids and pl.thread_kind in ("main", "subagent", "retry", "flattened"):
            client_turn = call.identity.turn_id
            turn_ids[key] = (client_turn, "client") if client_turn else (
                f"{pl.session_id}:turn:{pl.turn_index}", "ctxtap")
        by_turn[key].append(rec)
    for key, recs in by_turn.items():
        sid, turn = key
        s = session(sid)
        turn_id, turn_source = turn_ids.get(key) or (f"{sid}:turn:{turn}", "ctxtap")
        common = {"turn_index": turn, "turn_id": turn_id, "turn_id_source": turn_source}
        main = [r for r in recs if r.placement.thread_kind != "side"] or recs
        in_main = {r.request_id for r in main}  # by id: `rec in main` compares whole records, O(turn²)
        first = main[0]
        started = s.add("task_started", first.call.ts_start, thread_id=first.placement.thread_id,
                        request_id=first.request_id, evidence="wire",
                        evidence_detail="first request of the turn", **common)
        last_response = None
        for rec in recs:
            call, row = rec.call, requests.get(rec.request_id, {})
            asked = s.add("model_requested", call.ts_start, thread_id=rec.placement.thread_id,
                          request_id=rec.request_id, evidence="wire", evidence_detail="request at the proxy",
                          _pred=started if rec is first else None, **common)
            if call.ts_end is not None:
                answer = s.add("model_responded", call.ts_end, thread_id=rec.placement.thread_id,
                               request_id=rec.request_id, evidence="wire", evidence_detail="response end at the proxy",
                               duration_ms=row.get("duration_ms"), _pred=asked, **common)
                responded[rec.request_id] = answer
                if rec.request_id in in_main:
                    last_response = answer
        if last_response is not None and not requests.get(last_response["request_id"], {}).get("n_tool_calls"):
            s.add("task_finished", last_response["ts"], thread_id=last_response["thread_id"],
                  request_id=last_response["request_id"], evidence="inferred",
                  evidence_detail="last response of the turn proposes no tool call", _pred=last_response, **common)

    # --- tools: wire, then telemetry, else the result text or the gap ---
    telemetry = _telemetry(ctx)
    by_call: dict[str, list[dict]] = defaultdict(list)
    by_name: dict[str, list[dict]] = defaultdict(list)
    # The client's OpenTelemetry first (documented events), then its vendor events (internal names).
    spans: dict[str, list[dict]] = defaultdict(list)
    # Tool spans first (their own start and end), then the client's documented events, then its
    # vendor events (internal names).
    for t in sorted(telemetry, key=lambda t: ("span_start" not in t, t["name"].startswith("tengu_"), t["ts"] or 0)):
        if "span_start" in t:
            spans[t["tool_name"] or ""].append(t)
        if t["call_id"]:
            by_call[t["call_id"]].append(t)
        elif t["tool_name"]:
            by_name[t["tool_name"]].append(t)
    texts = _result_texts(ctx)
    turn_of = {rec.request_id: (rec.placement.turn_index, rec.placement.thread_id) for rec in ctx.recs}
    calls = sorted((r for r in ctx.tables["tool_calls"] if r["request_id"]),
                   key=lambda r: (requests.get(r["request_id"], {}).get("ts_end") or 0, r["call_index"] or 0))
    for tc in calls:
        sid = tc["session_id"]
        s = session(sid)
        turn, thread = turn_of.get(tc["request_id"], (None, tc["thread_id"]))
        turn_id, turn_source = turn_ids.get((sid, turn)) or (f"{sid}:turn:{turn}", "ctxtap")
        common = {"turn_index": turn, "turn_id": turn_id, "turn_id_source": turn_source, "thread_id": thread,
                  "tool_call_id": tc["call_id"], "tool_name": tc["name"]}
        proposing = responded.get(tc["request_id"])
        t_req = proposing["ts"] if proposing else requests.get(tc["request_id"], {}).get("ts_end")
        requested = s.add("tool_requested", t_req, request_id=tc["request_id"], evidence="wire",
                          evidence_detail="tool call in the response", _pred=proposing, **common)
        result_req = requests.get(tc["result_request_id"]) if tc["result_request_id"] else None
        t_result = result_req["ts_start"] if result_req else None
        found = by_call.pop(tc["call_id"], None)
        if not found:
            found = _by_index(spans, tc["name"], tc["call_id"], t_req)
            if found:  # the same run's event without an id (gemini_cli.tool_call) is spoken for
                claimed = _claim_nearest(by_name, tc["name"], found[0]["ts"])
                found += [claimed] if claimed else []
            else:
                found = _by_name(by_name, tc["name"], t_req)
        decision = next((t for t in found if t["kind"] == "decision"), None)
        tool = next((t for t in found if t["kind"] == "tool" and t["duration_ms"] is not None), None)
        pred = requested
        if decision is not None:
            pred = s.add("permission_decided", decision["ts"], ts_ingested=decision["ts_ingested"],
                         evidence="client-telemetry", evidence_detail=decision["name"],
                         decision=decision["decision"], decision_source=decision["decision_source"],
                         telemetry_id=decision["telemetry_id"], _pred=pred, **common)
        elif (told := next((t for t in found if t["kind"] == "tool" and t["decision"]), None)) is not None:
            pred = s.add("permission_decided", None, ts_ingested=told["ts_ingested"], evidence="client-telemetry",
                         evidence_detail=told["name"], decision=told["decision"],
                         decision_source=told["decision_source"], telemetry_id=told["telemetry_id"], _pred=pred,
                         **common)
        finished = None
        if tool is not None and tool["ts"] is not None:
            start = tool.get("span_start") or tool["ts"] - tool["duration_ms"] / 1000
            if pred["event"] == "permission_decided" and pred["ts"] is None:
                pred["ts"] = start
            began = s.add("tool_started", start, ts_ingested=tool["ts_ingested"], evidence="client-telemetry",
                          evidence_detail=tool["name"], telemetry_id=tool["telemetry_id"], _pred=pred, **common)
            finished = s.add("tool_finished", tool["ts"], ts_ingested=tool["ts_ingested"],
                             evidence="client-telemetry", evidence_detail=tool["name"],
                             duration_ms=tool["duration_ms"], success=tool["success"],
                             telemetry_id=tool["telemetry_id"], _pred=began, **common)
        elif t_req is not None and t_result is not None:
            wall = wall_time_ms(texts.get((sid, tc["call_id"])))
            began = s.add("tool_started", t_req, evidence="inferred",
                          evidence_detail="tool call received (the client starts it at once at the earliest)",
                          _pred=pred, **common)
            if wall is not None:
                finished = s.add("tool_finished", t_req + wall / 1000, ts_ingested=t_result, evidence="inferred",
                                 evidence_detail="result text: Wall time", duration_ms=wall,
                                 success=tc["result_status"] == "ok" if tc["result_status"] else None,
                                 _pred=began, **common)
            else:
                finished = s.add("tool_finished", t_result, evidence="inferred", evidence_detail="call->result gap",
                                 duration_ms=(t_result - t_req) * 1000,
                                 success=tc["result_status"] == "ok" if tc["result_status"] else None,
                                 _pred=began, **common)
        if result_req is not None:
            s.add("tool_result_returned", t_result, request_id=tc["result_request_id"], evidence="wire",
                  evidence_detail="result in the next request", _pred=finished or pred, **common)

    rows: list[Row] = []
    for s in sessions.values():
        ordered = sorted(s.rows, key=lambda r: (r["ts"] is None, r["ts"] or 0, _RANK[r["event"]], r["_order"]))
        for seq, row in enumerate(ordered):
            row["seq"] = seq
        for row in ordered:
            pred = row.pop("_pred", None)
            row["predecessor_seq"] = pred["seq"] if pred is not None else None
            row.pop("_order", None)
            rows.append(row)
    return rows


def _claim_nearest(by_name: dict[str, list[dict]], name: str | None, ts: float) -> dict | None:
    """Take the id-less record of this tool nearest to `ts` (within 2 s) out of the queue."""
    queue = by_name.get(name or "")
    if not queue:
        return None
    best = min(range(len(queue)), key=lambda i: abs((queue[i]["ts"] or 0) - ts))
    return queue.pop(best) if abs((queue[best]["ts"] or 0) - ts) <= 2 else None


def _by_name(by_name: dict[str, list[dict]], name: str | None, after: float | None) -> list[dict]:
    """Telemetry without call ids (Gemini CLI): the next unclaimed record of the tool's name after the call."""
    queue = by_name.get(name or "")
    if not queue:
        return []
    for i, t in enumerate(queue):
        if after is None or t["ts"] is None or t["ts"] >= after - 1:
            return [queue.pop(i)]
    return []


TABLE = Table("events", "the run's minimum trace: task, model and tool events with their evidence", COLUMNS, build)
