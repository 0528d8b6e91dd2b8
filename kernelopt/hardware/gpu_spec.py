"""One GPU's datasheet figures (`GPUSpec`) and the compute roof a problem of each dtype is measured against
(`roof_tflops`); the database of GPUs is specs.py."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


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
    aliases: tuple[str, ...] = ()  # other names people use for it ("H100 SXM5")

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

    def roof_tflops(self, dtype: str) -> float:
        """The compute roof for a problem of `dtype` at that dtype's accuracy (`roof_tflops` below)."""
        own = self.peak_tflops(dtype)  # raises for a dtype without a peak
        return roof_tflops({dtype: own, "tf32": self.peak_tf32_tflops, "fp16": self.peak_fp16_tflops}, dtype) or own

    def ridge_point_flops_per_byte(self, dtype: str = "fp32") -> float:
        """FLOPs per DRAM byte above which a kernel of this dtype is compute-bound."""
        return self.roof_tflops(dtype) * 1e12 / (self.memory_bandwidth_gbs * 1e9)


# fp32 products reach fp32 accuracy on tensor cores as three products of operands split into a part and a
# remainder (each K step's sum added in fp32): in TF32 (3xTF32, Triton's "tf32x3"), or in fp16 at twice its
# rate on rows scaled by powers of two into fp16's range (moves/matmul_split_f16.py): a third of the faster.
SPLIT_PRODUCTS = 3
SPLIT_DTYPES = ("tf32", "fp16")


def roof_tflops(peaks: Mapping[str, float], dtype: str) -> float | None:
    """The compute roof for a problem of `dtype` from peaks by dtype name (datasheet or measured): the
    dtype's own peak, and for fp32 the best of it and a third of TF32's or fp16's (three split products)."""
    own = peaks.get(dtype)
    split = max((peaks.get(name) or 0.0 for name in SPLIT_DTYPES), default=0.0)
    if dtype != "fp32" or not split:
        return own
    return max(own or 0.0, split / SPLIT_PRODUCTS)
