"""The Evidence section's events timeline: per session, the `events` view drawn in a model lane
and tool lanes, each bar coloured by the evidence behind its times, and the session's row of
`process_efficiency` beside it. Reads the views only; a session with too many events to draw
shows its first ones and says which `ctxtap sql` query lists the rest."""

from __future__ import annotations

from collections.abc import Sequence

import duckdb
from markupsafe import Markup

from ctxtap.reports.html import palette
from ctxtap.reports.html.budget import sql_command, sql_str
from ctxtap.reports.html.formatting import compact, duration_ms
from ctxtap.reports.html.model import CaptureInfo, EventsView, LeftOut, Row, fetch
from ctxtap.reports.html.svg import Frame, Scale, esc, f, legend_html, nice_ticks, open_svg, x_axis

MAX_DRAWN = 400  # model calls and tool runs drawn per session; the rest are listed by a query
MAX_DRAWN_BUDGETED = 100  # the same when the report is within a size budget (huge captures)
EVIDENCE_COLOURS = {"client-telemetry": palette.GREEN, "inferred": palette.GREY, "wire": palette.BLUE}


def build_events(con: duckdb.DuckDBPyConnection, cap: CaptureInfo, limit: int = MAX_DRAWN) -> dict[str, EventsView]:
    """session_id -> its events timeline and efficiency figures (sessions without events are absent);
    at most `limit` model calls and tool runs are drawn per session."""
    try:
        counts = fetch(con, "SELECT session_id, evidence, count(*) AS n FROM events GROUP BY ALL ORDER BY ALL")
    except duckdb.Error:  # a dataset built before the events table existed
        return {}
    efficiency = {r["session_id"]: r for r in fetch(con, "SELECT * FROM process_efficiency")}
    by_session: dict[str, dict[str, int]] = {}
    for r in counts:
        by_session.setdefault(r["session_id"], {})[r["evidence"]] = r["n"]
    out: dict[str, EventsView] = {}
    for sid, evidence in by_session.items():
        rows = fetch(con, "SELECT * FROM events WHERE session_id = ? ORDER BY seq", [sid])
        tools = _tool_runs(rows)
        models = _model_calls(rows)
        left_out = None
        if len(tools) > limit or len(models) > limit:
            gone = max(len(tools), len(models)) - limit
            left_out = LeftOut(gone, f"after the first {limit}", "the session's end", sql_command(
                cap.path, f"SELECT * FROM events WHERE session_id = {sql_str(sid)} ORDER BY seq"))
        tool_finished = [r for r in rows if r["event"] == "tool_finished"]
        out[sid] = EventsView(
            svg=events_chart(models[:limit], tools[:limit], sid),
            evidence=evidence, n_events=len(rows), efficiency=efficiency.get(sid, {}),
            tool_rows=tool_finished[:20], n_tool_rows=len(tool_finished), left_out=left_out,
            decisions=[r for r in rows if r["event"] == "permission_decided"][:20],
        )
    return out


def _model_calls(rows: Sequence[Row]) -> list[tuple[float, float, str]]:
    asked = {r["request_id"]: r for r in rows if r["event"] == "model_requested"}
    calls = []
    for r in rows:
        if r["event"] == "model_responded" and r["request_id"] in asked and r["ts"] is not None:
            calls.append((asked[r["request_id"]]["ts"], r["ts"], r["request_id"]))
    return calls


def _tool_runs(rows: Sequence[Row]) -> list[Row]:
    """One run per tool call: start, finish, evidence, and the decision where there was one."""
    runs: dict[str, Row] = {}
    for r in rows:
        key = r["tool_call_id"]
        if not key:
            continue
        run = runs.setdefault(key, {"tool_call_id": key, "tool_name": r["tool_name"], "start": None, "end": None,
                                    "evidence": None, "evidence_detail": None, "decision": None,
                                    "duration_ms": None, "success": None})
        if r["event"] == "tool_started":
            run["start"] = r["ts"]
        elif r["event"] == "tool_finished":
            run.update(end=r["ts"], evidence=r["evidence"], evidence_detail=r["evidence_detail"],
                       duration_ms=r["duration_ms"], success=r["success"])
        elif r["event"] == "permission_decided":
            run["decision"] = r["decision"]
    return [r for r in runs.values() if r["start"] is not None and r["end"] is not None]


