"""Stand-ins for run_problem that pool workers and Ray tasks import by name. Each says which
process and slot ran it; by its name a problem waits for the others, or kills its worker."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from kernelopt.suite import ProblemResult, ProblemSpec

WAIT_S = 60.0


def _wait_for(condition, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {WAIT_S:g} s for {what}")
        time.sleep(0.02)


def report(spec: ProblemSpec) -> ProblemResult:
    """`meet*`: waits until two problems have started (so two workers run at once); `die*`: kills
    its worker every time; `once*`: kills its worker the first time only."""
    runs = Path(spec.run_dir).parent
    runs.mkdir(parents=True, exist_ok=True)
    slot = os.environ.get("SCALE_TEST_SLOT", "-")
    (runs / f"{spec.name}.started").write_text(f"{os.getpid()} {slot}")
    if spec.name.startswith("meet"):
        _wait_for(lambda: len(list(runs.glob("meet*.started"))) >= 2, "a second problem to start")
    if spec.name.startswith("die"):
        os.kill(os.getpid(), signal.SIGKILL)
    if spec.name.startswith("once") and not (runs / f"{spec.name}.died").exists():
        (runs / f"{spec.name}.died").write_text(slot)
        os.kill(os.getpid(), signal.SIGKILL)
    return ProblemResult(spec.name, "correct", f"pid {os.getpid()} slot {slot}", run_dir=spec.run_dir)
