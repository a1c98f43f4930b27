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
PACKAGE = CONFIG["root_package"]
# The pipeline's folders at the repository's top, linked into the package as ctxtap/<name>
LINKED = ("wire", "redaction", "capture", "ingest", "proxy_addons", "analysis", "reports")
LINT = Path(sys.executable).with_name("lint-imports")


def _lint(cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(cwd)}
    return subprocess.run([str(LINT), "--no-cache"], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_contracts_are_kept() -> None:
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "broken" not in result.stdout.lower().replace("0 broken", "")


@pytest.mark.parametrize(("module", "line", "expected"), [
    ("analysis/compare/layout.py", "import ctxtap.cli.main", "ctxtap.analysis.compare.layout -> ctxtap.cli.main"),
    ("redaction/spans.py", "from ctxtap.capture import store", "ctxtap.redaction.spans -> ctxtap.capture.store"),
    ("proxy_addons/router.py", "import pydantic", "ctxtap.proxy_addons.router -> pydantic"),
    ("reports/html/charts.py", "from ctxtap.capture import store",
     "ctxtap.reports.html.charts -> ctxtap.capture.store"),
    ("ctxtap/experiment/spec.py", "import ctxtap.reports.html.render",
     "ctxtap.experiment.spec -> ctxtap.reports.html.render"),
    ("analysis/compare/experiment.py", "import ctxtap.experiment.runner",
     "ctxtap.analysis.compare.experiment -> ctxtap.experiment.runner"),
])
def test_a_back_import_fails_and_is_named(tmp_path: Path, module: str, line: str, expected: str) -> None:
    """Each case edits a file in a top-level folder: the contracts see the linked subpackages."""
    for package in (PACKAGE, *LINKED):
        shutil.copytree(ROOT / package, tmp_path / package, symlinks=True,
                        ignore=shutil.ignore_patterns("__pycache__", "*.parquet", "node_modules"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / module
    target.write_text(target.read_text() + f"\n{line}  # noqa\n")
    result = _lint(tmp_path)
    assert result.returncode != 0, result.stdout
    assert expected in result.stdout, result.stdout


def _package_files() -> list[Path]:
    """Every file under ctxtap/, through the links, as the package's own paths."""
    return [Path(folder, name) for folder, _, names in os.walk(ROOT / PACKAGE, followlinks=True)
            if "__pycache__" not in folder for name in names]


def test_the_pipeline_folders_are_linked_into_the_package() -> None:
    for name in LINKED:
        link = ROOT / PACKAGE / name
        assert link.is_symlink() and link.resolve() == (ROOT / name).resolve(), link
        assert (ROOT / name).is_dir() and not (ROOT / name).is_symlink()


def test_import_graph_contains_every_production_module() -> None:
    graph = grimp.build_graph(PACKAGE, include_external_packages=False)
    on_disk = set()
    for path in _package_files():
        if path.suffix == ".py":
            rel = path.relative_to(ROOT).with_suffix("")
            on_disk.add(".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts))
    assert len(on_disk) > 200 and any(m.startswith("ctxtap.analysis.") for m in on_disk)
    missing = sorted(on_disk - graph.modules)
    assert not missing, f"modules the import graph does not see (a folder without __init__.py?): {missing}"


def test_every_package_folder_has_an_init() -> None:
    folders = {path.parent for path in _package_files() if path.suffix == ".py"}
    for folder in folders:
        assert (folder / "__init__.py").exists(), folder.relative_to(ROOT)


def test_no_module_imports_a_pipeline_folder_by_its_bare_name() -> None:
    """`import analysis` from the repository's root would load a second copy of every module."""
    import ast

    offenders = []
    sources = [p for p in ROOT.rglob("*.py") if not any(part.startswith((".", "__pycache__", "test-artifacts", "build", "dist",
                                                                           "captures", "node_modules"))
                                                        for part in p.relative_to(ROOT).parts)]
    assert len(sources) > 400
    for path in sources:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            offenders += [f"{path.relative_to(ROOT)}:{node.lineno} {n}" for n in names if n.split(".")[0] in LINKED]
    assert not offenders, offenders


def test_ruff_bans_a_bare_pipeline_import(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("from analysis.db import connect\nimport ctxtap.analysis.db\n")
    result = subprocess.run([str(Path(sys.executable).with_name("ruff")), "check", "--no-cache", "--select",
                             "TID251", "--config", str(ROOT / "pyproject.toml"), str(probe)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 1 and "`analysis` is banned" in result.stdout and ":2:" not in result.stdout, \
        result.stdout + result.stderr
