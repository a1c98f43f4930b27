"""A burst of concurrent keep-alive streaming clients through an HTTPS proxy, on loopback.

Used by tests/proxy_addons/test_proxy_burst.py and benchmarks/bench_burst.py. Each client opens one
CONNECT tunnel, does TLS with the proxy's CA, then sends SSE requests back to back on that
one connection until the deadline or the shared request budget runs out. All clients
start at once, so the proxy's first second (fresh connections, fresh certificates, fresh
upstream connections) is under load, like a team of agents starting together.

asyncio rather than threads: one process drives 50 clients without the clients
themselves becoming the bottleneck on a 2-core machine.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import time
from collections import Counter
from dataclasses import dataclass, field

BODY = json.dumps({"model": "claude-haiku-4-5", "max_tokens": 16, "stream": True,
                   "messages": [{"role": "user", "content": "hi"}]}).encode()


@dataclass
class BurstResult:
    clients: int
    seconds: float = 0.0
    ok: int = 0
    errors: Counter = field(default_factory=Counter)  # message -> count
    first_error_at: list[float] = field(default_factory=list)  # seconds after the start

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())

    @property
    def rate(self) -> float:
        return self.ok / self.seconds if self.seconds else 0.0

    def summary(self) -> str:
        errs = "; ".join(f"{n}x {msg}" for msg, n in self.errors.most_common()) or "none"
        early = sum(1 for t in self.first_error_at if t < 1.0)
        return (f"{self.clients} clients, {self.seconds:.1f} s: {self.ok} ok ({self.rate:.0f}/s), "
                f"{self.error_count} errors ({early} in the first second): {errs}")


async def _read_head(reader: asyncio.StreamReader) -> tuple[int, dict[str, str]]:
    lines = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        key, sep, value = line.partition(":")
        if sep:
            headers[key.strip().lower()] = value.strip()
    return int(lines[0].split(" ", 2)[1]), headers


async def _read_body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
    if "chunked" in headers.get("transfer-encoding", "").lower():
        parts = []
        while True:
            size = int((await reader.readline()).split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while (await reader.readline()) not in (b"\r\n", b""):
                    pass  # trailers
                return b"".join(parts)
            parts.append(await reader.readexactly(size))
            await reader.readline()
    length = int(headers.get("content-length", "0"))
    return await reader.readexactly(length) if length else b""


class _Client:
    def __init__(self, proxy_port: int, tls: ssl.SSLContext, host: str, path: str, result: BurstResult, t0: float):
        self.proxy_port, self.host, self.result, self.t0 = proxy_port, host, result, t0
        self.tls = tls
        self.request = (f"POST {path} HTTP/1.1\r\nHost: {host}\r\ncontent-type: application/json\r\n"
                        f"content-length: {len(BODY)}\r\n\r\n").encode() + BODY
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    def fail(self, message: str) -> None:
        self.result.errors[message] += 1
        self.result.first_error_at.append(time.monotonic() - self.t0)

    async def connect(self) -> None:
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.proxy_port)
        self.writer.write(f"CONNECT {self.host}:443 HTTP/1.1\r\nHost: {self.host}:443\r\n\r\n".encode())
        status, _ = await _read_head(self.reader)
        if status != 200:
            raise ConnectionError(f"CONNECT answered {status}")
        await self.writer.start_tls(self.tls, server_hostname=self.host)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None

    async def run(self, deadline: float, budget: list[int]) -> None:
        while time.monotonic() < deadline and budget[0] > 0:
            budget[0] -= 1
            try:
                if self.writer is None:
                    await self.connect()
                assert self.reader is not None and self.writer is not None
                self.writer.write(self.request)
                status, headers = await _read_head(self.reader)
                body = await _read_body(self.reader, headers)
                if status != 200 or b"message_stop" not in body:
                    self.fail(f"HTTP {status}: {body[:200].decode('utf-8', 'replace')}")
                else:
                    self.result.ok += 1
                if headers.get("connection", "").lower() == "close":
                    self.close()
            except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ssl.SSLError,
                    ValueError) as exc:
                self.fail(f"{type(exc).__name__}: {exc}")
                self.close()
        self.close()


async def _burst(proxy_port: int, ca_file: str, clients: int, seconds: float, max_requests: int,
                 host: str, path: str) -> BurstResult:
    result = BurstResult(clients)
    # One TLS context for all: loading the CA bundle (the system roots and ours) takes tens of
    # milliseconds, and a context per client held every client back ~1.5 s, so the proxy's
    # first second saw no load at all.
    tls = ssl.create_default_context(cafile=ca_file)
    t0 = time.monotonic()
    budget = [max_requests]
    await asyncio.gather(*(_Client(proxy_port, tls, host, path, result, t0).run(t0 + seconds, budget)
                           for _ in range(clients)))
    result.seconds = time.monotonic() - t0
    return result


def run_burst(proxy_port: int, ca_file: str, *, clients: int = 50, seconds: float = 10.0,
              max_requests: int = 10**9, host: str = "api.anthropic.com",
              path: str = "/v1/messages") -> BurstResult:
    """Drive `clients` keep-alive SSE clients at once until `seconds` pass or `max_requests` are sent."""
    return asyncio.run(_burst(proxy_port, ca_file, clients, seconds, max_requests, host, path))
