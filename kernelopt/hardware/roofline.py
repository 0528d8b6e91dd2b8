"""Roofline analysis: how far a kernel is from what the GPU can physically do."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Bound = Literal["memory", "compute", "underutilized", "unknown"]


@dataclass(frozen=True)
class RooflineConfig:
    """Every threshold the roofline verdicts use, in one place."""

    at_roofline_sol_pct: float = 80.0  # NCU view: a unit this busy is at its roof
    at_roofline_efficiency_pct: float = 85.0  # floor view: measured within this of the floor
    underutilized_sol_pct: float = 40.0  # both units below this: latency/occupancy bound
    tensor_core_active_pct: float = 1.0  # tensor pipe above this: tensor cores are in use


@dataclass(frozen=True)
class FloorEstimate:
    """The least work a problem needs: every input read once, every output written once."""

    min_bytes: int
    flops: float
    dtype: str  # "fp32", "fp16", "bf16", ... the dtype whose peak applies


@dataclass(frozen=True)
class Roofline:
    """Where a kernel sits against the roofline, from NCU's SOL% and from the floor."""

    bottleneck: Bound
    compute_sol_pct: float | None
    memory_sol_pct: float | None
    efficiency_pct: float | None  # floor time / measured time where known, else max SOL%
    headroom_pct: float | None  # 100 - efficiency_pct
    at_roofline: bool
    uses_tensor_cores: bool | None
    warnings: tuple[str, ...] = ()
    source: Literal["ncu", "floor", "ncu+floor", "none"] = "none"
    # floor view (None where unknown)
    measured_time_ms: float | None = None
    floor_time_ms: float | None = None
    min_bytes: int | None = None
    flops: float | None = None
    arithmetic_intensity: float | None = None  # FLOPs per minimal byte
    achieved_gbs: float | None = None  # min_bytes / measured time
    achieved_tflops: float | None = None  # flops / measured time
    dram_bytes: float | None = None  # what NCU saw moved, against min_bytes
    bandwidth_gbs: float | None = None  # the ceiling used (measured or datasheet)
    peak_tflops: float | None = None  # the ceiling used (measured or datasheet)
