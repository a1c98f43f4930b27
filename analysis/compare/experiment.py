"""An experiment directory and what its runs show: per variant, passes, pass@k / pass^k and distributions.

`ctxtap experiment run` (ctxtap/experiment/) writes the directory; this module defines its format
(`ExperimentManifest`, `RunRecord`) and reads it back with the runs' captures through the views:

    <dir>/experiment.json          the manifest: spec, plan (run ids in interleaved order), status
    <dir>/runs/<run_id>/run.json   one run: variant, repeat, status, exit codes, check, timings
    <dir>/runs/<run_id>/capture/   the run's capture (with its analysis dataset)

A run is *not executed* when it never reached the tool loop: the command did not start, or no
main-loop model call succeeded and the calls that were made failed on auth, quota or
configuration (or none was made). Not-executed runs are counted apart and left out of pass@k
and of every tool and token distribution; timed-out runs count as failures.

Gates (the spec's `gates`, `ctxtap check`'s flags) are zero tolerance: a run that broke one is failed
whatever its check said (`passed` false, `answer_passed` the check's verdict, `gate_failures` what
broke), so pass@k and pass^k count only runs that kept them. Each run's conditions (the
`run_conditions` view: client and version, model, sandbox and approval modes, git commit, rules and
tool-schema digests, MCP servers) are compared within each variant and between variants, and every
difference is said; the working directory is left out (every run has its own copy of the fixture).
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from ctxtap.analysis.compare.diff import RequestDiff, request_diff
from ctxtap.analysis.db import connect, fetch_rows
from ctxtap.analysis.rules import conditions as cond

MANIFEST = "experiment.json"
RUN_FILE = "run.json"
RUNS_DIR = "runs"
NOT_EXECUTED_LAYERS = ("auth", "quota", "validation", "context_length")
SMALL_N = 10  # below this many runs per variant the report says the CI is only a hint
BOOTSTRAP_SAMPLES = 2000

RunStatus = Literal["completed", "timed_out", "failed_to_start", "interrupted"]


class RunRecord(BaseModel):
    """One run of an experiment, as `runs/<run_id>/run.json` holds it."""

    run_id: str
    index: int  # place in the interleaved plan
    variant: str
    repeat: int
    status: RunStatus
    exit_code: int | None = None
    check_exit_code: int | None = None  # null: no check configured (or the command never ran)
    passed: bool | None = None  # check exit 0 (without a check: command exit 0) and every gate kept; null when not run
    error: str | None = None  # why it failed to start / timed out, in words
    command: list[str] = Field(default_factory=list)
    env_names: list[str] = Field(default_factory=list)  # variables the variant set (their values are not kept)
    vars: dict[str, Any] = Field(default_factory=dict)
    fixture_digest: str | None = None
    started_at: float | None = None
    ended_at: float | None = None
    command_s: float | None = None  # the command alone
    check_s: float | None = None
    proxy_wait_s: float | None = None  # waiting for the run's proxy to listen (0 when it was started ahead)
    finalize_s: float | None = None  # stopping the proxy: the capture written to Parquet
    analysis_s: float | None = None
    capture: str = "capture"  # relative to the run directory
    client: str | None = None
    client_version: str | None = None
    model: str | None = None
    node: str | None = None  # the Ray node that ran it (`experiment run --ray`); null on the local runner
    store: str | None = None  # the store its node pushed the capture to (`--push`); null when not pushed
    capture_id: str | None = None  # the pushed capture's id in that store
    gates: list[str] = Field(default_factory=list)  # the spec's gates as `ctxtap check` spells them
    answer_passed: bool | None = None  # with gates: the check's own verdict (passed also needs every gate kept)
    gates_passed: bool | None = None  # null: no gates, or the run never ran
    gate_failures: list[dict[str, Any]] = Field(default_factory=list)  # [{gate, judged, violations, what, how}]


class ExperimentManifest(BaseModel):
    name: str
    spec_file: str
    spec_digest: str
    spec_text: str  # the spec as written, redacted (spec.toml beside it holds the same)
    created_at: float
    updated_at: float
    status: Literal["running", "complete", "interrupted"]
    plan: list[str]  # run ids, interleaved A B A B ...
    variants: list[str]
    repeats: int
    pass_k: list[int]
    ctxtap_version: str


def read_manifest(directory: Path) -> ExperimentManifest:
    path = Path(directory) / MANIFEST
    if not path.exists():
        raise FileNotFoundError(f"{directory} is not an experiment directory (no {MANIFEST}); "
                                "create one with `ctxtap experiment run SPEC --out DIR`")
    return ExperimentManifest.model_validate_json(path.read_text())


def read_runs(directory: Path) -> list[RunRecord]:
    """The runs that have a record, in plan order."""
    out = []
    for path in sorted((Path(directory) / RUNS_DIR).glob(f"*/{RUN_FILE}")):
        out.append(RunRecord.model_validate_json(path.read_text()))
    return sorted(out, key=lambda r: r.index)


# -- estimators ------------------------------------------------------------------------------


def pass_at_k(n: int, c: int, k: int) -> float | None:
    """P(at least one of k runs drawn without replacement from n passes), c of n passed (Chen et al. 2021)."""
    if k > n or n <= 0:
        return None
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float | None:
    """pass^k: P(all k runs drawn without replacement from n pass) = C(c, k) / C(n, k) (tau-bench)."""
    if k > n or n <= 0:
        return None
    return math.comb(c, k) / math.comb(n, k)


def quantile(values: Sequence[float], q: float) -> float | None:
    """Linear-interpolated quantile (numpy's default, DuckDB's quantile_cont)."""
    xs = sorted(values)
    if not xs:
        return None
    pos = (len(xs) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def bootstrap_median_diff(a: Sequence[float], b: Sequence[float], *, samples: int = BOOTSTRAP_SAMPLES,
                          seed: int = 0) -> tuple[float, float, float] | None:
    """(median(b) - median(a), 2.5% and 97.5% percentile bootstrap bounds); None when a side is empty."""
    if not a or not b:
        return None
    rng = random.Random(seed)
    diffs = []
    for _ in range(samples):
        ra = [a[rng.randrange(len(a))] for _ in a]
        rb = [b[rng.randrange(len(b))] for _ in b]
        diffs.append(quantile(rb, 0.5) - quantile(ra, 0.5))  # type: ignore[operator]
    point = quantile(b, 0.5) - quantile(a, 0.5)  # type: ignore[operator]
    return point, quantile(diffs, 0.025), quantile(diffs, 0.975)  # type: ignore[return-value]


# -- per-run numbers from the captures -------------------------------------------------------

RUN_METRICS_SQL = """
SELECT r.capture_id,
    count(*) AS model_calls,
    count(*) FILTER (WHERE r.thread_kind = 'main' AND r.error_layer IS NULL) AS ok_main_calls,
    count(*) FILTER (WHERE r.error_layer IS NOT NULL) AS failed_calls,
    count(*) FILTER (WHERE r.error_layer IS NOT NULL AND r.error_layer NOT IN ({layers})) AS other_failures,
    max(r.turn_index) AS turns,
    sum(r.input_tokens_reported) AS input_tokens,
    sum(r.cache_read_tokens) AS cached_tokens,
    sum(r.output_tokens) AS output_tokens,
    sum(r.cost_usd) AS cost_usd,
    arg_min(r.ttfb_ms, r.ts_start) FILTER (WHERE r.thread_kind = 'main') AS ttft_ms,
    (SELECT count(*) FROM tool_calls t WHERE t.capture_id = r.capture_id AND t.request_id IS NOT NULL) AS tool_calls,
    any_value(r.client) FILTER (WHERE r.thread_kind = 'main') AS client,
    any_value(r.client_version) FILTER (WHERE r.thread_kind = 'main') AS client_version,
    any_value(r.model) FILTER (WHERE r.thread_kind = 'main') AS model
