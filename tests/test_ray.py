"""`kernelopt suite --ray` on a real Ray cluster on the loopback address: a head and worker
nodes started as processes of their own (the worker nodes declare one GPU each, which Ray
allows on a CPU; the kernels still run under Triton's interpreter). A worker node is killed
while it runs a problem: the problem runs again on another node and the results are complete."""

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
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_suite import KERNELS, PROBLEMS

pytest.importorskip("ray", reason="the Ray extra is not installed: pip install -e '.[ray]'")

pytestmark = pytest.mark.slow
RAY = [sys.executable, "-m", "ray.scripts.scripts"]
QUICK_HEALTH_CHECKS = '{"health_check_period_ms": 500, "health_check_failure_threshold": 3}'
START_S = 90.0

# A problem that stops in its reference process until the test lets it go: its first try is
# where the node is killed, deterministically. The reference process is trusted: it may write.
HOLD = '''
from pathlib import Path as _Path
import time as _time
_here = _Path(__file__)
try:
    _deadline = _time.monotonic() + 300
    if not _here.with_suffix(".release").exists():
        _here.with_suffix(".started").write_text("started")
    while not _here.with_suffix(".release").exists() and _time.monotonic() < _deadline:
        _time.sleep(0.05)
except Exception:  # a process that may not touch files (a candidate's) goes on
    pass
'''


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Cluster:
    """The Ray processes this test started, each `ray start --block` in a session of its own."""

    def __init__(self, root: Path) -> None:
        self.root, self.port = root, _free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.nodes: list[subprocess.Popen[bytes]] = []

    def start(self, *args: str, name: str) -> subprocess.Popen[bytes]:
        log = self.root / f"{name}.log"
        command = [*RAY, "start", "--block", "--disable-usage-stats", "--node-ip-address=127.0.0.1", "--num-cpus=1",
                   "--object-store-memory=80000000", *args]
        with open(log, "wb") as out:
            node = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        self.nodes.append(node)
        deadline = time.monotonic() + START_S
        while b"Ray runtime started" not in log.read_bytes():
            assert node.poll() is None and time.monotonic() < deadline, f"{name} did not start:\n{log.read_text()}"
            time.sleep(0.1)
        return node

    def head(self) -> None:
        self.start("--head", f"--port={self.port}", "--num-gpus=0", "--include-dashboard=false",
                   f"--temp-dir={self.root / 'ray'}", f"--system-config={QUICK_HEALTH_CHECKS}", name="head")

    def worker(self, name: str) -> subprocess.Popen[bytes]:
        return self.start(f"--address={self.address}", "--num-gpus=1", name=name)

    @staticmethod
    def kill(node: subprocess.Popen[bytes]) -> None:
        """SIGKILL every process of the node's session (its raylet and workers): the node is lost."""
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[3]) == node.pid:  # the session id
                try:
                    os.kill(int(stat.parent.name), signal.SIGKILL)
                except ProcessLookupError:
                    pass
        node.wait()


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    root = Path(tempfile.mkdtemp(prefix="kr-"))  # short: Ray's socket paths must fit in 107 bytes
    running = Cluster(root)
    try:
        running.head()
        yield running
    finally:
        for node in reversed(running.nodes):
            Cluster.kill(node)
        shutil.rmtree(root, ignore_errors=True)


def test_a_lost_node_s_problem_runs_again_elsewhere(tmp_path, cluster):
    problems, kernels = tmp_path / "problems", tmp_path / "kernels"
    problems.mkdir(), kernels.mkdir()
    for name in ("1_Add", "2_Scale"):
        shutil.copy(PROBLEMS / f"{name}.py", problems)
        shutil.copy(KERNELS / f"{name}.py", kernels)
    (problems / "6_Hold.py").write_text((PROBLEMS / "1_Add.py").read_text() + HOLD)
    shutil.copy(KERNELS / "1_Add.py", kernels / "6_Hold.py")
    first = cluster.worker("node-a")
    out = tmp_path / "out"
    env = {**os.environ, "KERNELOPT_RUNS_DIR": str(tmp_path / "runs")}
    suite = subprocess.Popen(
        [sys.executable, "-m", "kernelopt.cli", "suite", str(problems), "--kernels", str(kernels), "--no-compile",
         "--ray", cluster.address, "--out", str(out)],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 240
        while not (problems / "6_Hold.started").exists():  # node A, the only one with a GPU, holds it
            assert suite.poll() is None, suite.communicate()
            assert time.monotonic() < deadline, "6_Hold never started"
            time.sleep(0.1)
        cluster.worker("node-b")
        Cluster.kill(first)
        (problems / "6_Hold.release").write_text("")
        stdout, stderr = suite.communicate(timeout=240)
    finally:
        (problems / "6_Hold.release").write_text("")
        if suite.poll() is None:
            suite.kill()
    assert suite.returncode == 1, f"{stdout}\n{stderr}"  # the suite ended: 2_Scale is wrong on purpose
    results = {p["name"]: p for p in json.loads((out / "results.json").read_text())["problems"]}
    assert {name: (p["status"], p["tries"]) for name, p in results.items()} == {
        "1_Add": ("correct", 1), "2_Scale": ("rejected", 1), "6_Hold": ("correct", 2)}
    where_a = results["1_Add"]["where"]
    assert where_a == results["2_Scale"]["where"] and " gpu " in where_a
    assert results["6_Hold"]["where"] != where_a  # the second try ran on node B
    lost = [line for line in stderr.splitlines() if "6_Hold: its task on" in line]
    assert len(lost) == 1 and lost[0].endswith("running it again"), stderr
    assert f"on the Ray cluster at {cluster.address}" in stdout
    assert any(line.startswith("[3/3] 6_Hold: correct") and "second try" in line for line in stdout.splitlines())
