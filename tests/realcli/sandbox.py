"""Run one CLI under `ctxtap record` inside a fresh network namespace that has only loopback.

The outer side (this module) prepares a minimal environment, starts
`unshare -n` (as root) or `unshare -rn` (as a user, mapping to root) around
`netns_driver.py`, enforces the timeout on the whole process group, and keeps
stdout/stderr for the failure message.

Where the namespace can also have its own mounts and host name (`-m -u`), the CLI
sees its throwaway HOME at FIXED_HOME, the install cache at FIXED_AGENTS, on host
FIXED_HOSTNAME (the corpus's layout): its requests then name no path or host of this
machine, so recordings can be committed as fixtures.
"""

from __future__ import annotations

import functools
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

DRIVER = Path(__file__).with_name("netns_driver.py")
ROOT = Path(__file__).resolve().parents[2]
RUN_TIMEOUT_S = float(os.environ.get("CTXTAP_REALCLI_TIMEOUT", "180"))
FIXED_HOME = Path("/home/alice")  # HOME of the corpus runs (../shared/real-clients)
FIXED_AGENTS = Path("/opt/agents")  # where the corpus runs had their CLIs installed
FIXED_HOSTNAME = "alice-laptop"


@functools.cache
def unshare_prefix() -> tuple[list[str] | None, str]:
    """The working `unshare` invocation, or None with the reason none works here.

    `-n` alone needs CAP_SYS_ADMIN (root); `-rn` needs unprivileged user namespaces.
    """
    unshare = shutil.which("unshare")
    if unshare is None:
        return None, "`unshare` (util-linux) is not installed"
    attempts = ([unshare, "-n"], [unshare, "-rn"]) if os.geteuid() == 0 else ([unshare, "-rn"],)
    errors = []
    for prefix in attempts:
        try:
            result = subprocess.run([*prefix, sys.executable, "-c", ""], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired) as exc:
            errors.append(f"{' '.join(prefix)}: {exc}")
            continue
        if result.returncode == 0:
            return prefix, ""
        errors.append(f"unshare {' '.join(prefix[1:])}: {result.stderr.strip() or result.returncode}")
    return None, "cannot create a network namespace (" + "; ".join(errors) + ")"


@dataclass(frozen=True)
class Namespace:
    """How to enter a loopback-only namespace here, and whether it can show HOME at FIXED_HOME."""

    prefix: list[str] | None
    reason: str  # why there is no prefix
    fixed_paths: bool  # own mounts and host name: FIXED_HOME, FIXED_AGENTS, FIXED_HOSTNAME


