"""Compare two runs side by side: captures, sessions or single requests (`ctxtap diff A B`).

A run is named `CAPTURE`, `CAPTURE#SESSION` (an id or a unique start of one), `CAPTURE#N` or
`CAPTURE#SESSION#N` (N: the request's number in its session, `request_number`, the `#N` the report
and the live view show; the first form where the capture holds one session) or `CAPTURE@REQUEST`
(a request id or a unique start of one, or any request reference of `analysis.requestref`). Every number
is read from the views over both captures, so the comparison says what `ctxtap sql` would;
each delta is B - A with its sign. The context layout of the two runs' first main requests is
diffed block by block by `analysis.diff`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, computed_field

from ctxtap.analysis.compare.diff import RequestDiff, request_diff
from ctxtap.analysis.db import dataset_dir, fetch_rows
from ctxtap.analysis.rules import conditions as cond
from ctxtap.analysis.threads.requestref import RefError, resolve_request, resolve_session

_IDS = re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
                  r"|(?<![0-9A-Za-z])(?=[0-9a-f]*[0-9])[0-9a-f]{5,}(?![0-9A-Za-z])"
                  r"|(?<==)[0-9a-f]{5,}(?![0-9A-Za-z])")


def mask_ids(text: str) -> str:
    """The text with UUIDs and hex ids/hashes masked: a run of 5+ hex digits with at least one digit
    (a hash that happens to be all digits, and long numbers, count too), or any such run right after
    `=` (`cch=bcaec`; elsewhere a run of letters a-f is a word: "facade"):
    `ctxtap diff --ignore-ids` compares two runs without the per-request hashes and ids every
    run has, while dates, times and everything else still count."""
    return _IDS.sub("<id>", text)


class TargetError(ValueError):
    """A run name that does not resolve (no such capture, session or request), in words."""


class Target(BaseModel):
    """A run as the user named it, parsed (paths not resolved yet)."""

    text: str
    capture: str
    session: str | None = None
    number: int | None = None  # the request's number in its session (requests.request_number)
    request_id: str | None = None  # a request reference: an id or the start of one, `#N`, `SESSION#N`


class Run(BaseModel):
    """A resolved run: which requests of which capture it covers."""

    label: str
    capture: str
    capture_id: str
    session_id: str | None = None
    request_id: str | None = None
    request_number: int | None = None  # the request's #N in its session (kind "request")
    kind: Literal["capture", "session", "request"]
    first_main_request_id: str | None = None
    first_main_request_number: int | None = None  # the #N of the request whose layout is compared


class Metric(BaseModel):
    group: str
    name: str
    a: float | None = None
    b: float | None = None
    unit: str = ""  # "", "tokens", "ms", "s", "usd", "rate"
    lower_is_better: bool | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def delta(self) -> float | None:
        return None if self.a is None or self.b is None else self.b - self.a


class SourceTokens(BaseModel):
    source: str
    a_first: int = 0
    b_first: int = 0
    a_total: int = 0
    b_total: int = 0


class ConditionsDiff(BaseModel):
    """The two runs' conditions (the `run_conditions` view, a session's row or a capture's sessions merged)
    and those that differ: [{field, label, a, b}]."""

    a: dict[str, Any]
    b: dict[str, Any]
    differences: list[dict[str, str]]


class RunDiff(BaseModel):
    a: Run
    b: Run
    conditions: ConditionsDiff | None = None
    layout: RequestDiff | None = None
    layout_note: str | None = None  # why there is no layout diff
    metrics: list[Metric]
    sources: list[SourceTokens]
    a_miss_causes: dict[str, int]
    b_miss_causes: dict[str, int]


def parse_target(text: str, is_dir: Callable[[str], bool] | None = None) -> Target:
    """Split a run name into capture path and selector; a path that exists as given wins."""
    is_dir = is_dir or (lambda p: Path(p).is_dir())
    if is_dir(text):
        return Target(text=text, capture=text)
    if "@" in text:
        capture, request_id = text.split("@", 1)
        if capture and request_id and is_dir(capture):
            return Target(text=text, capture=capture, request_id=request_id)
    if "#" in text:
        capture, _, rest = text.partition("#")
        session, sep, number = rest.rpartition("#")
        if not sep:
            session, number = rest, ""
        if number and not number.isdigit():
            session, number = rest, ""
        if session.isdigit() and not number:  # CAPTURE#N: a request of the capture's only session
            session, number = "", session
        if capture and (session or number) and is_dir(capture):
            return Target(text=text, capture=capture, session=session or None,
                          number=int(number) if number else None)
    raise TargetError(f"{text!r} names no capture directory; a run is CAPTURE, CAPTURE#SESSION, "
                      "CAPTURE#N, CAPTURE#SESSION#N or CAPTURE@REQUEST")


def capture_id_of(capture: str | Path) -> str:
    """The capture id its analysis dataset is partitioned by."""
    parts = sorted((dataset_dir(Path(capture)) / "requests").glob("capture_id=*"))
    if not parts:
        raise TargetError(f"{capture} has no analysis dataset (run `ctxtap analyze {capture}` first)")
    return parts[0].name.split("=", 1)[1]


def _one(con: Any, sql: str, params: list[Any]) -> tuple | None:
    return con.execute(sql, params).fetchone()


def resolve(con: Any, target: Target) -> Run:
    """The run a parsed target names over a connection that reads its capture."""
    cid = capture_id_of(target.capture)
    if not _one(con, "SELECT 1 FROM requests WHERE capture_id = ? LIMIT 1", [cid]):
        raise TargetError(f"{target.capture} holds no model requests")
    try:
        if target.request_id is not None:
            ref = resolve_request(con, cid, target.request_id)
        elif target.number is not None:
            ref = resolve_request(con, cid, str(target.number), target.session)
        else:
            ref = None
        session = resolve_session(con, cid, target.session) if target.session is not None and ref is None else None
    except RefError as exc:
        raise TargetError(f"{target.text}: {exc} in {target.capture}") from None
    if ref is not None:
        return Run(label=target.text, capture=target.capture, capture_id=cid, session_id=ref.session_id,
                   request_id=ref.request_id, request_number=ref.request_number, kind="request",
                   first_main_request_id=ref.request_id, first_main_request_number=ref.request_number)
    first = _one(con, """
        SELECT request_id, request_number FROM requests
        WHERE capture_id = ? AND (? IS NULL OR session_id = ?) AND thread_kind = 'main' AND n_blocks > 0
        ORDER BY error_layer IS NOT NULL, ts_start LIMIT 1""", [cid, session, session])
    return Run(label=target.text, capture=target.capture, capture_id=cid, session_id=session,
               kind="session" if session else "capture", first_main_request_id=first[0] if first else None,
               first_main_request_number=first[1] if first else None)


_SCOPE = """scope AS (
    SELECT * FROM requests
    WHERE capture_id = $1 AND ($2 IS NULL OR session_id = $2) AND ($3 IS NULL OR request_id = $3)
)"""

_METRICS_SQL = f"""
WITH {_SCOPE},
sess AS (SELECT session_id, max(turn_index) AS turns FROM scope GROUP BY session_id),
main AS (
    SELECT g.* FROM growth g
    WHERE g.capture_id = $1 AND g.thread_kind = 'main' AND g.thread_id IN (SELECT thread_id FROM scope)
    ORDER BY g.n_requests DESC, g.thread_id LIMIT 1
),
calls AS (
    SELECT * FROM tool_calls WHERE capture_id = $1 AND request_id IN (SELECT request_id FROM scope)
),
pre AS (SELECT p.* FROM prefix p JOIN scope s USING (capture_id, request_id))
SELECT
    (SELECT count(*) FROM scope) AS requests,
    (SELECT count(*) FROM scope WHERE thread_kind = 'main') AS main_requests,
    (SELECT count(*) FROM scope WHERE thread_kind = 'side') AS side_requests,
    (SELECT count(*) FROM scope WHERE thread_kind = 'subagent') AS subagent_requests,
    (SELECT sum(turns) FROM sess) AS turns,
    (SELECT count(*) FROM scope WHERE error_layer IS NOT NULL) AS errors,
    (SELECT sum(input_tokens) FROM scope) AS input_tokens,
    (SELECT sum(input_tokens_reported) FROM scope) AS input_tokens_reported,
    (SELECT sum(input_tokens_estimated) FROM scope) AS input_tokens_estimated,
    (SELECT sum(cache_read_tokens) FROM scope) AS cache_read_tokens,
    (SELECT sum(cache_write_tokens) FROM scope) AS cache_write_tokens,
    (SELECT sum(output_tokens) FROM scope) AS output_tokens,
    (SELECT sum(cache_read_tokens) FILTER (WHERE input_tokens_reported IS NOT NULL AND cache_read_tokens IS NOT NULL)
          / nullif(sum(input_tokens_reported) FILTER (WHERE cache_read_tokens IS NOT NULL), 0) FROM scope)
        AS cache_hit_rate,
    (SELECT count(*) FROM pre WHERE miss_cause IS NOT NULL AND miss_cause <> 'cold_start') AS cache_misses,
    (SELECT count(*) FROM pre WHERE prefix_changed) AS prefix_changes,
    (SELECT fit_p FROM main) AS growth_p,
    (SELECT fit_m FROM main) AS growth_m,
    (SELECT fit_r2 FROM main) AS growth_r2,
    (SELECT total_input_tokens FROM main) AS growth_total,
    (SELECT count(*) FROM calls) AS tool_calls,
    (SELECT count(DISTINCT request_id) FILTER (WHERE parallel_group_size > 1) FROM calls) AS parallel_groups,
    (SELECT count(*) FILTER (WHERE repeat_of IS NOT NULL) FROM calls) AS repeated_calls,
    (SELECT count(*) FILTER (WHERE result_status = 'error') FROM calls) AS tool_errors,
    (SELECT median(ttfb_ms) FROM scope) AS ttfb_p50_ms,
    (SELECT quantile_cont(ttfb_ms, 0.95) FROM scope) AS ttfb_p95_ms,
    (SELECT median(duration_ms) FROM scope) AS duration_p50_ms,
    (SELECT sum(duration_ms) FROM scope) AS model_time_ms,
    (SELECT max(coalesce(ts_end, ts_start)) - min(ts_start) FROM scope) AS wall_s,
    (SELECT sum(cost_usd) FROM scope) AS cost_usd
