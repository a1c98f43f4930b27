"""The facts of the machine a run was recorded on, kept in the capture's private manifest.

A careful reader of a request recognises these as the client's environment (its working directory,
the user and host names, the OS, the date, the git branch); keeping them lets the analyzer tell such
a line from the rest, and lets publishing pseudonymise them wherever they appear. They are personal
data: the manifest is private like the capture, and publish and export never copy them out.
"""

from __future__ import annotations

import datetime
import getpass
import os
import platform
import socket
import subprocess
from pathlib import Path

from pydantic import BaseModel, Field

from ctxtap.capture.file_lines import fingerprint

MAX_ENTRIES = 200  # top-level names kept: a listing, not an inventory
GIT_TIMEOUT_S = 2.0


class RunEnvironment(BaseModel):
    """Each fact as a client would print it; None where it is not known."""

    cwd: str | None = None
    home: str | None = None
    user: str | None = None
    host: str | None = None
    os: str | None = None  # e.g. "Linux 6.8.0-45-generic"
    kernel: str | None = None  # the kernel's version string
    shell: str | None = None
    date: str | None = None  # ISO date the run started
    git_branch: str | None = None
    git_head: str | None = None
    git_remote: str | None = None
    git_dirty: bool | None = None  # uncommitted changes or untracked files when the run started (None: not a repository)
    entries: list[str] = Field(default_factory=list)  # names of the working directory's top-level entries
    # line fingerprints of the files a client could quote (capture.file_lines): {path: [hash, ...]}
    files: dict[str, list[str]] = Field(default_factory=dict)
    shell_prompt: str | None = None  # a shell prompt as the client showed it (`user@host:~/proj$`), import only
    prompt: str | None = None  # the task the run was given (import only; record reads it from the command line)

    def values(self) -> list[str]:
        """Every fact of the machine that is a string, for a reader that looks for them in text (the task
        prompt is what the run was asked, not a fact of the machine)."""
        return [v for v in self.model_dump(exclude={"entries", "files", "prompt"}).values() if isinstance(v, str) and v]


def _git(cwd: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True,
                              timeout=GIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    out = done.stdout.strip()
    return out if done.returncode == 0 and out else None


def _dirty(cwd: Path) -> bool | None:
    """Whether the work tree has changes or untracked files (`git status --porcelain`); None outside a repository."""
    try:
        done = subprocess.run(["git", "-C", str(cwd), "status", "--porcelain", "--untracked-files=normal"],
                              capture_output=True, text=True, timeout=GIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return bool(done.stdout.strip()) if done.returncode == 0 else None


def _user() -> str | None:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return None


def _entries(cwd: Path) -> list[str]:
    try:
        names = sorted(p.name for p in cwd.iterdir())
    except OSError:
        return []
    return names[:MAX_ENTRIES]


def collect(cwd: Path | None = None) -> RunEnvironment:
    """The facts of this machine and working directory, now."""
    cwd = (cwd or Path.cwd()).resolve()
    uname = platform.uname()
    return RunEnvironment(
        cwd=str(cwd), home=str(Path.home()), user=_user(), host=socket.gethostname() or None,
        os=f"{uname.system} {uname.release}".strip() or None, kernel=uname.version or None,
        shell=os.environ.get("SHELL") or None, date=datetime.date.today().isoformat(),
        git_branch=_git(cwd, "rev-parse", "--abbrev-ref", "HEAD"), git_head=_git(cwd, "rev-parse", "HEAD"),
        git_remote=_git(cwd, "remote", "get-url", "origin"), git_dirty=_dirty(cwd), entries=_entries(cwd),
        files=fingerprint(cwd, Path.home()),
    )


def save(capture_dir: Path, env: RunEnvironment) -> None:
    """Put the facts into a finished capture's manifest (private like the capture)."""
    from ctxtap.capture.manifest import Manifest

    manifest = Manifest.load(capture_dir)
    manifest.environment = env.model_dump(exclude_none=True)
    manifest.save(capture_dir)