@functools.cache
def namespace() -> Namespace:
    """The network namespace, widened by a mount and UTS namespace when the probe says they work."""
    prefix, reason = unshare_prefix()
    if prefix is None:
        return Namespace(None, reason, False)
    wider = [prefix[0], prefix[1] + "mu"]  # -n -> -nmu, -rn -> -rnmu
    try:
        probe = subprocess.run([*wider, sys.executable, str(DRIVER), "--probe-mounts", str(FIXED_HOME),
                                str(FIXED_AGENTS)], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return Namespace(prefix, "", False)
    return Namespace(wider, "", True) if probe.returncode == 0 else Namespace(prefix, "", False)


def base_env(home: Path, path_dirs: list[Path], config_dir: Path) -> dict[str, str]:
    """Only what a CLI gets from a clean login (like the corpus's `env -i`), plus ctxtap's config dir.

    Nothing of the developer's environment leaks in: no real API keys, no proxy
    settings, no npm or git configuration.
    """
    path = os.pathsep.join([*(str(p) for p in path_dirs), str(Path(sys.executable).parent),
                            "/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin"])
    return {
        "HOME": str(home),
        "USER": "alice",
        "LOGNAME": "alice",
        "SHELL": "/bin/bash",
        "LANG": "C.UTF-8",
        "TERM": "xterm-256color",
        "TMPDIR": str(home / ".cache" / "tmp"),
        "PATH": path,
        "CTXTAP_CONFIG_DIR": str(config_dir),
        "PYTHONDONTWRITEBYTECODE": "1",
    }


@dataclass
class RunResult:
    returncode: int | None  # None: killed at the timeout
    seconds: float
    stdout: str
    stderr: str
    server_log: str

    def describe(self) -> str:
        status = "timed out" if self.returncode is None else f"exit {self.returncode}"
        return (f"{status} after {self.seconds:.1f}s\n--- stdout (tail)\n{_tail(self.stdout)}\n"
                f"--- stderr (tail)\n{_tail(self.stderr)}\n--- model server log (tail)\n{_tail(self.server_log)}")


PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h


@functools.cache
def _adopt_orphans() -> bool:
    """Make this process the subreaper of what it starts: a daemon a CLI leaves behind (it calls
    `setsid`, so it leaves the run's session too) is re-parented here, not to init, and
    `_end_run` can find it. False where the kernel does not offer it."""
    import ctypes

    try:
        return ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _children() -> set[int]:
    """This process's children now (each thread's `children` list in /proc)."""
    out: set[int] = set()
    for task in Path(f"/proc/{os.getpid()}/task").glob("*/children"):
        try:
            out.update(int(pid) for pid in task.read_text().split())
        except OSError:
            continue  # a thread that ended meanwhile
    return out


def _end_run(leader: int, before: set[int]) -> None:
    """Kill what a CLI left running after `ctxtap record` returned: the rest of the run's session,
    and every child this process gained since `before` (orphans re-parented here, daemons
    included). One CLI's background host process outlived the tier and held a core."""
    try:
        os.killpg(leader, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # nothing left in the session
    for pid in _children() - before:
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass


def _tail(text: str, lines: int = 40) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def run_in_netns(command: list[str], *, cwd: Path, env: dict[str, str], out: Path, hosts: tuple[str, ...],
                 websocket: bool, work: Path, script: str = "basic", timeout: float = RUN_TIMEOUT_S,
                 show: dict[Path, Path] | None = None, replay: Path | None = None,
                 replay_args: tuple[str, ...] = (), record_args: tuple[str, ...] = ()) -> RunResult:
    """`ctxtap record --route HOST=<model server>` around COMMAND, all inside one offline namespace.

    SHOW maps real directories to the fixed paths the CLI sees them at (and sets the
    host name); CWD, COMMAND and ENV then name paths as the CLI sees them. Needs
    `namespace().fixed_paths`.
    """
    ns = namespace()
    if ns.prefix is None:
        raise RuntimeError(ns.reason)
    if show and not ns.fixed_paths:
        raise RuntimeError("this namespace cannot have its own mounts: nothing can be shown at a fixed path")
    server_log = work / "modelserver.log"
    argv = [*ns.prefix, sys.executable, str(DRIVER), "--out", str(out), "--server-log", str(server_log),
            "--script", script, "--chdir", str(cwd)]
    if show:
        argv += [arg for real, fake in show.items() for arg in ("--show", f"{real}={fake}")]
        argv += ["--hostname", FIXED_HOSTNAME]
    for host in hosts:
        argv += ["--route-host", host]
    if not websocket:
        argv.append("--no-websocket")
    if replay is not None:  # `ctxtap replay REPLAY` instead of `ctxtap record`
        argv += ["--replay", str(replay), *(f"--replay-arg={a}" for a in replay_args)]
    argv += [f"--record-arg={a}" for a in record_args]
    argv += ["--", *command]
    stdout_path, stderr_path = work / "stdout.txt", work / "stderr.txt"
    started = time.monotonic()
    _adopt_orphans()
    before = _children()
    with stdout_path.open("wb") as so, stderr_path.open("wb") as se:
        # Files, not pipes: a chatty CLI can never block, and output survives a timeout.
        proc = subprocess.Popen(argv, cwd=work, env=env, stdout=so, stderr=se, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        try:
            code: int | None = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # our own session: the namespace's whole tree
            proc.wait()
            code = None
        _end_run(proc.pid, before)
    return RunResult(code, time.monotonic() - started, stdout_path.read_text(errors="replace"),
                     stderr_path.read_text(errors="replace"),
                     server_log.read_text(errors="replace") if server_log.exists() else "")
