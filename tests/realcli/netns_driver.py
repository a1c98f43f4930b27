"""Runs INSIDE the loopback-only network namespace: model server, then `ctxtap record` around a CLI.

Both servers must live in the same namespace as the CLI, because the namespace has
nothing but `lo`: that is the guarantee that a real CLI can never reach a real
provider, whatever it tries. Stdlib only, executed by path (`python netns_driver.py`)
so that the working directory can be the fixture repository the CLI works in.

Usage: python netns_driver.py --out CAPTURE --server-log FILE [--route-host HOST]...
           [--script NAME] [--no-websocket] -- COMMAND...
Exit status: the command's, as passed through by `ctxtap record`; 90-99 for setup failures.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import socket
import subprocess
import sys
import time

SERVER_START_TIMEOUT_S = 30.0


def bring_up_loopback() -> None:
    """A fresh `unshare -n` namespace has `lo` DOWN; `-r` namespaces may too. Failure is fatal."""
    ip = shutil.which("ip") or "/usr/sbin/ip"
    subprocess.run([ip, "link", "set", "lo", "up"], check=False, capture_output=True)
    with socket.socket() as s:  # prove loopback works before anything depends on it
        s.bind(("127.0.0.1", 0))
        s.listen(1)


def assert_offline() -> None:
    """Refuse to run a CLI if this namespace can reach anything beyond loopback."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # TEST-NET-1: needs a route, sends nothing
        except OSError:
            return
    raise SystemExit("netns_driver: a non-loopback route exists here; refusing to run a real CLI")


def start_model_server(script: str, websocket: bool, log_path: str) -> tuple[subprocess.Popen, str]:
    """`python -m ctxtap.modelserver --port 0`, returning the process and the URL it prints first."""
    cmd = [sys.executable, "-m", "ctxtap.modelserver", "--port", "0", "--script", script, "-v"]
    if not websocket:
        cmd.append("--no-websocket")
    log = open(log_path, "ab")  # handed to the child for its whole life
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    line = ""
    while time.monotonic() < deadline and proc.poll() is None:
        line = proc.stdout.readline().strip()
        if line.startswith("http"):
            return proc, line
    proc.kill()
    raise SystemExit(f"netns_driver: model server did not print its URL (last line {line!r}); see {log_path}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--server-log", required=True)
    parser.add_argument("--route-host", action="append", default=[])
    parser.add_argument("--script", default="basic")
    parser.add_argument("--no-websocket", action="store_true")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given")

    bring_up_loopback()
    assert_offline()
    server, url = start_model_server(args.script, not args.no_websocket, args.server_log)
    record = [sys.executable, "-m", "ctxtap.cli.main", "record", "--offline", "--out", args.out]
    for host in args.route_host:
        record += ["--route", f"{host}={url}"]
    print(f"netns_driver: model server {url}; running {command[0]}", file=sys.stderr, flush=True)
    try:
        return subprocess.call([*record, "--", *command], stdin=subprocess.DEVNULL)
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()


if __name__ == "__main__":
    sys.exit(main())
