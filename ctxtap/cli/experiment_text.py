"""`ctxtap experiment report`'s terminal form (the figures and conditions in `compare.words`)."""

from __future__ import annotations

from ctxtap.analysis.compare.experiment import ExperimentReport
from ctxtap.analysis.compare.words import condition_lines, gate_failure_words
from ctxtap.analysis.compare.words import fmt_amount as _fmt


def report_lines(rep: ExperimentReport) -> list[str]:
    """The terminal form of an experiment report."""
    lines = [f"experiment {rep.name}  ({rep.directory}, {rep.status})", ""]
    if rep.gates:
        lines += [f"gates: {' '.join(rep.gates)} (zero tolerance: a run that broke one failed, whatever its check "
                  "said; pass@k and pass^k count only runs that kept them)", ""]
    lines += condition_lines(rep)
    for v in rep.variants:
        extra = []
        for label, n in (("not executed", v.n_not_executed), ("timed out", v.n_timed_out),
                         ("failed to start", v.n_failed_to_start), ("interrupted", v.n_interrupted),
                         ("not run yet", v.n_missing)):
            if n:
                extra.append(f"{n} {label}")
        if v.n_gate_failures:
            extra.append(f"{v.n_gate_failures} broke a gate, {v.n_answer_passed_gate_failed} of them passed the check")
        lines.append(f"variant {v.name}: {v.n_runs} of {v.n_planned} runs recorded, {v.n_executed} executed, "
                     f"{v.passes} passed" + (f" ({', '.join(extra)})" if extra else ""))
        for r in rep.runs:
            if r["variant"] == v.name and r.get("gates_passed") is False:
                check = {True: "check passed", False: "check failed", None: "no check verdict"}[r.get("answer_passed")]
                lines.append(f"  run {r['run_id']}: failed, {check}, broke "
                             + "; ".join(gate_failure_words(f) for f in r.get("gate_failures") or []))
        for p in v.pass_k:
            lines.append(f"  pass@{p.k} = {p.pass_at_k:.3f}   pass^{p.k} = {p.pass_hat_k:.3f}   (k = {p.k} <= n = "
                         f"{v.n_executed})")
        lines.append(f"  {'':<18} {'n':>3} {'p50':>14} {'p95':>14} {'max':>14}")
        for d in v.distributions:
            lines.append(f"  {d.name:<18} {d.n:>3} {_fmt(d.p50, d.unit):>14} {_fmt(d.p95, d.unit):>14} "
                         f"{_fmt(d.max, d.unit):>14}")
        lines.append("")
    if rep.headline:
        a, b = rep.headline[0].a, rep.headline[0].b
        lines.append(f"median difference B - A ({b} - {a}), 95% bootstrap interval")
        for h in rep.headline:
            ci = "" if h.ci_low is None else f"  [{_fmt(h.ci_low, h.unit)}, {_fmt(h.ci_high, h.unit)}]"
            lines.append(f"  {h.name:<18} {_fmt(h.median_diff, h.unit):>14}{ci}  {h.hint}")
        lines.append("")
    if rep.layout is not None and rep.layout_variants:
        a, b = rep.layout_variants
        counts = rep.layout.counts()
        lines.append(f"layout: first main request of {a} vs {b} (majority form of each)")
        lines.append(f"  first divergence: {rep.layout.first_divergence_words}")
        words = {"only_a": f"only in {a}", "only_b": f"only in {b}"}
        lines.append("  blocks: " + ", ".join(f"{words.get(op, op)} {n}" for op, n in counts.items()))
        lines.append("")
    for note in rep.notes:
        lines.append(f"note: {note}")
    return lines
