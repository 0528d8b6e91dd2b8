"""Running jobs in single-use processes forked from a warm fork server, under a watchdog.

The fork server (`fork_server.py`) is started once per device kind and process, with the worker's
scrubbed environment; each job is a child forked from it. The parent watches the child: the
phase it reports (import, compile, case N/M, timing), a time limit per phase, its resident
memory, and kills its whole session when a limit is passed.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from kernelopt.harness.sandbox import audit as sandbox
from kernelopt.harness.sandbox.exits import describe_exit

PACKAGE_ROOT = Path(__file__).resolve().parents[3]  # the folder that holds kernelopt/
POLL_S = 0.05
STACK_DUMP_S = 0.3
FORK_SERVER_START_S = 300.0
# Phases with no limit: waiting for the device lock is waiting for someone else's measurement.
UNTIMED_PHASES = frozenset({"lock", "done"})


@dataclass(frozen=True)
class PhaseLimits:
    """Seconds a job may spend in each phase; a compile's own time never counts against the
    phase it happens in, and has its own allowance."""

    import_s: float = 60.0
    compile_s: float = 120.0
    case_s: float = 300.0
    timing_s: float = 300.0

    @staticmethod
    def uniform(seconds: float) -> PhaseLimits:
        return PhaseLimits(seconds, seconds, seconds, seconds)

    def limit_s(self, phase: str) -> float | None:
        if phase in UNTIMED_PHASES:
            return None
        if phase.startswith("case"):
            return self.case_s
        return {"import": self.import_s, "compile": self.compile_s, "timing": self.timing_s}.get(phase, self.import_s)


@dataclass(frozen=True)
class WorkerLimits:
    phases: PhaseLimits = field(default_factory=PhaseLimits)
    mem_limit_bytes: int = 16 << 30
    use_cuda: bool = False
    # RLIMIT_AS as well as the parent's watch on resident memory. Not for CUDA jobs: the driver
    # reserves far more address space than any real use at init.
    cap_address_space: bool = True
    gpu: str | None = None  # the one GPU the job sees, as CUDA_VISIBLE_DEVICES names it; None: this process's


@dataclass(frozen=True)
class WorkerOutcome:
    """What a job left behind: its result, or why it has none."""

    result: dict[str, Any] | None
    failure: str | None  # one line: timed out in a phase, killed for memory, crashed with a signal, ...
    log_path: str
    wall_s: float
    began_s: float = 0.0  # time.monotonic() when the process started
    phase: str = ""  # the last phase the job reported


Progress = Callable[[str, float], None]  # (phase, seconds since the job started)


def worker_env(use_cuda: bool, gpu: str | None = None) -> dict[str, str]:
    """The scrubbed environment of a sandboxed process; with `gpu`, it sees that GPU alone (as cuda:0)."""
    extra = {"PYTHONPATH": os.pathsep.join(p for p in (str(PACKAGE_ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    if not use_cuda:
        extra["TRITON_INTERPRET"] = "1"
        extra["CUDA_VISIBLE_DEVICES"] = ""
    elif gpu is not None:
        extra["CUDA_VISIBLE_DEVICES"] = gpu
    extra["PYTHONUNBUFFERED"] = "1"
    env = sandbox.scrubbed_env(extra=extra)
    if use_cuda:  # a TRITON_INTERPRET=1 left in the caller's environment would emulate GPU kernels on the host
        env.pop("TRITON_INTERPRET", None)
    return env


class Child:
    """One forked job: its pid, and its exit status once the fork server has seen it go."""

    def __init__(self) -> None:
        self.pid = 0
        self.status: int | None = None
        self.started = threading.Event()
        self.ended = threading.Event()

    def wait(self, timeout_s: float | None) -> int | None:
        self.ended.wait(timeout_s)
        return self.status

    def kill(self, dump_stack: bool = False) -> None:
        """Kill the job and everything it started; first have it write its Python stacks to its
        log when `dump_stack` (where a hung job was stuck)."""
        if self.pid <= 0:  # never forked: killpg(0) would be our own group
            return
        try:
            if dump_stack:
                os.kill(self.pid, signal.SIGUSR1)
                self.ended.wait(STACK_DUMP_S)
            os.killpg(self.pid, signal.SIGKILL)  # its own session: whatever it started goes too
        except (ProcessLookupError, PermissionError):
            pass


class ForkServer:
    """A running fork server and the jobs it forked; with `gpu`, every job it forks sees that GPU alone."""

    def __init__(self, use_cuda: bool, gpu: str | None = None) -> None:
        self.use_cuda, self.gpu = use_cuda, gpu
        log_fd, self.log_path = tempfile.mkstemp(prefix="kernelopt-forkserver-", suffix=".log")
        self._process = subprocess.Popen(
            [sys.executable, "-m", "kernelopt.harness.sandbox.fork_server", self.log_path],
            env=worker_env(use_cuda, gpu),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log_fd,
            cwd=tempfile.gettempdir(),
            start_new_session=True,  # Ctrl-C in a terminal stops the run, which then stops this server
        )
        os.close(log_fd)
        self._children: dict[int, Child] = {}
        self._next_id = 0
        self._lock = threading.Lock()
        assert self._process.stdout is not None
        ready = _read_line(self._process.stdout, FORK_SERVER_START_S)
        if not ready or not ready.get("ready"):
            self._process.kill()
            raise RuntimeError(f"the fork server did not start; see {self.log_path}")
        self.threads = int(ready.get("threads", 1))
        threading.Thread(target=self._read_replies, name="kernelopt-forkserver", daemon=True).start()

    @property
    def alive(self) -> bool:
        return self._process.poll() is None

    def spawn(self, job: str, request: dict[str, Any], work_dir: Path, mem_limit_bytes: int | None) -> Child:
        child = Child()
        with self._lock:
            self._next_id += 1
            self._children[self._next_id] = child
            line = {"id": self._next_id, "job": job, "request": request, "work_dir": str(work_dir),
                    "mem_limit_bytes": mem_limit_bytes}
            assert self._process.stdin is not None
            self._process.stdin.write((json.dumps(line) + "\n").encode())
            self._process.stdin.flush()
        if not child.started.wait(60):
            raise RuntimeError(f"the fork server did not fork the job; see {self.log_path}")
        return child

    def _read_replies(self) -> None:
        assert self._process.stdout is not None
        for raw in self._process.stdout:
            reply = json.loads(raw)
            child = self._children.get(reply.get("id"))
            if child is None:
                continue
            if "pid" in reply:
                child.pid = reply["pid"]
                child.started.set()
            if "status" in reply:
                child.status = reply["status"]
                child.ended.set()
                self._children.pop(reply["id"], None)
        for child in list(self._children.values()):  # the server is gone: so are its children
            child.started.set()
            child.ended.set()

    def close(self) -> None:
        if self._process.stdin:
            self._process.stdin.close()
        try:
            self._process.wait(10)
        except subprocess.TimeoutExpired:
            self._process.kill()
        with contextlib.suppress(OSError):  # its log, where the server wrote nothing (else kept, for whoever reads it)
            if os.path.getsize(self.log_path) == 0:
                os.unlink(self.log_path)


def _read_line(stream: IO[bytes], timeout_s: float) -> dict[str, Any] | None:
    holder: list[bytes] = []
    reader = threading.Thread(target=lambda: holder.append(stream.readline()), daemon=True)
    reader.start()
    reader.join(timeout_s)
    return json.loads(holder[0]) if holder and holder[0].strip() else None


_FORK_SERVERS: dict[tuple[bool, str | None], ForkServer] = {}
_FORK_SERVERS_LOCK = threading.Lock()


def fork_server_for(use_cuda: bool, gpu: str | None = None) -> ForkServer:
    """This process's fork server for CUDA or interpreter jobs (on `gpu`: see ForkServer), started on first use."""
    key = (use_cuda, gpu if use_cuda else None)
    with _FORK_SERVERS_LOCK:
        fork_server = _FORK_SERVERS.get(key)
        if fork_server is None or not fork_server.alive:
            fork_server = _FORK_SERVERS[key] = ForkServer(*key)
        return fork_server


