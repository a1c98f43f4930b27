"""A POST to the scripted model server over a real socket, its body optionally compressed as clients send
it (a support module, no tests: the model server's tests and its structured-output tests use it)."""

from __future__ import annotations

import gzip
import json
import zlib
from typing import Any

import brotli
import zstandard

from ctxtap.modelserver import ModelServer
from ctxtap.modelserver.client import HttpClient


def zstd_streaming(data: bytes) -> bytes:
    """zstd as Codex sends it: a streamed frame without the content size in its header."""
    obj = zstandard.ZstdCompressor(level=3).compressobj()
    return obj.compress(data) + obj.flush()


def post(
    srv: ModelServer,
    path: str,
    body: Any,
    headers: list[tuple[str, str]] | None = None,
    encoding: str | None = None,
) -> tuple[int, dict[str, str], bytes]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    hdrs = [("Content-Type", "application/json"), *(headers or [])]
    if encoding:
        data = {
            "gzip": gzip.compress,
            "br": brotli.compress,
            "zstd": zstd_streaming,
            "deflate": zlib.compress,
        }[encoding](data)
        hdrs.append(("Content-Encoding", encoding))
    client = HttpClient(srv.url)
    try:
        resp = client.request("POST", path, data, hdrs)
        return resp.status, {k.lower(): v for k, v in resp.headers}, resp.raw.read()
    finally:
        client.close()