"""

# (column, group, label, unit, lower is better)
METRICS: tuple[tuple[str, str, str, str, bool | None], ...] = (
    ("requests", "turns", "model requests", "", None),
    ("main_requests", "turns", "main-loop requests", "", None),
    ("side_requests", "turns", "side requests", "", None),
    ("subagent_requests", "turns", "subagent requests", "", None),
    ("turns", "turns", "user turns", "", None),
    ("errors", "turns", "failed requests", "", True),
    ("input_tokens", "tokens", "input incl. cache reads (reported, else estimated)", "tokens", True),
    ("input_tokens_reported", "tokens", "input tokens (reported)", "tokens", True),
    ("input_tokens_estimated", "tokens", "input tokens (estimated)", "tokens", True),
    ("cache_read_tokens", "tokens", "cache reads", "tokens", None),
    ("cache_write_tokens", "tokens", "cache writes", "tokens", None),
    ("output_tokens", "tokens", "output tokens", "tokens", None),
    ("cache_hit_rate", "cache", "cache hit rate", "rate", False),
    ("cache_misses", "cache", "cache misses (not cold start)", "", True),
    ("prefix_changes", "cache", "prefix changes", "", True),
    ("growth_p", "growth", "growth fit p (stable prefix)", "tokens", None),
    ("growth_m", "growth", "growth fit m (per request)", "tokens", True),
    ("growth_r2", "growth", "growth fit R²", "", None),
    ("growth_total", "growth", "main thread cumulative input", "tokens", True),
    ("tool_calls", "tool loop", "tool calls", "", None),
    ("parallel_groups", "tool loop", "parallel groups", "", None),
    ("repeated_calls", "tool loop", "repeated calls", "", True),
    ("tool_errors", "tool loop", "tool errors", "", True),
    ("ttfb_p50_ms", "latency", "time to first byte p50", "ms", True),
    ("ttfb_p95_ms", "latency", "time to first byte p95", "ms", True),
    ("duration_p50_ms", "latency", "request duration p50", "ms", True),
    ("model_time_ms", "latency", "model time (sum of durations)", "ms", True),
    ("wall_s", "latency", "wall time (first start to last end)", "s", True),
    ("cost_usd", "cost", "cost", "usd", True),
)


def run_metrics(con: Any, run: Run) -> dict[str, Any]:
    """The run's numbers, keyed as METRICS names them."""
    return fetch_rows(con, _METRICS_SQL,
                      [run.capture_id, run.session_id, run.request_id])[0]


