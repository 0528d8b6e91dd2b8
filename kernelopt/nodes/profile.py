"""profile: place the best kernel on the roofline, from Nsight Compute and the problem's floor."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Literal

from langgraph.runtime import Runtime
from langgraph.types import Command

from kernelopt.context import Context
from kernelopt.events import RooflineFound
from kernelopt.hardware import ncu, ncu_runner
from kernelopt.hardware.roofline import RooflineAnalyzer, RooflineConfig, baseline_times_ms, ceiling_times_ms
from kernelopt.hardware.specs import get_gpu_spec
from kernelopt.harness import load_or_measure_ceilings
from kernelopt.nodes.common import after, context_of, emit, verifier_for
from kernelopt.nodes.stop import Step, should_stop
from kernelopt.records import KernelRecord, Roofline
from kernelopt.state import KernelOptState

INTERPRETER_WARNING = (
    "times are Triton-interpreter (CPU) times, not GPU times: efficiency against the floor is not computed"
)


def _ncu_metrics(state: KernelOptState, ctx: Context, best: KernelRecord) -> tuple[dict[str, float] | None, str | None]:
    """NCU's metrics for the best kernel (cached by its source hash), or why there are none."""
    if not ctx.profile:
        return None, "profiling is off (profile=False)"
    reason = ncu_runner.ncu_unavailable_reason()
    if reason:
        return None, reason
    profile = verifier_for(state, ctx).profile(
        best.path,
        Path(state["run_dir"]) / "profiles" / best.source_hash,
        metrics=_metrics(state["gpu_key"]),
        cache=ncu_runner.NcuCache(Path(state["run_dir"]) / "profiles" / "cache"),
        cache_key=best.source_hash,
    )
    return (profile.metrics, None) if profile.ok else (None, f"NCU profile failed: {profile.error}")


def _metrics(gpu_key: str) -> tuple[str, ...]:
    return ncu.default_metrics(get_gpu_spec(gpu_key).compute_capability)


def prepare_profiles(state: KernelOptState | dict[str, Any], ctx: Context) -> None:
    """Start the first profile's process (ncu, Python, torch: seconds) while round 0 verifies, on
    a GPU with ncu and profiling on; each profile then leaves the next one waiting."""
    if not ctx.profile or ncu_runner.ncu_unavailable_reason() is not None:
        return
    verifier = verifier_for(state, ctx)  # type: ignore[arg-type]
    if verifier.settings.use_cuda:
        verifier.prepare_profile(_metrics(state["gpu_key"]))


def analyzer_for(gpu_key: str, ctx: Context) -> RooflineAnalyzer:
    """A roofline analyzer for the GPU, with measured ceilings where this GPU has them."""
    config = RooflineConfig(
        at_roofline_sol_pct=ctx.at_roofline_sol_pct, at_roofline_efficiency_pct=ctx.at_roofline_efficiency_pct
    )
    ceilings = load_or_measure_ceilings()
    if ceilings is None:
        return RooflineAnalyzer(get_gpu_spec(gpu_key), config)
    return RooflineAnalyzer(get_gpu_spec(gpu_key), config, ceilings.bandwidth_gbs, ceilings.peak_tflops)


def roofline_for(
    state: KernelOptState, ctx: Context, record: KernelRecord, metrics: dict[str, float] | None,
    skipped: str | None = None,
) -> Roofline:
    """Where a kernel sits on the roofline, from NCU's metrics (None: the floor and its own time
    alone), with why NCU was `skipped` and the interpreter's caveat among its warnings."""
    baselines = state.get("baselines")
    measured_ms = record.time_ms if record.timing.is_gpu_time else None
    roofline: Roofline = analyzer_for(state["gpu_key"], ctx).analyze(
        metrics, baselines.floor if baselines else None, measured_ms, baseline_times_ms(baselines),
        ceiling_times_ms(baselines),
    )
    notes = tuple(n for n in (skipped, None if record.timing.is_gpu_time else INTERPRETER_WARNING) if n)
    return dataclasses.replace(roofline, warnings=roofline.warnings + notes)


def profile(state: KernelOptState, runtime: Runtime[Context]) -> Command[Literal["judger", "report"]]:
    """The best kernel's Roofline; then stop (at the roofline, or a reason set before), else the judger."""
    ctx = context_of(runtime)
    best = state["best"]
    assert best is not None, "profile runs only after a kernel was accepted"
    stopped = state.get("stop_reason")
    if stopped and not ctx.profile_final:  # no round follows: NCU's metrics would serve the report alone
        metrics, skipped = None, f"not profiled: the run had stopped ({stopped}) and profile_final is off"
    else:
        metrics, skipped = _ncu_metrics(state, ctx, best)
    roofline = roofline_for(state, ctx, best, metrics, skipped)
    emit(state, RooflineFound(bottleneck=roofline.bottleneck, efficiency_pct=roofline.efficiency_pct,
                              at_roofline=roofline.at_roofline, warnings=list(roofline.warnings)))
    update: dict[str, Any] = {"roofline": roofline, "ncu_metrics": metrics or {}}
    reason = should_stop(after(state, update), ctx, Step(profiled=True))
    if reason and not state.get("stop_reason"):  # a reason set before stays where it was set
        update["stop_reason"] = reason
    return Command(goto="report" if reason else "judger", update=update)
