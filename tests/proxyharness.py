"""Run the real `ctxtap proxy` as a separate process for tests and benchmarks."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PROVIDER_HOSTS = (
    "api.anthropic.com", "api.openai.com", "chatgpt.com", "api.kimi.com", "api.moonshot.ai",
    "generativelanguage.googleapis.com", "cloudcode-pa.googleapis.com", "api.x.ai", "api.deepseek.com",
)


@dataclass
class ProxyProc:
    proc: subprocess.Popen
    port: int
    out: Path
    env: dict[str, str]
    stdout_lines: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ca_bundle(self) -> str:
        return self.env["SSL_CERT_FILE"]

    def stop(self, timeout: float = 60) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def kill9(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)


def routes_to(url: str, hosts: Sequence[str] = PROVIDER_HOSTS) -> list[str]:
    return [f"{h}={url}" for h in hosts]


def ctxtap_env(config_dir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["CTXTAP_CONFIG_DIR"] = str(config_dir)
    env.pop("HTTPS_PROXY", None)
    env.pop("HTTP_PROXY", None)
    return env


def start_proxy(out: Path, config_dir: Path, routes: Sequence[str] = (), extra: Sequence[str] = (),
                timeout: float = 60) -> ProxyProc:
    """Start `ctxtap proxy --port 0` and wait for the line that says where it listens."""
    cmd = [sys.executable, "-m", "ctxtap.cli.main", "proxy", "--port", "0", "--out", str(out)]
    for route in routes:
        cmd += ["--route", route]
    cmd += list(extra)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=ctxtap_env(config_dir), cwd=ROOT)
    lines: list[str] = []
    env: dict[str, str] = {}
    port = None
    deadline = time.monotonic() + timeout
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if line.startswith("# ctxtap proxy listening on"):
            port = int(line.split()[5].rsplit(":", 1)[1].rstrip(","))
        elif line.startswith("export ") and port is not None:
            key, _, value = line[7:].strip().partition("=")
            env[key] = value.strip("'")
            if key == "NODE_USE_ENV_PROXY":
                break
    if port is None or "SSL_CERT_FILE" not in env:
        proc.kill()
        raise RuntimeError("proxy did not start:\n" + "".join(lines) + (proc.stdout.read() or ""))
    # The announcement comes just before the port accepts (so a script that waits for the port
    # finds it): wait for the port too, or the first connection could be refused.
    wait_accepting(port, proc, max(deadline - time.monotonic(), 1))
    pp = ProxyProc(proc, port, out, env, lines)
    # Keep draining output so the proxy can never block on a full pipe.
    threading.Thread(target=lambda: [pp.stdout_lines.append(x) for x in proc.stdout], daemon=True).start()
    return pp


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_accepting(port: int, proc: subprocess.Popen, timeout: float = 60, poll: float = 0.001) -> None:
    """Return the moment 127.0.0.1:port accepts a connection (`poll` seconds apart)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the proxy exited ({proc.returncode}) before its port accepted")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(poll)
    raise RuntimeError(f"port {port} did not accept within {timeout:.0f} s")


def start_fresh_proxy(out: Path, config_dir: Path, routes: Sequence[str] = (), timeout: float = 60) -> ProxyProc:
    """Start `ctxtap proxy` on a free port with stdout to a file, and return the moment the port
    accepts, not later: what a script that waits for the port sees. The export lines are read
    from the file then (they are flushed before the port accepts)."""
    port = free_port()
    cmd = [sys.executable, "-m", "ctxtap.cli.main", "proxy", "--port", str(port), "--out", str(out)]
    for route in routes:
        cmd += ["--route", route]
    log = out.parent / f"{out.name}.stdout"
    with log.open("w") as stdout:
        proc = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.STDOUT, env=ctxtap_env(config_dir), cwd=ROOT)
    try:
        wait_accepting(port, proc, timeout)
    except RuntimeError as exc:
        proc.kill()
        proc.wait(10)
        raise RuntimeError(f"{exc}:\n{log.read_text()}") from None
    lines = log.read_text().splitlines(keepends=True)
    env = {}
    for line in lines:
        if line.startswith("export "):
            key, _, value = line[7:].strip().partition("=")
            env[key] = value.strip("'")
    return ProxyProc(proc, port, out, env, lines)


def run_ctxtap(args: Sequence[str], config_dir: Path, timeout: float = 300, check: bool = True,
               extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    env = ctxtap_env(config_dir)
    env.update(extra_env or {})
    result = subprocess.run([sys.executable, "-m", "ctxtap.cli.main", *args], capture_output=True, text=True,
                            env=env, cwd=ROOT, timeout=timeout)
    if check and result.returncode != 0:
        raise AssertionError(f"ctxtap {' '.join(args)} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    return result


def all_stored_bytes(capture_dir: Path) -> list[tuple[str, bytes]]:
    """Every byte a capture holds: raw files, every decoded body, every string cell."""
    import pyarrow.parquet as pq

    from ctxtap.capture.store import Capture

    out: list[tuple[str, bytes]] = []
    for path in sorted(capture_dir.rglob("*")):
        if path.is_file():
            out.append((str(path), path.read_bytes()))
    cap = Capture.open(capture_dir)
    for table_name in ("flows.parquet", "ws_messages.parquet"):
        table = pq.read_table(capture_dir / table_name)
        for column in table.column_names:
            for value in table.column(column).to_pylist():
                if isinstance(value, str):
                    out.append((f"{table_name}:{column}", value.encode()))
    table = pq.read_table(capture_dir / "bodies.parquet", columns=["body_id"])
    for body_id in table.column("body_id").to_pylist():
        out.append((f"body {body_id}", cap.body(body_id) or b""))
    return out
