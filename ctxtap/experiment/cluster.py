"""Experiments on a Ray cluster: `ctxtap experiment run SPEC --ray auto|ADDRESS` (the `team` extra).

Every run of the plan is one Ray task (one CPU). The task runs on a node of the cluster what the
local runner runs on one machine: a fresh copy of the spec's fixture (it travels with the task, a
tar in Ray's object store, put there once), the run's own `ctxtap proxy` on the node's loopback
(and, with `[server]`, its own scripted model server there), the command, the check, the capture
finalized and analysed. Then either the run's directory comes back to the driver as a tar and is
written under the experiment directory (0700/0600 like every capture), or, with a store
(`--push URL` or the spec's `push`), the capture is pushed from the node as well.

A node without the command (neither on its PATH nor at the path given) refuses the task, naming
itself and the command; the driver sends the run to another live node and records it as
failed to start, every refusal named, only when no node is left. A run whose node dies is
re-run by Ray (`max_retries`, system failures only; the command's own failures are results, not
retried); its run id is the plan's, and the driver writes a run's directory only from the
result of the task that finished, so a re-run cannot leave two. `--resume` reads the directory
as the local runner does: runs already recorded are not sent again.

Ray is imported here, lazily, and nowhere else: the proxy, the capture layer and the local runner
never import it (import-linter contract `no-ray-below`). Ray's own servers have no token; the
cluster's ports must be on loopback or a private network (README, "Experiments on a Ray cluster").
"""

from __future__ import annotations

import io
import os
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ctxtap.analysis.compare.experiment import (
    RUNS_DIR,
    ExperimentManifest,
    RunRecord,
    read_manifest,
    read_runs,
)
from ctxtap.capture.private import tighten
from ctxtap.experiment.runner import DONE, WORK_DIR, ExperimentError, PlannedRun, Runner
from ctxtap.experiment.spec import Spec, fill

MAX_RETRIES = 3  # re-runs of a task whose node or worker died
RAY_MISSING = 'Ray is not installed: install the team extra (pip install "ctxtap[team]")'


class Refused(Exception):  # noqa: N818 - a node's answer, not a failure of the run
    """A node that cannot run the command: its name and id, and what it is missing."""

    def __init__(self, message: str, node_id: str) -> None:
        super().__init__(message, node_id)
        self.message, self.node_id = message, node_id

    def __str__(self) -> str:
        return self.message


def import_ray():
    try:
        import ray
    except ImportError:
        raise ExperimentError(RAY_MISSING) from None
    return ray


# -- on the node --------------------------------------------------------------------------------


def _node() -> tuple[str, str]:
    """(name in words, node id) of the node this task runs on."""
    import ray

    node_id = ray.get_runtime_context().get_node_id()
    try:
        ip = ray.util.get_node_ip_address()
    except Exception:  # noqa: BLE001 - the name stays useful without it
        ip = "?"
    return f"{socket.gethostname()} ({ip}, node {node_id[:12]})", node_id


def _missing(argv: list[str]) -> str | None:
    prog = argv[0]
    if os.sep in prog:
        return None if os.access(prog, os.X_OK) else prog
    return None if shutil.which(prog) else prog


# Started beside a task, in a session of its own: reads the process groups of the run's proxy and
# commands from its stdin and, when stdin ends without the word `finished` (the task failed, or its
# worker died: killed, cancelled), ends those still there (SIGTERM, then SIGKILL). Without it a worker killed mid-run would leave its
# run's proxy listening and its command running on the node.
WATCHDOG = """
import os, signal, sys, time

def alive(group):
    try:
        os.killpg(group, 0)
        return True
    except OSError:
        return False

lines = [line.strip() for line in sys.stdin if line.strip()]
if lines and lines[-1] == "finished":  # the task ended its run itself
    sys.exit(0)
groups = [int(line) for line in lines]
for sig, grace in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 0.0)):
    groups = [g for g in groups if alive(g)]
    for g in groups:
        try:
            os.killpg(g, sig)
        except OSError:
            pass
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(alive(g) for g in groups):
        time.sleep(0.1)
"""


class _Watchdog:
    def __init__(self, runner: Runner) -> None:
        self.runner, self.seen = runner, set()
        self.proc = subprocess.Popen([sys.executable, "-c", WATCHDOG], stdin=subprocess.PIPE, text=True,
                                     start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()

    def _groups(self) -> list[int]:
        r = self.runner
        with r._lock:
            procs = list(r._running.values()) + [p.proc for p in r._per_run.values()]
            procs += [f.result().proc for f in r._proxies.values() if f.done() and f.exception() is None]
        return [p.pid for p in procs]

    def _watch(self) -> None:
        assert self.proc.stdin is not None
        while not self.done.wait(0.1):
            for pid in self._groups():
                if pid not in self.seen:
                    self.seen.add(pid)
                    self.proc.stdin.write(f"{pid}\n")
                    self.proc.stdin.flush()

    def close(self, finished: bool) -> None:
        """`finished`: the run ended as it should (its proxy stopped): nothing to end."""
        self.done.set()
        self.thread.join()
        assert self.proc.stdin is not None
        if finished:
            self.proc.stdin.write("finished\n")
        self.proc.stdin.close()
        self.proc.wait()


def _tar(directory: Path) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=1) as tar:
        tar.add(directory, arcname=".")
    return buf.getvalue()


