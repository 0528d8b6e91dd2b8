"""The fork server: one pre-imported parent per device kind that forks a single-use child per job.

`python -m kernelopt.harness.sandbox.fork_server` starts with the worker's scrubbed environment, imports
torch, Triton, `torch._dynamo` and the harness once (no CUDA context, no threads, no secrets),
then reads one JSON job per line on stdin: {"id", "job", "request", "work_dir", "mem_limit_bytes"}.
For each it forks a child that starts a session of its own (a kill takes everything it starts),
caps its resources, sends its output to the job's log, runs the job (the child arms the sandbox
and creates its CUDA context itself) and leaves with `os._exit`, never returning into this loop.
The server answers {"id", "pid"} at once and {"id", "status"} when the child has gone. When
stdin closes (its owner is gone) it kills its children and exits.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import threading
import traceback
from typing import Any

POLL_S = 0.02


def preload() -> None:
    """Import everything a job needs, and run the first-use paths that import more."""
    import numpy  # noqa: F401
    import torch
    import torch._dynamo  # noqa: F401  (the compute guard's and the floor's first use import it)
    import triton  # noqa: F401
    import triton.language  # noqa: F401
    from torch.utils.flop_counter import FlopCounterMode

    from kernelopt.harness.sandbox import baseline_jobs, reference, service, sweep, worker  # noqa: F401  (each job's)
    from kernelopt.harness.sandbox.compute_guard import ComputeGuard

    try:  # a kernel's first launch imports it (its arguments' specialisation): 0.2-0.5 s a child under the interpreter
        import triton.experimental.gluon  # noqa: F401
    except ImportError:  # a Triton without it
        pass

    tiny = torch.ones(2)
    with ComputeGuard():
        tiny.view(2)
    with FlopCounterMode(display=False):
        tiny + tiny  # noqa: B018


def _child(job: dict[str, Any]) -> None:
    """Runs in the forked child: never returns."""
    status = 70
    try:
        os.setsid()
        log = os.open(os.path.join(job["work_dir"], "worker.log"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        os.close(null)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        from kernelopt.harness.sandbox.audit import limit_resources

        limit_resources(job.get("mem_limit_bytes"), None)()
        os.chdir(job["work_dir"])
        if job["job"].startswith("sweep"):  # many configurations of one kernel (sweep.py)
            from kernelopt.harness.sandbox.sweep import run_job
        elif job["job"] == "service":  # a function of kernelopt's own (service.py)
            from kernelopt.harness.sandbox.service import run_job
        else:
            from kernelopt.harness.sandbox.worker import run_job

        status = run_job(job["job"], job["request"])
    except BaseException:  # noqa: BLE001  (whatever happens, the child must not return into the server)
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(status)


def _reply(message: dict[str, Any]) -> None:
    os.write(1, (json.dumps(message) + "\n").encode())


def serve() -> int:
    """The server loop: fork a child per job line, report pids and exit statuses."""
    preload()
    threads = threading.active_count()
    _reply({"ready": True, "threads": threads, "pid": os.getpid()})
    children: dict[int, Any] = {}
    buffer = b""
    while True:
        readable, _, _ = select.select([0], [], [], POLL_S)
        if readable:
            chunk = os.read(0, 1 << 16)
            if not chunk:
                break
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                if line.strip():
                    job = json.loads(line)
                    pid = os.fork()
                    if pid == 0:
                        _child(job)
                    children[pid] = job["id"]
                    _reply({"id": job["id"], "pid": pid})
        while children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            job_id = children.pop(pid, None)
            if job_id is not None:
                _reply({"id": job_id, "status": os.waitstatus_to_exitcode(status)})
    for pid in children:
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return 0


def drop_empty_log(path: str) -> None:
    """Remove this server's log (its stderr, at `path`) where nothing was written to it: its owner may have gone
    without closing it (killed, or a process that ends without its exit handlers), and /tmp keeps no empty file
    for each run."""
    try:
        if os.fstat(2).st_size == 0 and os.path.samestat(os.fstat(2), os.stat(path)):
            os.unlink(path)
    except OSError:
        pass


if __name__ == "__main__":
    status = serve()
    sys.stdout.flush()
    sys.stderr.flush()
    if len(sys.argv) > 1:
        drop_empty_log(sys.argv[1])
    # No teardown of torch and Triton (a second of an idle server's exit, paid at the end of every run):
    # every reply is already written and flushed, every child killed.
    os._exit(status)
