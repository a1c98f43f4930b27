"""Injected failures and the provider-specific error bodies they produce.

Clients and the recorder must cope with real failure shapes (a 429 with
Retry-After, Anthropic's 529, a stream that stops half-way, an error inside a
200 stream), so the fake server reproduces each provider's body and headers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

INJECT_HEADER = "x-ctxtap-inject"

_ANTHROPIC = {
    400: ("invalid_request_error", "Invalid request."),
    401: ("authentication_error", "invalid x-api-key"),
    402: ("billing_error", "Your credit balance is too low to access the Anthropic API."),
    403: ("permission_error", "Your API key does not have permission to use the specified resource."),
    404: ("not_found_error", "Not found."),
    413: ("request_too_large", "Request exceeds the maximum allowed number of bytes."),
    429: ("rate_limit_error", "Number of requests has exceeded your rate limit. Please try again later."),
    500: ("api_error", "Internal server error"),
    504: ("timeout_error", "Request timed out"),
    529: ("overloaded_error", "Overloaded"),
}
_OPENAI = {
    400: ("invalid_request_error", None, "Invalid request."),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided: sk-proj-****. You can find your API key at https://platform.openai.com/account/api-keys."),
    402: ("insufficient_quota", "insufficient_quota", "You exceeded your current quota, please check your plan and billing details."),
    403: ("invalid_request_error", "unsupported_country_region_territory", "Country, region, or territory not supported"),
    404: ("invalid_request_error", "not_found", "Not found."),
    429: ("requests", "rate_limit_exceeded", "Rate limit reached for requests. Please try again in {retry}s."),
    500: ("server_error", "server_error", "The server had an error while processing your request. Sorry about that!"),
    503: ("server_error", "server_is_overloaded", "The server is overloaded. Please try again later."),
    529: ("server_error", "server_is_overloaded", "The server is overloaded. Please try again later."),
}
_MOONSHOT = {
    400: "invalid_request_error",
    401: "invalid_authentication_error",
    402: "exceeded_current_quota_error",
    403: "permission_denied_error",
    404: "resource_not_found_error",
    429: "rate_limit_reached_error",
    500: "server_error",
    529: "engine_overloaded_error",
}
_GOOGLE = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    402: "FAILED_PRECONDITION",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    529: "UNAVAILABLE",
}


@dataclass
class Fault:
    """A failure to inject on matching model calls.

    Exactly one effect: `status` (HTTP error), `cut_after` (close the stream
    after K events), `stream_error_after` (a 200 stream whose K+1-th event is
    the provider's in-stream error), or `linger_s` (a whole stream whose chunked
    end comes S seconds after its last event: a client that stops reading at
    its last event closes the connection first). Matching: `on_request` is the 1-based
    number of the model call (HTTP request or WebSocket `response.create`),
    `path_contains` / `api` narrow it; `times` is how often it fires (None =
    forever).
    """

    status: int | None = None
    cut_after: int | None = None
    stream_error_after: int | None = None
    linger_s: float | None = None
    retry_after_s: float | None = None
    message: str | None = None
    on_request: int | None = None
    path_contains: str | None = None
    api: str | None = None
    times: int | None = 1

    def matches(self, seq: int, path: str, api: str) -> bool:
        return (
            (self.times is None or self.times > 0)
            and (self.on_request is None or self.on_request == seq)
            and (self.path_contains is None or self.path_contains in path)
            and (self.api is None or self.api == api)
        )

    def describe(self) -> str:
        if self.status:
            return str(self.status)
        if self.cut_after is not None:
            return f"cut={self.cut_after}"
        if self.linger_s is not None:
            return f"linger={self.linger_s:g}"
        return f"stream-error={self.stream_error_after}"


def parse_inject(value: str | None) -> Fault | None:
    """Parse `x-ctxtap-inject`: `429`, `429; retry-after=0.5`, `cut=3`, `stream-error=2`, `linger=1.5`."""
    if not value:
        return None
    fault = Fault()
    for token in value.replace(",", ";").split(";"):
        token = token.strip().lower()
        if not token:
            continue
        name, _, arg = token.partition("=")
        name = name.strip()
        try:
            if name.isdigit():
                fault.status = int(name)
            elif name in ("cut", "cut_after", "cut-after"):
                fault.cut_after = int(arg or 0)
            elif name in ("stream-error", "stream_error"):
                fault.stream_error_after = int(arg or 0)
            elif name == "linger":
                fault.linger_s = float(arg or 0)
            elif name in ("retry-after", "retry_after"):
                fault.retry_after_s = float(arg)
        except ValueError:
            continue
    if fault.status is None and fault.cut_after is None and fault.stream_error_after is None and fault.linger_s is None:
        return None
    return fault


def error_body(family: str, status: int, *, message: str | None = None, request_id: str = "",
               retry_after_s: float = 1.0, moonshot: bool = False) -> dict[str, Any]:
    """The JSON error body a provider returns for `status`."""
    retry = max(1, math.ceil(retry_after_s))
    if family == "anthropic":
        etype, default = _ANTHROPIC.get(status, ("api_error", "Internal server error"))
        body: dict[str, Any] = {"type": "error", "error": {"type": etype, "message": message or default}}
        if request_id:
            body["request_id"] = request_id
        return body
    if family == "gemini":
        gstatus = _GOOGLE.get(status, "INTERNAL")
        err: dict[str, Any] = {"code": status, "message": message or f"Simulated {gstatus.lower()}.", "status": gstatus}
        if status == 429:
            err["message"] = message or "Resource has been exhausted (e.g. check quota)."
            err["details"] = [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{retry}s"}]
        return {"error": err}
    if moonshot:
        mtype = _MOONSHOT.get(status, "server_error")
        return {"error": {"message": message or mtype.replace("_", " "), "type": mtype}}
    otype, code, default = _OPENAI.get(status, ("server_error", "server_error", "Internal error."))
    return {"error": {"message": message or default.format(retry=retry), "type": otype, "param": None, "code": code}}


def error_headers(family: str, status: int, retry_after_s: float) -> list[tuple[str, str]]:
    """Headers that go with an error: Retry-After on 429 (and 529), Anthropic's x-should-retry."""
    headers: list[tuple[str, str]] = []
    if status in (429, 529, 503):
        headers.append(("retry-after", str(max(0, math.ceil(retry_after_s)))))
        headers.append(("retry-after-ms", str(int(retry_after_s * 1000))))
    if family == "anthropic":
        headers.append(("x-should-retry", "true" if status in (429, 500, 529) else "false"))
    return headers


def stream_error_event(family: str, status: int = 529) -> dict[str, Any]:
    """The payload a provider sends when a started 200 stream fails."""
    if family == "anthropic":
        return {"type": "error", "error": {"type": _ANTHROPIC.get(status, _ANTHROPIC[529])[0], "message": "Overloaded"}}
    if family == "responses":
        return {"type": "error", "code": "server_error", "message": "The server had an error while processing your request.", "param": None}
    return error_body(family, status if family == "gemini" else 500)
