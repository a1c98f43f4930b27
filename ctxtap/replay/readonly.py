"""Read-only replay: run a command against the cassette of a capture, recorded as a new capture.

The command talks through the recording proxy and its CA exactly as when it was recorded; the
proxy routes every model host of the source capture to the cassette server and answers anything
else locally (offline), so nothing reaches a provider and no key is needed.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ctxtap.capture.private import user_umask
from ctxtap.replay.cassette import Cassette
from ctxtap.replay.compare import ReplayReport, compare
from ctxtap.replay.server import ReplayServer
from ctxtap.wire.httpbody import MAX_BODY_BYTES

SANDBOX_WARNING = (
    "the command runs for real: it executes the tool calls the recorded model asked for (shell commands, "
    "file edits) itself. Run it in a fresh copy of the workspace, in a sandbox.")
OLD_PACING = (
    "this capture predates per-chunk arrival offsets: streams replay with the first byte as recorded, "
    "then evenly paced to the recorded end")


@dataclass
class ReplayRun:
    exit_code: int
    report: ReplayReport
    capture_dir: Path
    trace_id: str


def preamble(cassette: Cassette) -> list[str]:
    """What to say before the run starts: the sandbox warning, the pacing, the calls that cannot play."""
    lines = [f"replaying {len(cassette.calls)} recorded model requests of capture {cassette.capture_id}",
             SANDBOX_WARNING]
    if not cassette.has_offsets:
        lines.append(OLD_PACING)
    for call in cassette.problems:
        lines.append(f"cannot play back {call.describe()}: {call.problem}; it will be answered with an error")
    return lines


def replay_link(cassette: Cassette, mode: str, **extra: object) -> dict:
    return {"source_capture_id": cassette.capture_id, "source": cassette.directory.name, "mode": mode,
            "trace_id": uuid.uuid4().hex, **extra}


def run_readonly(cassette: Cassette, command: list[str], out: Path, *, speed: float = 1.0,
                 model_hosts: list[str] | None = None, echo: Callable[[str], None] = print,
                 max_body_bytes: int = MAX_BODY_BYTES) -> ReplayRun:
    """Run `command` against the cassette; raises ProxyStartError / OSError before the command starts."""
    from ctxtap.proxy_addons.runner import BackgroundProxy, ProxyConfig, client_env

    link = replay_link(cassette, "cassette", speed=speed)
    with ReplayServer(cassette, speed=speed, max_body_bytes=max_body_bytes) as server:
        config = ProxyConfig(out=out, routes=[server.route(h) for h in cassette.hosts()],
                             model_hosts=list(model_hosts or []), offline=True, command=list(command), replay=link)
        proxy = BackgroundProxy(config).start()
        try:
            env = dict(os.environ)
            env.update(client_env(proxy.port))
            echo(f"replay proxy on 127.0.0.1:{proxy.port}, recording the replayed run to {out}")
            code = _call(command, env, echo)
        finally:
            proxy.stop()
        report = compare(server.served, server.matcher.unused())
    return ReplayRun(code, report, out, link["trace_id"])


def _call(command: list[str], env: dict[str, str], echo: Callable[[str], None]) -> int:
    try:
        return subprocess.call(list(command), env=env, umask=user_umask())  # its files: the user's modes
    except FileNotFoundError:
        echo(f"command not found: {command[0]}. Check the spelling or give its full path.")
        return 127
    except PermissionError:
        echo(f"cannot run {command[0]}: permission denied. Check that it is executable.")
        return 126
    except KeyboardInterrupt:
        return 130
