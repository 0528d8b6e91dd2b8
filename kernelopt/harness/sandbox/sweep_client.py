"""A measured sweep of one kernel's configurations, from the graph's side of the sandbox.

Every configuration is a kernel file. Each passes the static checks; then sandboxed processes
check them all on the problem's own first case (the reference process judges; most of a check
is compiling, so several processes share the work), another times the correct ones by
successive halving (see sweep.py), and the finalists of the halving are checked again on the
other sizes and extra inputs, where masks and tails break. Checking every configuration at
every size first cost a compile per size and configuration: on the H200 a 48-configuration
matmul sweep spent 80 s compiling before its first timing. A configuration that hangs or kills
its process is charged with it, and the others run again in a fresh one. What comes back is
one `Measured` per configuration: its time at the last stage it reached, or why it has none.
The best one or two still go through the full verification (`Verifier.verify`) before any
becomes the best kernel: a sweep's time is a ranking, not a verdict.
"""

from __future__ import annotations

import json
import math
import os
import secrets
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, Protocol

from kernelopt.harness import guards
from kernelopt.harness.problem import check_kernel_source, read_source
from kernelopt.harness.sandbox.exits import failure_of
from kernelopt.harness.sandbox.runner import Progress, WorkerLimits, WorkerOutcome, run_job
from kernelopt.records import HarnessError, InputError, Measured, Timing

ROWS_FILE = "rows.jsonl"  # sandbox/sweep.py writes it; read here without importing torch

CaseChoice = Callable[[list[dict[str, Any]]], list[int]]  # a problem's cases -> the indices a check runs


class _Harness(Protocol):  # the Verifier, as this module uses it
    settings: Any

    def request(self, mode: str, **extra: Any) -> dict[str, Any]: ...
    def reference(self) -> Any: ...


# How many configurations the last stage of the halving times with the run's own protocol. On the
# H200 a 48-configuration sweep of a 1.8 ms reduction gave 12 of them about 270 trials each: 6.6 s
# of its 12 s of timing, to rank configurations the second stage had already put within 1% of
# each other (and the best two are timed again by the full verification).
FULL_PROTOCOL = 4


def halving_stages(timing: Any, count: int) -> list[dict[str, Any]]:
    """The stages of successive halving for `count` configurations: (how many survive, how timed).

    A few short trials for all, more for the better half, the run's own protocol settings for
    the best few (at most FULL_PROTOCOL of them); every stage flushes L2 and takes the median like
    any other measurement.
    """
    quick = replace(timing, warmup_ms=5.0, target_total_ms=min(25.0, timing.target_total_ms),
                    min_trials=5, max_trials=100, interpreter_trials=1, interpreter_max_trials=1)
    more = replace(timing, warmup_ms=10.0, target_total_ms=min(100.0, timing.target_total_ms),
                   min_trials=10, max_trials=300, interpreter_trials=2, interpreter_max_trials=2)
    keep = [max(2, math.ceil(count / 2)), max(2, min(FULL_PROTOCOL, math.ceil(count / 4))), 2]
    return [{"keep": k, "timing": asdict(t)} for k, t in zip(keep, (quick, more, timing), strict=True)]


# How long past the run's deadline a sweep's timing may go on (the configurations checked by then are timed, the
# first at least): a sweep-time job that rebuilt a 4 GB model for each of 48 configurations ran on for minutes.
TIMING_GRACE_S = 20.0

# How many of a sweep's best configurations are checked on the other sizes before it returns.
FINALISTS = 3

# How long one configuration's Triton compile may take in a sweep (the verifier allows COMPILE_S). On
# the H200 the configurations of a 4096^3 fp32 matmul compiled in 0.5-1.1 s each, but one with a
# K step of 256 on one warp (64 x 256 operand tiles, spilled) was still compiling at 120 s: a
# round's sweep went from about 15 s to 136 s and the run past its 150 s budget. A configuration
# that slow to compile is charged with a timeout; the others run on in a fresh process.
SWEEP_COMPILE_S = 30.0


def sweep_limits(settings: Any, cases: list[dict[str, Any]]) -> WorkerLimits:
    """A sweep job's limits: the verifier's for the problem, with a compile cut off at SWEEP_COMPILE_S."""
    limits = settings.limits(settings.candidate_phases(cases))
    return replace(limits, phases=replace(limits.phases, compile_s=min(limits.phases.compile_s, SWEEP_COMPILE_S)))


def first_case(cases: list[dict[str, Any]]) -> list[int]:
    """The case every configuration is checked on: the first seed at the problem's own size."""
    return [next(i for i, c in enumerate(cases) if not c.get("timing"))]


def sized_cases(cases: list[dict[str, Any]]) -> list[int]:
    """The cases the finalists are checked on too: the other sizes and extra inputs (where masks
    and tails break); wide and shifted values are left to the full verification."""
    return [i for i, c in enumerate(cases) if not c.get("timing") and {"extra", "overrides", "literal"} & set(c)]


def finalists(timed: dict[int, tuple[Timing, int]], count: int = FINALISTS) -> list[int]:
    """The configurations furthest along the halving, fastest first: the sweep's answer."""
    return sorted(timed, key=lambda i: (-timed[i][1], timed[i][0].median_ms))[:count]


