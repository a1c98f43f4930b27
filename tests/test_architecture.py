"""The layers of ARCHITECTURE.md hold: import-linter's contracts pass, a back-import fails, and the
import graph sees every production module (a folder without `__init__.py` would hide its imports); no test
or benchmark imports a test module."""

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


# Benchmarks that still import the ordinary-content classes through their test module: each is to import
# them from tests.redaction.ordinary_content and leave this set (the test fails while a file is listed
# that no longer does).
def _test_module_imports(rel: Path, source: str) -> list[str]:
    """`line module` for each test module (`test_*`) that the file `rel` (from the root) imports: `import
    tests.x.test_y`, `from tests.x.test_y import ...`, `from tests.x import test_y`, the relative forms,
    `__import__` and `importlib.import_module` of a constant name, and an import line in a string (a script
    a test writes and runs)."""
    import ast
    import re

    package = list(rel.parent.parts)
    found = {f"{source.count(chr(10), 0, m.start()) + 1} {m.group(1)}"
             for m in re.finditer(r"^[ \t]*(?:from|import)[ \t]+(tests(?:\.\w+)*\.test_\w+)", source, re.M)}
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            names = [module, *(f"{module}.{a.name}" for a in node.names if a.name.startswith("test_"))]
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)
              and getattr(node.func, "id", getattr(node.func, "attr", None)) in ("__import__", "import_module")):
            names = [node.args[0].value]
        found |= {f"{node.lineno} {n}" for n in names
                  if n.split(".")[0] == "tests" and any(part.startswith("test_") for part in n.split("."))}
    return sorted(found)


def test_no_test_or_benchmark_imports_a_test_module() -> None:
    """A test module holds tests: what several files share is a support module (tests/synthetic.py,
    tests/reports/browser_support.py, ...) and a fixture they share is in a conftest.py (issue 35)."""
    sources = [p for folder in ("tests", "benchmarks") for p in (ROOT / folder).rglob("*.py")
               if "__pycache__" not in p.parts]
    assert len(sources) > 150
    offenders = {}
    for path in sources:
        rel = path.relative_to(ROOT)
        if found := _test_module_imports(rel, path.read_text(encoding="utf-8")):
            offenders[rel.as_posix()] = found
    assert not offenders, offenders


@pytest.mark.parametrize(("line", "caught"), [
    pytest.param("from tests.reports.test_report import FIVE_MB", True, id="from-module-import"),
    pytest.param("import tests.redaction.test_redaction_rules", True, id="import-module"),
    pytest.param("from tests.cli import test_cli_failures", True, id="from-package-import-module"),
    pytest.param("from .test_modelserver import post", True, id="relative"),
    pytest.param("def f():\n    from tests.capture.test_effects import _record", True, id="in-a-function"),
    pytest.param("__import__('tests.capture.test_effects')", True, id="__import__"),
    pytest.param("importlib.import_module('tests.cli.test_cli_failures')", True, id="import_module"),
    pytest.param('SCRIPT = """\nimport sys\nfrom tests.capture.test_telemetry_receiver import logs\n"""', True,
                 id="in-a-script-string"),
    pytest.param("from tests.reports.html_checks import FIVE_MB", False, id="support-module"),
    pytest.param("from .model_client import post", False, id="relative-support-module"),
    pytest.param("from tests import corpus", False, id="tests-package"),
    pytest.param("import test_support_elsewhere", False, id="outside-tests"),
])
def test_an_import_of_a_test_module_is_caught(line: str, caught: bool) -> None:
    assert bool(_test_module_imports(Path("tests/modelserver/probe.py"), line)) == caught
