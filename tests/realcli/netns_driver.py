"""Runs INSIDE the loopback-only network namespace: model server, then `ctxtap record` around a CLI.

Both servers must live in the same namespace as the CLI, because the namespace has
nothing but `lo`: that is the guarantee that a real CLI can never reach a real
provider, whatever it tries. Stdlib only, executed by path (`python netns_driver.py`);
`--chdir` puts the CLI in the fixture repository (as the CLI sees its path).

With `--show REAL=FAKE` (the namespace then also has its own mounts and host name)
the throwaway HOME and the install cache are bind-mounted at fixed, generic paths
(/home/alice, /opt/agents) and `--hostname` is set, so what the CLI sends names no
path or host of this machine (the recordings become fixtures). The mounts exist only
inside the namespace.

Usage: python netns_driver.py --out CAPTURE --server-log FILE [--route-host HOST]...
           [--script NAME] [--record-arg=OPT]... [--no-websocket] [--show REAL=FAKE]... [--hostname NAME]
           [--chdir DIR] -- COMMAND...
       python netns_driver.py --probe-mounts FAKE...   (exit 0: these could be shown here)
Exit status: the command's, as passed through by `ctxtap record`; 90-99 for setup failures.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

SERVER_START_TIMEOUT_S = 30.0
MS_BIND, MS_REC, MS_PRIVATE = 0x1000, 0x4000, 0x40000


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


def _mount(source: str | None, target: str, fstype: str | None = None, flags: int = 0) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.mount(source.encode() if source else None, target.encode(), fstype.encode() if fstype else None,
                  flags, None) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {source} on {target}: {os.strerror(err)}")


def show_at(pairs: list[tuple[str, str]]) -> None:
    """Make each directory REAL appear at FAKE, in this mount namespace only.

    A FAKE that does not exist is created in a tmpfs laid over its parent (e.g.
    /home), in which every original entry is bind-mounted back. All sources are opened
    before the first mount, so a REAL inside a covered parent stays reachable (through
    its descriptor). Nothing outside the namespace changes.
    """
    _mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing propagates back out
    fds = [(os.open(real, os.O_PATH | os.O_DIRECTORY), fake) for real, fake in pairs]
    parents = {os.path.dirname(fake.rstrip("/")) for _, fake in pairs if not os.path.isdir(fake)}
    covers = [(parent, os.open(parent, os.O_PATH | os.O_DIRECTORY), os.listdir(parent)) for parent in sorted(parents)]
    for parent, parent_fd, entries in covers:
        _mount("tmpfs", parent, "tmpfs", 0)
        for name in entries:
            source, target = f"/proc/self/fd/{parent_fd}/{name}", os.path.join(parent, name)
            if os.path.islink(source):
                os.symlink(os.readlink(source), target)
                continue
            if os.path.isdir(source):
                os.mkdir(target)
            else:
                open(target, "w").close()
            _mount(source, target, None, MS_BIND | MS_REC)
    for fd, fake in fds:
        os.makedirs(fake, exist_ok=True)
        _mount(f"/proc/self/fd/{fd}", fake, None, MS_BIND | MS_REC)


def probe_mounts(targets: list[str]) -> int:
    """Exit 0 if TARGETS could be shown here: their parents exist, a tmpfs can cover them, the host name can be set.

    The tmpfs mounts live only in this probe's own namespace and vanish with it.
    """
    try:
        _mount(None, "/", None, MS_REC | MS_PRIVATE)
        for target in targets:
            _mount("tmpfs", os.path.dirname(target.rstrip("/")), "tmpfs", 0)
        socket.sethostname(socket.gethostname())
    except OSError as exc:
        print(f"netns_driver: {exc}", file=sys.stderr)
        return 1
    return 0


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
    parser.add_argument("--show", action="append", default=[], metavar="REAL=FAKE",
                        help="show directory REAL at the fixed path FAKE (e.g. the throwaway HOME at /home/alice)")
    parser.add_argument("--hostname", help="host name inside the namespace")
    parser.add_argument("--chdir", help="working directory of the CLI (as seen after the mounts)")
    parser.add_argument("--replay", metavar="CAPTURE",
                        help="run the CLI under `ctxtap replay CAPTURE` (its recorded answers) instead of recording "
                             "it against the model server")
    parser.add_argument("--replay-arg", action="append", default=[], help="an option for `ctxtap replay`")
    parser.add_argument("--record-arg", action="append", default=[],
                        help="an option for `ctxtap record` (e.g. --record-arg=--check --record-arg=--no-writes)")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    raw = sys.argv[1:] if argv is None else argv
    if raw[:1] == ["--probe-mounts"]:
        return probe_mounts(raw[1:])
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given")

    bring_up_loopback()
    assert_offline()
    try:
        if args.show:
            show_at([tuple(pair.split("=", 1)) for pair in args.show])
        if args.hostname:
            socket.sethostname(args.hostname)
    except OSError as exc:
        print(f"netns_driver: cannot set up the fixed paths/host name: {exc}", file=sys.stderr)
        return 93
    if args.chdir:
        os.chdir(args.chdir)
    if args.replay:  # no model server: the capture's recorded answers are all the CLI gets
        print(f"netns_driver: replaying {args.replay}; running {command[0]}", file=sys.stderr, flush=True)
        return subprocess.call([sys.executable, "-m", "ctxtap.cli.main", "replay", args.replay, "--out", args.out,
                                *args.replay_arg, "--", *command], stdin=subprocess.DEVNULL)
    server, url = start_model_server(args.script, not args.no_websocket, args.server_log)
    record = [sys.executable, "-m", "ctxtap.cli.main", "record", "--offline", "--out", args.out, *args.record_arg]
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