def run_on_node(spec: Spec, fixture_tar: bytes | None, run: dict[str, Any], push: str | None) -> dict[str, Any]:
    """One run on this node (the body of the Ray task): its record and its directory as a tar."""
    name, node_id = _node()
    item = PlannedRun(**run)
    variant = next(v for v in spec.variants if v.name == item.variant)
    tmp = Path(tempfile.mkdtemp(prefix="ctxtap-run-"))
    try:
        if fixture_tar is not None:
            with tarfile.open(fileobj=io.BytesIO(fixture_tar)) as tar:
                tar.extractall(tmp / "fixture", filter="tar")
            spec = spec.model_copy(update={"fixture": str(tmp / "fixture"), "path": tmp / "spec.toml"})
        probe = {**variant.vars, "variant": variant.name, "repeat": item.repeat, "run_id": item.run_id,
                 "work_dir": str(tmp), "run_dir": str(tmp), "server_url": "http://127.0.0.1", "python": sys.executable}
        for which in ("command", "check"):
            if getattr(spec, which) is None:
                continue
            missing = _missing(fill(spec.argv(which), probe))
            if missing is not None:
                raise Refused(f"node {name} refuses run {item.run_id}: its {which} {missing!r} is not installed "
                              "there (not on the PATH of the node's Ray workers)", node_id)
        runner = Runner(spec, tmp / "exp", parallel=1, routes=list(spec.routes), echo=lambda _line: None)
        runner.proxy_per_run = True
        (tmp / "exp").mkdir(mode=0o700)
        watchdog, finished = _Watchdog(runner), False
        try:
            with ThreadPoolExecutor(max_workers=1, thread_name_prefix="ctxtap-proxy") as pool:
                runner._pool = pool

                def once() -> RunRecord:
                    runner._ensure_proxy(item)
                    return runner.run_one(item)

                if spec.server is not None:
                    from ctxtap.modelserver import ModelServer

                    with ModelServer(script=spec.server.script, retry_after_s=spec.server.retry_after_s) as server:
                        runner.server_url = server.url
                        runner.routes += [f"{host}={server.url}" for host in spec.server.hosts]
                        record = once()
                else:
                    record = once()
            finished = True
        finally:
            watchdog.close(finished)  # ends the run's proxy and command if an error left them running
        run_dir = tmp / "exp" / RUNS_DIR / item.run_id
        record.node = name
        pushed = None
        if push and (run_dir / "capture" / "manifest.json").exists():
            from ctxtap.store.push import push_capture

            result = push_capture(run_dir / "capture", push)
            pushed, record.store, record.capture_id = str(result), push, result.capture_id
        runner._save(record, run_dir)  # with where its capture went: `experiment report` reads it there
        tighten(run_dir, skip=(WORK_DIR,))
        return {"record": record.model_dump(mode="json"), "node": name, "tar": _tar(run_dir), "pushed": pushed}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# -- on the driver ------------------------------------------------------------------------------


def _write_run(out: Path, run_id: str, data: bytes) -> None:
    """The run's directory from its tar: unpacked beside it, then renamed into place (atomic)."""
    runs = out / RUNS_DIR
    runs.mkdir(parents=True, exist_ok=True)
    incoming = Path(tempfile.mkdtemp(prefix=f".incoming-{run_id}-", dir=runs))
    try:
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            tar.extractall(incoming, filter="tar")
        tighten(incoming, skip=(WORK_DIR,))
        target = runs / run_id
        if target.exists():  # a half-written run of an earlier attempt: kept aside, as resume does
            n = 1
            while (aside := target.with_name(f"{run_id}.partial-{n}")).exists():
                n += 1
            target.rename(aside)
        incoming.rename(target)
    finally:
        if incoming.exists():
            shutil.rmtree(incoming, ignore_errors=True)


def _alive_nodes(ray) -> list[str]:
    return [n["NodeID"] for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get("CPU", 0) >= 1]