def likely_cuda() -> bool:
    """Whether this host's jobs will run on CUDA, guessed without importing torch (its driver's
    device file, a device not hidden, no interpreter asked for)."""
    hidden = os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1")
    return os.path.exists("/dev/nvidiactl") and not hidden and os.environ.get("TRITON_INTERPRET") != "1"


def prewarm(use_cuda: bool | None = None, gpu: str | None = None) -> None:
    """Start the fork server in the background now, so that its imports (torch, Triton: seconds)
    overlap the caller's own. Never raises: a server that fails to start here is started (and
    its failure reported) when the first job needs it; a wrong guess costs an idle server."""

    def start() -> None:
        try:
            fork_server_for(likely_cuda() if use_cuda is None else use_cuda, gpu)
        except Exception:
            pass

    threading.Thread(target=start, name="kernelopt-prewarm", daemon=True).start()


@atexit.register
def close_fork_servers() -> None:
    """Stop this process's fork servers (and so every job and reference process they forked)."""
    with _FORK_SERVERS_LOCK:
        for fork_server in _FORK_SERVERS.values():
            fork_server.close()
        _FORK_SERVERS.clear()


class JobsStopped(RuntimeError):
    """The run is stopping (Ctrl-C): the job was killed, and it has no verdict."""


_RUNNING: set[Child] = set()
_STOPPING = threading.Event()


