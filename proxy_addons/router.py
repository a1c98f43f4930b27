"""`--route HOST=URL`: send a host's traffic to another upstream.

Used to point a real CLI at a local gateway or a scripted model server. The
recorder keeps the URL the client asked for; this addon only changes where
mitmproxy connects. Usable alone: `mitmdump -s proxy_addons/router.py --set ctxtap_route=HOST=URL`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import NamedTuple
from urllib.parse import urlsplit

from mitmproxy import ctx, exceptions, http

log = logging.getLogger(__name__)


class UpstreamRoute(NamedTuple):
    host: str
    scheme: str
    target_host: str
    port: int
    path_prefix: str

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.target_host}:{self.port}{self.path_prefix}"


def parse_route(spec: str) -> UpstreamRoute:
    """Parse "HOST=URL", e.g. "api.anthropic.com=http://127.0.0.1:8080"."""
    host, sep, url = spec.partition("=")
    parts = urlsplit(url.strip())
    if not sep or not host.strip() or parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"invalid route {spec!r}: expected HOST=http(s)://HOST[:PORT][/PREFIX]")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return UpstreamRoute(host.strip().lower(), parts.scheme, parts.hostname, port, parts.path.rstrip("/"))


def parse_routes(specs: Sequence[str]) -> dict[str, UpstreamRoute]:
    return {r.host: r for r in (parse_route(s) for s in specs)}


class Router:
    def __init__(self) -> None:
        self.routes: dict[str, UpstreamRoute] = {}

    def load(self, loader) -> None:
        if "ctxtap_route" not in ctx.options:
            loader.add_option(
                "ctxtap_route", Sequence[str], [],
                "Route a host's traffic elsewhere: HOST=URL (repeatable).",
            )
        if "ctxtap_offline" not in ctx.options:
            loader.add_option(
                "ctxtap_offline", bool, False,
                "Never reach the network: answer every unrouted request locally "
                "(GET: 404, other methods: 200 {}), so a sandboxed CLI does not wait on retries.",
            )

    def configure(self, updated: set[str]) -> None:
        if "ctxtap_route" in updated:
            try:
                self.routes = parse_routes(ctx.options.ctxtap_route)
            except ValueError as exc:
                raise exceptions.OptionsError(str(exc)) from exc
            if self.routes and ctx.options.connection_strategy != "lazy":
                # Eager mode connects to the original host at CONNECT time, before
                # the route applies: that fails offline and leaks the connection.
                log.info("routes given: switching connection_strategy to lazy")
                ctx.options.connection_strategy = "lazy"

    def route_for(self, flow: http.HTTPFlow) -> UpstreamRoute | None:
        return self.routes.get(flow.request.pretty_host.lower())

    def requestheaders(self, flow: http.HTTPFlow) -> None:
        route = self.route_for(flow)
        if route is None:
            return
        flow.request.scheme = route.scheme
        flow.request.host = route.target_host
        flow.request.port = route.port
        if route.path_prefix:
            flow.request.path = route.path_prefix + flow.request.path
        log.debug("routed %s to %s", route.host, route.url)

    def request(self, flow: http.HTTPFlow) -> None:
        if not ctx.options.ctxtap_offline or flow.response is not None or self.route_for_url_host(flow):
            return
        if flow.request.method == "GET":
            flow.response = http.Response.make(404, b'{"error":"not found (ctxtap offline)"}',
                                               {"content-type": "application/json"})
        else:
            flow.response = http.Response.make(200, b"{}", {"content-type": "application/json"})
        flow.metadata["ctxtap_offline"] = True

    def route_for_url_host(self, flow: http.HTTPFlow) -> bool:
        """Whether this (already rewritten) request is one we routed."""
        return any(flow.request.host == r.target_host and flow.request.port == r.port for r in self.routes.values())


addons = [Router()]
