"""Failures a user can act on: each message names the cause and the next step.

The commands check what they can before they start (a usable loopback interface, a
free port, a writable output directory, a command that exists) and translate the
errors that can still happen later (unreadable Parquet, a full disk, a bad query)
into one line each. A traceback is only shown with CTXTAP_DEBUG=1, for real bugs.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import socket
from pathlib import Path

from ctxtap.capture.spool import writer_alive

LOOPBACK = "127.0.0.1"
DEBUG_ENV = "CTXTAP_DEBUG"
# Errors of ctxtap's own modules whose message already names the cause and what to do.
USER_ERRORS = {"CaptureError", "ImportError_", "PublishError", "ProxyStartError", "ProfileError"}


def loopback_problem() -> str | None:
    """Why this process cannot talk to itself over 127.0.0.1, or None if it can.

    The demo, `record` and the tests run a server and a client on loopback; in a
    network namespace without `lo` up (`unshare -n`, some containers) binding or
    connecting fails and every client would fail with a bare OSError.
    """
    step = "bind"
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
            server.bind((LOOPBACK, 0))
            server.listen(1)
            step = "connect to"
            with socket.create_connection(server.getsockname(), timeout=5):
                pass
    except OSError as exc:
        return (f"cannot {step} {LOOPBACK} ({exc.strerror or exc}): the loopback interface is down or "
                f"missing, as in a network namespace made with `unshare -n` or a container without "
                f"networking. Bring it up first (`ip link set lo up`, e.g. "
                f"`unshare -rn sh -c 'ip link set lo up && ctxtap ...'`) or run outside the sandbox.")
    return None


def listen_problem(host: str, port: int) -> str | None:
    """Why the proxy could not listen on host:port (port 0: any free port), or None if it probably can."""
    where = f"{host}:{port}" if port else host
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        return f"cannot listen on {where}: unknown address ({exc.strerror}). Check --listen-host."
    family, _, _, _, address = infos[0]
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as mitmproxy does
        try:
            sock.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return (f"cannot listen on {where}: the port is already in use by another program. "
                        f"Stop that program, pick another --port, or use --port 0 for any free port.")
            if exc.errno == errno.EACCES:
                return (f"cannot listen on {where}: permission denied (ports below 1024 need "
                        f"privileges). Pick a --port above 1024, or --port 0 for any free port.")
            if exc.errno == errno.EADDRNOTAVAIL:
                return (f"cannot listen on {where}: {host} is not an address of this machine. "
                        f"Check --listen-host (the default 127.0.0.1 always works).")
            return f"cannot listen on {where}: {exc.strerror or exc}. Pick another --port or --listen-host."
    return None


def capture_dir_problem(directory: Path, option: str = "--out") -> str | None:
    """Why a new capture cannot be written to `directory`, or None.

    Checked before the proxy starts, so a wrong --out fails in a second with its
    reason instead of after the recorded command has run.
    """
    if (directory / "manifest.json").exists():
        if writer_alive(directory):
            return (f"{directory} is being recorded right now by another ctxtap process. "
                    f"Choose another {option}, or stop that recording first.")
        return f"{directory} already holds a capture. Choose another {option} (or remove that capture)."
    return writable_dir_problem(directory, option)


def writable_dir_problem(directory: Path, option: str = "--out") -> str | None:
    """Why files cannot be created in `directory` (made if missing), or None."""
    existed = directory.exists()
    try:
        directory.mkdir(parents=True, exist_ok=True)
        probe = directory / f".ctxtap-write-test-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        return f"cannot write to {directory}: {_os_reason(exc)}. Choose another {option}."
    finally:
        if not existed and directory.exists() and not any(directory.iterdir()):
            directory.rmdir()  # leave nothing behind when only checking
    return None


def command_problem(command: str) -> tuple[str, int] | None:
    """(message, exit code) when `command` cannot be run, like a shell would say; else None."""
    if os.sep in command:
        path = Path(command)
        if not path.exists():
            return f"command not found: {command} (no such file). Check the path.", 127
        if path.is_dir() or not os.access(path, os.X_OK):
            return (f"cannot run {command}: it is not an executable file. Check the path, or "
                    f"`chmod +x {command}`.", 126)
        return None
    if shutil.which(command) is None:
        return (f"command not found: {command} (not on PATH). Check the spelling, install it, or give "
                f"its full path.", 127)
    return None


def _os_reason(exc: OSError) -> str:
    reasons = {
        errno.EACCES: "permission denied",
        errno.EPERM: "permission denied",
        errno.ENOTDIR: "a part of the path is a file, not a directory",
        errno.EEXIST: "a file is in the way (a part of the path exists and is not a directory)",
        errno.ENOSPC: "no space left on the device",
        errno.EROFS: "the file system is read-only",
        errno.EDQUOT: "disk quota exceeded",
        errno.ENAMETOOLONG: "the name is too long",
        errno.EISDIR: "it is a directory",
    }
    return reasons.get(exc.errno, exc.strerror or str(exc))


def explain(exc: BaseException) -> str | None:
    """A one-paragraph cause and next step for an error that escaped a command, or None."""
    if type(exc).__name__ in USER_ERRORS:  # raised with a message meant for the user
        return str(exc)
    if isinstance(exc, OSError) and exc.errno is not None:
        where = exc.filename or "a file"
        if exc.errno == errno.ENOENT:
            return f"{where} does not exist. Check the path."
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return f"cannot write {where}: {_os_reason(exc)}. Free some space or write elsewhere (-o/--out)."
        return (f"cannot access {where}: {_os_reason(exc)}. Choose another output path (-o/--out) or fix "
                f"the permissions.")
    name = type(exc).__module__.split(".")[0]
    if name == "pyarrow":
        return _explain_parquet(str(exc))
    if name == "duckdb":
        return (f"DuckDB failed: {exc}. If a file under a capture's analysis/ is damaged, rebuild it with "
                f"`ctxtap analyze --force CAPTURE`.")
    if isinstance(exc, json.JSONDecodeError):
        return f"a JSON file is not valid JSON ({exc}). The file is truncated or was edited by hand."
    return None


def _explain_parquet(message: str) -> str:
    path = ""
    if "'" in message:
        path = message.split("'")[1]
    if "/analysis/" in path or path.endswith("/analysis"):
        return (f"the analysis dataset is damaged ({path} is not valid Parquet). It is derived: rebuild it "
                f"with `ctxtap analyze --force CAPTURE`.")
    what = path or "a Parquet file of the capture"
    return (f"cannot read {what}: it is not valid Parquet (truncated or corrupted; {message.split(': ', 1)[-1]}). "
            f"The capture is damaged: restore the file from a copy, or record or import it again. "
            f"`ctxtap info` still shows what its manifest says.")


def unexpected(command: str | None, exc: BaseException) -> str:
    return (f"ctxtap {command or ''} failed unexpectedly: {type(exc).__name__}: {exc}. This is a bug: rerun "
            f"with {DEBUG_ENV}=1 to see the traceback, and report it.").replace("ctxtap  ", "ctxtap ")