def run_on_ray(spec: Spec, out: Path, *, address: str, resume: bool = False, push: str | None = None,
               echo: Callable[[str], None] = print, max_retries: int = MAX_RETRIES,
               install_signals: bool = True) -> ExperimentManifest:
    """Run (or resume) an experiment with every run a Ray task on the cluster at `address`."""
    ray = import_ray()
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    out = Path(out)
    runner = Runner(spec, out, resume=resume, echo=echo)
    manifest, todo = runner.prepare()
    total, done_before = len(manifest.plan), len(manifest.plan) - len(todo)
    if done_before:
        echo(f"resuming {out}: {done_before} of {total} runs already recorded, {len(todo)} to go")
    if not todo:
        return _close(runner)
    try:
        ray.init(address=address, logging_level="ERROR", log_to_driver=False, configure_logging=False)
    except Exception as exc:  # noqa: BLE001 - ConnectionError, RuntimeError, ValueError: all in words
        _close(runner)
        raise ExperimentError(f"cannot reach the Ray cluster at {address!r}: {exc}") from None
    stopping = threading.Event()
    previous: dict[int, Any] = {}
    pending: dict[Any, tuple[PlannedRun, dict[str, str]]] = {}
    if install_signals and threading.current_thread() is threading.main_thread():
        def on_signal(signum, frame) -> None:  # noqa: ARG001 - signal handler signature
            stopping.set()
            echo("interrupted: cancelling the runs still on the cluster (--resume runs them later)")
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, on_signal)
    try:
        nodes = _alive_nodes(ray)
        if not nodes:
            raise ExperimentError(f"the Ray cluster at {address!r} has no live node with a CPU; nothing was sent")
        echo(f"experiment {manifest.name}: {len(todo)} runs as Ray tasks on {len(nodes)} node(s) at {address} "
             f"into {out}")
        task = ray.remote(num_cpus=1, max_retries=max_retries, retry_exceptions=False)(run_on_node)
        fixture = spec.fixture_dir()
        fixture_ref = ray.put(_tar(fixture)) if fixture is not None else None
        # the spec as the node sees it: the fixture comes with the task, so its path here means nothing there
        sent = spec.model_copy(update={"fixture": None if fixture is None else "fixture"})

        def submit(item: PlannedRun, refused: dict[str, str]) -> None:
            options: dict[str, Any] = {}
            if refused:
                left = [n for n in _alive_nodes(ray) if n not in refused]
                if not left:
                    rec = RunRecord(run_id=item.run_id, index=item.index, variant=item.variant, repeat=item.repeat,
                                    status="failed_to_start",
                                    error="no node of the cluster can run it: " + "; ".join(refused.values()))
                    runner._save(rec, out / RUNS_DIR / item.run_id)
                    echo(f"{item.run_id}: failed to start ({rec.error})")
                    return
                options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(left[0], soft=False)
            ref = task.options(**options).remote(sent, fixture_ref, vars(item), push)
            pending[ref] = (item, refused)

        for item in todo:
            submit(item, {})
        n = done_before
        while pending and not stopping.is_set():
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=0.5)
            for ref in ready:
                item, refused = pending.pop(ref)
                try:
                    result = ray.get(ref)
                except Exception as exc:  # noqa: BLE001 - Ray wraps the task's exception
                    cause = getattr(exc, "cause", exc)
                    if isinstance(cause, Refused):
                        echo(str(cause))
                        submit(item, {**refused, cause.node_id: str(cause)})
                    else:  # retries spent (every node it ran on died): not recorded, --resume runs it again
                        echo(f"{item.run_id}: lost after {max_retries} re-runs ({type(exc).__name__}: "
                             f"{str(exc).strip().splitlines()[-1] if str(exc).strip() else ''}); --resume runs it again")
                    continue
                _write_run(out, item.run_id, result["tar"])
                record = RunRecord.model_validate(result["record"])
                n += 1
                verdict = {True: "pass", False: "fail", None: "-"}[record.passed]
                where = f" on {result['node']}" + (f", pushed to {push}" if result.get("pushed") else "")
                echo(f"[{n}/{total}] {record.run_id}: {record.status}, {verdict}, {record.command_s or 0:.1f} s"
                     + where + (f" ({record.error})" if record.error else ""))
        for ref in pending:
            ray.cancel(ref, force=True)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        ray.shutdown()
        manifest = _close(runner)
    return manifest


def _close(runner: Runner) -> ExperimentManifest:
    out = runner.out
    recorded = {r.run_id for r in read_runs(out) if r.status in DONE}
    manifest = read_manifest(out)
    manifest.status = "complete" if recorded >= set(manifest.plan) else "interrupted"
    manifest.updated_at = time.time()
    runner._write_manifest(manifest)
    for stale in (out / RUNS_DIR).glob(".incoming-*") if (out / RUNS_DIR).exists() else ():
        shutil.rmtree(stale, ignore_errors=True)
    tighten(out, skip=(WORK_DIR,))
    return manifest

