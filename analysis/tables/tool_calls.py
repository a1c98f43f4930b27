"""`tool_calls`: every call the model proposed, linked to its result, with repeats and its carried cost."""

from __future__ import annotations

import json
from collections.abc import Callable

from ctxtap.analysis.blocks.blockstore import BlockStore
from ctxtap.analysis.protocols.registry import replayed_call
from ctxtap.analysis.tables.base import F64, I64, B, BuildContext, CallRec, Columns, Row, S, Table
from ctxtap.analysis.threads.toolcheck import check_call, offered_schemas
from ctxtap.analysis.threads.toolloop import (
    ResultReading,
    canonical_arguments,
    read_result,
    shell_command,
    split_compound,
)

COLUMNS: Columns = [
    ("session_id", S, "Session."),
    ("thread_id", S, "Thread."),
    ("request_id", S, "Request whose response proposed the call (null for an orphan result)."),
    ("call_id", S, "Call id."),
    ("name", S, "Tool name."),
    ("kind", S, "`function`, `custom` (free-form input), `server`, `other`."),
    ("arguments", S, "Arguments as sent (JSON text, or free-form input), redacted."),
    ("call_index", I64, "Position among the response's calls."),
    ("parallel_group_size", I64, "Number of calls in the same response."),
    ("command", S, "Shell command, for shell-like tools."),
    ("is_compound", B, "The shell command chains several commands (`&&`, `||`, `;`, `|`)."),
    ("n_subcommands", I64, "Commands chained in the shell command."),
    ("result_request_id", S, "First later request that carried the result."),
    ("result_status", S, "`ok`, `error`, `denied`, `truncated` (ok but cut), `unknown` (empty, no signal) or `missing` (no result ever sent)."),
    ("status_rule", S, "Rule that decided result_status (`result.exit-code-line`, `result.json-success`, `result.client-error-flag`, ...)."),
    ("check_status", S, "The call checked against the tools its own request offered, then by its result: `unknown_tool` (a tool that request never offered), `invalid_arguments` (the arguments fail the offered tool's JSON Schema), `denied`, `timed_out` (the result says so), `error`, `ok`, `no_result` (none sent, or empty without a signal), `unchecked` (the request's input could not be resolved); null for an orphan result. The `tool_calls` view refines it from the client's telemetry: a rejected permission makes it `denied`, a reported failure turns `ok` into `error`."),
    ("check_detail", S, "Why, for `unknown_tool` (the tools offered), `invalid_arguments` (the failing argument path and the validator's message), `timed_out`, `no_result`, and the telemetry event behind a refined status."),
    ("exit_code", I64, "Exit code the result states (JSON field or `Exit Code: N` line), if any."),
    ("truncated", B, "The result says it was cut (a marker such as `[... N bytes omitted]`, `output truncated`); also set on errors."),
    ("truncation_rule", S, "Marker rule that found the cut (`truncation.omitted-of`, `truncation.n-omitted`, `truncation.n-truncated`, `truncation.too-large`, `truncation.marker`)."),
    ("truncation_region", S, "Where the cut is: `head` (start dropped), `middle` (head and tail kept), `tail` (end dropped)."),
    ("omitted_amount", I64, "How much was left out, as the client states it (null when not stated)."),
    ("original_amount", I64, "The original size, as the client states it (null when not stated)."),
    ("amount_unit", S, "Unit of omitted_amount/original_amount: `bytes`, `chars`, `lines`, `tokens`."),
    ("result_bytes", I64, "Size of the result text."),
    ("result_tokens", I64, "Token estimate of the result."),
    ("gap_ms", F64, "From the end of the proposing response to the start of the request carrying the result."),
    ("turn_index", I64, "User turn of the proposing request (requests.turn_index)."),
    ("concurrent", B, "Ran at the same time as another call of the session: true/false only where the client's telemetry timed both (the `tool_calls` view fills it from `events`); null otherwise (proposed together is parallel_group_size, not proof of overlap)."),
    ("repeat_of", S, "call_id of an earlier identical call (same name, canonicalised arguments) in the same user turn; a re-read after a new user turn is not a repeat."),
    ("stuck_on_error", B, "A repeat of a call whose result was an error."),
    ("attempt_of", S, "For a retry after an error: call_id of the first attempt (same name and arguments, same turn)."),
    ("attempt", I64, "1 for a first attempt; 2, 3, ... for retries after an error result."),
    ("carried_requests", I64, "Later requests in the thread that carried the result (its lifetime)."),
    ("carried_tokens", I64, "result_tokens x carried_requests."),
    ("carried_cost_usd", F64, "What carrying the result cost, at each carrying request's blended input price."),
    ("orphan", S, "`call` (never answered), `result` (a result whose call was never seen), or null."),
]


