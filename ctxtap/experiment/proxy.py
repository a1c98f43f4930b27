"""The recording proxy of an experiment: one per experiment, or one process per run.

Sequential runs share one in-process proxy (`SharedProxy`): mitmproxy starts once, and between
two runs the capture is rotated: the recorder's writer child finalizes the finished run's
capture and a new writer child starts on the next run's directory. The command of a run starts
only after its capture exists, so each run still has exactly its own capture, and the proxy's
start-up is paid once per experiment instead of once per run.

Runs in parallel (`--parallel N`) cannot share a capture, so each gets its own `ctxtap proxy`
process (`ProxyProc`), started one run ahead so its start-up overlaps the previous run.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from ctxtap.capture import writer_proc

PROXY_START_TIMEOUT_S = 120.0  # generous: a loaded 2-core machine takes tens of seconds for a first start


class ProxyError(RuntimeError):
    """The recording proxy did not start or could not switch captures, in words."""


def _finalized(capture: Path) -> bool:
    try:
        done = json.loads((capture / "manifest.json").read_text()).get("status") == "finalized"
        return done and not (capture / "spool").exists()
    except (OSError, ValueError):
        return False  # not written yet, or being replaced


class SharedProxy:
    """One in-process recording proxy whose capture moves from run to run."""

    def __init__(self, first_capture: Path, routes: list[str]) -> None:
        from ctxtap.proxy_addons.runner import BackgroundProxy, ProxyConfig, ProxyStartError, client_env

        try:
            self._proxy = BackgroundProxy(ProxyConfig(out=first_capture, routes=list(routes),
                                                      command=["ctxtap", "experiment", "run"])).start(PROXY_START_TIMEOUT_S)
        except ProxyStartError as exc:
            raise ProxyError(str(exc)) from None
        assert self._proxy.port is not None
        self.env = client_env(self._proxy.port)
        self.capture = first_capture
        writer_proc.prespawn()  # the writer of the run after this one

    def _on_loop(self, fn) -> None:
        loop = self._proxy._loop
        assert loop is not None

        async def call() -> None:
            fn()

        asyncio.run_coroutine_threadsafe(call(), loop).result(timeout=120)

    def rotate(self, capture: Path) -> float:
        """Finalize the current capture and record into `capture` from now on; seconds it took."""
        t0 = time.perf_counter()
        master = self._proxy._master
        assert master is not None
        recorder = master.addons.get("recorder")

        def swap() -> None:
            recorder.done()  # the writer child finalizes the finished run's capture and exits
            master.options.update(ctxtap_out=str(capture))
            recorder._ensure_writer()

        try:
            self._on_loop(swap)
        except Exception as exc:  # the next run is recorded as failed to start, with this reason
            raise ProxyError(f"cannot switch the recording to {capture}: {exc}") from None
        self.capture = capture
        elapsed = time.perf_counter() - t0
        writer_proc.prespawn()  # the next switch finds its writer child started while this run goes on
        return elapsed

    def finish(self) -> float:
        """Finalize the current capture (the proxy keeps running without one until `close`)."""
        t0 = time.perf_counter()
        master = self._proxy._master
        assert master is not None
        recorder = master.addons.get("recorder")
        self._on_loop(recorder.done)
        return time.perf_counter() - t0

    def close(self) -> None:
        self._proxy.stop()
        writer_proc.discard_spare()


@dataclass
class ProxyProc:
    """`ctxtap proxy` as a process of its own, for one run's capture."""

    proc: subprocess.Popen
    env: dict[str, str]
    out: Path
    lines: list[str] = field(default_factory=list)

    def stop(self, timeout: float = 120) -> float:
        """SIGTERM: the proxy finalizes its capture. Returns the seconds until the capture is final.

        The proxy prints a summary of the capture after finalizing; that is not waited for
        (the process is reaped in the background), only for the manifest to say `finalized`.
        """
        t0 = time.perf_counter()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.proc.poll() is None:
            if _finalized(self.out):
                threading.Thread(target=self.proc.wait, daemon=True).start()
                return time.perf_counter() - t0
            time.sleep(0.01)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        return time.perf_counter() - t0


def start_proxy(out: Path, routes: list[str], extra_env: dict[str, str] | None = None) -> ProxyProc:
    """`ctxtap proxy --port 0 --out OUT`, waiting for the lines that say where it listens."""
    cmd = [sys.executable, "-m", "ctxtap.cli.main", "proxy", "--port", "0", "--out", str(out)]
    for route in routes:
        cmd += ["--route", route]
    env = {k: v for k, v in os.environ.items() if k.lower() not in ("https_proxy", "http_proxy", "all_proxy")}
    env.update(extra_env or {})
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            start_new_session=True)
    lines: list[str] = []
    client: dict[str, str] = {}
    listening = False
    assert proc.stdout is not None
    deadline = time.monotonic() + PROXY_START_TIMEOUT_S
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if line.startswith("# ctxtap proxy listening on"):
            listening = True
        elif line.startswith("export ") and listening:
            key, _, value = line[7:].strip().partition("=")
            client[key] = value.strip("'")
            if key == "NODE_USE_ENV_PROXY":
                break
    if "SSL_CERT_FILE" not in client or "HTTPS_PROXY" not in client:
        proc.kill()
        proc.wait(10)
        raise ProxyError("the recording proxy did not start: " + "".join(lines[-10:]).strip())
    pp = ProxyProc(proc, client, out, lines)
    threading.Thread(target=lambda: [pp.lines.append(x) for x in proc.stdout], daemon=True).start()  # type: ignore[union-attr]
    # The announcement comes just before the port accepts: the first run's client must not be refused.
    host, _, port = client["HTTPS_PROXY"].rpartition("/")[2].rpartition(":")
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            socket.create_connection((host, int(port)), timeout=1).close()
            break
        except OSError:
            time.sleep(0.002)
    return pp
