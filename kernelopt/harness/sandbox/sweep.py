"""The sweep's jobs: many configurations of one kernel in one sandboxed process.

Each configuration is a source of its own (the kernel with other knob values), passed the
static checks in the parent like any candidate. Two jobs, each a single-use process:

- `sweep-check` imports every configuration and runs it on a few quick cases (the other
  sizes, where tails and masks break); outputs go to the reference process under one token
  per configuration, and the parent asks it for the verdicts: a configuration never learns
  whether it was right, and one that fails is not timed. Past the request's `deadline` (the
  run's time budget) no further configuration is started: each left gets a `time-budget` row.
- `sweep-time` times the correct ones with the harness's one protocol (`timing.measure`:
  events, an L2 flush before each trial, the median) by successive halving: every
  configuration with a few trials, the better half with more, the best few with the run's own
  settings. Rows are written to rows.jsonl as they finish, so a configuration that hangs or
  crashes the process costs only itself: the parent runs the rest again without it. A model is
  kept for the next stage only while the kept ones hold under a quarter of the device's free
  memory, and a configuration left behind frees its own; past the request's `deadline` (the run's
  budget and a grace) the first stage's untimed configurations get `time-budget` rows and no
  further stage starts.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch

from kernelopt.harness.measure.cases import case_inputs
from kernelopt.harness.measure.timing import TimingConfig, measure
from kernelopt.harness.problem import import_file, load_problem
from kernelopt.harness.sandbox import launches, poison, precision, transfer
from kernelopt.harness.sandbox import worker as candidate
from kernelopt.harness.sandbox.audit import install_audit_guard
from kernelopt.harness.sandbox.calls import Rejected, build_model, state_bytes
from kernelopt.harness.sandbox.locks import DeviceLock

ROWS_FILE = "rows.jsonl"
OUT_OF_TIME = "not checked: the run's time budget (max_wall_s) ran out during the sweep"
NOT_TIMED = "not timed: the run's time budget (max_wall_s) ran out during the sweep's timing"
# In the first stage, a configuration whose warm run is this many times the fastest so far is not
# timed further: 4x is past anything the search keeps alive (2x) or verifies (1.15x).
GIVE_UP_TIMES = 4.0


class _Rows:
    """rows.jsonl in the work dir, opened before the sandbox is armed: one line per result."""

    def __init__(self, work_dir: str) -> None:
        self._fd = os.open(Path(work_dir) / ROWS_FILE, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self.rows: list[dict[str, Any]] = []

    def add(self, row: dict[str, Any]) -> None:
        self.rows.append(row)
        os.write(self._fd, (json.dumps(row) + "\n").encode())


def _setup(req: dict[str, Any]) -> tuple[torch.device, candidate.Progress, Any, candidate._Guards, _Rows]:
    device = torch.device(req["device"])
    progress = candidate.Progress(Path(req["progress_path"]))
    rows = _Rows(req["work_dir"])
    problem = load_problem(req["problem_path"])
    precision.emulate_tf32_in_interpreter()  # as in a candidate's own process
    poison.arm(device)
    guards = candidate._Guards()
    paths = {str(Path(p).resolve()) for p in req["variants"]}
    install_audit_guard(paths, req["work_dir"], tuple(req.get("secret_dirs", ())))
    launches.COMPILES.notify = progress.mark
    return device, progress, problem, guards, rows


def _model(req: dict[str, Any], index: int, problem: Any, device: torch.device) -> Any:
    module = import_file(req["variants"][index], f"kernelopt_variant_{index}")
    if not isinstance(getattr(module, "ModelNew", None), type):
        raise Rejected("no-model-new", "the kernel file defines no class ModelNew")
    return build_model(module.ModelNew, problem, req["init_seed"], device)


def _failure(err: Exception, req: dict[str, Any], index: int) -> dict[str, Any]:
    """The row of a configuration that raised; kernelopt's own error is raised again."""
    if isinstance(err, Rejected):
        return {"variant": index, "ok": False, "rule": err.rule, "reason": str(err)}
    path = req["variants"][index]
    if not candidate.candidates_fault(err, (path, req.get("problem_path"))):
        raise err
    message = str(err).strip().splitlines()[0][:300] if str(err).strip() else ""
    return {"variant": index, "ok": False, "rule": "runtime-error", "reason": f"{type(err).__name__}: {message}"}


def _gpu_broken(err: Exception) -> bool:
    """A fault that leaves the CUDA context unusable: the rest must run in a new process."""
    return "CUDA" in str(err) or "device-side" in str(err) or type(err).__name__ == "AcceleratorError"


def judged_phase(index: int, count: int, case: object) -> str:
    """The mark after one quick case (the log's times: compile, call and comparison apart). A
    `case` phase, so the configuration's next case keeps the case limit, not the import one."""
    return f"case {index + 1}/{count} judged {case}"