_READINGS: dict[tuple[str, bool | None], ResultReading] = {}
_MAX_READINGS = 65_536


def _reading(result: dict) -> ResultReading:
    """`read_result`, remembered by the result's content hash: a live view rebuilds this table after
    every update, and reading each result's text again was a third of a rebuild."""
    key = (result["hash"], result["is_error"])
    reading = _READINGS.get(key)
    if reading is None:
        if len(_READINGS) >= _MAX_READINGS:
            _READINGS.clear()
        reading = _READINGS[key] = read_result(result["text"], result["is_error"])
    return reading


def build(ctx: BuildContext) -> list[Row]:
    return _tool_call_rows(ctx.recs, ctx.store, ctx.content_tokens, ctx.tables["requests"], ctx.redact_text)


def _tool_call_rows(recs: list[CallRec], store: BlockStore, content_tokens: list[int], requests: list[dict],
                    redact_text: Callable[[str], str]) -> list[dict]:
    index_of = {rec.request_id: i for i, rec in enumerate(recs)}
    # carried: for every occurrence, how many requests carried it and their summed input rate
    n_occ = len(store.occurrences)
    carry = [0] * (n_occ + 1)
    carry_rate = [0.0] * (n_occ + 1)
    for rec, row in zip(recs, requests, strict=True):
        rate = _blended_rate(row)
        for _s, n, o in rec.blocks.runs:
            carry[o] += 1
            carry[o + n] -= 1
            carry_rate[o] += rate or 0.0
            carry_rate[o + n] -= rate or 0.0
    running, running_rate = 0, 0.0
    carried = [0] * n_occ
    carried_rate = [0.0] * n_occ
    for o in range(n_occ):
        running += carry[o]
        running_rate += carry_rate[o]
        carried[o], carried_rate[o] = running, running_rate
    # results by (session, call_id): first request carrying it, text, error flag, carry totals
    results: dict[tuple[str, str], dict] = {}
    for occ in store.occurrences:
        if occ["kind"] != "tool_result" or not occ["call_id"]:
            continue
        first = index_of.get(occ["first_request_id"])
        if first is None:
            continue
        key = (recs[first].placement.session_id, occ["call_id"])
        tokens_ = content_tokens[store.content_index[occ["content_hash"]]]
        entry = results.get(key)
        if entry is None or first < entry["first"]:
            entry = results[key] = {
                "first": first, "text": store.content[occ["content_hash"]]["text"], "is_error": occ["is_error"],
                "hash": occ["content_hash"],
                "tokens": tokens_, "bytes": store.content[occ["content_hash"]]["bytes"],
                "carried": 0, "carried_rate": 0.0, "thread": recs[first].placement.thread_id,
            }
        entry["carried"] += carried[occ["occurrence_id"]]
        entry["carried_rate"] += carried_rate[occ["occurrence_id"]] * tokens_
    replayed = _replayed_calls(recs, store, index_of)
    rows = []
    seen_calls: set[tuple[str, str]] = set()
    identical: dict[tuple, dict] = {}
    attempts: dict[tuple, dict] = {}
    for i, rec in enumerate(recs):
        turn = requests[i].get("turn_index")
        call, pl = rec.call, rec.placement
        calls = call.response.tool_calls
        offered = offered_schemas(call, rec.blocks, store) if calls else {}
        for tc in calls:
            key = (pl.session_id, tc.call_id)
            seen_calls.add(key)
            result = results.get(key)
            if result is None:
                # The provider gave no id (Gemini): the client made one up and used it on the
                # replayed call and on its result. Find the replay by name and arguments.
                client_id = _client_call_id(replayed, pl.session_id, tc.name, tc.arguments, i)
                if client_id is not None:
                    seen_calls.add((pl.session_id, client_id))
                    result = results.get((pl.session_id, client_id))
            command = shell_command(tc.name, tc.arguments)
            parts = split_compound(command) if command else []
            reading = _reading(result) if result else None
            gap_ms = None
            if result is not None and call.ts_end:
                gap_ms = (recs[result["first"]].call.ts_start - call.ts_end) * 1000
            signature = (pl.session_id, turn, tc.name, canonical_arguments(tc.arguments))
            earlier = identical.get(signature)
            previous = attempts.get(signature)  # the latest call with this signature
            retry = previous is not None and previous["result_status"] == "error"
            row = {
                "session_id": pl.session_id, "thread_id": pl.thread_id, "request_id": rec.request_id,
                "call_id": tc.call_id, "name": tc.name, "kind": tc.kind,
                "arguments": redact_text(tc.arguments), "call_index": tc.index,
                "parallel_group_size": len(calls), "command": redact_text(command) if command else None,
                "is_compound": len(parts) > 1 if command else None,
                "n_subcommands": len(parts) if command else None,
                "result_request_id": recs[result["first"]].request_id if result else None,
                **_reading_columns(reading),
                **dict(zip(("check_status", "check_detail"), check_call(
                    tc, call, offered, store, reading.status if reading else "missing",
                    result["text"] if result else None), strict=True)),
                "result_bytes": result["bytes"] if result else None,
                "result_tokens": result["tokens"] if result else None,
                "gap_ms": gap_ms,
                "turn_index": turn, "concurrent": None,
                "repeat_of": earlier["call_id"] if earlier else None,
                "stuck_on_error": bool(earlier and earlier["result_status"] == "error"),
                "attempt_of": (previous["attempt_of"] or previous["call_id"]) if retry else None,
                "attempt": previous["attempt"] + 1 if retry else 1,
                "carried_requests": result["carried"] if result else 0,
                "carried_tokens": result["carried"] * result["tokens"] if result else 0,
                "carried_cost_usd": result["carried_rate"] if result and result["carried_rate"] else None,
                "orphan": None if result else "call",
            }
            if earlier is None:
                identical[signature] = row
            attempts[signature] = row
            rows.append(row)
    for (session_id, call_id), result in results.items():
        if (session_id, call_id) in seen_calls:
            continue
        if _has_history_call(store, call_id):
            continue  # proposed before the capture started: its call replays in history
        rows.append({
            "session_id": session_id, "thread_id": result["thread"], "request_id": None, "call_id": call_id,
            "name": None, "kind": None, "arguments": None, "call_index": None, "parallel_group_size": None,
            "command": None, "is_compound": None, "n_subcommands": None,
            "result_request_id": recs[result["first"]].request_id,
            **_reading_columns(_reading(result)),
            "check_status": None, "check_detail": None,
            "turn_index": requests[result["first"]].get("turn_index"), "concurrent": None,
            "attempt_of": None, "attempt": 1,
            "result_bytes": result["bytes"], "result_tokens": result["tokens"], "gap_ms": None,
            "repeat_of": None, "stuck_on_error": False, "carried_requests": result["carried"],
            "carried_tokens": result["carried"] * result["tokens"],
            "carried_cost_usd": result["carried_rate"] or None, "orphan": "result",
        })
    return rows


