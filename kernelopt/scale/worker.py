"""A pool worker: `python -m kernelopt.scale.worker MODULE:FUNCTION` runs one problem at a time.

It says {"ready": pid} once started, then reads one ProblemSpec (JSON) per line on stdin and
answers {"result": ProblemResult} per line
on what was its stdout; anything the work prints goes to stderr instead, so the answers stay
whole. Its pool starts it with the environment of its one GPU (CUDA_VISIBLE_DEVICES) already
set, before torch is imported. It exits when stdin closes, and dies with the pool that started it.
"""

from __future__ import annotations

import ctypes
import dataclasses
import importlib
import json
import os
import signal
import sys
from typing import Any

from kernelopt.harness import stop_running_jobs
from kernelopt.suite import ProblemSpec, SuiteSettings, Work

PR_SET_PDEATHSIG = 1  # linux/prctl.h: the signal this process gets when its parent ends


def spec_from_json(data: dict[str, Any]) -> ProblemSpec:
    """The ProblemSpec that `dataclasses.asdict` turned into `data`."""
    return ProblemSpec(**{**data, "settings": SuiteSettings(**data["settings"])})


def work_name(work: Work) -> str:
    """`work` as MODULE:FUNCTION, for a process of its own to import (a lambda or local function has none)."""
    name = f"{work.__module__}:{work.__qualname__}"
    if "<" in name:
        raise ValueError(f"{name} cannot be imported by a worker process; pass a module-level function")
    return name


def import_work(name: str) -> Work:
    module, _, qualname = name.partition(":")
    found: Any = importlib.import_module(module)
    for part in qualname.split("."):
        found = getattr(found, part)
    return found  # type: ignore[no-any-return]


def _die_with_parent(parent_pid: int) -> None:
    """A pool killed outright (SIGKILL, a lost node) leaves no worker holding its GPU."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):  # not Linux: the worker still ends when its stdin closes
        return
    if os.getppid() != parent_pid:  # the parent ended before the signal was asked for
        os._exit(1)


def _stop(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def main(argv: list[str]) -> int:
    _die_with_parent(int(os.environ.get("KERNELOPT_POOL_PID", os.getppid())))
    answers = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # print() in the work lands in the log, not in the answers
    signal.signal(signal.SIGTERM, _stop)
    from kernelopt.harness import likely_cuda, prewarm

    if likely_cuda():  # this GPU's fork server starts now, its imports beside the work's own
        prewarm(True)
    work = import_work(argv[1])
    answers.write(json.dumps({"ready": os.getpid()}) + "\n")  # problems are handed only to a worker that started
    try:
        for line in sys.stdin:
            result = work(spec_from_json(json.loads(line)))
            answers.write(json.dumps({"result": dataclasses.asdict(result)}) + "\n")
    except KeyboardInterrupt:  # stopped by the pool (or Ctrl-C): the running candidates go too
        stop_running_jobs()
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
