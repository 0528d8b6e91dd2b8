"""Starting a worker process: scrubbed environment, time limit, memory cap, its own log."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelopt.harness import sandbox

PACKAGE_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class WorkerLimits:
    timeout_s: float = 300.0
    mem_limit_bytes: int = 16 << 30
    use_cuda: bool = False


@dataclass(frozen=True)
class WorkerOutcome:
    """What a worker left behind: its result, or why it has none."""

    result: dict[str, Any] | None
    failure: str | None  # one line: timed out, killed for memory, crashed with a signal, ...
    log_path: str
    wall_s: float
    began_s: float = 0.0  # time.monotonic() when the process started


def worker_env(use_cuda: bool) -> dict[str, str]:
    extra = {"PYTHONPATH": os.pathsep.join(p for p in (str(PACKAGE_ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    if not use_cuda:
        extra["TRITON_INTERPRET"] = "1"
        extra["CUDA_VISIBLE_DEVICES"] = ""
    extra["PYTHONUNBUFFERED"] = "1"
    return sandbox.scrubbed_env(extra=extra)


def _locks_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    path = Path(base) / "kernelopt" / "locks"
    path.mkdir(parents=True, exist_ok=True)
    return path


@contextlib.contextmanager
def device_lock(device: str) -> Iterator[None]:
    """Hold the device for one measurement: across threads and processes, one at a time.

    Parallel candidates (and several runs on one machine) may write and judge kernels at
    once, but two measurements on one device would disturb each other's times.
    """
    with (_locks_dir() / f"{device.replace(':', '_')}.lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def run_worker(request: dict[str, Any], work_dir: Path, limits: WorkerLimits) -> WorkerOutcome:
    """Run one worker job in `work_dir` and return its outcome; never raises for its failures.

    The job holds its device's lock from start to end (see `device_lock`).
    """
    with device_lock(request.get("device", "cpu")):
        return _run_worker(request, work_dir, limits)


def _run_worker(request: dict[str, Any], work_dir: Path, limits: WorkerLimits) -> WorkerOutcome:
    work_dir.mkdir(parents=True, exist_ok=True)
    request = {**request, "work_dir": str(work_dir.resolve())}
    request_path = work_dir / "request.json"
    request_path.write_text(json.dumps(request))
    result_path = work_dir / "result.json"
    result_path.unlink(missing_ok=True)
    log_path = work_dir / "worker.log"
    began = time.monotonic()
    failure: str | None = None
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "kernelopt.harness.worker", str(request_path)],
            cwd=work_dir,
            env=worker_env(limits.use_cuda),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # its own process group: a kill takes its children too
            preexec_fn=sandbox.limit_resources(None if limits.use_cuda else limits.mem_limit_bytes, None),
        )
        while process.poll() is None:
            if time.monotonic() - began > limits.timeout_s:
                failure = f"timed out after {limits.timeout_s:.0f} s (an endless loop or a hang?)"
            elif sandbox.rss_bytes(process.pid) > limits.mem_limit_bytes:
                failure = f"used more than {limits.mem_limit_bytes / 2**30:.1f} GiB of host memory"
            if failure:
                _kill(process)
                break
            time.sleep(0.05)
    wall_s = time.monotonic() - began
    result = None
    if failure is None and result_path.exists():
        result = json.loads(result_path.read_text())
    elif failure is None:
        failure = _describe_exit(process.returncode, log_path)
    return WorkerOutcome(result=result, failure=failure, log_path=str(log_path), wall_s=wall_s, began_s=began)


def _kill(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


def _describe_exit(returncode: int | None, log_path: Path) -> str:
    tail = [line for line in log_path.read_text(errors="replace").splitlines() if line.strip()][-1:]
    last = f"; last output: {tail[0][:200]}" if tail else ""
    if returncode is not None and returncode < 0:
        name = signal.Signals(-returncode).name
        hint = {"SIGKILL": " (out of memory?)", "SIGSEGV": " (an out-of-bounds access?)"}.get(name, "")
        return f"the process crashed with {name}{hint}{last}"
    if returncode == 137:
        return f"the process was killed (out of memory?){last}"
    return f"the process exited with status {returncode} before reporting{last}"