FROM requests r
GROUP BY r.capture_id
""".format(layers=", ".join(f"'{x}'" for x in NOT_EXECUTED_LAYERS))

# distribution name -> (per-run column, unit)
DISTRIBUTIONS: dict[str, tuple[str, str]] = {
    "turns": ("turns", ""),
    "model calls": ("model_calls", ""),
    "tool calls": ("tool_calls", ""),
    "input tokens": ("input_tokens", "tokens"),
    "cached tokens": ("cached_tokens", "tokens"),
    "output tokens": ("output_tokens", "tokens"),
    "cost": ("cost_usd", "usd"),
    "TTFT": ("ttft_ms", "ms"),
    "end-to-end time": ("command_s", "s"),
}
HEADLINE = ("input tokens", "cached tokens", "cost", "end-to-end time", "tool calls")


class Distribution(BaseModel):
    name: str
    unit: str
    n: int
    values: list[float]
    p50: float | None
    p95: float | None
    max: float | None


class PassK(BaseModel):
    k: int
    pass_at_k: float
    pass_hat_k: float


class VariantReport(BaseModel):
    name: str
    n_planned: int
    n_runs: int  # runs with a record
    n_executed: int
    n_not_executed: int
    n_timed_out: int
    n_failed_to_start: int
    n_interrupted: int
    n_missing: int  # planned runs without a record (not run yet)
    passes: int
    pass_k: list[PassK]
    distributions: list[Distribution]
    first_request: str | None = None  # capture id/request id of the majority layout's first main request
    majority_share: float | None = None  # share of executed runs whose first request has that layout
    n_gate_failures: int = 0  # executed runs that broke a gate (each counted failed)
    n_answer_passed_gate_failed: int = 0  # of those, runs whose check passed: failed on the gate alone
    conditions: dict[str, str] = Field(default_factory=dict)  # the variant's conditions (majority of its runs)


class HeadlineDelta(BaseModel):
    name: str
    unit: str
    a: str
    b: str
    median_diff: float | None
    ci_low: float | None
    ci_high: float | None
    hint: str


class ExperimentReport(BaseModel):
    directory: str
    name: str
    status: str
    variants: list[VariantReport]
    runs: list[dict[str, Any]]  # every planned run: record fields plus its per-run numbers
    layout: RequestDiff | None = None  # first request of variant A's majority layout vs variant B's
    layout_variants: tuple[str, str] | None = None
    headline: list[HeadlineDelta]
    notes: list[str]
    gates: list[str] = Field(default_factory=list)  # the gates every run was judged by (zero tolerance)
    # conditions that differ between variants (each against the first): [{a_variant, b_variant, field, label, a, b}]
    condition_differences: list[dict[str, str]] = Field(default_factory=list)
    # conditions that differ between runs of one variant: [{variant, field, label, values: {value: runs}}]
    condition_spread: list[dict[str, Any]] = Field(default_factory=list)


# the conditions compared between runs: all but the working directory, which is each run's own copy
COMPARED = tuple(f for f, _ in cond.FIELDS if f != "working_dir")


def _conditions(con: Any) -> dict[str, dict[str, Any]]:
    """capture id -> the run's conditions (its sessions' `run_conditions` rows merged)."""
    rows: dict[str, list[dict[str, Any]]] = {}
    try:
        for row in fetch_rows(con, "SELECT * FROM run_conditions ORDER BY capture_id, request_id"):
            rows.setdefault(row["capture_id"], []).append(row)
    except Exception:  # a dataset written before the view existed: no conditions to compare
        return {}
    return {cid: cond.merge_rows(r) for cid, r in rows.items()}


def _majority(values: list[str]) -> str:
    counts: dict[str, int] = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    return max(counts, key=lambda v: (counts[v], -values.index(v)))


def _compare_conditions(variants: list[VariantReport], runs: list[dict[str, Any]],
                        by_capture: dict[str, dict[str, Any]]) -> tuple[list[dict[str, str]], list[dict[str, Any]]]:
    """Set each variant's conditions (the majority of its runs'); the differences between variants and the
    spread inside each."""
    spread: list[dict[str, Any]] = []
    for v in variants:
        mine = [by_capture[r["capture_id"]] for r in runs
                if r["variant"] == v.name and r.get("capture_id") in by_capture]
        if not mine:
            continue
        for field in COMPARED:
            values = [str(c.get(field, cond.UNKNOWN)) for c in mine]
            v.conditions[field] = _majority(values)
            counts = {x: values.count(x) for x in dict.fromkeys(values)}
            if len(counts) > 1:
                spread.append({"variant": v.name, "field": field, "label": cond.LABELS[field], "values": counts})
    diffs: list[dict[str, str]] = []
    first = variants[0] if variants and variants[0].conditions else None
    for v in variants[1:]:
        if first is None or not v.conditions:
            continue
        for d in cond.differences(first.conditions, v.conditions, COMPARED):
            diffs.append({"a_variant": first.name, "b_variant": v.name, **d})
    return diffs, spread


def _captures(directory: Path, runs: Sequence[RunRecord]) -> dict[str, Path]:
    out = {}
    for r in runs:
        cap = Path(directory) / RUNS_DIR / r.run_id / r.capture
        if (cap / "analysis").is_dir():
            out[r.run_id] = cap
    return out


def _capture_id(capture: Path) -> str | None:
    parts = sorted((capture / "analysis" / "requests").glob("capture_id=*"))
    return parts[0].name.split("=", 1)[1] if parts else None


def _first_layouts(con: Any) -> dict[str, tuple[str, str]]:
    """capture id -> (first main request id, its layout form: path, kind, source and size of each block).

    The form, not the content hashes: per-request ids and hashes differ in every run, so runs
    whose first requests are alike up to them count as one form."""
    rows = con.execute("""
        WITH firsts AS (
            SELECT capture_id, arg_min(request_id, ts_start) AS request_id FROM requests
            WHERE thread_kind = 'main' AND n_blocks > 0 GROUP BY capture_id)
        SELECT f.capture_id, f.request_id,
               string_agg(concat_ws(':', b.path, b.kind, b.source, b.tokens_estimated), ',' ORDER BY b.position)
        FROM firsts f JOIN blocks b USING (capture_id, request_id) GROUP BY ALL""").fetchall()
    return {cid: (rid, key) for cid, rid, key in rows}


def _pushed(directory: Path, records: Sequence[RunRecord]) -> tuple[str, dict[str, str]] | None:
    """(store, run id -> capture id) when runs were pushed to one store and no run has a capture only here."""
    pushed = {r.run_id: (r.store, r.capture_id) for r in records if r.store and r.capture_id}
    stores = {store for store, _ in pushed.values()}
    if len(stores) != 1 or any(rid not in pushed for rid in _captures(directory, records)):
        return None
    return stores.pop(), {rid: cid for rid, (_, cid) in pushed.items()}


def experiment_report(directory: Path, *, k: Sequence[int] | None = None, normalise: Any = None,
                      open_store: Callable[[str, list[str]], Any] | None = None) -> ExperimentReport:
    """Read an experiment directory (complete or partial) and its captures into a report.

    `open_store(url, capture_ids)` (a sandboxed connection over captures of a store): when every run's
    capture was pushed to one store (`experiment run --ray --push`), the captures are read there, in
    place, rather than from the copies that came back."""
    directory = Path(directory)
    manifest = read_manifest(directory)
    records = read_runs(directory)
    by_id = {r.run_id: r for r in records}
    notes: list[str] = []
    per_capture: dict[str, dict[str, Any]] = {}
    con = None
    firsts: dict[str, tuple[str, str]] = {}
    run_conditions: dict[str, dict[str, Any]] = {}
    pushed = _pushed(directory, records) if open_store is not None else None
    if pushed is not None:
        store, cap_ids = pushed
        con = open_store(store, sorted(set(cap_ids.values())))
        notes.append(f"the runs' captures were read in place from {store} ({len(cap_ids)} captures)")
    else:
        captures = _captures(directory, records)
        if captures:
            con = connect(list(captures.values()))
        cap_ids = {rid: _capture_id(path) for rid, path in captures.items()}
    if con is not None:
        per_capture = {row["capture_id"]: row for row in fetch_rows(con, RUN_METRICS_SQL)}
        firsts = _first_layouts(con)
        run_conditions = _conditions(con)

    runs: list[dict[str, Any]] = []
    for run_id in manifest.plan:
        rec = by_id.get(run_id)
        row: dict[str, Any] = {"run_id": run_id, "variant": rec.variant if rec else _variant_of(run_id, manifest),
                               "status": rec.status if rec else "missing", "recorded": rec is not None}
        if rec:
            row.update(rec.model_dump(include={"repeat", "exit_code", "check_exit_code", "passed", "error",
                                               "command_s", "proxy_wait_s", "finalize_s", "analysis_s", "gates",
                                               "answer_passed", "gates_passed", "gate_failures"}))
        metrics = per_capture.get(cap_ids.get(run_id) or "", {})
        row.update({k_: v for k_, v in metrics.items() if k_ != "capture_id"})
        row["capture_id"] = cap_ids.get(run_id)
        row["executed"] = _executed(rec, metrics)
        runs.append(row)

    ks = sorted(set(k or manifest.pass_k))
    variants: list[VariantReport] = []
    majority: dict[str, tuple[str | None, str | None]] = {}
    for name in manifest.variants:
        mine = [r for r in runs if r["variant"] == name]
        recorded = [r for r in mine if r["recorded"]]
        executed = [r for r in recorded if r["executed"]]
        n, c = len(executed), sum(1 for r in executed if r.get("passed"))
        pk = [PassK(k=x, pass_at_k=pass_at_k(n, c, x), pass_hat_k=pass_hat_k(n, c, x))  # type: ignore[arg-type]
              for x in ks if x <= n]
        skipped = [x for x in ks if x > n]
        if skipped:
            notes.append(f"variant {name}: pass@k for k = {', '.join(map(str, skipped))} left out: "
                         f"only {n} executed runs (k must be <= n)")
        dists = []
        for label, (col, unit) in DISTRIBUTIONS.items():
            vals = [float(r[col]) for r in executed if r.get(col) is not None]
            dists.append(Distribution(name=label, unit=unit, n=len(vals), values=vals, p50=quantile(vals, 0.5),
                                      p95=quantile(vals, 0.95), max=max(vals) if vals else None))
        keys: dict[str, list[str]] = {}
        for r in executed:
            first = firsts.get(r["capture_id"] or "")
            if first:
                keys.setdefault(first[1], []).append(r["capture_id"])
        first_ref, share = None, None
        if keys:
            key, cids = max(keys.items(), key=lambda kv: len(kv[1]))
            first_ref = f"{cids[0]}/{firsts[cids[0]][0]}"
            share = len(cids) / sum(len(v) for v in keys.values())
            majority[name] = (cids[0], firsts[cids[0]][0])
        variants.append(VariantReport(
            name=name, n_planned=len(mine), n_runs=len(recorded), n_executed=n,
            n_not_executed=sum(1 for r in recorded if not r["executed"]),
            n_timed_out=sum(1 for r in recorded if r["status"] == "timed_out"),
            n_failed_to_start=sum(1 for r in recorded if r["status"] == "failed_to_start"),
            n_interrupted=sum(1 for r in recorded if r["status"] == "interrupted"),
            n_missing=len(mine) - len(recorded), passes=c, pass_k=pk, distributions=dists,
            first_request=first_ref, majority_share=share,
            n_gate_failures=sum(1 for r in executed if r.get("gates_passed") is False),
            n_answer_passed_gate_failed=sum(1 for r in executed if r.get("gates_passed") is False
                                            and r.get("answer_passed"))))

    layout, layout_variants = None, None
    if con is not None and len(manifest.variants) >= 2:
        va, vb = manifest.variants[0], manifest.variants[1]
        if va in majority and vb in majority:
            (ca, ra), (cb, rb) = majority[va], majority[vb]
            layout = request_diff(con, ra, rb, a_capture_id=ca, b_capture_id=cb, normalise=normalise)
            layout_variants = (va, vb)
    headline = _headline(variants, notes)
    differences, spread = _compare_conditions(variants, runs, run_conditions)
    gates = next((list(by_id[r].gates) for r in manifest.plan if r in by_id and by_id[r].gates), [])
    status = manifest.status
    if any(v.n_missing for v in variants) and status == "complete":
        status = "partial"
    return ExperimentReport(directory=str(directory), name=manifest.name, status=status, variants=variants,
                            runs=runs, layout=layout, layout_variants=layout_variants, headline=headline, notes=notes,
                            gates=gates, condition_differences=differences, condition_spread=spread)


def _variant_of(run_id: str, manifest: ExperimentManifest) -> str:
    """Run ids are `<repeat>-<variant>` (the repeat zero-padded)."""
    return run_id.split("-", 1)[1] if "-" in run_id else run_id


def _executed(rec: RunRecord | None, metrics: dict[str, Any]) -> bool:
    if rec is None or rec.status in ("failed_to_start", "interrupted"):
        return False
    if not metrics or not metrics.get("model_calls"):
        return False  # the command never reached a model
    if metrics.get("ok_main_calls"):
        return True
    return bool(metrics.get("other_failures"))  # all calls failed, but not on auth / quota / config


def _headline(variants: list[VariantReport], notes: list[str]) -> list[HeadlineDelta]:
    if len(variants) < 2:
        return []
    va, vb = variants[0], variants[1]
    out = []
    for name in HEADLINE:
        da = next(d for d in va.distributions if d.name == name)
        db = next(d for d in vb.distributions if d.name == name)
        ci = bootstrap_median_diff(da.values, db.values)
        small = min(da.n, db.n) < SMALL_N
        if ci is None:
            hint = "no executed runs on one side"
        elif ci[1] <= 0 <= ci[2]:
            hint = "the interval includes 0: no clear difference"
        else:
            hint = f"B {'higher' if ci[0] > 0 else 'lower'}: the interval excludes 0"
        if ci is not None and small:
            hint += f" (n = {da.n} and {db.n}: too few runs for a reliable interval, treat it as a hint)"
        out.append(HeadlineDelta(name=name, unit=da.unit, a=va.name, b=vb.name,
                                 median_diff=ci[0] if ci else None, ci_low=ci[1] if ci else None,
                                 ci_high=ci[2] if ci else None, hint=hint))
    if min(va.n_executed, vb.n_executed) < SMALL_N:
        notes.append(f"fewer than {SMALL_N} executed runs per variant: the bootstrap intervals are rough hints, "
                     "not evidence; repeat the experiment with more runs before concluding")
    return out


def report_json(rep: ExperimentReport) -> str:
    return json.dumps(rep.model_dump(mode="json"), indent=2)
