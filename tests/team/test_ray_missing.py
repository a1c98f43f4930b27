"""`experiment run --ray` where Ray is not installed: one line naming the extra, nothing created.

Runs whether or not Ray is installed: a stand-in `ray` package that fails to import is put first on the path."""

from __future__ import annotations

from tests.proxyharness import run_ctxtap

SPEC = """\
command = "true"
[variants.A]
"""


def test_without_ray_the_command_names_the_extra_and_creates_nothing(tmp_path, ctxtap_config) -> None:
    fake = tmp_path / "fake" / "ray"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('No module named ray')\n")
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC)
    out = tmp_path / "exp"
    result = run_ctxtap(["experiment", "run", str(spec), "--out", str(out), "--ray", "auto"], ctxtap_config,
                        check=False, extra_env={"PYTHONPATH": str(tmp_path / "fake")})
    assert result.returncode == 1, result.stdout + result.stderr
    assert 'Ray is not installed: install the team extra (pip install "ctxtap[team]")' in result.stderr
    assert "Traceback" not in result.stderr and not out.exists()
    # --push without --ray is refused before anything runs
    result = run_ctxtap(["experiment", "run", str(spec), "--out", str(out), "--push", "s3://b/p"], ctxtap_config,
                        check=False)
    assert result.returncode == 1 and "--push (or the spec's push) needs --ray" in result.stderr
    assert not out.exists()
