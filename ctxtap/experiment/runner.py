"""Run an experiment: every (variant, repeat) through the recording proxy into its own capture.

Runs interleave variants (repeat 0 of A, of B, repeat 1 of A, of B, ...) so drift in time hits
every variant alike. Each run gets a fresh copy of the fixture as its working directory and its
own capture. Sequential runs share one recording proxy whose capture is rotated between runs;
parallel runs get a `ctxtap proxy` process each, started one run ahead (see `proxy.py`). After
the command (and the check) the run's capture is finalized and analysed; meanwhile the proxy
already switches to the next run's capture.

Interrupting (SIGINT/SIGTERM once) lets the running runs finish and starts no new one; a
second interrupt stops them too (recorded as `interrupted`). The commands run in their own
session, so a terminal's Ctrl-C reaches the runner, not them. The directory stays a valid
partial experiment: `ctxtap experiment report` reads it, `run --resume` completes it.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxtap import __version__
from ctxtap.analysis.build import ensure_analysis
from ctxtap.analysis.compare.experiment import (
    MANIFEST,
    RUN_FILE,
    RUNS_DIR,
    ExperimentManifest,
    RunRecord,
    read_manifest,
    read_runs,
)
from ctxtap.analysis.db import connect
from ctxtap.capture.paths import redaction_key
from ctxtap.capture.private import private_dir, tighten, user_umask
from ctxtap.experiment.gates import RunWatch
from ctxtap.experiment.proxy import SharedProxy, start_proxy
from ctxtap.experiment.spec import Spec, fill, fixture_digest
from ctxtap.redaction.redactor import Redactor

LOG_TAIL = 20_000  # bytes of the command's stdout/stderr kept per run (redacted)
KILL_GRACE_S = 5.0
DONE = ("completed", "timed_out", "failed_to_start")  # statuses a resume keeps
WORK_DIR = "work"  # a run's copy of the fixture, the command's working directory


class ExperimentError(RuntimeError):
    """The experiment cannot start or continue, in words (cause and next step)."""


@dataclass
class PlannedRun:
    index: int
    run_id: str
    variant: str
    repeat: int


def plan(spec: Spec) -> list[PlannedRun]:
    """Interleaved: every variant once per repeat, in the spec's variant order."""
    out = []
    for r in range(spec.repeats):
        for v in spec.variants:
            out.append(PlannedRun(len(out), f"{r:03d}-{v.name}", v.name, r))
    return out


# -- the experiment -----------------------------------------------------------------------------


