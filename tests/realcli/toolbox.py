"""Installing the CLIs a session needs (in parallel, from the cache when possible) and timing the tier.

Kept out of conftest.py so the test module can import these types by a normal name.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.realcli import install
from tests.realcli.clis import CLIS, NO_TOOL_CLIS, CliSpec, install_name


@dataclass
class Timings:
    """Wall-clock seconds of the tier's phases: the issue asks how long the tier takes."""

    install: dict[str, float] = field(default_factory=dict)
    install_cached: dict[str, bool] = field(default_factory=dict)
    install_total: float = 0.0
    runs: dict[str, float] = field(default_factory=dict)

    def lines(self) -> list[str]:
        out = [f"install phase {self.install_total:.1f}s (parallel), cache {install.cache_root()}"]
        out += [f"  {name:<28} {'cached' if self.install_cached[name] else f'{sec:.1f}s'}"
                for name, sec in sorted(self.install.items())]
        out += [f"  run {name:<24} {sec:.1f}s" for name, sec in sorted(self.runs.items())]
        return out

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(
            {"install_total_s": round(self.install_total, 2),
             "install_s": {k: round(v, 2) for k, v in self.install.items()},
             "install_cached": self.install_cached,
             "run_s": {k: round(v, 2) for k, v in self.runs.items()},
             "cache": str(install.cache_root()), "npm": shutil.which("npm")}, indent=2) + "\n")


@dataclass
class Toolbox:
    """What the session installed: CLI executables by cache name, or the reason each is missing."""

    node22_bin: Path | None
    node22_error: str | None
    bins: dict[str, Path]
    errors: dict[str, str]

    def command_for(self, spec: CliSpec) -> tuple[list[Path], list[Path]]:
        """The CLI's command (executable first) and the PATH directories to run it with, or skip saying why not.

        A pip-installed CLI runs as `VENV/bin/python VENV/bin/SCRIPT`: Python finds its
        virtualenv from the interpreter's path, so the CLI sees the virtualenv wherever
        the cache is shown (its shebang would name the cache's real path).
        """
        if spec.node22 and self.node22_bin is None:
            pytest.skip(f"{spec.name} needs Node 22, which could not be installed: {self.node22_error}")
        name = install_name(spec)
        if name not in self.bins:
            pytest.skip(f"{spec.name}: {self.errors.get(name, 'not installed')}")
        binary = self.bins[name]
        command = [binary.parent / "python", binary] if spec.installer == "pip" else [binary]
        return command, [d for d in (self.node22_bin,) if d is not None]


def install_all(specs: Iterable[CliSpec], timings: Timings) -> Toolbox:
    """Node 22 and every CLI in SPECS, in parallel (installs are mostly waiting on the network).

    npm packages get an npm prefix, PyPI packages a virtualenv made by the Python
    version they need (found on this machine; none found is that CLI's skip reason).
    A failed install (no registry, a broken postinstall) becomes that CLI's skip
    reason, so one unavailable CLI never hides the results of the others.
    """
    wanted = {install_name(s): s for s in specs}
    started = time.monotonic()
    node_spec: str | None = None
    node_problem: str | None = None
    try:
        node_spec = install.node22_spec()
    except install.InstallError as exc:
        node_problem = str(exc)
    pythons = {s.python: install.find_python(s.python) for s in wanted.values() if s.installer == "pip" and s.python}

    def cached(name: str, spec: CliSpec) -> bool:
        if spec.installer != "pip":
            return install.is_cached(name, spec.install_spec)
        python = pythons.get(spec.python or "")
        return python is not None and install.is_cached(name, install.pip_stamp(spec.install_spec, python))

    npm_downloads = [n for n, s in wanted.items() if s.installer == "npm" and not cached(n, s)]
    if node_spec and not install.is_cached(install.NODE22_NAME, node_spec):
        npm_downloads.append(install.NODE22_NAME)
    offline = install.registry_problem() if npm_downloads else None

    def node22() -> tuple[Path | None, str | None]:
        if node_spec is None:
            return None, node_problem
        if offline and install.NODE22_NAME in npm_downloads:
            return None, offline
        try:
            installed, bindir = install.install_node22()
        except install.InstallError as exc:
            return None, str(exc)
        timings.install[install.NODE22_NAME] = installed.seconds
        timings.install_cached[install.NODE22_NAME] = installed.cached
        return bindir, None

    def one(name: str) -> tuple[str, Path | str]:
        spec = wanted[name]
        try:
            if spec.installer == "pip":
                python = pythons.get(spec.python or "")
                if python is None:
                    return name, f"needs Python {spec.python}, and none was found (pyenv versions, " \
                                 f"python{spec.python} on PATH or $CTXTAP_REALCLI_PYTHON{(spec.python or '').replace('.', '')})"
                installed = install.pip_install(name, spec.install_spec, python)
                path = install.venv_bin(installed, spec.command)
            else:
                if offline and name in npm_downloads:
                    return name, f"cannot install {spec.install_spec}: {offline}"
                installed = install.npm_install(name, spec.install_spec)
                path = install.npm_bin(installed, spec.command)
        except install.InstallError as exc:
            return name, str(exc)
        timings.install[name], timings.install_cached[name] = installed.seconds, installed.cached
        return name, path

    with ThreadPoolExecutor(max_workers=len(wanted) + 1) as pool:
        node_future = pool.submit(node22)
        results = list(pool.map(one, sorted(wanted)))
        node_bin, node_error = node_future.result()
    timings.install_total = time.monotonic() - started
    return Toolbox(node_bin, node_error, {n: r for n, r in results if isinstance(r, Path)},
                   {n: r for n, r in results if isinstance(r, str)})


def selected_specs(items: Iterable[pytest.Item]) -> list[CliSpec]:
    """CLIs whose tests were selected (so `-k claude` does not install the others)."""
    names = {item.callspec.params["cli"] for item in items
             if isinstance(item, pytest.Function) and hasattr(item, "callspec") and "cli" in item.callspec.params}
    known = {**CLIS, **NO_TOOL_CLIS}
    return [known[n] for n in sorted(names) if n in known]
