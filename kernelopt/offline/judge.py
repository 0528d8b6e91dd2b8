"""The offline judger: a diagnosis from per-program facts, by rules.

Each rule rests on one fact of what the hardware sees (waves, bytes per thread, bytes in
flight per SM, what caps residency, spills, loop steps and stages) and names it in the
summary ("0.5 waves: too few programs"). Speed-of-light percentages only say which unit is
busy; no rule fires on them alone. The fixes are phrases `tuner.direction_of` reads back,
so the offline optimizer follows the diagnosis it is given.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from kernelopt.hardware.gpu_spec import GPUSpec
from kernelopt.offline.facts import ProgramFacts, Thresholds, program_facts, size
from kernelopt.offline.tuner import FIX_FEWER_STAGES, FIX_GROW, FIX_MORE_STAGES, FIX_SHRINK, FIX_SWEEP, knob_values
from kernelopt.records import BottleneckResult, Roofline, config_text

Rule = Callable[[ProgramFacts, Roofline | None, Thresholds], BottleneckResult | None]


def _few_waves(f: ProgramFacts, _: Roofline | None, t: Thresholds) -> BottleneckResult | None:
    if f.waves is None or f.programs is None or f.waves >= t.few_waves:
        return None
    return BottleneckResult(
        category="occupancy",
        summary=f"{f.waves:.2f} waves: too few programs",
        reasoning=f"{f.programs} programs against {f.slots or 'an unknown number of'} resident slots: "
        "part of the GPU has nothing to run for the whole launch.",
        root_causes=(f"the grid has {f.programs} programs, fewer than the GPU holds at once",),
        recommended_fixes=(FIX_SHRINK,),
    )


def _little_work(f: ProgramFacts, _: Roofline | None, t: Thresholds) -> BottleneckResult | None:
    per_thread, elements = f.read_bytes_per_thread, f.elements_per_thread
    if per_thread is not None and per_thread < t.min_bytes_per_thread:
        fact = f"{size(per_thread)} per thread in flight"
    elif per_thread is None and elements is not None and elements < t.min_elements_per_thread:
        fact = f"{elements:g} elements per thread"
    else:
        return None
    waves = f" ({f.programs} programs, {f.waves:.1f} waves)" if f.programs and f.waves else ""
    return BottleneckResult(
        category="latency",
        summary=f"{fact}: too little work per program",
        reasoning=f"each thread issues less than one 128-bit load per step{waves}; "
        "the launch and scheduling of many tiny programs, not the memory system, sets the time.",
        root_causes=(f"{fact}: the block is small against the program's threads",),
        recommended_fixes=(FIX_GROW,),
    )


def _little_in_flight(f: ProgramFacts, _: Roofline | None, t: Thresholds) -> BottleneckResult | None:
    have, need = f.inflight_bytes_per_sm, f.needed_inflight_bytes_per_sm
    if have is None or need is None or have >= need * t.inflight_margin:
        return None
    return BottleneckResult(
        category="memory",
        summary=f"{size(have)} in flight per SM: too little to cover the memory latency",
        reasoning=f"Little's law asks {size(need)} per SM (bandwidth per SM x {t.dram_latency_ns:.0f} ns); "
        f"{f.resident_per_sm} resident programs x {size(f.read_bytes_per_program or 0)} each fall short.",
        root_causes=(f"{size(have)} in flight per SM against {size(need)} needed",),
        recommended_fixes=(FIX_GROW,),
    )


def _residency_cap(f: ProgramFacts, _: Roofline | None, t: Thresholds) -> BottleneckResult | None:
    if f.resident_per_sm is None or f.resident_per_sm >= t.few_resident_programs:
        return None
    if f.resident_limit not in ("registers", "shared memory"):
        return None
    usage = (
        f"{f.registers_per_thread} registers per thread"
        if f.resident_limit == "registers"
        else f"{size(f.shared_mem_per_program or 0)} of shared memory per program"
    )
    return BottleneckResult(
        category="occupancy",
        summary=f"{f.resident_per_sm} program per SM: {f.resident_limit} cap residency",
        reasoning=f"{usage} leaves room for {f.resident_per_sm} program per SM: a stall has no other warps to hide it.",
        root_causes=(f"{usage}",),
        recommended_fixes=(FIX_FEWER_STAGES if f.resident_limit == "shared memory" else FIX_SHRINK,),
    )


def _spills(f: ProgramFacts, _: Roofline | None, t: Thresholds) -> BottleneckResult | None:
    if not f.spilled_sectors:
        return None
    return BottleneckResult(
        category="memory",
        summary=f"{f.spilled_sectors:.3g} local-memory load sectors: registers spill",
        reasoning=f"{f.registers_per_thread} registers per thread are not enough for the tile; spills go to memory.",
        root_causes=("the tile holds more values per thread than the registers take",),
        recommended_fixes=(FIX_SHRINK,),
    )


def _excess_traffic(_: ProgramFacts, roofline: Roofline | None, t: Thresholds) -> BottleneckResult | None:
    if roofline is None or not (roofline.dram_bytes and roofline.min_bytes):
        return None
    ratio = roofline.dram_bytes / roofline.min_bytes
    if ratio <= t.excess_traffic_ratio:
        return None
    return BottleneckResult(
        category="memory",
        summary=f"DRAM traffic is {ratio:.1f}x the minimum the problem needs",
        reasoning=f"NCU measured {roofline.dram_bytes:.3g} bytes against a floor of {roofline.min_bytes:.3g}; "
        "data is fetched from DRAM more than once.",
        root_causes=("the kernel makes several passes over its input, or its tiles are too small to reuse loads",),
        recommended_fixes=(FIX_GROW,),
    )


def _shallow_pipeline(f: ProgramFacts, _: Roofline | None, t: Thresholds) -> BottleneckResult | None:
    stages = (f.knobs or {}).get("num_stages")
    if not f.loops or stages is None or stages >= t.min_stages_for_loops:
        return None
    steps = ", ".join(sorted({loop.step for loop in f.loops}))
    return BottleneckResult(
        category="latency",
        summary=f"{stages} pipeline stage(s) for a loop stepping by {steps}: loads are not overlapped",
        reasoning="each iteration waits for its own loads; "
        "more stages prefetch the next tiles while this one computes.",
        root_causes=(f"num_stages={stages} in a loop over {steps}",),
        recommended_fixes=(FIX_MORE_STAGES,),
    )


FIX_TF32X3 = 'multiply at input_precision="tf32x3": three TF32 tensor-core products keep fp32\'s accuracy'


def _fma_products(f: ProgramFacts, roofline: Roofline | None, _: Thresholds) -> BottleneckResult | None:
    if not f.fma_dots or (roofline is not None and roofline.bottleneck == "memory"):
        return None
    roof = f" (this problem's roof: {roofline.peak_tflops:.0f} TFLOP/s)" if roofline and roofline.peak_tflops else ""
    return BottleneckResult(
        category="compute",
        summary=f"{f.fma_dots} tl.dot call(s) multiply fp32 on the CUDA cores, not the tensor cores",
        reasoning="at input_precision='ieee' (or allow_tf32=False) every product is an FMA, capped by the fp32 "
        f"FMA peak; 3xTF32 keeps fp32's accuracy at up to a third of the TF32 tensor-core peak{roof}.",
        root_causes=("tl.dot at ieee precision: the products run as FMAs",),
        recommended_fixes=(FIX_TF32X3,),
    )


RULES: tuple[Rule, ...] = (
    _fma_products,
    _few_waves, _little_work, _little_in_flight, _residency_cap, _spills, _excess_traffic, _shallow_pipeline,
)


def _untuned(f: ProgramFacts, roofline: Roofline | None) -> BottleneckResult:
    """When no fact points anywhere: the launch is swept around where it is."""
    knobs = config_text(f.knobs) or "none found"
    busy = (
        f"; NCU: compute {roofline.compute_sol_pct or 0:.0f}%, memory {roofline.memory_sol_pct or 0:.0f}% of peak"
        if roofline and roofline.source != "none"
        else ""
    )
    return BottleneckResult(
        category="other",
        summary="no per-program fact stands out: the launch configuration is untuned",
        reasoning=f"tunable values in the source: {knobs}{busy}. A measured sweep finds what no rule predicts.",
        root_causes=("block sizes, num_warps and num_stages were chosen by hand",),
        recommended_fixes=(FIX_SWEEP,),
    )


def diagnose(
    roofline: Roofline | None,
    metrics: Mapping[str, float] | None,
    *,
    source: str = "",
    spec: GPUSpec | None = None,
    thresholds: Thresholds | None = None,
    dtype: str | None = None,
) -> list[BottleneckResult]:
    """Bottlenecks, most important first, each naming the per-program fact it rests on (`dtype`:
    the problem's, as the floor names it)."""
    thresholds = thresholds or Thresholds()
    knobs = knob_values(source) if source else {}
    facts = program_facts(metrics or {}, spec, knobs, source, thresholds, dtype)
    found = [b for rule in RULES if (b := rule(facts, roofline, thresholds))]
    return found or [_untuned(facts, roofline)]