@dataclass
class Runner:
    spec: Spec
    out: Path
    parallel: int = 1
    resume: bool = False
    echo: Callable[[str], None] = print
    stopping: threading.Event = field(default_factory=threading.Event)
    killing: threading.Event = field(default_factory=threading.Event)
    routes: list[str] = field(default_factory=list)
    server_url: str | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _running: dict[str, subprocess.Popen] = field(default_factory=dict)
    _proxies: dict[str, Future] = field(default_factory=dict)
    _pool: ThreadPoolExecutor | None = None
    _shared: SharedProxy | None = None
    _per_run: dict[str, Any] = field(default_factory=dict)  # run id -> its ProxyProc (parallel mode)
    _redactor: Redactor | None = None

    def redact(self, text: str) -> str:
        """What the experiment directory keeps of the user's words (the spec, with its [variants.*.env]
        values; each run's command and vars; errors) is redacted like a capture: it gets published."""
        if self._redactor is None:
            self._redactor = Redactor(redaction_key(), "experiment")
        return self._redactor.redact_text(text)

    # -- setup --

    def prepare(self) -> tuple[ExperimentManifest, list[PlannedRun]]:
        """Create or resume the directory; the runs still to do, in plan order."""
        runs = plan(self.spec)
        manifest_path = self.out / MANIFEST
        now = time.time()
        if self.out.exists() and any(self.out.iterdir()):
            if not manifest_path.exists():
                raise ExperimentError(f"{self.out} exists and is not an experiment directory; choose another --out "
                                      "(nothing in it was touched)")
            if not self.resume:
                raise ExperimentError(f"{self.out} already holds an experiment; add --resume to run the runs it is "
                                      "missing (completed runs are kept), or choose another --out")
            manifest = read_manifest(self.out)
            if manifest.spec_digest != self.spec.digest:
                raise ExperimentError(f"{self.out} was started from a different spec (its copy, redacted, is {self.out}/spec.toml); "
                                      "resume it with that spec, or choose another --out for the changed one")
            manifest.status, manifest.updated_at = "running", now
        else:
            private_dir(self.out)
            manifest = ExperimentManifest(
                name=self.spec.name or (self.spec.path.stem if self.spec.path else "experiment"),
                spec_file=str(self.spec.path), spec_digest=self.spec.digest, spec_text=self.redact(self.spec.text),
                created_at=now, updated_at=now, status="running", plan=[r.run_id for r in runs],
                variants=[v.name for v in self.spec.variants], repeats=self.spec.repeats,
                pass_k=self.spec.pass_k, ctxtap_version=__version__)
            (self.out / "spec.toml").write_text(manifest.spec_text)
        self._write_manifest(manifest)
        done = {r.run_id for r in read_runs(self.out) if r.status in DONE}
        todo = []
        for run in runs:
            if run.run_id in done:
                continue
            run_dir = self.out / RUNS_DIR / run.run_id
            if run_dir.exists():  # an unfinished run: kept aside, never overwritten
                n = 1
                while (aside := run_dir.with_name(f"{run.run_id}.partial-{n}")).exists():
                    n += 1
                run_dir.rename(aside)
            todo.append(run)
        return manifest, todo

    def _write_manifest(self, manifest: ExperimentManifest) -> None:
        tmp = self.out / (MANIFEST + ".tmp")
        tmp.write_text(manifest.model_dump_json(indent=2))
        tmp.replace(self.out / MANIFEST)

    # -- running --

    def run(self) -> ExperimentManifest:
        try:
            return self._run()
        finally:
            # captures, datasets, logs and run records: the user's only. The workspaces are the
            # command's own files and keep the modes it gave them.
            if self.out.exists():
                tighten(self.out, skip=(WORK_DIR,))

    def _run(self) -> ExperimentManifest:
        manifest, todo = self.prepare()
        total, done_before = len(manifest.plan), len(manifest.plan) - len(todo)
        if done_before:
            self.echo(f"resuming {self.out}: {done_before} of {total} runs already recorded, {len(todo)} to go")
        else:
            self.echo(f"experiment {manifest.name}: {total} runs ({len(manifest.variants)} variants x "
                      f"{manifest.repeats} repeats, interleaved) into {self.out}")
        counter = {"n": done_before}
        with ThreadPoolExecutor(max_workers=self.parallel + 1, thread_name_prefix="ctxtap-proxy") as pool:
            self._pool = pool
            with ThreadPoolExecutor(max_workers=self.parallel, thread_name_prefix="ctxtap-run") as workers:
                queue = list(todo)
                queue_lock = threading.Lock()

                def worker() -> None:
                    while not self.stopping.is_set():
                        with queue_lock:
                            if not queue:
                                return
                            item = queue.pop(0)
                            nxt = queue[0] if queue else None
                        if not self.shared:
                            self._ensure_proxy(item)
                            if nxt is not None and not self.stopping.is_set():
                                self._ensure_proxy(nxt)  # warm up the next run's proxy while this one runs
                        record = self.run_one(item, nxt)
                        with queue_lock:
                            counter["n"] += 1
                            n = counter["n"]
                        verdict = {True: "pass", False: "fail", None: "-"}[record.passed]
                        self.echo(f"[{n}/{total}] {record.run_id}: {record.status}, {verdict}, "
                                  f"{record.command_s or 0:.1f} s" + (f" ({record.error})" if record.error else ""))

                if not self.shared and todo:
                    # the first proxy alone: it creates the CA if there is none yet, which several
                    # proxies starting at once would each do differently
                    try:
                        self._ensure_proxy(todo[0]).result()
                    except Exception:  # that run is recorded as failed to start, with the reason
                        pass
                futures = [workers.submit(worker) for _ in range(self.parallel)]
                try:
                    for f in futures:
                        f.result()
                finally:
                    self._discard_unused_proxies()
        recorded = {r.run_id for r in read_runs(self.out) if r.status in DONE}
        manifest = read_manifest(self.out)
        manifest.status = "complete" if recorded >= set(manifest.plan) else "interrupted"
        manifest.updated_at = time.time()
        self._write_manifest(manifest)
        return manifest

    def _ensure_proxy(self, item: PlannedRun) -> Future:
        with self._lock:
            fut = self._proxies.get(item.run_id)
            if fut is None:
                capture = self.out / RUNS_DIR / item.run_id / "capture"
                capture.parent.mkdir(parents=True, exist_ok=True)
                assert self._pool is not None
                fut = self._pool.submit(start_proxy, capture, self.routes)
                self._proxies[item.run_id] = fut
            return fut

    proxy_per_run: bool = False  # a `ctxtap proxy` process per run even when runs are sequential

    @property
    def shared(self) -> bool:
        return self.parallel == 1 and not self.proxy_per_run

    def _discard_unused_proxies(self) -> None:
        """Proxies (or captures) prepared for runs that never ran (interrupted): stopped, directories removed."""
        with self._lock:
            left = dict(self._proxies)
            self._proxies.clear()
        for fut in left.values():
            try:
                proxy = fut.result()
                if proxy is not None:
                    proxy.stop()
            except Exception:  # a proxy that failed to start has nothing to stop
                pass
        if self._shared is not None:
            self._shared.close()
            self._shared = None
        for run_id in left:
            run_dir = self.out / RUNS_DIR / run_id
            if run_dir.exists() and not (run_dir / RUN_FILE).exists():
                shutil.rmtree(run_dir, ignore_errors=True)

    def _acquire(self, item: PlannedRun, capture: Path) -> dict[str, str]:
        """The proxy environment for a run whose capture is `capture` (waiting for it if needed)."""
        if not self.shared:
            with self._lock:
                fut = self._proxies.pop(item.run_id)
            proxy = fut.result()
            with self._lock:
                self._per_run[item.run_id] = proxy
            return proxy.env
        with self._lock:
            fut = self._proxies.pop(item.run_id, None)
        if fut is not None:
            fut.result()  # the rotation to this run's capture, started when the previous run ended
        elif self._shared is None:
            capture.parent.mkdir(parents=True, exist_ok=True)
            self._shared = SharedProxy(capture, self.routes)
        else:
            capture.parent.mkdir(parents=True, exist_ok=True)
            self._shared.rotate(capture)
        assert self._shared is not None
        return self._shared.env

    def _release(self, item: PlannedRun, nxt: PlannedRun | None) -> float:
        """Finalize the run's capture; in shared mode start switching to the next run's capture."""
        if not self.shared:
            with self._lock:
                proxy = self._per_run.pop(item.run_id)
            return proxy.stop()
        assert self._shared is not None
        seconds = self._shared.finish()
        if nxt is not None and not self.stopping.is_set():
            capture = self.out / RUNS_DIR / nxt.run_id / "capture"
            capture.parent.mkdir(parents=True, exist_ok=True)
            assert self._pool is not None
            shared = self._shared

            def rotate() -> None:
                shared.rotate(capture)

            with self._lock:
                self._proxies[nxt.run_id] = self._pool.submit(rotate)
        return seconds

    def interrupt(self) -> None:
        """First call: finish the running runs, start no more. Second: stop them too."""
        if self.stopping.is_set():
            self.killing.set()
            with self._lock:
                procs = list(self._running.values())
            for proc in procs:
                _kill_group(proc, signal.SIGTERM)
        self.stopping.set()

    def run_one(self, item: PlannedRun, nxt: PlannedRun | None = None) -> RunRecord:
        spec = self.spec
        variant = next(v for v in spec.variants if v.name == item.variant)
        run_dir = self.out / RUNS_DIR / item.run_id
        work = run_dir / WORK_DIR
        fixture = spec.fixture_dir()
        if fixture is not None:
            shutil.copytree(fixture, work, symlinks=True)
        else:  # the command's workspace: the user's modes (a fixture's copy keeps the fixture's)
            work.mkdir(parents=True, exist_ok=True)
            os.chmod(work, 0o777 & ~user_umask())
        values: dict[str, Any] = {**variant.vars, "variant": variant.name, "repeat": item.repeat,
                                  "run_id": item.run_id, "work_dir": str(work), "run_dir": str(run_dir),
                                  "server_url": self.server_url or "", "python": sys.executable}
        argv = fill(spec.argv(), values)
        rec = RunRecord(run_id=item.run_id, index=item.index, variant=item.variant, repeat=item.repeat,
                        status="completed", command=[self.redact(arg) for arg in argv], env_names=sorted(variant.env),
                        vars={k: self.redact(v) if isinstance(v, str) else v for k, v in variant.vars.items()},
                        fixture_digest=fixture_digest(work) if fixture is not None else None)
        t_wait = time.perf_counter()
        try:
            proxy_env = self._acquire(item, run_dir / "capture")
        except Exception as exc:
            rec.status, rec.error = "failed_to_start", f"the recording proxy did not start: {exc}"
            return self._save(rec, run_dir)
        rec.proxy_wait_s = time.perf_counter() - t_wait
        env = {**os.environ, **proxy_env, **variant.env, "CTXTAP_EXPERIMENT_RUN": item.run_id}
        if spec.diagnostics:  # ctxtap's own senders in the command ask for the provider's cache verdict
            env["CTXTAP_CACHE_DIAGNOSTICS"] = "1"
        watch = RunWatch.start(work, spec.gate_set())  # the work directory's facts (and receipt) before the run
        rec.gates = watch.gates.flags() if watch.gates else []
        rec.started_at = time.time()
        status, code, seconds, error = self._execute(argv, work, env, run_dir, "command")
        rec.status, rec.exit_code, rec.command_s, rec.error = status, code, seconds, error
        watch.command_ended(run_dir / "capture")  # before the check, which may write files of its own
        if status == "completed" and spec.check is not None and not self.killing.is_set():
            check = fill(spec.argv("check"), values)
            cstatus, ccode, cseconds, cerror = self._execute(check, work, env, run_dir, "check")
            rec.check_exit_code, rec.check_s = ccode, cseconds
            rec.passed = cstatus == "completed" and ccode == 0
            if cerror:
                rec.error = f"check: {cerror}"
        elif status == "completed":
            rec.passed = code == 0
        elif status == "timed_out":
            rec.passed = False
        rec.ended_at = time.time()
        rec.finalize_s = self._release(item, nxt)
        capture = run_dir / "capture"
        if (capture / "manifest.json").exists():
            t0 = time.perf_counter()
            try:
                watch.keep(capture, rec.command)
                ensure_analysis(capture)
                rec.analysis_s = time.perf_counter() - t0
                rec.client, rec.client_version, rec.model = _identity(capture)
                if watch.gates is not None and rec.passed is not None:  # zero tolerance: a broken gate fails the run
                    rec.answer_passed = rec.passed
                    rec.gates_passed, rec.gate_failures = watch.judge(capture)
                    rec.passed = rec.passed and rec.gates_passed
            except Exception as exc:  # the run is still recorded; the report says what is missing
                rec.error = (rec.error + "; " if rec.error else "") + f"analysis failed: {exc}"
        if watch.gates is not None and rec.passed and rec.gates_passed is None:
            rec.passed = False  # gates that could not be judged are not kept
            rec.error = (rec.error + "; " if rec.error else "") + "gates not judged: the run's capture was not analysed"
        if watch.receipt_error:
            rec.error = (rec.error + "; " if rec.error else "") + watch.receipt_error
        return self._save(rec, run_dir)

    def _execute(self, argv: list[str], cwd: Path, env: dict[str, str], run_dir: Path,
                 what: str) -> tuple[Any, int | None, float | None, str | None]:
        """(status, exit code, seconds, error in words) of one command, its output kept redacted."""
        t0 = time.perf_counter()
        try:
            # the user's command (and check) in its workspace: the user's umask, not ctxtap's private one
            proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    start_new_session=True, umask=user_umask())
        except OSError as exc:
            return "failed_to_start", None, None, f"{what} {argv[0]!r} could not start: {exc.strerror or exc}"
        with self._lock:
            self._running[f"{run_dir.name}:{what}"] = proc
        try:
            out, err = proc.communicate(timeout=self.spec.timeout)
            status, error = "completed", None
            if self.killing.is_set() and proc.returncode and proc.returncode < 0:
                status, error = "interrupted", f"{what} stopped by a second interrupt"
        except subprocess.TimeoutExpired:
            _kill_group(proc, signal.SIGTERM)
            try:
                out, err = proc.communicate(timeout=KILL_GRACE_S)
            except subprocess.TimeoutExpired:
                _kill_group(proc, signal.SIGKILL)
                out, err = proc.communicate()
            status, error = "timed_out", f"{what} timed out after {self.spec.timeout:g} s"
        finally:
            with self._lock:
                self._running.pop(f"{run_dir.name}:{what}", None)
        seconds = time.perf_counter() - t0
        redactor = Redactor(redaction_key(), run_dir.name)
        for name, data in ((f"{what}.stdout", out), (f"{what}.stderr", err)):
            if data:
                (run_dir / name).write_bytes(redactor.redact_bytes(data[-LOG_TAIL:]))
        return status, proc.returncode, seconds, error

    def _save(self, rec: RunRecord, run_dir: Path) -> RunRecord:
        run_dir.mkdir(parents=True, exist_ok=True)
        if rec.error:
            rec.error = self.redact(rec.error)
        tmp = run_dir / (RUN_FILE + ".tmp")
        tmp.write_text(rec.model_dump_json(indent=2))
        tmp.replace(run_dir / RUN_FILE)
        return rec