def run_check(req: dict[str, Any]) -> dict[str, Any]:
    """Run each configuration on the quick cases; outputs go to the reference under its token."""
    device, progress, problem, guards, rows = _setup(req)
    lock = DeviceLock(req["lock_path"])
    cases = req["cases"]
    count = len(req["variants"])
    deadline = req.get("deadline")  # time.time() past which no configuration is started
    progress.mark("lock")
    with lock.shared(), torch.no_grad():
        for index in range(count):
            if deadline is not None and time.time() > deadline:
                rows.add({"variant": index, "ok": False, "rule": "time-budget", "reason": OUT_OF_TIME})
                continue
            progress.mark(f"case {index + 1}/{count}")
            rows.add({"variant": index, "started": True})
            try:
                model = _model(req, index, problem, device)
                link = transfer.ReferenceLink(req["reference"], req["tokens"][index])
                for case in req["quick"]:
                    outputs = candidate._checked_call(model, case_inputs(problem, cases[case], device), device)
                    link.send("case", case, 0, outputs)
                    del outputs
                    progress.mark(judged_phase(index, count, case))
                guards.check_untouched()
                rows.add({"variant": index, "ok": True})
            except Exception as err:  # one configuration's failure is its own row
                rows.add(_failure(err, req, index))
                if _gpu_broken(err):
                    break
            model = None  # freed before the next one is built: a 4 GB weight is not held twice
    progress.mark("done")
    return {"ok": True, "rows": rows.rows}


def run_time(req: dict[str, Any]) -> dict[str, Any]:
    """Time the configurations by successive halving; each stage keeps the fastest `keep`."""
    device, progress, problem, guards, rows = _setup(req)
    lock = DeviceLock(req["lock_path"])
    survivors = list(range(len(req["variants"])))
    models: dict[int, Any] = {}
    deadline = req.get("deadline")  # time.time() past which the first stage times no more, and no stage starts
    progress.mark("lock")
    with lock.exclusive(), torch.no_grad():
        poison.pause()
        inputs = case_inputs(problem, req["timing_case"], device)
        room = torch.cuda.mem_get_info(device)[0] // 4 if device.type == "cuda" else None  # the kept models' share
        for number, stage in enumerate(req["stages"], 1):
            times: dict[int, float] = {}
            if number > 1 and deadline is not None and time.time() > deadline:
                break  # the survivors keep their last stage's times
            for index in survivors:
                model = None  # the last configuration's model let go before this one's is built
                if times and deadline is not None and time.time() > deadline:
                    if number > 1:
                        break  # the survivors not timed again keep their last stage's times
                    rows.add({"variant": index, "stage": number, "ok": False, "rule": "time-budget",
                              "reason": NOT_TIMED})
                    continue
                progress.mark("timing")
                rows.add({"variant": index, "stage": number, "started": True})
                try:
                    model = models.get(index) or _kept(models, index, _model(req, index, problem, device), room)
                    start = launches.COUNTER.total
                    give_up = GIVE_UP_TIMES * min(times.values()) if number == 1 and times else None
                    config = TimingConfig(**{**stage["timing"], "give_up_ms": give_up})
                    timing = measure(lambda m=model: m(*inputs), device, config)
                    if launches.COUNTER.total == start:
                        raise Rejected("no-triton-launch", "the timed calls launched no Triton kernel")
                    guards.check_untouched()
                except Exception as err:  # one configuration's failure is its own row
                    rows.add({**_failure(err, req, index), "stage": number})
                    if _gpu_broken(err):
                        return {"ok": True, "rows": rows.rows, "stopped": True}
                    continue
                times[index] = timing.median_ms
                rows.add({"variant": index, "stage": number, "ok": True, "timing": asdict(timing)})
            survivors = sorted(times, key=times.__getitem__)[: stage["keep"]]
            for index in [i for i in models if i not in survivors]:  # left behind: its model's memory freed
                del models[index]
    progress.mark("done")
    return {"ok": True, "rows": rows.rows, "finished_s": time.monotonic()}


def _kept(models: dict[int, Any], index: int, model: Any, room: int | None) -> Any:
    """`model`, kept for the next stages where the kept models (this one too) hold no more than `room` bytes (None:
    no bound): every configuration's copy of a 4 GB weight, kept, filled an 80 GB device in 15 configurations."""
    if room is None or sum(state_bytes(m) for m in models.values()) + state_bytes(model) <= room:
        models[index] = model
    return model


JOBS = {"sweep-check": run_check, "sweep-time": run_time}


def run_job(job: str, req: dict[str, Any]) -> int:
    """One sweep job in this (fresh, single-use) process, through the worker's own runner."""
    return candidate.run_job(job, req, JOBS)
