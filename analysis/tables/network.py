"""`network`: every non-model destination the run reached through the proxy.

A task told "do not access the network" is judged on this: telemetry, update checks, settings
and catalogue fetches, forge APIs. The proxy sees only what the client sent through it; DNS
look-ups, raw sockets, ssh and anything that ignores the proxy settings never reach it, so an
empty table does not prove a run stayed offline. Non-model flows are recorded as metadata
(method, host, path, status, sizes, times) unless the capture was recorded with `--record-all`.
"""

from __future__ import annotations

import re

from ctxtap.analysis.tables.base import F64, I64, B, BuildContext, Columns, Row, S, Table

NOT_SEEN = ("Only traffic sent through the proxy is seen: DNS look-ups, raw sockets, ssh and clients "
            "that ignore the proxy settings are not.")

COLUMNS: Columns = [
    ("host", S, "Host the client addressed."),
    ("port", I64, "Port the client addressed."),
    ("scheme", S, "`https` or `http`."),
    ("method", S, "HTTP method (`GET` with kind `websocket` for an upgrade)."),
    ("path", S, "Path without its query string (credentials redacted)."),
    ("kind", S, "`http` or `websocket`."),
    ("category", S, "`telemetry`, `update_check`, `client_config` (settings, catalogues, plugins), `forge_api`, `package_registry` or `other`, by rule."),
    ("category_rule", S, "Rule that set the category (`network.<rule>`)."),
    ("is_provider_host", B, "The host also serves a model API (telemetry to the model vendor's own host)."),
    ("provider", S, "Provider of the host, or `unknown`."),
    ("client", S, "Client that sent the first of these flows."),
    ("n_flows", I64, "Requests to this host, method and path."),
    ("n_errors", I64, "Of which ended without a response or with a proxy-side error."),
    ("statuses", S, "HTTP statuses seen, with counts (`200 x3, 404`)."),
    ("request_bytes", I64, "Request bodies sent, as received from the client (encoded)."),
    ("response_bytes", I64, "Response bodies received, as received from upstream (encoded)."),
    ("first_ts", F64, "Unix time of the first request."),
    ("last_ts", F64, "Unix time of the last request."),
    ("record_mode", S, "`metadata` (headers and bodies not kept) or `full` (recorded with --record-all)."),
]

# (rule id, category, pattern over `host/path`), first match wins
_RULES: list[tuple[str, str, re.Pattern[str]]] = [
    ("telemetry-path", "telemetry", re.compile(
        r"event_logging|telemetry|/v1/(?:traces|logs|metrics)\b|/otlp|/metrics\b|/v\d+/events?\b|/event\b|"
        r"/collect\b|/track\b|/batch\b|/rgstr|/log_event", re.I)),
    ("telemetry-host", "telemetry", re.compile(
        r"^(?:[^/]*\.)?(?:sentry\.io|statsig(?:api)?\.\w+|datadoghq\.\w+|segment\.io|mixpanel\.com|"
        r"amplitude\.com|posthog\.com|ab\.chatgpt\.com|telemetry[^/]*|[^/]*telemetry[^/]*)/", re.I)),
    ("package-registry", "package_registry", re.compile(
        r"^(?:registry\.npmjs\.org|registry\.yarnpkg\.com|pypi\.org|files\.pythonhosted\.org|crates\.io)/", re.I)),
    ("update-check", "update_check", re.compile(
        r"update|/releases(?:/latest)?\b|/version\b|/latest\b|/stable\b|/downloads?\b", re.I)),
    ("forge-api", "forge_api", re.compile(r"^(?:api\.github\.com|github\.com|gitlab\.com|api\.bitbucket\.org)/", re.I)),
    ("client-config", "client_config", re.compile(
        r"/models\b|plugins?|settings|bootstrap|polic(?:y|ies)|feature|config|/me\b|/account|/oauth|"
        r"/profile|/organizations|/hello|/status|/eval/|/flags", re.I)),
]


def categorise(host: str, path: str) -> tuple[str, str]:
    target = f"{host}/{path.lstrip('/')}"
    for rule, category, pattern in _RULES:
        if pattern.search(target):
            return category, f"network.{rule}"
    return "other", "network.other"


def build(ctx: BuildContext) -> list[Row]:
    flows = ctx.capture.flows().to_pylist()
    groups: dict[tuple, Row] = {}
    statuses: dict[tuple, dict[str, int]] = {}
    for f in sorted(flows, key=lambda f: (f["seq"] if f["seq"] is not None else 0)):
        if f["is_model"]:
            continue
        host, path = f["host"] or "", (f["path"] or "/").split("?", 1)[0]
        key = (host, f["port"], f["scheme"], f["method"], path, f["kind"])
        row = groups.get(key)
        if row is None:
            category, rule = categorise(host, path)
            provider = f["provider"] or "unknown"
            row = groups[key] = {
                "host": host, "port": f["port"], "scheme": f["scheme"], "method": f["method"], "path": path,
                "kind": f["kind"], "category": category, "category_rule": rule,
                "is_provider_host": provider != "unknown", "provider": provider, "client": f["client"],
                "n_flows": 0, "n_errors": 0, "request_bytes": 0, "response_bytes": 0,
                "first_ts": f["ts_request_start"], "last_ts": f["ts_request_start"], "record_mode": f["record_mode"],
            }
            statuses[key] = {}
        row["n_flows"] += 1
        row["n_errors"] += int(f["state"] != "complete" or bool(f["error"]))
        row["request_bytes"] += f["request_bytes_wire"] or 0
        row["response_bytes"] += f["response_bytes_wire"] or 0
        ts = f["ts_request_start"]
        if ts is not None:
            row["first_ts"] = ts if row["first_ts"] is None else min(row["first_ts"], ts)
            row["last_ts"] = ts if row["last_ts"] is None else max(row["last_ts"], ts)
        if f["record_mode"] == "full":
            row["record_mode"] = "full"
        label = str(f["status"]) if f["status"] is not None else "no response"
        statuses[key][label] = statuses[key].get(label, 0) + 1
    for key, row in groups.items():
        row["statuses"] = ", ".join(s if n == 1 else f"{s} x{n}" for s, n in sorted(statuses[key].items()))
    return sorted(groups.values(), key=lambda r: (r["first_ts"] or 0, r["host"], r["path"]))


TABLE = Table("network", "every non-model destination reached through the proxy (host, method, path); traffic "
              "that bypasses the proxy (DNS look-ups, raw sockets, ssh, clients ignoring the proxy settings) is not "
              "seen, so an empty table does not prove a run stayed offline", COLUMNS, build)