def _kill_group(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _identity(capture: Path) -> tuple[str | None, str | None, str | None]:
    con = connect([capture])
    row = con.execute("""SELECT any_value(client), any_value(client_version), any_value(model)
                         FROM requests WHERE thread_kind = 'main'""").fetchone()
    return (row[0], row[1], row[2]) if row else (None, None, None)


def run_experiment(spec: Spec, out: Path, *, parallel: int | None = None, resume: bool = False,
                   echo: Callable[[str], None] = print, install_signals: bool = True,
                   proxy_per_run: bool = False) -> ExperimentManifest:
    """Run (or resume) an experiment; with [server], the scripted model server serves every run."""
    runner = Runner(spec, Path(out), parallel=parallel or spec.parallel, resume=resume, echo=echo,
                    routes=list(spec.routes))
    runner.proxy_per_run = proxy_per_run
    previous: dict[int, Any] = {}
    if install_signals and threading.current_thread() is threading.main_thread():
        def on_signal(signum, frame) -> None:  # noqa: ARG001 - signal handler signature
            first = not runner.stopping.is_set()
            runner.interrupt()
            echo("interrupted: finishing the running runs, starting no more (interrupt again to stop them)"
                 if first else "interrupted again: stopping the running runs")
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, on_signal)
    try:
        if spec.server is not None:
            from ctxtap.modelserver import ModelServer

            with ModelServer(script=spec.server.script, retry_after_s=spec.server.retry_after_s) as server:
                runner.server_url = server.url
                runner.routes += [f"{host}={server.url}" for host in spec.server.hosts]
                return runner.run()
        return runner.run()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
