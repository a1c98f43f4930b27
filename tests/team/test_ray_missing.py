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


def test_the_watchdog_ends_a_run_whose_task_died() -> None:
    """A task's worker killed mid-run (its node lost, the task cancelled) leaves no proxy or command behind:
    the watchdog beside it ends the process groups it was told of once its stdin closes without `finished`."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from ctxtap.experiment.cluster import WATCHDOG

    for finished in (False, True):
        run = subprocess.Popen(["sleep", "60"], start_new_session=True)
        # the stand-in for a Ray worker: starts the watchdog, tells it the run's group, then dies by SIGKILL
        worker = subprocess.Popen([sys.executable, "-c", f"""
import subprocess, sys, os, signal
w = subprocess.Popen([sys.executable, "-c", {WATCHDOG!r}], stdin=subprocess.PIPE, text=True, start_new_session=True)
w.stdin.write("{run.pid}\\n" + ("finished\\n" if {finished} else ""))
w.stdin.flush()
print(w.pid, flush=True)
if {finished}:
    w.stdin.close()
    w.wait()
os.kill(os.getpid(), signal.SIGKILL)
"""], stdout=subprocess.PIPE, text=True)
        dog = int(worker.stdout.readline())
        worker.wait(30)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and run.poll() is None and not finished:
            time.sleep(0.1)
        try:
            time.sleep(0 if not finished else 1.0)  # finished: give a wrong kill the time to happen
            assert (run.poll() is None) is finished, "the watchdog must end the run's group only when the task died"
        finally:
            run.kill()
            run.wait()
            try:
                os.kill(dog, signal.SIGKILL)
            except ProcessLookupError:
                pass
