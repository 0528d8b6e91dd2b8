"""A profile's process started ahead of time: ncu and the sandbox worker, its imports done, waiting
for the request of the next profile.

On the H200 a roofline profile took 6.6-7.1 s, of which the profiled job itself (model, inputs,
warm-up, ncu's passes) took under 3: the rest was ncu and Python starting and torch loading.
A verifier that asks for it (`Verifier.prepare_profile`) keeps one such process per problem
waiting while the round verifies; a profile takes it instead of starting one cold, and leaves
the next one waiting. The waiting process does nothing on the GPU (ncu attaches when it first
touches CUDA, after its request), holds no lock, and leaves when the process that started it
goes, when it is stopped, or after WAIT_S.
"""

from __future__ import annotations

import atexit
import json
import os
import secrets
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelopt.hardware import ncu_runner

WAIT_FLAG = "--wait-for"  # worker.py: `--wait-for REQUEST OWNER_PID` waits for REQUEST to appear
WAIT_S = 4 * 3600.0  # a waiting process not handed a request by then leaves


@dataclass(frozen=True)
class Waiting:
    """A profile process started ahead: ncu, with the worker under it waiting for `request`."""

    proc: subprocess.Popen[str]
    request: Path
    argv: tuple[str, ...]
    metrics: tuple[str, ...]

    def hand(self, request: dict[str, Any]) -> None:
        """Give the waiting worker its request (written whole, then renamed: it never reads half)."""
        part = self.request.with_suffix(".part")
        part.write_text(json.dumps(request))
        os.replace(part, self.request)


_WAITING: dict[tuple[str, ...], Waiting] = {}
_SLOTS: dict[tuple[str, ...], str] = {}  # each key's device (its lock file): one waiting process a device
_GUARD = threading.Lock()


def start(key: tuple[str, ...], slot: str, folder: Path, metrics: Sequence[str], env: dict[str, str]) -> bool:
    """Leave a profile process for `key` waiting; whether one started (not without ncu). One waits
    per device (`slot`): one left by an earlier key on it (a run that raised before its end) is stopped."""
    folder.mkdir(parents=True, exist_ok=True)
    request = folder / f"request-{secrets.token_hex(6)}.json"
    argv = (sys.executable, "-m", "kernelopt.harness.sandbox.worker", WAIT_FLAG, str(request), str(os.getpid()))
    started = ncu_runner.start_ncu(list(argv), env=env, workdir=str(folder), metrics=metrics)
    if isinstance(started, ncu_runner.NcuProfile):  # no ncu here: profiles start cold, and say why
        return False
    with _GUARD:
        on_device = [k for k, s in _SLOTS.items() if s == slot]
        earlier = [w for k in on_device if (w := _WAITING.pop(k, None)) is not None]
        for k in on_device:
            del _SLOTS[k]
        _WAITING[key], _SLOTS[key] = Waiting(started, request, argv, tuple(metrics)), slot
    for waiting in earlier:
        ncu_runner.stop_ncu(waiting.proc)
    return True


def asked(key: tuple[str, ...]) -> bool:
    """Whether `key`'s verifier asked for profiles started ahead (and has not stopped them)."""
    with _GUARD:
        return key in _SLOTS


def take(key: tuple[str, ...], metrics: Sequence[str]) -> Waiting | None:
    """The process waiting for `key`, alive and started for these metrics; None: start one cold."""
    with _GUARD:
        waiting = _WAITING.pop(key, None)
    if waiting is None:
        return None
    if waiting.proc.poll() is not None or waiting.metrics != tuple(metrics):
        ncu_runner.stop_ncu(waiting.proc)
        return None
    return waiting


def profile(key: tuple[str, ...], request: dict[str, Any], work: Path, metrics: tuple[str, ...],
            limit_s: float) -> ncu_runner.NcuProfile | None:
    """The profile from the process waiting for `key` (the caller holds the device lock); None where
    none waits or its job never began (it had left, or could not be handed the request): the
    caller then starts one cold."""
    waiting = take(key, metrics)
    if waiting is None:
        return None
    try:
        waiting.hand(request)
        done = ncu_runner.finish_ncu(waiting.proc, waiting.argv, timeout_s=limit_s, workdir=str(work),
                                     metrics=metrics, report_path=str(work / "ncu_raw.csv"))
    except OSError:
        ncu_runner.stop_ncu(waiting.proc)
        return None
    except BaseException:  # interrupted: the job handed over must not go on profiling outside the lock
        ncu_runner.stop_ncu(waiting.proc)
        raise
    if (work / "result.json").exists() or not waiting.request.exists():  # the worker took its request
        return done
    waiting.request.unlink(missing_ok=True)
    return None


def stop(key: tuple[str, ...]) -> None:
    """Stop the process waiting for `key`, if any, and start none again for it (its run has ended)."""
    with _GUARD:
        waiting = _WAITING.pop(key, None)
        _SLOTS.pop(key, None)
    if waiting is not None:
        ncu_runner.stop_ncu(waiting.proc)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def wait_for(request_path: Path, owner: int) -> None:
    """In the worker started ahead, its imports done: wait for the request to appear; leave when
    the process that started it (`owner`) is gone, or after WAIT_S."""
    import triton  # noqa: F401  (the kernel file's own import, done while waiting)
    import triton.language  # noqa: F401

    deadline = time.monotonic() + WAIT_S
    while not request_path.exists():
        if time.monotonic() > deadline or not _alive(owner):
            os._exit(3)
        time.sleep(0.005)


@atexit.register
def _stop_all() -> None:
    for key in list(_WAITING):
        stop(key)
