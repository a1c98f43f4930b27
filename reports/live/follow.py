"""The live-view process of `ctxtap record --live` and `ctxtap proxy --live`.

A child process of the recorder, at a lower CPU priority: the incremental
analysis and the web server hold their own interpreter's lock, never the proxy's,
so a slow query or a crash here cannot stall a stream or touch the capture (this
process only reads it; its dataset lives in a private temporary directory).

Protocol with the parent: the access token comes in the environment (not on the
command line, where other users could read it); the first stdout line is
`ready <port>` or `error <message>`; the process ends when its stdin closes.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import threading
from pathlib import Path

TOKEN_ENV = "CTXTAP_LIVE_TOKEN"
NICE = 5  # below the proxy, not so far below that a busy machine starves the view


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m ctxtap.reports.live.follow")
    parser.add_argument("capture")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        os.nice(NICE)
    except OSError:
        pass
    token = os.environ.pop(TOKEN_ENV, "")
    if not token:
        print("error no access token given", flush=True)
        return 2
    from ctxtap.analysis.live import LiveAnalysis
    from ctxtap.reports.live.server import LiveUI, PortInUse
    from ctxtap.reports.live.sources import LiveSource

    work = Path(tempfile.mkdtemp(prefix="ctxtap-live-"))
    stop = threading.Event()
    try:
        analysis = LiveAnalysis(Path(args.capture), work)
        ui = LiveUI([LiveSource(analysis)], token=token)
        try:
            port = ui.bind(args.port)
        except PortInUse as exc:
            print(f"error {exc}", flush=True)
            return 1
        follower = threading.Thread(target=analysis.follow, args=(stop,), name="ctxtap-live-analysis", daemon=True)
        follower.start()
        ui.start_thread()
        print(f"ready {port}", flush=True)
        sys.stdin.read()  # until the recorder closes our stdin (or dies)
    finally:
        stop.set()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
