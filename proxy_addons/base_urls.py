"""`record --base-url`: a loopback reverse proxy per provider, for clients that ignore HTTPS_PROXY.

Each provider below gets a plain-HTTP listener on 127.0.0.1 that forwards to its API (mitmproxy's
`reverse:` mode), and the client is pointed at it through the base-URL variable its SDK reads. The
request is recorded under the provider's own URL, as if it had come through the forward proxy.

The variables, as the SDKs document them: `OPENAI_BASE_URL` (openai-python, openai-node; with the
`/v1` the SDK would otherwise add) and the older `OPENAI_API_BASE`, `ANTHROPIC_BASE_URL`
(anthropic-sdk-python and -typescript, Claude Code), `GOOGLE_GEMINI_BASE_URL` (@google/genai,
Gemini CLI).
"""

from __future__ import annotations

import socket
from dataclasses import dataclass


@dataclass(frozen=True)
class Upstream:
    url: str  # the provider's API origin
    variables: dict[str, str]  # variable -> the path the SDK expects after the origin


UPSTREAMS: tuple[Upstream, ...] = (
    Upstream("https://api.openai.com", {"OPENAI_BASE_URL": "/v1", "OPENAI_API_BASE": "/v1"}),
    Upstream("https://api.anthropic.com", {"ANTHROPIC_BASE_URL": ""}),
    Upstream("https://generativelanguage.googleapis.com", {"GOOGLE_GEMINI_BASE_URL": ""}),
)


def free_port(host: str = "127.0.0.1") -> int:
    """A port free right now (mitmproxy binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def reverse_modes(ports: dict[str, int], host: str = "127.0.0.1") -> list[str]:
    """mitmproxy `mode` entries for the reverse listeners (mitmproxy 11 and 12 take several modes)."""
    return [f"reverse:{url}@{host}:{port}" for url, port in ports.items()]


def base_url_env(ports: dict[str, int], host: str = "127.0.0.1") -> dict[str, str]:
    """The variables that point each SDK at its provider's loopback listener."""
    env: dict[str, str] = {}
    for upstream in UPSTREAMS:
        port = ports.get(upstream.url)
        if port is not None:
            env.update({name: f"http://{host}:{port}{path}" for name, path in upstream.variables.items()})
    return env
