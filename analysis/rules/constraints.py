"""Run conditions as gates: did the agent do only what it was allowed to?

`ctxtap check` and `record --check` judge a capture against the conditions a task set ("modify
nothing", "do not use the network", ...) from the views alone: `effects`/`effect_roots` (record's
effect receipt), `network` (non-model flows through the proxy), `exposure_summary` (secrets that
reached a provider), `tool_calls` and `call_effects`/`call_effect_paths` (the paths the calls named,
and, where there is no receipt, the writes they proposed). Each violation carries its evidence so
a CI log says what happened, not only that something did. A gate that cannot be judged (no receipt)
fails: silence is not proof.
"""

from __future__ import annotations

import fnmatch
import os
from typing import Any

import duckdb
from pydantic import BaseModel, Field

CLIENT_OWN_CATEGORIES = ("telemetry", "update_check", "client_config")
_HARMLESS = ("/dev/null", "/dev/stdout", "/dev/stderr", "/dev/stdin", "/dev/tty")


class Gates(BaseModel):
    """The conditions to judge; all off by default."""

    no_writes: bool = False
    allow_write: list[str] = Field(default_factory=list)  # globs over the path relative to its root
    no_network: bool = False
    allow_host: list[str] = Field(default_factory=list)
    no_secrets_sent: bool = False
    no_outside_workspace: bool = False
    workspace: str | None = None  # the working directory, when the capture has no receipt to say it

    def flags(self) -> list[str]:
        """The gates as `ctxtap check` spells them."""
        out = ["--no-writes"] * self.no_writes + [f"--allow-write {g}" for g in self.allow_write]
        out += ["--no-network"] * self.no_network + [f"--allow-host {h}" for h in self.allow_host]
        out += ["--no-secrets-sent"] * self.no_secrets_sent + ["--no-outside-workspace"] * self.no_outside_workspace
        return out


class Violation(BaseModel):
    gate: str
    what: str
    evidence: str  # the receipt row, the call or the request it comes from
    path: str | None = None
    request_id: str | None = None
    call_id: str | None = None


class GateResult(BaseModel):
    gate: str
    judged: bool  # false: the capture holds nothing to judge it on (counts as a failure)
    how: str  # how the gate decided, in a sentence
    violations: list[Violation] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.judged and not self.violations


class CheckReport(BaseModel):
    results: list[GateResult] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.results)


