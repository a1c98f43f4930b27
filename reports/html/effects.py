"""The Effects and constraints section: what the run changed on disk, the gates it was judged by, and
the tool calls its requests did not allow.

Reads the `effects`, `effect_roots`, `run_gates`, `tool_calls`, `call_effects` and `effect_calls` views and judges the stored gates
with `analysis.constraints`; sentences are made here so the template only reads them. Watched places
are named by number, never by path: a report is meant to be shared.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import duckdb
from markupsafe import Markup

from ctxtap.analysis.rules.constraints import Gates, check
from ctxtap.reports.html.budget import ctxtap_sql
from ctxtap.reports.html.model import CaptureEffects, CaptureInfo, Effects, GateLine, SessionView, fetch

MAX_NAMED = 12  # paths named in one sentence; the rest are counted


def _files(n: int) -> str:
    return "1 file" if n == 1 else f"{n} files"


def _names(rows: list[dict[str, Any]]) -> str:
    named = ", ".join(f"{r['rel_path']} ({r['change']}{' from ' + r['renamed_from'] if r['renamed_from'] else ''})"
                      for r in rows[:MAX_NAMED])
    return named + (f" and {len(rows) - MAX_NAMED} more" if len(rows) > MAX_NAMED else "")


def change_sentences(effects: list[dict[str, Any]], roots: list[dict[str, Any]]) -> list[str]:
    """`2 files written in the working directory: .gitignore (modified), .aider.chat.history.md (created).`"""
    out = []
    watched = [r["root"] for r in roots if r["root_kind"] == "watched"]
    places = [("workspace", None, "the working directory")] + [
        ("watched", root, f"watched place {i}") for i, root in enumerate(watched, 1)]
    for kind, root, label in places:
        mine = [e for e in effects if e["root_kind"] == kind and (root is None or e["root"] == root)]
        if mine:
            out.append(f"{_files(len(mine))} written in {label}: {_names(mine)}.")
        elif kind == "workspace" or root is not None:
            out.append(f"Nothing was written in {label}.")
    return out


def coverage_sentence(roots: list[dict[str, Any]]) -> str:
    parts = []
    for i, r in enumerate([r for r in roots if r["root_kind"] == "workspace"]
                          + [r for r in roots if r["root_kind"] == "watched"]):
        label = "the working directory" if r["root_kind"] == "workspace" else f"watched place {i}"
        walked = "in full" if r["complete"] else f"stopped early ({r['stopped']}): only what it walked is compared"
        parts.append(f"{label} ({r['files_after']} entries, {walked})")
    return (f"Snapshotted before and after the run: {', '.join(parts)}; git-ignored files included, .git/ "
            f"internals left out. Places that were not snapshotted (the client's home folder unless given with "
            f"--watch, temporary and system folders) are not seen.")


def gate_sentences(con: duckdb.DuckDBPyConnection) -> list[GateLine]:
    rows = fetch(con, "SELECT * FROM run_gates")
    if not rows:
        return []
    report = check(con, Gates.model_validate_json(rows[0]["gates_json"]))
    out = []
    for r in report.results:
        if not r.judged:
            out.append(GateLine(f"Cannot judge {r.gate}: {r.how}.", True))
        elif r.violations:
            named = "; ".join(v.what for v in r.violations[:MAX_NAMED])
            more = f" and {len(r.violations) - MAX_NAMED} more" if len(r.violations) > MAX_NAMED else ""
            out.append(GateLine(f"Breaks {r.gate}: {named}{more}.", True))
        else:
            out.append(GateLine(f"Keeps {r.gate}.", False))
    return out


def tool_check_sentences(con: duckdb.DuckDBPyConnection) -> list[str]:
    rows = fetch(con, "SELECT t.name, t.check_status, t.check_detail, q.request_number FROM tool_calls t "
                      "LEFT JOIN requests q ON q.capture_id = t.capture_id AND q.request_id = t.request_id "
                      "WHERE t.check_status IN ('unknown_tool', 'invalid_arguments') "
                      "ORDER BY q.request_number, t.call_index")
    out = []
    for r in rows[:MAX_NAMED]:
        what = "called a tool never offered" if r["check_status"] == "unknown_tool" else "arguments refused by " \
            "the tool's schema"
        out.append(f"Request #{r['request_number']}: {r['name']} — {what} ({r['check_detail']}).")
    if len(rows) > MAX_NAMED:
        out.append(f"… and {len(rows) - MAX_NAMED} more (tool_calls.check_status).")
    return out


_SCOPE_WORDS = {"inside": "inside the working directory", "outside": "outside the working directory",
                "mixed": "inside and outside the working directory", "unknown": "at paths that could not be placed"}


def call_class_sentences(con: duckdb.DuckDBPyConnection, workspace: str | None = None) -> tuple[str, list[Markup]]:
    """`3 tool calls proposed: 2 write, 1 execute.` and one sentence per call that is not a plain read inside."""
    rows = fetch(con, "SELECT c.*, t.command, t.arguments, q.request_number FROM call_effects c "
                      "LEFT JOIN tool_calls t ON t.capture_id = c.capture_id AND t.request_id = c.request_id "
                      "AND t.call_id = c.call_id LEFT JOIN requests q ON q.capture_id = c.capture_id "
                      "AND q.request_id = c.request_id ORDER BY q.request_number, t.call_index")
    if not rows:
        return "", []
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["effect_class"]] = counts.get(r["effect_class"], 0) + 1
    order = ("destructive", "write", "network", "execute", "read", "unknown")
    by_class = ", ".join(f"{counts[k]} {k}" for k in sorted(counts, key=lambda k: (-counts[k], order.index(k))))
    outside = sum(r["workspace_scope"] in ("outside", "mixed") for r in rows)
    unparsed = sum(r["parse_status"] == "unparsed" for r in rows)
    summary = f"{len(rows)} tool call{'s' if len(rows) != 1 else ''} proposed: {by_class}."
    if outside:
        summary += f" {outside} named a path outside the working directory."
    if unparsed:
        summary += f" {unparsed} shell command{'s' if unparsed != 1 else ''} could not be parsed."
    out = []
    notable = [r for r in rows if r["effect_class"] != "read" or r["workspace_scope"] in ("outside", "mixed")]
    for r in notable[:MAX_NAMED]:
        what = (r["command"] or r["arguments"] or "")[:120]
        if workspace:  # the working directory's path stays out of a shareable report
            what = what.replace(workspace, "$WORKSPACE")
        where = _SCOPE_WORDS.get(r["workspace_scope"], "")
        rules = r["effect_rules"] or "no evidence in the name, arguments or description"
        text = Markup("Request #{}: {} <code>{}</code> — {} ({})").format(
            r["request_number"], r["name"], what, r["effect_class"], rules.replace(",", ", "))
        if where:
            text += ", " + where
        if r["parse_status"] == "unparsed":
            text += Markup("; the command could not be parsed ({})").format(r["parse_detail"])
        out.append(text + ".")
    if len(notable) > MAX_NAMED:
        out.append(f"… and {len(notable) - MAX_NAMED} more (the call_effects view).")
    return summary, out


_NOUN = {"write": "write", "destructive": "deletion"}  # what a proposed access of a path is called in a sentence


def receipt_sentences(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Proposed writes against the receipt: those that happened, those it does not show, and changes no call named."""
    rows = fetch(con, "SELECT e.*, q.request_number FROM effect_calls e LEFT JOIN requests q "
                      "ON q.capture_id = e.capture_id AND q.request_id = e.request_id "
                      "ORDER BY e.verdict, q.request_number, coalesce(e.path, e.rel_path)")
    out = []
    for r in rows[:MAX_NAMED]:
        if r["verdict"] == "proposed_and_happened":
            out.append(f"Request #{r['request_number']}: {r['name']} proposed a {_NOUN[r['access']]} of {r['path']}; "
                       f"the receipt shows {r['rel_path']} ({r['change']}).")
        elif r["verdict"] == "proposed_not_seen":
            out.append(f"Request #{r['request_number']}: {r['name']} proposed a {_NOUN[r['access']]} of {r['path']} "
                       f"that the receipt does not show (the call's status: {r['check_status']}).")
        elif r["verdict"] == "unproposed":
            more = f"; calls that write without naming a path: {r['unnamed_writers']}" if r["unnamed_writers"] else ""
            more += f"; named, not as a write, by {r['named_by']}" if r["named_by"] else ""
            out.append(f"{r['rel_path']} ({r['change']}) was written by no proposed call{more}.")
    if len(rows) > MAX_NAMED:
        out.append(f"… and {len(rows) - MAX_NAMED} more (the effect_calls view).")
    return out


