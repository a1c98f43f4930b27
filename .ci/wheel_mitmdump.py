"""The wheel tier's last check: plain `mitmdump -s <installed>/ctxtap/proxy_addons/recorder.py` records a
model call to a finalized capture, run by the fresh virtualenv's Python from outside the repository."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import ctxtap.proxy_addons.recorder as recorder_module  # only its file: mitmdump loads it as a script
from ctxtap.capture.store import Capture
from ctxtap.modelserver.client import HttpClient
from ctxtap.modelserver.server import ModelServer

out = Path(sys.argv[1])
config = Path(os.environ["CTXTAP_CONFIG_DIR"])
mitmdump = shutil.which("mitmdump", path=os.path.dirname(sys.executable))
assert mitmdump and "site-packages" in recorder_module.__file__, (mitmdump, recorder_module.__file__)
with ModelServer(script="basic") as server:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [mitmdump, "-q", "--listen-host", "127.0.0.1", "-p", str(port), "--set", f"confdir={config / 'ca'}",
           "-s", recorder_module.__file__, "--set", f"ctxtap_out={out}",
           "--set", f"ctxtap_route=api.anthropic.com={server.url}"]
    env = {k: v for k, v in os.environ.items() if k not in ("HTTPS_PROXY", "HTTP_PROXY")}
    proc = subprocess.Popen(cmd, env=env)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise SystemExit("mitmdump with the installed recorder did not start") from None
                time.sleep(0.1)
        client = HttpClient("https://api.anthropic.com", proxy=f"http://127.0.0.1:{port}",
                            ca_file=str(config / "ca" / "mitmproxy-ca-cert.pem"))
        body = json.dumps({"model": "claude-haiku-4-5", "max_tokens": 5,
                           "messages": [{"role": "user", "content": "hi"}]}).encode()
        status = client.request("POST", "/v1/messages", body, [("content-type", "application/json")]).status
        client.close()
        assert status == 200, status
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(60)
capture = Capture.open(out)
assert capture.manifest.status == "finalized" and capture.manifest.counts["model_requests"] == 1, capture.manifest
print(f"wheel: plain mitmdump recorded {capture.manifest.counts['model_requests']} model request, finalized")
