"""Pure helpers of the real-CLI tier that need no npm, PyPI or namespace (the tier itself is opt-in)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.realcli import install
from tests.realcli.clis import CLIS, install_name

HERE = f"{sys.version_info.major}.{sys.version_info.minor}"


def test_find_python_checks_the_version_it_finds(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path / "no-pyenv"))
    monkeypatch.setenv(f"CTXTAP_REALCLI_PYTHON{HERE.replace('.', '')}", sys.executable)
    assert install.find_python(HERE) == Path(sys.executable)
    # An interpreter of another version is not taken, whatever it is called.
    monkeypatch.setenv("CTXTAP_REALCLI_PYTHON21", sys.executable)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert install.find_python("2.1") is None


def test_find_python_prefers_the_newest_pyenv_patch_release(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for version in ("9.8.1", "9.8.10", "9.8.2"):
        binary = tmp_path / "versions" / version / "bin" / "python9.8"
        binary.parent.mkdir(parents=True)
        binary.write_text(f"#!/bin/sh\necho 9.8 # {version}\n")
        binary.chmod(0o755)
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert install.find_python("9.8") == tmp_path / "versions" / "9.8.10" / "bin" / "python9.8"


def test_pip_and_npm_installs_get_their_own_cache_directories() -> None:
    names = {install_name(spec) for spec in CLIS.values()}
    assert install_name(CLIS["kimi-cli"]) == "pypi__kimi-cli"
    assert install_name(CLIS["codex"]) == install_name(CLIS["codex-sse"]) == "openai__codex"
    claude = {name for name in CLIS if name.startswith("claude")}  # one install, several platforms
    assert {install_name(CLIS[name]) for name in claude} == {"anthropic-ai__claude-code"}
    assert install_name(CLIS["opencode"]) == install_name(CLIS["opencode-bedrock"])
    assert len(names) == len({spec.package for spec in CLIS.values()})  # runs of one package share its install


def test_pins_are_exact_versions() -> None:
    """CI must never fetch "latest": every default spec names one version."""
    for spec in CLIS.values():
        version = spec.package.split("==")[1] if spec.installer == "pip" else spec.package.rsplit("@", 1)[1]
        assert version[0].isdigit() and all(part.isdigit() for part in version.split(".")), spec.package
    assert CLIS["kimi-cli"].package == "kimi-cli==1.50.0"


def test_pip_error_keeps_errors_not_mirror_warnings() -> None:
    out = ("WARNING: Location 'file:///x' is ignored: it is neither a file nor a directory.\n"
           "ERROR: Could not find a version that satisfies the requirement kimi-cli==9\n"
           "ERROR: No matching distribution found for kimi-cli==9\n")
    assert install.pip_error(out) == ("ERROR: Could not find a version that satisfies the requirement kimi-cli==9; "
                                      "ERROR: No matching distribution found for kimi-cli==9")
