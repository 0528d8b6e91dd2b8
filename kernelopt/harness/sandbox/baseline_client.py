"""The baselines a kernel is measured against, taken with the candidates' protocol.

Eager, torch.compile in its default mode and the floor come from the reference process. The two
that can take a process down or hold it for minutes run in single-use jobs of their own
(`sandbox/baseline_jobs.py`): `torch.compile(mode="max-autotune")` when asked (the strongest
compiler baseline a user would reach for), and a CUDA-graph replay of eager when a baseline is
short enough for launch overhead to matter. A job that fails or runs past its limit leaves its
baseline empty with the reason, and the run goes on.
"""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from kernelopt.harness.measure.timing import host_trials
from kernelopt.harness.problem import read_source, source_hash
from kernelopt.harness.sandbox.runner import PhaseLimits, WorkerLimits, run_job
from kernelopt.records import Baselines, FloorEstimate, Timing, TimingMethod

if TYPE_CHECKING:
    from kernelopt.harness.sandbox.reference_client import ReferenceProcess


class _Harness(Protocol):
    """What the baselines need of the verifier (harness/verify.py)."""

    problem_path: Path
    settings: Any  # HarnessSettings

    def reference(self) -> ReferenceProcess: ...

    def request(self, mode: str, **extra: Any) -> dict[str, Any]: ...

    def job_dir(self, name: str) -> Path: ...

# A CUDA-graph replay of eager is timed when a baseline takes less than this: a kernel under
# about 50 us (where a launch's few microseconds weigh) is then within reach.
GRAPH_BELOW_MS = 0.2
COMPILE_CACHE = ".compile-cache"  # Inductor's caches, one folder per problem: under the runs folder in a run
TIMING_LIMIT_S = 300.0  # a baseline's timing: the protocol's own trial count keeps it near a second


def compile_cache_for(problem_path: str | Path, root: str | None) -> Path:
    """The problem's own folder for Inductor's caches: ROOT / a hash of the problem's source (its
    shapes are in the source). A run and `kernelopt verify` name ROOT (their runs folder's
    .compile-cache); a Verifier made without one keeps them in the user's cache folder."""
    if root is None:
        cache_home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        base = Path(cache_home) / "kernelopt" / "compile-cache"
    else:
        base = Path(root).expanduser()
    return base.resolve() / source_hash(read_source(problem_path, "problem"))[:16]


def method_of(settings: Any) -> TimingMethod:
    """The timing protocol as this harness runs it (timing.py), for the report's method."""
    config = settings.timing
    if settings.use_cuda:
        return TimingMethod(timer="CUDA events", flush_l2_bytes=config.flush_l2_bytes, warmup_ms=config.warmup_ms,
                            min_warmup_runs=config.min_warmup_runs, target_total_ms=config.target_total_ms,
                            min_trials=config.min_trials, max_trials=config.max_trials)
    # host_trials' bounds: a slow run's count, and an instant run's
    return TimingMethod(timer="host clock (time.perf_counter)", flush_l2_bytes=0, warmup_ms=0.0, min_warmup_runs=1,
                        target_total_ms=0.0, min_trials=host_trials(config, float("inf")),
                        max_trials=host_trials(config, 0.0))


def time_baselines(verifier: _Harness) -> Baselines:
    """Every baseline the settings ask for, what they cost in wall time, and the floor."""
    began = time.monotonic()
    settings = verifier.settings
    cache = compile_cache_for(verifier.problem_path, settings.compile_cache_dir)
    result = verifier.reference().request({
        "op": "baselines", "time_compile": settings.time_compile, "timing": settings.timing.__dict__,
        "compile_cache_dir": str(cache),
    })
    eager = Timing(**result["eager"])
    default = Timing(**result["compile"]) if result.get("compile") else None
    fields: dict[str, Any] = {}
    if settings.max_autotune:
        fields.update(_max_autotune(verifier, cache), max_autotune_limit_s=settings.max_autotune_limit_s)
    timed = [t.median_ms for t in (eager, default, fields.get("max_autotune")) if t is not None]
    if settings.use_cuda and min(timed) < GRAPH_BELOW_MS:
        fields.update(_cuda_graph(verifier))
    keys = {"eager_full": "PyTorch eager", "compile_full": "torch.compile (default)"}
    full = {key: Timing(**result[key]) for key in keys if result.get(key)}
    errors = [f"{name}: {result[key + '_error']}" for key, name in keys.items() if result.get(key + "_error")]
    return Baselines(
        refused=dict(result.get("refused") or {}), full_error="; ".join(errors) or None, **full,
        refused_full=dict(result.get("refused_full") or {}), judge_error=result.get("judge_error"),
        eager=eager, compile=default, compile_error=result.get("compile_error"),
        floor=FloorEstimate(**result["floor"]), compile_s=result.get("compile_s"),
        wall_s=round(time.monotonic() - began, 2), method=method_of(settings), **fields,
    )


def _job(verifier: _Harness, job: str, limit_s: float, extra: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """Run a baseline job; its result, or None and why (one line)."""
    # Every phase but the timing (building the model, the compile or capture) shares the limit;
    # the candidates' own limits (--timeout-s) are for kernels, not for this compile.
    phases = PhaseLimits(import_s=limit_s, compile_s=limit_s, case_s=limit_s, timing_s=TIMING_LIMIT_S)
    limits: WorkerLimits = dataclasses.replace(verifier.settings.limits(), phases=phases)
    outcome = run_job(job, verifier.request(job, **extra), verifier.job_dir(f"baseline-{job}"), limits)
    if outcome.result is None:
        return None, f"{outcome.failure} (log: {outcome.log_path})"
    if not outcome.result.get("ok"):
        return None, str(outcome.result.get("reason"))
    return outcome.result, ""


def _max_autotune(verifier: _Harness, cache: Path) -> dict[str, Any]:
    limit_s = verifier.settings.max_autotune_limit_s
    result, why = _job(verifier, "max-autotune", limit_s, {"compile_cache_dir": str(cache)})
    if result is None:
        if why.startswith("timed out in max-autotune compile"):
            why = f"the max-autotune compile ran past its limit of {limit_s:g} s and was stopped"
        return {"max_autotune_error": why}
    return {"max_autotune": Timing(**result["timing"]), "max_autotune_compile_s": result["compile_s"],
            "max_autotune_cache_hit": bool(result["cache_hit"])}


def _cuda_graph(verifier: _Harness) -> dict[str, Any]:
    result, why = _job(verifier, "cuda-graph", TIMING_LIMIT_S, {})
    return {"cuda_graph_error": why} if result is None else {"cuda_graph": Timing(**result["timing"])}
