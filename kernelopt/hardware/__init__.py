"""GPU specs, measured ceilings, the Nsight Compute runner and the roofline analysis."""

from kernelopt.hardware.ncu import (
    DEFAULT_METRICS,
    NCU_METRICS,
    KernelMetrics,
    NcuProfile,
    aggregate_kernels,
    default_metrics,
    parse_ncu_csv,
)
from kernelopt.hardware.ncu_runner import NcuCache, find_ncu, ncu_cache_key, ncu_unavailable_reason, run_ncu
from kernelopt.hardware.roofline import Bound, RooflineAnalyzer, RooflineConfig, dtype_name, floor_from_counts
from kernelopt.hardware.specs import (
    GPU_SPECS_DATABASE,
    GPUSpec,
    UnknownGPUError,
    detect_gpu_spec,
    get_gpu_spec,
)
from kernelopt.harness.measure.ceilings import (
    Ceilings,
    default_cache_dir,
    load_ceilings,
    load_or_measure_ceilings,
    measure_ceilings,
    save_ceilings,
)

__all__ = [
    "DEFAULT_METRICS",
    "GPU_SPECS_DATABASE",
    "NCU_METRICS",
    "Bound",
    "Ceilings",
    "GPUSpec",
    "KernelMetrics",
    "NcuCache",
    "NcuProfile",
    "RooflineAnalyzer",
    "RooflineConfig",
    "UnknownGPUError",
    "aggregate_kernels",
    "default_cache_dir",
    "default_metrics",
    "detect_gpu_spec",
    "dtype_name",
    "find_ncu",
    "floor_from_counts",
    "get_gpu_spec",
    "load_ceilings",
    "load_or_measure_ceilings",
    "measure_ceilings",
    "ncu_cache_key",
    "ncu_unavailable_reason",
    "parse_ncu_csv",
    "run_ncu",
    "save_ceilings",
]
