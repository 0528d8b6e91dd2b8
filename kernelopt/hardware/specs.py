"""GPU specifications: the datasheet ceilings the roofline and the prompts are built on."""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping


@dataclass(frozen=True)
class GPUSpec:
    """One GPU's datasheet figures. Peaks are dense (without structured sparsity)."""

    key: str  # database key, e.g. "H200"
    name: str  # marketing name, e.g. "NVIDIA H200"
    architecture: str  # "Hopper", "Ampere", ...
    compute_capability: str  # "9.0"
    sm_count: int
    peak_fp32_tflops: float
    peak_tf32_tflops: float
    peak_fp16_tflops: float
    peak_bf16_tflops: float
    peak_fp8_tflops: float | None  # None where the GPU has no fp8 tensor cores
    memory_bandwidth_gbs: float
    memory_size_gb: float
    memory_type: str
    l2_cache_mb: float
    shared_memory_per_sm_kb: int
    max_threads_per_sm: int
    tdp_watts: int
    device_names: tuple[str, ...]  # what torch.cuda.get_device_name() returns for it
    source: str  # the datasheet the figures come from

    def peak_tflops(self, dtype: str) -> float:
        """Dense peak for a dtype name ("fp32", "tf32", "fp16", "bf16", "fp8")."""
        value = {
            "fp32": self.peak_fp32_tflops,
            "tf32": self.peak_tf32_tflops,
            "fp16": self.peak_fp16_tflops,
            "bf16": self.peak_bf16_tflops,
            "fp8": self.peak_fp8_tflops,
        }.get(dtype)
        if value is None:
            raise ValueError(f"{self.key} has no peak for dtype {dtype!r}")
        return value


GPU_SPECS_DATABASE: Mapping[str, GPUSpec] = MappingProxyType({})