def _reading_columns(reading) -> dict:
    if reading is None:
        return {"result_status": "missing", "status_rule": "result.none-sent", "exit_code": None, "truncated": None,
                "truncation_rule": None, "truncation_region": None, "omitted_amount": None, "original_amount": None,
                "amount_unit": None}
    return {"result_status": reading.status, "status_rule": reading.rule, "exit_code": reading.exit_code,
            "truncated": reading.truncated, "truncation_rule": reading.truncation_rule,
            "truncation_region": reading.truncation_region, "omitted_amount": reading.omitted_amount,
            "original_amount": reading.original_amount, "amount_unit": reading.amount_unit}


def _call_arguments(text: str) -> str | None:
    """Canonical arguments of a replayed tool-call block, whichever protocol's shape it has."""
    try:
        wire = json.loads(text)
    except ValueError:
        return None
    call = replayed_call(wire)
    if call is None:
        return None
    value = call.arguments
    return canonical_arguments(value if isinstance(value, str) else json.dumps(value))


def _replayed_calls(recs: list[CallRec], store: BlockStore, index_of: dict[str, int]) -> dict:
    """(session, tool name) -> [(first request index, call id, canonical arguments)] of replayed calls."""
    out: dict[tuple[str, str], list[tuple[int, str, str | None]]] = {}
    for occ in store.occurrences:
        if occ["kind"] != "tool_call" or not occ["call_id"] or not occ["tool_name"]:
            continue
        first = index_of.get(occ["first_request_id"])
        if first is None:
            continue
        args = _call_arguments(store.content[occ["content_hash"]]["text"])
        out.setdefault((recs[first].placement.session_id, occ["tool_name"]), []).append((first, occ["call_id"], args))
    return out


def _client_call_id(replayed: dict, session: str, name: str, arguments: str, after: int) -> str | None:
    wanted = canonical_arguments(arguments)
    for first, call_id, args in sorted(replayed.get((session, name), [])):
        if first > after and args == wanted:
            return call_id
    return None


def _has_history_call(store: BlockStore, call_id: str) -> bool:
    return call_id in store.tool_call_ids


def _blended_rate(row: dict) -> float | None:
    """USD per input token actually paid by a request (cache discounts included)."""
    cost, reported = row.get("cost_usd"), row.get("input_tokens_reported")
    if cost is None or not reported:
        return None
    output = row.get("output_tokens") or 0
    return max(0.0, cost) / (reported + output) if reported + output else None


TABLE = Table("tool_calls", "every call the model proposed, linked to its result", COLUMNS, build)
