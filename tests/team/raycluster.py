"""A local Ray cluster for the tests: a head and worker nodes as separate processes on 127.0.0.1.

Every port Ray opens is bound to 127.0.0.1 (`--node-ip-address`, the dashboard off); Ray's servers
have no token. Each node is `ray start --block` in a session of its own, with a marker variable in
its environment that every process it starts inherits (raylet, workers, the runs' proxies and
commands): stopping a node kills every process carrying its marker, so nothing is left behind, and
`ray stop` (which stops every cluster on the machine) is never used.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

MARK = "CTXTAP_TEST_RAY_NODE"
OBJECT_STORE = 80 * 1024 * 1024
# Ray on Linux replaces a loopback --node-ip-address by the machine's routable address and binds its
# gRPC servers to every interface; in its single-machine mode (this variable at 0) it keeps 127.0.0.1
# and binds every port there. The driver (`ctxtap experiment run --ray`) needs it too. That mode
# refuses `ray start --address` (a second node), so the other nodes run `ray start` with the
# replacement switched off instead (KEEP_LOOPBACK): their ports are on 127.0.0.1 as well.
RAY_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0",
           "RAY_DISABLE_DOCKER_CPU_WARNING": "1"}

KEEP_LOOPBACK = ("import sys; import ray._private.services as s; s.resolve_ip_for_localhost = lambda host: host; "
                 "from ray.scripts.scripts import main; sys.argv[0] = 'ray'; sys.exit(main())")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def marked(mark: str) -> list[int]:
    """Processes of this user whose environment carries `MARK=mark`."""
    needle = f"{MARK}={mark}".encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                pids.append(int(entry.name))
        except OSError:
            continue
    return pids


def kill_marked(mark: str, timeout: float = 10) -> None:
    for sig in (signal.SIGKILL,):
        for pid in marked(mark):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
    deadline = time.monotonic() + timeout
    while marked(mark) and time.monotonic() < deadline:
        time.sleep(0.1)


@dataclass
class Node:
    name: str
    mark: str
    proc: subprocess.Popen
    node_id: str | None = None

    def kill(self) -> None:
        """The node dies at once: every process of it, SIGKILL."""
        kill_marked(self.mark)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            pass


@dataclass
class Cluster:
    base: Path
    env: dict[str, str]
    address: str = ""
    nodes: list[Node] = field(default_factory=list)
    ray_temp: str = ""  # Ray's session folder (see `_ray_temp`)

    def _start(self, name: str, args: list[str], path_extra: list[str], head: bool = False) -> Node:
        mark = uuid.uuid4().hex
        env = {**self.env, **RAY_ENV, MARK: mark, "TMPDIR": str(self.base / f"{name}-tmp")}
        (self.base / f"{name}-tmp").mkdir(mode=0o700, exist_ok=True)
        env["PATH"] = os.pathsep.join([*path_extra, os.path.dirname(sys.executable), env.get("PATH", "")])
        if head:
            ray = [str(Path(sys.executable).with_name("ray"))]
        else:  # `ray start` refuses a second node in single-machine mode: keep 127.0.0.1 as it was given
            env.pop("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER")
            ray = [sys.executable, "-c", KEEP_LOOPBACK]
        log = open(self.base / f"{name}.log", "wb")  # noqa: SIM115 - the node's output, kept for a failure's message
        proc = subprocess.Popen([*ray, "start", "--block", "--disable-usage-stats", "--node-ip-address", "127.0.0.1",
                                 "--num-cpus", "1", "--num-gpus", "0", "--object-store-memory", str(OBJECT_STORE),
                                 *args], env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        node = Node(name, mark, proc)
        self.nodes.append(node)
        return node

    def _ray_temp(self) -> str:
        """Ray's session folder, short: its AF_UNIX socket paths must stay under 108 bytes, which a
        pytest-xdist worker's base folder (`.../pytest-N/popen-gwK/...`) would pass."""
        self.ray_temp = tempfile.mkdtemp(prefix="ray-")
        return self.ray_temp

    def start_head(self, path_extra: list[str]) -> Node:
        port = free_port()
        self.address = f"127.0.0.1:{port}"
        node = self._start("head", ["--head", "--port", str(port), "--include-dashboard", "false",
                                    "--dashboard-host", "127.0.0.1",
                                    "--temp-dir", self._ray_temp()], path_extra, head=True)
        self.wait_nodes(1)
        node.node_id = self.alive()[0]
        return node

    def add_node(self, name: str, path_extra: list[str]) -> Node:
        before = set(self.alive())
        node = self._start(name, ["--address", self.address], path_extra)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            new = set(self.alive()) - before
            if new:
                node.node_id = new.pop()
                return node
            if node.proc.poll() is not None:
                break
            time.sleep(0.5)
        raise RuntimeError(f"ray node {name} did not join: {(self.base / f'{name}.log').read_text()[-2000:]}")

    def alive(self) -> list[str]:
        """Ids of the live nodes, asked of the head through a short-lived driver."""
        code = (f"import json, ray; ray.init(address={self.address!r}, logging_level='ERROR', log_to_driver=False); "
                "print(json.dumps([n['NodeID'] for n in ray.nodes() if n['Alive']])); ray.shutdown()")
        try:
            out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30,
                                 env={**self.env, **RAY_ENV})
        except subprocess.TimeoutExpired:
            return []
        if out.returncode != 0:
            return []
        return json.loads(out.stdout.strip().splitlines()[-1])

    def wait_nodes(self, n: int, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.nodes[0].proc.poll() is not None:
                break
            if len(self.alive()) >= n:
                return
            time.sleep(0.5)
        raise RuntimeError(f"the ray head did not start: {(self.base / 'head.log').read_text()[-2000:]}")

    def listening(self) -> list[str]:
        """Host:port of every TCP socket the cluster's processes listen on (from /proc)."""
        inodes: set[str] = set()
        for node in self.nodes:
            for pid in marked(node.mark):
                try:
                    for fd in Path(f"/proc/{pid}/fd").iterdir():
                        target = os.readlink(fd)
                        if target.startswith("socket:["):
                            inodes.add(target[8:-1])
                except OSError:
                    continue
        out = []
        for table, width in (("/proc/net/tcp", 8), ("/proc/net/tcp6", 32)):
            for line in Path(table).read_text().splitlines()[1:]:
                cols = line.split()
                if cols[3] != "0A" or cols[9] not in inodes:  # 0A: LISTEN
                    continue
                hexip, hexport = cols[1].split(":")
                raw = bytes.fromhex(hexip)
                # the kernel writes each 32-bit word in host (little-endian) order
                words = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
                ip = socket.inet_ntop(socket.AF_INET if width == 8 else socket.AF_INET6, words)
                out.append(f"{ip}:{int(hexport, 16)}")
        return out

    def stop(self) -> None:
        for node in reversed(self.nodes):
            node.kill()
        if self.ray_temp:
            shutil.rmtree(self.ray_temp, ignore_errors=True)
