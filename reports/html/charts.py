"""The report's charts as server-side SVG: token growth, cache, tool-loop timeline, comparisons.

Bars of one series are one <path> (a sub-path per bar), so a 1000-request
thread costs a few paths, not thousands of elements; each request gets one
transparent hover column whose <title> says the numbers in words. A thread too
long for that is drawn from its `thread_bins` rows (`bin_size` requests per
column, means per request) and the timeline from `timeline_bins` rows; the
charts say so in their titles.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from markupsafe import Markup

from ctxtap.reports.html import palette
from ctxtap.reports.html.formatting import compact, duration_ms, num, seconds, size
from ctxtap.reports.html.svg import (
    Frame,
    Scale,
    esc,
    f,
    int_ticks,
    legend_html,
    nice_max,
    nice_ticks,
    open_svg,
    polyline,
    x_axis,
    y_axis,
)

Row = Mapping[str, Any]
MAX_TITLE_SOURCES = 6


def _bar_path(bars: Sequence[tuple[float, float, float, float]]) -> str:
    """One path for many rectangles (x, y_top, width, height)."""
    return "".join(f"M{f(x)},{f(y)}h{f(w)}v{f(h)}h{f(-w)}z" for x, y, w, h in bars if h > 0.05)


def _band(n: int, frame: Frame) -> tuple[Scale, float]:
    x = Scale(0.5, n + 0.5, frame.x0, frame.x1)
    step = (frame.x1 - frame.x0) / max(n, 1)
    return x, max(step * (0.8 if step > 4 else 1.0), 0.6)


def _hover_columns(n: int, x: Scale, frame: Frame, titles: Sequence[str]) -> str:
    step = (frame.x1 - frame.x0) / max(n, 1)
    out = ['<g class="hover">']
    for i, title in enumerate(titles):
        out.append(f'<rect x="{f(x(i + 1) - step / 2)}" y="{f(frame.y1)}" width="{f(step)}" '
                   f'height="{f(frame.y0 - frame.y1)}"><title>{esc(title)}</title></rect>')
    out.append("</g>")
    return "".join(out)


# --- token growth -------------------------------------------------------------------------------


def _binned_title(title: str, bin_size: int, n_requests: int) -> str:
    return title if bin_size <= 1 else f"{title} (binned: one column per {bin_size} requests of {n_requests:,})"


def _bin_span(b: Row) -> str:
    """'requests #1–#22 (the thread's 1st to 21st)' for a thread_bins row: #N is the request's number
    in its session, as every page and command gives it."""
    return (f"requests #{b['first_request_number']}–#{b['last_request_number']} ({b['n_requests']}; the thread's "
            f"{b['first_seq_in_thread'] + 1}–{b['last_seq_in_thread'] + 1})")


def growth_chart(rows: Sequence[Row], by_source: Mapping[str, Mapping[str, float]], fit: Row | None,
                 label: str, bin_size: int = 1) -> Markup:
    """Per-request input stacked by source (estimated) with reported input on top; below, the
    cumulative input with the analyzer's fitted n*p + m*n(n+1)/2. With `bin_size` > 1 the rows are
    `thread_bins` rows (by_source keyed by their `key`): one column per bin, means per request."""
    binned = bin_size > 1
    key = "key" if binned else "request_id"
    n = len(rows)
    n_requests = sum(r["n_requests"] for r in rows) if binned else n
    top = Frame(height=230, bottom=26)
    bottom_h = 170
    width, height = top.width, top.height + bottom_h
    est = [sum(by_source.get(r[key], {}).values()) for r in rows]
    reported = [r.get("mean_input_tokens_reported" if binned else "input_tokens_reported") for r in rows]
    ymax = nice_max(max([*est, *[v or 0 for v in reported], 1]))
    x, bw = _band(n, top)
    y = Scale(0, ymax, top.y0, top.y1)
    present = [s for s in palette.SOURCES if any(by_source.get(r[key], {}).get(s.name) for r in rows)]
    frame_all = Frame(width=width, height=height)
    out = [open_svg(frame_all, _binned_title(f"Token growth: {label}", bin_size, n_requests))]
    out.append(y_axis(top, y, nice_ticks(0, ymax), "mean input tokens / request" if binned
                      else "input tokens / request"))
    # stacked estimated bars, one path per source
    stack = [0.0] * n
    for style in present:
        bars = []
        for i, r in enumerate(rows):
            v = by_source.get(r[key], {}).get(style.name, 0)
            if v:
                y_top = y(stack[i] + v)
                bars.append((x(i + 1) - bw / 2, y_top, bw, y(stack[i]) - y_top))
                stack[i] += v
        out.append(f'<path fill="{palette.source_fill(style.name)}" d="{_bar_path(bars)}"/>')
    # reported input: a line (and dots when they are far enough apart)
    pts = [(x(i + 1), y(v)) for i, v in enumerate(reported) if v is not None]
    out.append(polyline(pts, "reported", palette.REPORTED))
    if n <= 120:
        out.append("".join(f'<circle cx="{f(px)}" cy="{f(py)}" r="2.6" fill="{palette.REPORTED}"/>' for px, py in pts))
    accel = fit.get("accel_seq") if fit else None
    if accel is not None and 0 <= accel // bin_size < n:
        ax = x(accel // bin_size + 1)
        right_half = ax > (top.x0 + top.x1) / 2
        out.append(f'<line class="marker" x1="{f(ax)}" x2="{f(ax)}" y1="{f(top.y1)}" y2="{f(top.y0)}"/>'
                   f'<text class="note" x="{f(ax - 4 if right_half else ax + 4)}" y="{f(top.y1 + 10)}" '
                   f'text-anchor="{"end" if right_half else "start"}">growth accelerated at #{accel + 1} '
                   f'(+{esc(num(fit.get("accel_increment_tokens")))} tokens)</text>')
    # cumulative panel
    low = Frame(width=width, height=height, top=top.height + 10, bottom=40)
    cum = [r.get("cumulative_input_tokens") or 0 for r in rows]
    fit_pts: list[tuple[float, float]] = []
    fit_vals: list[float] = []
    if rows and all(r.get("fitted_cumulative_tokens") is not None for r in rows):
        fit_vals = [float(r["fitted_cumulative_tokens"]) for r in rows]  # the growth_points view
    cmax = nice_max(max([*cum, *fit_vals, 1]))
    cy = Scale(0, cmax, low.y0, low.y1)
    out.append(y_axis(low, cy, nice_ticks(0, cmax, 4), "cumulative tokens"))
    if binned:
        out.append(x_axis(low, Scale(0.5, n_requests + 0.5, low.x0, low.x1), int_ticks(n_requests),
                          f"request in thread (#), {bin_size} per column"))
    else:
        out.append(x_axis(low, x, int_ticks(n), "request in thread (#)"))
    out.append(polyline([(x(i + 1), cy(v)) for i, v in enumerate(cum)], "cumulative", palette.REPORTED))
    if fit_vals:
        fit_pts = [(x(i + 1), cy(v)) for i, v in enumerate(fit_vals)]
        out.append(polyline(fit_pts, "fit", palette.FIT, dash=True))
    titles = []
    for i, r in enumerate(rows):
        parts = sorted(by_source.get(r[key], {}).items(), key=lambda kv: -kv[1])
        shown = ", ".join(f"{k.replace('_', ' ')} {num(round(v))}" for k, v in parts[:MAX_TITLE_SOURCES])
        more = f", +{len(parts) - MAX_TITLE_SOURCES} more" if len(parts) > MAX_TITLE_SOURCES else ""
        if binned:
            titles.append(f"{_bin_span(r)}: estimated {num(round(est[i]))} tokens per request on average "
                          f"({shown}{more}), at most {num(r.get('max_input_tokens_estimated'))}; reported "
                          f"{num(round(reported[i]) if reported[i] is not None else None)} on average; cumulative "
                          f"{num(cum[i])} at its last" + (f"; fit {num(round(fit_vals[i]))}" if fit_vals else ""))
            continue
        titles.append(f"request #{i + 1} (session #{r['num']}): estimated {num(est[i])} tokens ({shown}{more}); "
                      f"reported {num(reported[i])}; cumulative {num(cum[i])}"
                      + (f"; fit {num(round(fit_vals[i]))}" if fit_vals else ""))
    whole = Frame(width=width, height=height, top=top.y1, bottom=low.bottom)
    out.append(_hover_columns(n, x, whole, titles))
    out.append("</svg>")
    legend = [(palette.source_fill(s.name), s.label, "box") for s in present]
    legend += [(palette.REPORTED, "reported input (provider)" + (", mean per request" if binned else ""), "line"),
               (palette.REPORTED, "cumulative input", "line")]
    if fit_vals:
        legend.append((palette.FIT, "fitted n·p + m·n(n+1)/2", "dash"))
    return Markup("".join(out)) + legend_html(legend)


# --- cache ---------------------------------------------------------------------------------------

MISS_SHORT = {"cold_start": "cold", "prefix_change": "prefix", "ttl_expired": "TTL", "below_minimum": "min",
              "unexplained": "?"}


def cache_chart(rows: Sequence[Row], label: str, bin_size: int = 1) -> Markup:
    """Cache read / cache write / uncached input per request, with divergence and miss markers. With
    `bin_size` > 1 the rows are `thread_bins` rows: one column per bin, means per request."""
    if bin_size > 1:
        return _binned_cache_chart(rows, label, bin_size)
    n = len(rows)
    frame = Frame(height=260, top=34)
    totals = [(r.get("cache_read_tokens") or 0) + (r.get("cache_write_tokens") or 0)
              + (r.get("input_uncached_tokens") or 0) for r in rows]
    ymax = nice_max(max([*totals, 1]))
    x, bw = _band(n, frame)
    y = Scale(0, ymax, frame.y0, frame.y1)
    out = [open_svg(frame, f"Prompt cache per request: {label}")]
    out.append(y_axis(frame, y, nice_ticks(0, ymax), "input tokens (reported)"))
    out.append(x_axis(frame, x, int_ticks(n), "request in thread (#)"))
    series = (("cache_read_tokens", palette.CACHE_READ), ("cache_write_tokens", palette.CACHE_WRITE),
              ("input_uncached_tokens", palette.UNCACHED))
    stack = [0.0] * n
    for column, color in series:
        bars = []
        for i, r in enumerate(rows):
            v = r.get(column) or 0
            if v:
                y_top = y(stack[i] + v)
                bars.append((x(i + 1) - bw / 2, y_top, bw, y(stack[i]) - y_top))
                stack[i] += v
        out.append(f'<path fill="{color}" d="{_bar_path(bars)}"/>')
    div_marks, miss_marks, err_marks = [], [], []
    for i, r in enumerate(rows):
        cx = x(i + 1)
        if r.get("prefix_changed"):
            div_marks.append(f"M{f(cx - 4)},{f(frame.y1 - 22)}h8l-4,7z")
        cause = r.get("miss_cause")
        if cause and (cause != "cold_start" or n <= 60):  # cold starts only where they stay readable
            miss_marks.append((cx, cause))
        if r.get("error_layer"):
            err_marks.append(cx)
    if div_marks:
        out.append(f'<path class="div-mark" fill="{palette.BLUE}" d="{"".join(div_marks)}"/>')
    for cx, cause in miss_marks:
        out.append(f'<g class="miss-mark"><path stroke="{palette.VERMILLION}" stroke-width="2" '
                   f'd="M{f(cx - 3.5)},{f(frame.y1 - 10)}l7,7m0,-7l-7,7"/>')
        if len(miss_marks) <= 40:
            out.append(f'<text class="note" x="{f(cx + 5)}" y="{f(frame.y1 - 3)}">{esc(MISS_SHORT.get(cause, cause))}</text>')
        out.append("</g>")
    if err_marks:
        d = "".join(f"M{f(cx)},{f(frame.y0)}v-10" for cx in err_marks)
        out.append(f'<path class="err-mark" stroke="{palette.ERROR}" stroke-width="3" d="{d}"/>')
    titles = []
    for i, r in enumerate(rows):
        if r.get("error_layer"):
            titles.append(f"request #{i + 1}: HTTP {r.get('status')} {r.get('error_layer')} — no usage reported")
            continue
        words = [f"request #{i + 1} (session #{r['num']}): read {num(r.get('cache_read_tokens'))}, "
                 f"write {num(r.get('cache_write_tokens'))}, uncached {num(r.get('input_uncached_tokens'))}; "
                 f"{r.get('cache_status') or 'n/a'}"]
        if r.get("miss_explanation"):
            words.append(f"{'miss: ' if r.get('miss_cause') else ''}{r['miss_explanation']}")
        if r.get("divergence_summary"):
            words.append(f"prefix: {r['divergence_summary']}")
        if r.get("gap_s") is not None:
            words.append(f"gap {seconds(r['gap_s'])}")
        titles.append("; ".join(words))
    out.append(_hover_columns(n, x, frame, titles))
    out.append("</svg>")
    return Markup("".join(out)) + legend_html(_CACHE_LEGEND)


_CACHE_LEGEND = [(palette.CACHE_READ, "cache read", "box"), (palette.CACHE_WRITE, "cache write", "box"),
                 (palette.UNCACHED, "uncached input", "box"), (palette.BLUE, "▼ prefix changed", "dot"),
                 (palette.VERMILLION, "× cache miss (cause above)", "dot"), (palette.ERROR, "| failed request", "line")]


def _binned_cache_chart(bins: Sequence[Row], label: str, bin_size: int) -> Markup:
    """The cache chart over `thread_bins` rows: mean read / write / uncached per request of each bin;
    a bin is marked when any of its requests changed the prefix, missed the cache or failed."""
    n = len(bins)
    n_requests = sum(b["n_requests"] for b in bins)
    frame = Frame(height=260, top=34)
    series = (("mean_cache_read_tokens", palette.CACHE_READ), ("mean_cache_write_tokens", palette.CACHE_WRITE),
              ("mean_input_uncached_tokens", palette.UNCACHED))
    totals = [sum(b.get(c) or 0 for c, _ in series) for b in bins]
    ymax = nice_max(max([*totals, 1]))
    x, bw = _band(n, frame)
    y = Scale(0, ymax, frame.y0, frame.y1)
    out = [open_svg(frame, _binned_title(f"Prompt cache per request: {label}", bin_size, n_requests))]
    out.append(y_axis(frame, y, nice_ticks(0, ymax), "mean input tokens / request (reported)"))
    out.append(x_axis(frame, Scale(0.5, n_requests + 0.5, frame.x0, frame.x1), int_ticks(n_requests),
                      f"request in thread (#), {bin_size} per column"))
    stack = [0.0] * n
    for column, color in series:
        bars = []
        for i, b in enumerate(bins):
            v = b.get(column) or 0
            if v:
                y_top = y(stack[i] + v)
                bars.append((x(i + 1) - bw / 2, y_top, bw, y(stack[i]) - y_top))
                stack[i] += v
        out.append(f'<path fill="{color}" d="{_bar_path(bars)}"/>')
    div = "".join(f"M{f(x(i + 1) - 4)},{f(frame.y1 - 22)}h8l-4,7z" for i, b in enumerate(bins) if b["n_prefix_changed"])
    if div:
        out.append(f'<path class="div-mark" fill="{palette.BLUE}" d="{div}"/>')
    miss = "".join(f"M{f(x(i + 1) - 3.5)},{f(frame.y1 - 10)}l7,7m0,-7l-7,7" for i, b in enumerate(bins) if b["n_misses"])
    if miss:
        out.append(f'<path class="miss-mark" stroke="{palette.VERMILLION}" stroke-width="2" d="{miss}"/>')
    err = "".join(f"M{f(x(i + 1))},{f(frame.y0)}v-10" for i, b in enumerate(bins) if b["n_errors"])
    if err:
        out.append(f'<path class="err-mark" stroke="{palette.ERROR}" stroke-width="3" d="{err}"/>')
    titles = []
    for b in bins:
        words = [f"{_bin_span(b)}: mean read {num(_round(b.get('mean_cache_read_tokens')))}, write "
                 f"{num(_round(b.get('mean_cache_write_tokens')))}, uncached "
                 f"{num(_round(b.get('mean_input_uncached_tokens')))} per request ({b['n_with_usage']} reported usage)"]
        if b["n_prefix_changed"]:
            words.append(f"prefix changed in {b['n_prefix_changed']}")
        if b["n_misses"]:
            words.append(f"cache missed in {b['n_misses']} ({(b.get('miss_causes') or '').replace('_', ' ')})")
        if b["n_errors"]:
            words.append(f"{b['n_errors']} failed")
        titles.append("; ".join(words))
    out.append(_hover_columns(n, x, frame, titles))
    out.append("</svg>")
    return Markup("".join(out)) + legend_html(_CACHE_LEGEND)


def _round(value: float | None) -> int | None:
    return None if value is None else round(value)


# --- tool loop timeline --------------------------------------------------------------------------


def _merged(bars: Sequence[tuple[float, float, float, float]]) -> list[tuple[float, float, float, float]]:
    """Bars of one lane and colour merged where they touch at half a pixel: at most one per pixel."""
    out: list[list[float]] = []
    for a, yy, w, h in sorted(bars, key=lambda b: (b[1], b[0])):
        if out and out[-1][1] == yy and a <= out[-1][0] + out[-1][2] + 0.5:
            out[-1][2] = max(out[-1][2], a + w - out[-1][0])
        else:
            out.append([a, yy, w, h])
    return [(a, yy, w, h) for a, yy, w, h in out]


def timeline_chart(requests: Sequence[Row], calls: Sequence[Row], label: str,
                   bins: Sequence[Row] | None = None, bin_s: float | None = None) -> Markup:
    """Model requests and tool calls on one time axis: parallel calls stack in lanes, results coloured
    by status, repeats outlined, the gap from response to result request visible as the call's bar.
    With `bins` (`timeline_bins` rows of `bin_s` seconds) the bars are merged where they touch and
    each bin has one hover column saying its counts."""
    binned = bins is not None and bin_s is not None
    requests = [r for r in requests if r.get("ts_start") is not None]
    if not requests:
        return Markup("")
    t0 = min(r["ts_start"] for r in requests)
    t_end = max((r.get("ts_end") or r["ts_start"]) for r in requests)
    lanes = max([c.get("parallel_group_size") or 1 for c in calls] + [1])
    lanes = min(lanes, 8)
    lane_h = 16
    frame = Frame(height=40 + 26 + lanes * lane_h + 30, top=12, left=110)
    span = max(t_end - t0, 0.001)
    x = Scale(0, span, frame.x0, frame.x1)
    title = f"Tool-loop timeline: {label}"
    if binned:
        title += f" (binned: one hover column per {seconds(bin_s)}, touching bars merged)"
    out = [open_svg(frame, title)]
    ticks = nice_ticks(0, span, 8)
    out.append(x_axis(frame, x, ticks, "seconds since the session's first request", fmt=lambda v: compact(v)))
    model_y = frame.y1 + 4
    out.append(f'<text class="lane" x="{frame.x0 - 6}" y="{f(model_y + 12)}" text-anchor="end">model requests</text>')
    kinds = {"main": palette.MAIN, "subagent": palette.SUBAGENT, "side": palette.SIDE}
    by_color: dict[str, list[tuple[float, float, float, float]]] = {}
    titles = []
    for r in requests:
        a = x(r["ts_start"] - t0)
        b = x((r.get("ts_end") or r["ts_start"]) - t0)
        color = palette.ERROR if r.get("error_layer") else kinds.get(r.get("thread_kind") or "main", palette.MAIN)
        by_color.setdefault(color, []).append((a, model_y, max(b - a, 1.0), 16))
        titles.append((a, max(b - a, 2.0), model_y,
                       f"#{r['num']} {r.get('purpose')} ({r.get('thread_kind')}): {duration_ms(r.get('duration_ms'))}"
                       + (f", HTTP {r.get('status')} {r.get('error_layer')}" if r.get("error_layer") else "")
                       + (f", {r.get('n_tool_calls')} tool call(s)" if r.get("n_tool_calls") else "")))
    for color, bars in by_color.items():
        out.append(f'<path fill="{color}" d="{_bar_path(_merged(bars) if binned else bars)}"/>')
    lane0 = model_y + 26
    for k in range(lanes):
        out.append(f'<text class="lane" x="{frame.x0 - 6}" y="{f(lane0 + k * lane_h + 11)}" text-anchor="end">'
                   f'{"tool calls" if k == 0 else f"parallel #{k + 1}"}</text>')
    req_by_id = {r["request_id"]: r for r in requests}
    call_bars: dict[str, list[tuple[float, float, float, float]]] = {}
    repeat_outlines = []
    for c in calls:
        proposer = req_by_id.get(c.get("request_id") or "")
        carrier = req_by_id.get(c.get("result_request_id") or "")
        if proposer is None:
            continue
        start = (proposer.get("ts_end") or proposer["ts_start"]) - t0
        end = (carrier["ts_start"] - t0) if carrier else start + (c.get("gap_ms") or 0) / 1000
        lane = min(c.get("call_index") or 0, lanes - 1)
        a, b = x(start), x(max(end, start))
        yy = lane0 + lane * lane_h
        status = c.get("result_status") or "missing"
        bar = (a, yy, max(b - a, 1.5), lane_h - 4)
        call_bars.setdefault(status, []).append(bar)
        if c.get("repeat_of"):
            repeat_outlines.append(bar)
        titles.append((a, max(b - a, 2.0), yy,
                       f"{c.get('name')} {_short(c.get('command') or c.get('arguments'), 80)} — {status}"
                       f", result {size(c.get('result_bytes'))}, gap {duration_ms(c.get('gap_ms'))}"
                       + (f", parallel {(c.get('call_index') or 0) + 1}/{c.get('parallel_group_size')}"
                          if (c.get("parallel_group_size") or 1) > 1 else "")
                       + (", repeat of an earlier call" if c.get("repeat_of") else "")
                       + (", stuck on an error" if c.get("stuck_on_error") else "")))
    for status, bars in call_bars.items():
        out.append(f'<path fill="{palette.RESULT_STATUS.get(status, palette.GREY)}" '
                   f'd="{_bar_path(_merged(bars) if binned else bars)}"/>')
    if repeat_outlines:
        d = "".join(f"M{f(a)},{f(yy)}h{f(w)}v{f(h)}h{f(-w)}z"
                    for a, yy, w, h in (_merged(repeat_outlines) if binned else repeat_outlines))
        out.append(f'<path fill="none" stroke="{palette.BLACK}" stroke-dasharray="2 2" d="{d}"/>')
    out.append('<g class="hover">')
    if binned:
        lanes_h = lane0 + lanes * lane_h - model_y
        for b in bins or []:
            a, z = x(b["start_s"]), x(min(b["end_s"], span))
            out.append(f'<rect x="{f(a)}" y="{f(model_y)}" width="{f(max(z - a, 1.0))}" height="{f(lanes_h)}">'
                       f'<title>{esc(_timeline_bin_title(b))}</title></rect>')
    else:
        for a, w, yy, title in titles:
            out.append(f'<rect x="{f(a)}" y="{f(yy)}" width="{f(w)}" height="16"><title>{esc(title)}</title></rect>')
    out.append("</g></svg>")
    legend = [(palette.MAIN, "main-thread request", "box"), (palette.SUBAGENT, "subagent request", "box"),
              (palette.SIDE, "side request", "box"), (palette.ERROR, "failed request", "box")]
    legend += [(palette.RESULT_STATUS[s], f"call → result {s}", "box") for s in palette.RESULT_STATUS]
    legend.append((palette.BLACK, "repeat (dashed outline)", "dash"))
    return Markup("".join(out)) + legend_html(legend)


def _timeline_bin_title(b: Row) -> str:
    words = [f"+{seconds(b['start_s'])} to +{seconds(b['end_s'])}"]
    if b["n_requests"]:
        kinds = ", ".join(f"{b[k]} {name}" for k, name in (("n_main", "main"), ("n_subagent", "subagent"),
                                                           ("n_side", "side")) if b[k])
        failed = f"; {b['n_failed']} failed" if b["n_failed"] else ""
        words.append(f"{b['n_requests']} requests #{b['first_request_number']}–#{b['last_request_number']} "
                     f"({kinds}{failed}), model busy {seconds(b['busy_s'])}")
    if b["n_calls"]:
        statuses = ", ".join(f"{b['n_calls_' + s]} {s}" for s in ("ok", "error", "denied", "missing")
                             if b["n_calls_" + s])
        words.append(f"{b['n_calls']} tool calls ({statuses})"
                     + (f", {b['n_repeats']} repeats" if b["n_repeats"] else ""))
    return "; ".join(words)


def _short(value: str | None, limit: int) -> str:
    if not value:
        return ""
    value = " ".join(value.split())
    return value if len(value) <= limit else value[: limit - 1] + "…"


# --- comparison ----------------------------------------------------------------------------------


def composition_bars(items: Sequence[tuple[str, Mapping[str, int]]], title: str) -> Markup:
    """One horizontal bar per client, stacked by source, on a common token scale; labels above the bars."""
    row_h, label_h, gap = 18, 15, 8
    frame = Frame(height=20 + len(items) * (row_h + label_h + gap) + 40, left=16, right=70, top=10, bottom=40)
    tmax = nice_max(max([sum(v.values()) for _, v in items] + [1]))
    x = Scale(0, tmax, frame.x0, frame.x1)
    out = [open_svg(frame, title)]
    out.append(x_axis(frame, x, nice_ticks(0, tmax, 8), "estimated input tokens"))
    for k, (label, parts) in enumerate(items):
        yy = frame.y1 + k * (row_h + label_h + gap)
        out.append(f'<text class="lane" x="{frame.x0}" y="{f(yy + 11)}">{esc(label)}</text>')
        yy += label_h
        acc = 0.0
        total = max(sum(parts.values()), 1)
        for style in palette.SOURCES:
            v = parts.get(style.name, 0)
            if not v:
                continue
            a, b = x(acc), x(acc + v)
            out.append(f'<rect x="{f(a)}" y="{f(yy)}" width="{f(max(b - a, 0.5))}" height="{row_h}" '
                       f'fill="{palette.source_fill(style.name)}"><title>{esc(label)}: {esc(style.label)} '
                       f'{esc(num(v))} tokens ({v / total:.0%})</title></rect>')
            acc += v
        out.append(f'<text class="note" x="{f(x(acc) + 4)}" y="{f(yy + 13)}">{esc(num(acc))}</text>')
    out.append("</svg>")
    present = [s for s in palette.SOURCES if any(p.get(s.name) for _, p in items)]
    return Markup("".join(out)) + legend_html([(palette.source_fill(s.name), s.label, "box") for s in present])


def cache_share_bars(items: Sequence[tuple[str, int, int, int]], title: str) -> Markup:
    """Per client, the reported input split into cache read / write / uncached (100% bars)."""
    row_h, label_h, gap = 18, 15, 8
    frame = Frame(height=20 + len(items) * (row_h + label_h + gap) + 40, left=16, right=70, top=10, bottom=40)
    x = Scale(0, 1, frame.x0, frame.x1)
    out = [open_svg(frame, title)]
    out.append(x_axis(frame, x, [0, 0.25, 0.5, 0.75, 1], "share of reported input", fmt=lambda v: f"{v:.0%}"))
    for k, (label, read, write, uncached) in enumerate(items):
        yy = frame.y1 + k * (row_h + label_h + gap)
        out.append(f'<text class="lane" x="{frame.x0}" y="{f(yy + 11)}">{esc(label)}</text>')
        yy += label_h
        total = read + write + uncached
        if not total:
            out.append(f'<text class="note" x="{frame.x0 + 4}" y="{f(yy + 14)}">no usage reported</text>')
            continue
        acc = 0
        for v, color, name in ((read, palette.CACHE_READ, "cache read"), (write, palette.CACHE_WRITE, "cache write"),
                               (uncached, palette.UNCACHED, "uncached")):
            if v:
                a, b = x(acc / total), x((acc + v) / total)
                out.append(f'<rect x="{f(a)}" y="{f(yy)}" width="{f(b - a)}" height="{row_h}" fill="{color}">'
                           f'<title>{esc(label)}: {name} {esc(num(v))} tokens ({v / total:.0%})</title></rect>')
                acc += v
    out.append("</svg>")
    return Markup("".join(out)) + legend_html([(palette.CACHE_READ, "cache read", "box"),
                                               (palette.CACHE_WRITE, "cache write", "box"),
                                               (palette.UNCACHED, "uncached input", "box")])