def _rows(work: Path) -> list[dict[str, Any]]:
    path = work / ROWS_FILE
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def _died(outcome: WorkerOutcome) -> tuple[str, str] | None:
    """(rule, reason) when the process ended without a result; raises on kernelopt's own error."""
    if outcome.result is None:
        hung = (outcome.failure or "").startswith("timed out")
        return ("timeout" if hung else "crash"), failure_of("the sweep", outcome.failure or "ended without a result")
    if outcome.result.get("harness_error"):
        raise HarnessError(f"kernelopt failed in a sweep (its own error): {outcome.result['reason']}; "
                           f"see {outcome.log_path}")
    return None


def _in_progress(rows: list[dict[str, Any]]) -> int | None:
    """The configuration a process was running when it died: started, never finished."""
    started = [r["variant"] for r in rows if r.get("started")]
    finished = {(r["variant"], r.get("stage")) for r in rows if not r.get("started")}
    last = next((r for r in reversed(rows) if r.get("started")), None)
    if last is None or (last["variant"], last.get("stage")) in finished:
        return None
    return started[-1]


# Device memory the concurrent checks of one sweep may take in all, at about four times a case's
# inputs each (inputs, outputs, the kernel's own and the allocator's slack), or twice its inputs and
# outputs where the outputs are the larger, and twice the model's parameters and buffers (a configuration's
# model and what building it takes: a module may draw or copy its weights on the device): half of what the
# device has free with the reference built, or this where the reference does not say.
CHECK_MEMORY_BYTES = 8 << 30


