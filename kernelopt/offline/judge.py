"""The offline judger: a diagnosis from the roofline and NCU's metrics, by rules."""

from __future__ import annotations

from collections.abc import Mapping

from kernelopt.hardware import ncu
from kernelopt.hardware.roofline import Roofline
from kernelopt.prompts.parsing import BottleneckResult

# DRAM traffic this many times the minimum means data is read more than once.
EXCESS_TRAFFIC_RATIO = 1.5
LOW_OCCUPANCY_PCT = 30.0


def _pct(value: float | None) -> str:
    return "not measured" if value is None else f"{value:.1f}%"


def _excess_traffic(roofline: Roofline) -> BottleneckResult | None:
    if not (roofline.dram_bytes and roofline.min_bytes):
        return None
    ratio = roofline.dram_bytes / roofline.min_bytes
    if ratio <= EXCESS_TRAFFIC_RATIO:
        return None
    return BottleneckResult(
        category="memory",
        summary=f"DRAM traffic is {ratio:.1f}x the minimum the problem needs",
        reasoning=f"NCU measured {roofline.dram_bytes:.3g} bytes against a floor of {roofline.min_bytes:.3g}; "
        "data is fetched from DRAM more than once.",
        root_causes=("the kernel makes several passes over its input, or its tiles are too small to reuse loads",),
        recommended_fixes=("enlarge the block so each program keeps its data on chip across passes",),
    )


def diagnose(roofline: Roofline | None, metrics: Mapping[str, float] | None) -> list[BottleneckResult]:
    """Bottlenecks, most important first, each with root causes and fixes the search can act on."""
    metrics = metrics or {}
    found = [b for b in [_excess_traffic(roofline)] if b] if roofline else []
    bound = roofline.bottleneck if roofline else "unknown"
    compute_pct = _pct(roofline.compute_sol_pct if roofline else None)
    memory_pct = _pct(roofline.memory_sol_pct if roofline else None)
    warps_active = metrics.get(ncu.WARPS_ACTIVE_PCT)
    if bound == "memory":
        found.append(
            BottleneckResult(
                category="memory",
                summary=f"memory-bound at {memory_pct} of peak memory throughput",
                reasoning="the memory system is the busiest unit; "
                "more bytes in flight per program raise the achieved bandwidth.",
                root_causes=("small blocks leave too few bytes in flight per program",),
                recommended_fixes=("increase the block size (and num_warps with it)",),
            )
        )
    elif bound == "compute":
        idle_tensor_cores = roofline is not None and roofline.uses_tensor_cores is False
        found.append(
            BottleneckResult(
                category="compute",
                summary=f"compute-bound at {compute_pct} of peak SM throughput",
                reasoning="arithmetic dominates; larger tiles reuse each load for more FLOPs "
                "and deeper pipelines hide latency." + (" Tensor cores are idle." if idle_tensor_cores else ""),
                root_causes=("tiles too small for the arithmetic intensity the GPU needs",),
                recommended_fixes=("increase the tile sizes and the number of pipeline stages",),
            )
        )
    elif bound == "underutilized" or (warps_active is not None and warps_active < LOW_OCCUPANCY_PCT):
        found.append(
            BottleneckResult(
                category="occupancy",
                summary="neither compute nor memory is busy: the GPU is underutilized",
                reasoning=f"compute {compute_pct}, memory {memory_pct}: too few programs or warps are in flight.",
                root_causes=("the grid has too few programs, or each program too few warps",),
                recommended_fixes=("decrease the block size to launch more programs, or raise num_warps",),
            )
        )
    if not found:
        found.append(
            BottleneckResult(
                category="other",
                summary="no profile: the launch configuration is untuned",
                reasoning="without NCU metrics the cheapest lever is the launch configuration.",
                root_causes=("block sizes and warps were chosen by hand",),
                recommended_fixes=("search block sizes, num_warps and num_stages one step at a time",),
            )
        )
    return found
