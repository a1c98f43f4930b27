"""`ctxtap proxy`'s announcement is on its stdout before its port accepts a connection.

A script that starts the proxy with stdout going to a file, waits until the port accepts and
then reads the file must find the export lines (they were written after the port had
started accepting, so such a script found nothing).
"""

from __future__ import annotations

from pathlib import Path

from tests.proxyharness import start_fresh_proxy


def test_announcement_is_flushed_before_the_port_accepts(tmp_path: Path, ctxtap_config: Path) -> None:
    for run in range(2):  # the first run also creates the CA
        # stdout goes to a file; this returns the moment the port accepts, then reads the file
        proxy = start_fresh_proxy(tmp_path / f"cap-{run}", ctxtap_config)
        try:
            text = "".join(proxy.stdout_lines)
        finally:
            assert proxy.stop() == 0
        assert f"# ctxtap proxy listening on 127.0.0.1:{proxy.port}" in text, text
        assert "SSL_CERT_FILE" in proxy.env and proxy.env.get("NODE_USE_ENV_PROXY") == "1", text
