"""Where ctxtap keeps per-user state: the CA, the redaction key, config.

Kept outside any capture directory so that publishing or sharing a capture
never carries the CA private key or the key that makes redaction hashes.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path


def config_dir() -> Path:
    """The user's ctxtap config directory (created 0700 on first use)."""
    base = os.environ.get("CTXTAP_CONFIG_DIR")
    if base:
        path = Path(base)
    else:
        xdg = os.environ.get("XDG_CONFIG_HOME")
        path = Path(xdg) / "ctxtap" if xdg else Path.home() / ".config" / "ctxtap"
    path.mkdir(parents=True, exist_ok=True)
    try:
        path.chmod(0o700)
    except OSError:
        pass
    return path


def ca_dir() -> Path:
    """Directory holding ctxtap's own mitmproxy CA (private key mode 0600)."""
    path = config_dir() / "ca"
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o700)
    return path


def redaction_key() -> bytes:
    """The per-user secret that keys redaction placeholder hashes.

    Created on first use with mode 0600. It never lives in a capture, so a
    placeholder hash cannot be brute-forced back to a short secret by someone
    holding only the capture.
    """
    path = config_dir() / "redaction.key"
    if not path.exists():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(secrets.token_bytes(32))
    path.chmod(0o600)
    return path.read_bytes()


def default_captures_dir() -> Path:
    """`captures/` under the current directory unless CTXTAP_CAPTURES says otherwise."""
    return Path(os.environ.get("CTXTAP_CAPTURES", "captures"))