def build_effects(per_capture: Sequence[tuple[CaptureInfo, duckdb.DuckDBPyConnection, list[SessionView]]]
                  ) -> Effects:
    captures = []
    n_changed = n_broken = 0
    for cap, con, _views in per_capture:
        roots = fetch(con, "SELECT * FROM effect_roots ORDER BY root_kind DESC, root")
        effects = fetch(con, "SELECT * FROM effects ORDER BY root_kind DESC, root, rel_path")
        gates = gate_sentences(con)
        summary, classes = call_class_sentences(
            con, next((r["root"] for r in roots if r["root_kind"] == "workspace"), None))
        n_changed += len(effects)
        n_broken += sum(g.broken for g in gates)
        captures.append(CaptureEffects(
            capture=cap, has_receipt=bool(roots),
            changes=change_sentences(effects, roots) if roots else [],
            coverage=coverage_sentence(roots) if roots else (
                "No effect receipt: the capture was not made by `ctxtap record` (or before receipts existed), so "
                "what the run changed on disk is not known."),
            gates=gates, tool_checks=tool_check_sentences(con),
            call_summary=summary, call_classes=classes, call_receipts=receipt_sentences(con) if roots else [],
            command=f'{ctxtap_sql(cap.path)} "SELECT root_kind, rel_path, change, size_before, size_after '
                    f'FROM effects"'))
    return Effects(captures, n_changed, n_broken)
