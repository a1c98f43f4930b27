"""The layers of ARCHITECTURE.md hold: import-linter's contracts pass, a back-import fails, and the
import graph sees every production module (a folder without `__init__.py` would hide its imports)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parent.parent
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
PACKAGES = CONFIG["root_packages"]
LINT = Path(sys.executable).with_name("lint-imports")


def _lint(cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(cwd)}
    return subprocess.run([str(LINT), "--no-cache"], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_contracts_are_kept() -> None:
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "broken" not in result.stdout.lower().replace("0 broken", "")


@pytest.mark.parametrize(("module", "line", "expected"), [
    ("analysis/summary.py", "import ctxtap.cli.main", "analysis.summary -> ctxtap.cli.main"),
    ("redaction/spans.py", "from ctxtap.capture import store", "redaction.spans -> ctxtap.capture.store"),
    ("proxy_addons/router.py", "import pydantic", "proxy_addons.router -> pydantic"),
    ("reports/html/charts.py", "from ctxtap.capture import store", "reports.html.charts -> ctxtap.capture.store"),
    ("ctxtap/experiment/spec.py", "import reports.html.render", "ctxtap.experiment.spec -> reports.html.render"),
    ("analysis/experiment.py", "import ctxtap.experiment.runner", "analysis.experiment -> ctxtap.experiment.runner"),
])
def test_a_back_import_fails_and_is_named(tmp_path: Path, module: str, line: str, expected: str) -> None:
    for package in PACKAGES:
        shutil.copytree(ROOT / package, tmp_path / package,
                        ignore=shutil.ignore_patterns("__pycache__", "*.parquet", "node_modules"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / module
    target.write_text(target.read_text() + f"\n{line}  # noqa\n")
    result = _lint(tmp_path)
    assert result.returncode != 0, result.stdout
    assert expected in result.stdout, result.stdout


def test_import_graph_contains_every_production_module() -> None:
    graph = grimp.build_graph(*PACKAGES, include_external_packages=False)
    on_disk = set()
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            rel = path.relative_to(ROOT).with_suffix("")
            parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
            on_disk.add(".".join(parts))
    missing = sorted(on_disk - graph.modules)
    assert not missing, f"modules the import graph does not see (a folder without __init__.py?): {missing}"


def test_every_package_folder_has_an_init() -> None:
    for package in PACKAGES:
        for folder in [ROOT / package, *(p for p in (ROOT / package).rglob("*") if p.is_dir())]:
            if folder.name == "__pycache__" or not any(folder.glob("*.py")):
                continue
            assert (folder / "__init__.py").exists(), folder.relative_to(ROOT)