def stop_jobs() -> None:
    """Kill every job this process is watching; their watchers raise JobsStopped. For a run that
    is being interrupted: the threads that wait on candidates end now, not at their time limits."""
    _STOPPING.set()
    for child in list(_RUNNING):
        child.kill()


def start_job(
    job: str, request: dict[str, Any], work_dir: Path, limits: WorkerLimits, progress_path: Path | None = None
) -> Child:
    """Fork `job` from the warm server, in `work_dir` (made empty of a previous result). Its
    phases go to `progress_path` (default: work_dir/progress; a candidate's lies where the
    candidate cannot write, so that it cannot claim a phase without a limit)."""
    work_dir.mkdir(parents=True, exist_ok=True)
    progress_path = progress_path or work_dir / "progress"
    for path in (work_dir / "result.json", progress_path):
        path.unlink(missing_ok=True)
    request = {**request, "work_dir": str(work_dir.resolve()), "progress_path": str(progress_path)}
    mem = limits.mem_limit_bytes if limits.cap_address_space else None
    return fork_server_for(limits.use_cuda, limits.gpu).spawn(job, request, work_dir.resolve(), mem)


class _PhaseClock:
    """The job's current phase, read from its progress file, and how long it has been in it."""

    def __init__(self, path: Path, began: float) -> None:
        self.path, self.offset = path, 0
        self.phase, self.since, self.compile_since = "import", began, None
        self.paused_s = 0.0

    def update(self, now: float) -> None:
        try:
            with self.path.open("rb") as handle:
                handle.seek(self.offset)
                data = handle.read()
        except FileNotFoundError:
            return
        lines = data.split(b"\n")
        self.offset += len(data) - len(lines[-1])
        for line in lines[:-1]:
            phase = line.decode(errors="replace")
            if phase == "compile":
                self.compile_since = now
            elif phase == "compiled":
                if self.compile_since is not None:
                    self.paused_s += now - self.compile_since
                self.compile_since = None
            else:
                self.phase, self.since, self.paused_s, self.compile_since = phase, now, 0.0, None

    def overrun(self, now: float, limits: PhaseLimits) -> str | None:
        """Why the job has run too long in its phase, or None."""
        if self.compile_since is not None:
            if now - self.compile_since > limits.compile_s:
                return f"timed out compiling a Triton kernel ({self.phase}) after {limits.compile_s:.0f} s"
            return None
        limit = limits.limit_s(self.phase)
        spent = now - self.since - self.paused_s
        if limit is not None and spent > limit:
            return (
                f"timed out in {self.phase} after {spent:.0f} s (its limit is {limit:.0f} s; "
                "an endless loop or a hang?)"
            )
        return None


def watch(
    child: Child,
    work_dir: Path,
    limits: WorkerLimits,
    on_progress: Progress | None = None,
    progress_path: Path | None = None,
) -> WorkerOutcome:
    """Wait for `child`, killing it past a phase limit or the memory cap; never raises for its failures."""
    began = time.monotonic()
    clock = _PhaseClock(progress_path or work_dir / "progress", began)
    failure: str | None = None
    _RUNNING.add(child)
    try:
        while child.wait(POLL_S) is None and not child.ended.is_set():
            if _STOPPING.is_set():
                raise JobsStopped("the run was interrupted")
            now = time.monotonic()
            clock.update(now)
            failure = clock.overrun(now, limits.phases)
            if failure is None and sandbox.rss_bytes(child.pid) > limits.mem_limit_bytes:
                failure = f"used more than {limits.mem_limit_bytes / 2**30:.1f} GiB of host memory"
            if failure:
                child.kill(dump_stack=True)
                child.wait(30)
                break
            if on_progress:
                on_progress(clock.phase, now - began)
        if _STOPPING.is_set():  # it ended because the run is stopping: that is no verdict on it
            raise JobsStopped("the run was interrupted")
        if child.status is None:  # the fork server died under it: it may run on, orphaned
            child.kill()
    except BaseException:  # Ctrl-C, or the run stopped: the job goes with it, and no verdict is made up
        child.kill()
        raise
    finally:
        _RUNNING.discard(child)
    clock.update(time.monotonic())
    log_path = work_dir / "worker.log"
    result_path = work_dir / "result.json"
    result = None
    if failure is None and result_path.exists():
        result = json.loads(result_path.read_text())
    elif failure is None:
        failure = describe_exit(child.status, log_path)
    return WorkerOutcome(result, failure, str(log_path), time.monotonic() - began, began, clock.phase)


def run_job(
    job: str,
    request: dict[str, Any],
    work_dir: Path,
    limits: WorkerLimits,
    on_progress: Progress | None = None,
    progress_path: Path | None = None,
) -> WorkerOutcome:
    """Run one job to its end (see `start_job` and `watch`)."""
    child = start_job(job, request, work_dir, limits, progress_path)
    return watch(child, work_dir, limits, on_progress, progress_path)