def _sources(con: Any, run: Run) -> tuple[dict[str, int], dict[str, int]]:
    first: dict[str, int] = {}
    if run.first_main_request_id:
        first = dict(con.execute("SELECT source, sum(tokens_estimated) FROM tokens_by_source WHERE capture_id = ? "
                                 "AND request_id = ? GROUP BY 1", [run.capture_id, run.first_main_request_id]).fetchall())
    total = dict(con.execute(f"""WITH {_SCOPE}
        SELECT t.source, sum(t.tokens_estimated) FROM tokens_by_source t JOIN scope s USING (capture_id, request_id)
        GROUP BY 1""", [run.capture_id, run.session_id, run.request_id]).fetchall())
    return ({k: int(v or 0) for k, v in first.items()}, {k: int(v or 0) for k, v in total.items()})


def _miss_causes(con: Any, run: Run) -> dict[str, int]:
    rows = con.execute(f"""WITH {_SCOPE}
        SELECT p.miss_cause, count(*) FROM prefix p JOIN scope s USING (capture_id, request_id)
        WHERE p.miss_cause IS NOT NULL GROUP BY 1 ORDER BY 2 DESC, 1""",
                       [run.capture_id, run.session_id, run.request_id]).fetchall()
    return {k: int(v) for k, v in rows}


