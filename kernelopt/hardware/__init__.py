"""GPU specs, the host's GPUs (gpus.py), the Nsight Compute runner and the roofline analysis.

The ceilings a GPU reaches are measured by the harness (harness/measure/ceilings.py), which runs
them under the device lock; the roofline here takes them as numbers."""

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

__all__ = [
    "DEFAULT_METRICS",
    "GPU_SPECS_DATABASE",
    "NCU_METRICS",
    "Bound",
    "GPUSpec",
    "KernelMetrics",
    "NcuCache",
    "NcuProfile",
    "RooflineAnalyzer",
    "RooflineConfig",
    "UnknownGPUError",
    "aggregate_kernels",
    "default_metrics",
    "detect_gpu_spec",
    "dtype_name",
    "find_ncu",
    "floor_from_counts",
    "get_gpu_spec",
    "ncu_cache_key",
    "ncu_unavailable_reason",
    "parse_ncu_csv",
    "run_ncu",
]
