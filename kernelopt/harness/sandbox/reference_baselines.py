"""The baselines the reference process times: eager, torch.compile in its default mode, the floor,
and each baseline judged by the yardstick a kernel is judged by.

The baselines run with PyTorch's defaults, as users run them. Some defaults trade accuracy for
speed: cuDNN convolutions at TF32 (`torch.backends.cudnn.allow_tf32` is on by default), and
whatever a problem turns on itself (TF32 matmuls, fp16/bf16 reductions). The verifier holds a
kernel to full precision, so such a baseline is faster than any kernel it accepts can be: on the
H200 a convolution ran in 1.64 ms at TF32, at 246x fp32's error, where an fp32-accurate one
cannot go under about 1.8 ms at the 3xTF32 rate. So the outputs of eager and torch.compile on the
first checked case are judged like a candidate's. Where one is refused, both are timed again with
reduced precision off (`calls.exact_math`, the flags the yardstick is computed under): those are
the times a kernel at the verifier's precision is compared with, and the only ones a roof is
raised to (`hardware.roofline.ceiling_times_ms`).
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Protocol

import torch

from kernelopt.harness.measure.cases import case_inputs
from kernelopt.harness.measure.correctness import compare_case
from kernelopt.harness.measure.timing import TimingConfig, measure
from kernelopt.harness.sandbox.locks import device_lock


class Reference(Protocol):
    """What the baselines need of the reference process (reference.py's Reference)."""

    req: dict[str, Any]
    problem: Any
    device: torch.device
    model: torch.nn.Module
    cases: list[dict[str, Any]]
    checked: list[int]
    scales: dict[int, float]
    judging: dict[int, Any]

    def expected(self, index: int) -> Any: ...

    def _release(self) -> None: ...

EAGER, COMPILE = "PyTorch eager", "torch.compile"
_BORN = time.monotonic()


def log_stage(stage: str) -> None:
    """A line in the reference process's log: where its time went (setup is measured from these)."""
    print(f"[{time.monotonic() - _BORN:8.3f} s] {stage}", flush=True)


def use_compile_cache(folder: str | None) -> None:
    """Point Inductor's caches (FX graph, autotuning) at the problem's folder under the runs
    folder, so that a repeated run takes the compiled graph from there (Inductor reads the
    variable at each use)."""
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = folder


def time_baselines(ref: Reference, message: dict[str, Any]) -> dict[str, Any]:
    """Eager and torch.compile times with the candidates' protocol, the floor, the baselines the
    yardstick refuses (name -> why) and, where it refuses one, both timed at full precision."""
    from kernelopt.harness.measure.floor import estimate_floor

    config = TimingConfig(**message.get("timing", {}))
    inputs = case_inputs(ref.problem, {"seed": ref.req["seeds"][0]}, ref.device)
    result: dict[str, Any] = {"compile": None, "compile_error": None, "compile_s": None, "refused": {}}
    runs = {EAGER: ref.model}
    with torch.no_grad():
        result["floor"] = asdict(estimate_floor(ref.model, inputs))
        log_stage("floor counted")
        result["eager"] = _timed(ref, lambda: ref.model(*inputs), config)
        log_stage("eager timed")
        if message.get("time_compile"):
            use_compile_cache(message.get("compile_cache_dir"))
            try:
                began = time.monotonic()
                compiled = torch.compile(ref.model)
                compiled(*inputs)  # compile outside the lock: it is not timed
                result["compile_s"] = round(time.monotonic() - began, 3)
                log_stage("torch.compile compiled")
                result["compile"] = _timed(ref, lambda: compiled(*inputs), config)
                runs[COMPILE] = compiled
                log_stage("torch.compile timed")
            except Exception as err:  # a compile failure costs the baseline, not the run
                result["compile_error"] = f"{type(err).__name__}: {str(err).splitlines()[0][:300]}"
    # The timing's inputs go back first (a 16 GiB input's baselines once left a candidate without room
    # for its own); the outputs are judged on fresh ones, as a candidate's are (a model may change its
    # inputs in place).
    inputs.clear()
    ref._release()
    with torch.no_grad():
        result["refused"], result["judge_error"] = judged(ref, runs)
        if result["refused"]:
            result.update(_full_precision(ref, runs, config))
            log_stage("baselines timed at full precision")
    return result


def _timed(ref: Reference, fn: Any, config: TimingConfig) -> dict[str, Any]:
    with device_lock(ref.req["device"], ref.req.get("lock_path")):
        return asdict(measure(fn, ref.device, config, "cpu"))


def judged_case(ref: Reference) -> int | None:
    """The checked case the baselines' inputs are (the first seed, nothing resized or perturbed)."""
    seed = ref.req["seeds"][0]
    return next((i for i in ref.checked if {k: v for k, v in ref.cases[i].items() if k != "ref_ms"} == {"seed": seed}),
                None)


def judged(ref: Reference, runs: dict[str, Any]) -> tuple[dict[str, str], str | None]:
    """name -> why, for each of `runs` whose outputs the yardstick refuses on the baselines' case, each
    run on fresh inputs; and why none could be judged (kernelopt's judging never takes the baselines down)."""
    from kernelopt.harness.sandbox.calls import outputs_of

    index = judged_case(ref)
    if index is None or not runs:
        return {}, None
    refused = {}
    try:
        expected = ref.expected(index)
        for name, run in runs.items():
            inputs = case_inputs(ref.problem, {"seed": ref.req["seeds"][0]}, ref.device)
            returned = run(*inputs)
            got = outputs_of(tuple(returned) if isinstance(returned, tuple) else returned)
            why = compare_case(expected.outputs, got, ref.scales[index], expected.slack, ref.judging[index])
            del inputs, returned, got
            if why:
                refused[name] = why.lstrip(", :")
    except Exception as err:  # not judged is not refused
        return {}, f"{type(err).__name__}: {str(err).strip().splitlines()[0][:300] if str(err).strip() else ''}"
    finally:
        ref._release()
    return refused, None


def _full_precision(ref: Reference, runs: dict[str, Any], config: TimingConfig) -> dict[str, Any]:
    """Each baseline timed again with reduced precision off (a recompile, where torch.compile's
    guards see the flags, happens in the first call, outside the lock), then judged again: one
    the yardstick still refuses raises no ceiling (its fault is not precision)."""
    from kernelopt.harness.sandbox.calls import exact_math

    keys = {EAGER: "eager_full", COMPILE: "compile_full"}
    timed: dict[str, Any] = {}
    with exact_math():
        inputs = case_inputs(ref.problem, {"seed": ref.req["seeds"][0]}, ref.device)
        for name, run in runs.items():
            try:
                run(*inputs)
                timed[keys[name]] = _timed(ref, lambda r=run: r(*inputs), config)
            except Exception as err:  # the default-precision time stands; this one is left out
                timed[f"{keys[name]}_error"] = f"{type(err).__name__}: {str(err).splitlines()[0][:300]}"
        inputs.clear()
        ref._release()
        timed["refused_full"], error = judged(ref, {name: run for name, run in runs.items() if keys[name] in timed})
    if error:
        timed["judge_error"] = f"at full precision: {error}"
    return timed