def run_conditions(con: Any, run: Run) -> dict[str, Any]:
    """The run's conditions: its session's row of `run_conditions`, or every session of the capture with
    the distinct values of each field joined (`0.171.0, 0.172.0`)."""
    return cond.merge_rows(fetch_rows(con, "SELECT * FROM run_conditions WHERE capture_id = ? AND (? IS NULL OR "
                                           "session_id = ?) ORDER BY request_id",
                                      [run.capture_id, run.session_id, run.session_id]))


def conditions_diff(con: Any, a: Run, b: Run) -> ConditionsDiff:
    ca, cb = run_conditions(con, a), run_conditions(con, b)
    return ConditionsDiff(a=ca, b=cb, differences=cond.differences(ca, cb))


def run_diff(con: Any, a: Run, b: Run, *, normalise: Callable[[str], str] | None = None) -> RunDiff:
    """Runs A and B side by side over one connection that reads both captures."""
    ma, mb = run_metrics(con, a), run_metrics(con, b)
    metrics = [Metric(group=g, name=label, a=_num(ma[col]), b=_num(mb[col]), unit=unit, lower_is_better=lower)
               for col, g, label, unit, lower in METRICS]
    (fa, ta), (fb, tb) = _sources(con, a), _sources(con, b)
    names = sorted(set(fa) | set(fb) | set(ta) | set(tb), key=lambda s: -(tb.get(s, 0) + ta.get(s, 0)))
    sources = [SourceTokens(source=s, a_first=fa.get(s, 0), b_first=fb.get(s, 0), a_total=ta.get(s, 0),
                            b_total=tb.get(s, 0)) for s in names]
    layout, note = None, None
    if a.first_main_request_id and b.first_main_request_id:
        layout = request_diff(con, a.first_main_request_id, b.first_main_request_id, normalise=normalise,
                              a_capture_id=a.capture_id, b_capture_id=b.capture_id)
    else:
        missing = [r.label for r in (a, b) if not r.first_main_request_id]
        note = f"no main-loop request with context blocks in {', '.join(missing)}: no layout to compare"
    return RunDiff(a=a, b=b, conditions=conditions_diff(con, a, b), layout=layout, layout_note=note,
                   metrics=metrics, sources=sources, a_miss_causes=_miss_causes(con, a),
                   b_miss_causes=_miss_causes(con, b))


def _num(value: Any) -> float | None:
    return None if value is None else float(value)