def _rows(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
    cur = con.execute(sql, params or [])
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def check(con: duckdb.DuckDBPyConnection, gates: Gates) -> CheckReport:
    report = CheckReport()
    if gates.no_writes:
        report.results.append(_no_writes(con, gates.allow_write))
    if gates.no_network:
        report.results.append(_no_network(con, gates.allow_host))
    if gates.no_secrets_sent:
        report.results.append(_no_secrets(con))
    if gates.no_outside_workspace:
        report.results.append(_outside_workspace(con, gates.workspace))
    return report


def _roots(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    return _rows(con, "SELECT * FROM effect_roots ORDER BY root_kind DESC, root")


def _coverage(roots: list[dict[str, Any]]) -> str:
    places = ", ".join(f"{'the working directory' if r['root_kind'] == 'workspace' else 'watched ' + r['root']}"
                       f"{'' if r['complete'] else ' (stopped early: ' + str(r['stopped']) + ')'}" for r in roots)
    return f"snapshots of {places} before and after the run; places not snapshotted are not seen"


def describe_effect(e: dict[str, Any]) -> str:
    where = "the working directory" if e["root_kind"] == "workspace" else f"watched {e['root']}"
    sizes = f"{e['size_before'] if e['size_before'] is not None else '-'} -> " \
            f"{e['size_after'] if e['size_after'] is not None else '-'} bytes"
    sha = f"sha256 {(e['sha256_before'] or '?')[:12]} -> {(e['sha256_after'] or '?')[:12]}"
    moved = f" from {e['renamed_from']}" if e["renamed_from"] else ""
    return f"receipt: {e['rel_path']} {e['change']}{moved} in {where}, {sizes}, {sha}"


def _no_writes(con: duckdb.DuckDBPyConnection, allow: list[str]) -> GateResult:
    roots = _roots(con)
    if not roots:
        return _proposed_writes(con, allow)
    result = GateResult(gate="--no-writes", judged=True, how=_coverage(roots)
                        + (f"; allowed: {', '.join(allow)}" if allow else ""))
    for e in _rows(con, "SELECT * FROM effects ORDER BY root_kind DESC, rel_path"):
        if any(fnmatch.fnmatch(e["rel_path"], g) or fnmatch.fnmatch(os.path.join(e["root"], e["rel_path"]), g)
               for g in allow):
            continue
        result.violations.append(Violation(gate="--no-writes", what=f"{e['rel_path']} ({e['change']})",
                                           evidence=describe_effect(e), path=e["rel_path"]))
    return result


def _proposed_writes(con: duckdb.DuckDBPyConnection, allow: list[str]) -> GateResult:
    """No receipt: the writes the tool calls proposed (`call_effects`) are evidence of a broken gate, though
    not proof that they happened; no proposed write is not proof of none, so the gate stays unjudged."""
    rows = _rows(con, "SELECT c.*, t.command, t.arguments, q.request_number FROM call_effects c "
                      "LEFT JOIN tool_calls t ON t.capture_id = c.capture_id AND t.request_id = c.request_id "
                      "AND t.call_id = c.call_id LEFT JOIN requests q ON q.capture_id = c.capture_id "
                      "AND q.request_id = c.request_id WHERE c.effect_class IN ('write', 'destructive') "
                      "ORDER BY q.request_number, t.call_index")
    paths = {}
    for p in _rows(con, "SELECT * FROM call_effect_paths WHERE access IN ('write', 'destructive')"):
        paths.setdefault((p["capture_id"], p["request_id"], p["call_id"]), []).append(p["path"])
    how = ("the capture has no effect receipt (record it with `ctxtap record`): judged on the writes the tool "
           "calls proposed (the call_effects view), which may not have happened")
    result = GateResult(gate="--no-writes", judged=bool(rows), how=how if rows else
                        "the capture has no effect receipt (record it with `ctxtap record`), and no tool call "
                        "proposed a write")
    for c in rows:
        named = paths.get((c["capture_id"], c["request_id"], c["call_id"]), [])
        if named and all(any(fnmatch.fnmatch(n, g) for g in allow) for n in named):
            continue
        result.violations.append(Violation(
            gate="--no-writes", what=f"{c['name']} proposed a {'deletion' if c['effect_class'] == 'destructive' else 'write'}"
                                     f"{' of ' + ', '.join(named) if named else ''}",
            evidence=f"request #{c['request_number']} ({c['request_id']}) proposed call {c['call_id']} {c['name']}: "
                     f"{(c['command'] or c['arguments'] or '')[:200]} (rules {c['effect_rules']}; no receipt says "
                     f"whether it ran)",
            path=named[0] if named else None, request_id=c["request_id"], call_id=c["call_id"]))
    return result


def _no_network(con: duckdb.DuckDBPyConnection, allow: list[str]) -> GateResult:
    rows = _rows(con, "SELECT * FROM network ORDER BY first_ts, host, path")
    own = [r for r in rows if r["category"] in CLIENT_OWN_CATEGORIES or r["is_provider_host"]]
    how = ("judged on the non-model flows through the proxy (the `network` view); the client's own traffic is "
           "kept apart: model API calls, hosts that serve a model API, and flows the path rules call "
           f"{', '.join(CLIENT_OWN_CATEGORIES)} ({sum(r['n_flows'] for r in own)} flows kept apart"
           f"{': ' + ', '.join(sorted({r['host'] for r in own})) if own else ''}); only traffic through the "
           "proxy is seen (DNS, raw sockets, ssh and clients that ignore the proxy settings are not)")
    result = GateResult(gate="--no-network", judged=True,
                        how=how + (f"; allowed hosts: {', '.join(allow)}" if allow else ""))
    for r in rows:
        if r in own or any(fnmatch.fnmatch(r["host"], h) for h in allow):
            continue
        result.violations.append(Violation(
            gate="--no-network", what=f"{r['method']} {r['scheme']}://{r['host']}:{r['port']}{r['path']}",
            evidence=f"network: {r['n_flows']} flow(s), category {r['category']} ({r['category_rule']}), "
                     f"statuses {r['statuses']}, sent by {r['client']}"))
    return result


def _no_secrets(con: duckdb.DuckDBPyConnection) -> GateResult:
    result = GateResult(gate="--no-secrets-sent", judged=True,
                        how="judged on the `exposure_summary` view: redacted credentials found in what requests "
                            "sent (placeholders only; values are never stored)")
    for r in _rows(con, "SELECT e.*, q.request_number FROM exposure_summary e LEFT JOIN requests q "
                        "ON q.capture_id = e.capture_id AND q.request_id = e.first_request_id "
                        "WHERE e.category = 'credential' ORDER BY e.first_seq_in_session"):
        result.violations.append(Violation(
            gate="--no-secrets-sent", what=f"{r['kind']} {r['placeholder']}",
            evidence=f"request #{r['request_number']} ({r['first_request_id']}) sent it to {r['hosts']}, "
                     f"from {r['first_source']}; {r['requests_carrying']} request(s) carried it",
            request_id=r["first_request_id"]))
    return result


def outside(path: str, workspace: str) -> bool:
    if path in _HARMLESS or "://" in path:
        return False
    full = os.path.normpath(os.path.join(workspace, os.path.expanduser(path)))
    return os.path.commonpath([full, workspace]) != workspace


def _outside_workspace(con: duckdb.DuckDBPyConnection, workspace: str | None) -> GateResult:
    roots = _roots(con)
    workspace = workspace or next((r["root"] for r in roots if r["root_kind"] == "workspace"), None)
    placed = _rows(con, "SELECT count(*) AS n FROM call_effect_paths WHERE inside_workspace IS NOT NULL")[0]["n"]
    if workspace is None and not placed:
        return GateResult(gate="--no-outside-workspace", judged=False,
                          how="the working directory is not known: the capture has no effect receipt "
                              "(give it with --workspace)")
    workspace = os.path.normpath(workspace) if workspace else None
    result = GateResult(gate="--no-outside-workspace", judged=True,
                        how="judged on the paths tool calls named (the call_effect_paths view: path arguments, "
                            "shell commands parsed into their commands and redirections, resolved against the "
                            f"{'working directory' if workspace else 'recorded working directory'}) and on the "
                            "receipt's watched places")
    by_call: dict[tuple, list[dict[str, Any]]] = {}
    for p in _rows(con, "SELECT * FROM call_effect_paths"):
        by_call.setdefault((p["capture_id"], p["request_id"], p["call_id"]), []).append(p)
    for c in _rows(con, "SELECT t.*, q.request_number FROM tool_calls t LEFT JOIN requests q "
                        "ON q.capture_id = t.capture_id AND q.request_id = t.request_id "
                        "WHERE t.request_id IS NOT NULL ORDER BY q.request_number, t.call_index"):
        for p in by_call.get((c["capture_id"], c["request_id"], c["call_id"]), []):
            path = p["path"]
            if workspace is not None:
                is_out = outside(p["resolved_path"] or path, workspace) if (
                    p["resolved_path"] or path.startswith(("/", "~", "../")) or path == "..") else False
            else:
                is_out = p["inside_workspace"] is False
            if is_out:
                result.violations.append(Violation(
                    gate="--no-outside-workspace", what=f"{c['name']} names {path}",
                    evidence=f"request #{c['request_number']} ({c['request_id']}) proposed call {c['call_id']} "
                             f"{c['name']}: {(c['command'] or c['arguments'] or '')[:200]} ({p['access']} by "
                             f"rule {p['rule']})",
                    path=path, request_id=c["request_id"], call_id=c["call_id"]))
    for e in _rows(con, "SELECT * FROM effects WHERE root_kind = 'watched' ORDER BY root, rel_path"):
        result.violations.append(Violation(gate="--no-outside-workspace", what=f"{e['rel_path']} ({e['change']})",
                                           evidence=describe_effect(e), path=e["rel_path"]))
    return result