def check_processes(settings: Any, input_bytes: int, free_bytes: int | None = None, output_bytes: int = 0,
                    state_bytes: int = 0) -> int:
    """How many processes check a sweep's configurations at once: the setting when given; else
    one under the interpreter (it has no compile to overlap), and on a GPU half the cores this
    process may run on, at most 8, fewer where the problem's inputs are large for the device's
    free memory. A check is mostly Triton compiling on one core, then one case on the GPU.

    On the H200 a softmax over 6.4 GB checked its 48 configurations in one process for 72 s,
    when the device had room for more than four such cases. On the H100 a level-2 GEMM with a 4 GB
    weight (16 MB of inputs) ran eight checks at once, 8-10 GB each, and one ran out of device memory.
    """
    if settings.sweep_check_processes:
        return max(1, int(settings.sweep_check_processes))
    if not settings.use_cuda:
        return 1
    each = max(4 * input_bytes, 2 * (input_bytes + output_bytes), 1) + 2 * state_bytes
    by_memory = (free_bytes // 2 if free_bytes is not None else CHECK_MEMORY_BYTES) // each
    return int(max(1, min(8, usable_cores() // 2, by_memory)))


def usable_cores() -> int:
    """The cores this process may run on (its affinity, where the platform says), else all."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _shards(pending: list[int], count: int) -> list[list[int]]:
    """`pending` dealt round-robin into at most `count` non-empty shards (alike sizes spread out)."""
    count = max(1, min(count, len(pending)))
    return [pending[n::count] for n in range(count)]


class _Sweep:
    def __init__(self, harness: _Harness, work: Path, secret_dir: Path, on_progress: Progress | None) -> None:
        self.harness, self.work, self.secret_dir, self.on_progress = harness, work, secret_dir, on_progress
        self.failed: dict[int, tuple[str, str]] = {}

    def _run(
        self, job: str, paths: list[Path], limits: WorkerLimits, work: Path | None = None, **extra: Any
    ) -> tuple[WorkerOutcome, list]:
        work = work or self.work
        (work / ROWS_FILE).unlink(missing_ok=True)
        progress = self.secret_dir / f"progress-{secrets.token_hex(8)}"
        request = self.harness.request(
            job, variants=[str(p) for p in paths], secret_dirs=[str(self.secret_dir)],
            **extra,
        )
        try:
            outcome = run_job(job, request, work, limits, self.on_progress, progress)
        finally:
            progress.unlink(missing_ok=True)
        return outcome, _rows(work)

    def _charge(self, outcome: WorkerOutcome, rows: list[dict[str, Any]], pending: list[int]) -> bool:
        """Charge a dead process to the configuration it was running; whether the rest must run again."""
        died = _died(outcome)
        if died is None:
            return bool((outcome.result or {}).get("stopped"))  # a GPU fault, already in its own row
        local = _in_progress(rows)
        if local is None:  # nothing to blame one configuration for: none of them is measured
            for i in pending:
                self.failed.setdefault(i, died)
        else:
            self.failed.setdefault(pending[local], died)
        return True

    def check(self, paths: list[Path], pending: list[int], which: CaseChoice = first_case,
              work: Path | None = None, deadline: float | None = None) -> list[int]:
        """The configurations correct on the cases `which` picks, checked by several processes
        at once where the host and the device allow it (most of a check is compiling the kernel);
        past `deadline` (time.time()) a process starts no further configuration."""
        work = work or self.work
        reference = self.harness.reference()
        shards = _shards(pending, check_processes(self.harness.settings, reference.input_bytes,
                                                  getattr(reference, "free_bytes", None),
                                                  getattr(reference, "output_bytes", 0),
                                                  getattr(reference, "state_bytes", 0)))
        if len(shards) == 1:  # its own folder too: the timing job's log must not overwrite the check's
            return self._check(paths, pending, work / "check-0", which, deadline)
        with ThreadPoolExecutor(len(shards), thread_name_prefix="kernelopt-sweep-check") as pool:
            done = pool.map(lambda n: self._check(paths, shards[n], work / f"check-{n}", which, deadline),
                            range(len(shards)))
            return sorted(i for passed in done for i in passed)

    def _check(self, paths: list[Path], pending: list[int], work: Path, which: CaseChoice,
               deadline: float | None) -> list[int]:
        work.mkdir(parents=True, exist_ok=True)
        passed: list[int] = []
        while pending:
            reference = self.harness.reference()
            tokens = [secrets.token_hex(16) for _ in pending]
            for token in tokens:
                reference.request({"op": "expect", "token": token})
            cases = reference.cases
            limits = sweep_limits(self.harness.settings, cases)
            outcome, rows = self._run("sweep-check", [paths[i] for i in pending], limits, work, tokens=tokens,
                                      quick=which(cases), cases=cases, reference=reference.address,
                                      deadline=deadline)
            done = {r["variant"]: r for r in rows if not r.get("started")}
            for local, i in enumerate(pending):
                verdict = reference.request({"op": "verdict", "token": tokens[local], "partial": True})
                row = done.get(local)
                if row is None:
                    continue
                if not row.get("ok"):
                    self.failed[i] = (row["rule"], row["reason"])
                elif verdict.get("rule"):
                    self.failed[i] = (verdict["rule"], verdict["reason"])
                else:
                    passed.append(i)
            self._charge(outcome, rows, pending)
            left = [i for i in pending if i not in self.failed and i not in passed]
            if left == pending:  # no configuration got a verdict: do not go round again
                self.failed.update({i: ("crash", "the sweep's check ended without reaching it") for i in left})
            pending = [] if left == pending else left
        return passed

    def time(self, paths: list[Path], pending: list[int],
             deadline: float | None = None) -> dict[int, tuple[Timing, int]]:
        """Each surviving configuration's time at the last stage it reached; past `deadline` (time.time()) and
        TIMING_GRACE_S, the first stage's untimed configurations are not timed and no further stage starts."""
        until = deadline + TIMING_GRACE_S if deadline is not None else None
        timed: dict[int, tuple[Timing, int]] = {}
        while pending:
            reference = self.harness.reference()
            stages = halving_stages(self.harness.settings.timing, len(pending))
            timing_case = next(c for c in reference.cases if c.get("timing"))
            limits = sweep_limits(self.harness.settings, reference.cases)
            outcome, rows = self._run("sweep-time", [paths[i] for i in pending], limits, stages=stages,
                                      timing_case=timing_case, deadline=until)
            timed = {}
            for row in rows:
                if row.get("started"):
                    continue
                i = pending[row["variant"]]
                if row.get("ok"):
                    timed[i] = (Timing(**row["timing"]), row["stage"])
                else:
                    self.failed[i] = (row["rule"], row["reason"])
            if not self._charge(outcome, rows, pending):
                break
            pending = [i for i in pending if i not in self.failed]
        return {i: t for i, t in timed.items() if i not in self.failed}


def run_sweep(
    harness: _Harness, paths: Sequence[Path], work: Path, secret_dir: Path, on_progress: Progress | None = None,
    deadline: float | None = None,
) -> list[Measured]:
    """Check and time every configuration (kernel files); one `Measured` each, in order. Past
    `deadline` (time.time(): the run's time budget) no configuration starts its check; those
    checked are still timed until TIMING_GRACE_S past it (one at least), and the finalists still
    checked on the other sizes."""
    paths = [Path(p).resolve() for p in paths]
    work.mkdir(parents=True, exist_ok=True)
    sweep = _Sweep(harness, work, secret_dir, on_progress)
    for i, path in enumerate(paths):
        try:
            source = read_source(path, "kernel")
            check_kernel_source(source, path.name)
        except InputError as err:
            sweep.failed[i] = ("bad-input", str(err))
            continue
        violation = guards.first_violation(source, path.name)
        if violation:
            sweep.failed[i] = violation
    passed = sweep.check(paths, [i for i in range(len(paths)) if i not in sweep.failed], deadline=deadline)
    timed = sweep.time(paths, passed, deadline) if passed else {}
    if sized_cases(harness.reference().cases) and (best := finalists(timed)):
        sweep.check(paths, best, sized_cases, work / "finalists")  # a failure lands in sweep.failed
        timed = {i: t for i, t in timed.items() if i not in sweep.failed}
    return [
        Measured(i, timing=timed[i][0], stage=timed[i][1]) if i in timed
        else Measured(i, rule=sweep.failed.get(i, ("not-timed", ""))[0], reason=sweep.failed.get(i, ("", ""))[1])
        for i in range(len(paths))
    ]