def events_chart(models: Sequence[tuple[float, float, str]], tools: Sequence[Row], label: str) -> Markup:
    """Model calls on one lane, tool runs on lanes below (overlapping runs take the next lane),
    tool bars coloured by the evidence of their times."""
    times = [t for a, b, _ in models for t in (a, b)] + [t for r in tools for t in (r["start"], r["end"])]
    if not times:
        return Markup("")
    t0, t1 = min(times), max(times)
    lanes: list[float] = []  # the end of the last run on each lane
    placed = []
    for run in sorted(tools, key=lambda r: r["start"]):
        lane = next((i for i, end in enumerate(lanes) if end <= run["start"]), None)
        if lane is None:
            lanes.append(run["end"])
            lane = len(lanes) - 1
        else:
            lanes[lane] = run["end"]
        placed.append((min(lane, 7), run))
    n_lanes = min(max(len(lanes), 1), 8)
    lane_h = 16
    frame = Frame(height=40 + 26 + n_lanes * lane_h + 30, top=12, left=110)
    span = max(t1 - t0, 0.001)
    x = Scale(0, span, frame.x0, frame.x1)
    out = [open_svg(frame, f"Events timeline: {label}")]
    out.append(x_axis(frame, x, nice_ticks(0, span, 8), "seconds since the session's first event",
                      fmt=lambda v: compact(v)))
    model_y = frame.y1 + 4
    out.append(f'<text class="lane" x="{f(frame.x0 - 6)}" y="{f(model_y + 12)}" text-anchor="end">model calls</text>')
    titles = []
    d = []
    for a, b, rid in models:
        xa, xb = x(a - t0), x(b - t0)
        d.append(f"M{f(xa)},{f(model_y)}h{f(max(xb - xa, 1.0))}v16h{f(-max(xb - xa, 1.0))}z")
        titles.append((xa, max(xb - xa, 2.0), model_y, f"model call {rid}: {duration_ms((b - a) * 1000)}"))
    out.append(f'<path fill="{palette.MAIN}" d="{"".join(d)}"/>')
    lane0 = model_y + 26
    for k in range(n_lanes):
        out.append(f'<text class="lane" x="{f(frame.x0 - 6)}" y="{f(lane0 + k * lane_h + 11)}" text-anchor="end">'
                   f'{"tools" if k == 0 else f"tools #{k + 1}"}</text>')
    by_colour: dict[str, list[str]] = {}
    for lane, run in placed:
        xa, xb = x(run["start"] - t0), x(run["end"] - t0)
        yy = lane0 + lane * lane_h
        w = max(xb - xa, 1.5)
        colour = EVIDENCE_COLOURS.get(run["evidence"] or "inferred", palette.GREY)
        by_colour.setdefault(colour, []).append(f"M{f(xa)},{f(yy)}h{f(w)}v{lane_h - 4}h{f(-w)}z")
        titles.append((xa, max(w, 2.0), yy,
                       f"{run['tool_name']} {run['tool_call_id']}: {duration_ms(run['duration_ms'])} "
                       f"({run['evidence']}: {run['evidence_detail']})"
                       + (f", {run['decision']}" if run["decision"] else "")
                       + ("" if run["success"] is None else ", ok" if run["success"] else ", failed")))
    for colour, parts in by_colour.items():
        out.append(f'<path fill="{colour}" d="{"".join(parts)}"/>')
    out.append('<g class="hover">')
    for a, w, yy, title in titles:
        out.append(f'<rect x="{f(a)}" y="{f(yy)}" width="{f(w)}" height="16"><title>{esc(title)}</title></rect>')
    out.append("</g></svg>")
    legend = [(palette.MAIN, "model call (request → response end)", "box"),
              (palette.GREEN, "tool run timed by the client's telemetry", "box"),
              (palette.GREY, "tool run inferred (a time in the result, or only the call → result gap)", "box")]
    return Markup("".join(out)) + legend_html(legend)
