"""GPU specifications: the datasheet ceilings the roofline and the prompts are built on, a GPU a `GPUSpec`
(gpu_spec.py), looked up by key, device name or a loose variant of either."""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType

from kernelopt.hardware.gpu_spec import SPLIT_DTYPES, SPLIT_PRODUCTS, GPUSpec, roof_tflops

__all__ = ["GPU_SPECS_DATABASE", "SPLIT_DTYPES", "SPLIT_PRODUCTS", "GPUSpec", "UnknownGPUError", "detect_gpu_spec",
           "get_gpu_spec", "roof_tflops"]


class UnknownGPUError(ValueError):
    """A GPU name or key that the database does not hold."""


_A100_SOURCE = (
    "NVIDIA A100 Tensor Core GPU datasheet "
    "(nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/"
    "nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf); tensor peaks halved from "
    "the with-sparsity figures; SMs/L2/shared memory from the NVIDIA A100 architecture whitepaper"
)
_H100_SOURCE = (
    "NVIDIA H100 Tensor Core GPU datasheet (resources.nvidia.com/en-us-tensor-core/"
    "nvidia-tensor-core-gpu-datasheet); tensor peaks halved from the with-sparsity figures; "
    "SMs/L2/shared memory from the NVIDIA H100 Tensor Core GPU Architecture whitepaper"
)
_ADA_SOURCE = "NVIDIA Ada GPU Architecture whitepaper (v2.1), appendix tables"

# Tensor peaks are the dense, FP32-accumulate figures: Triton's tl.dot accumulates in fp32,
# and the GeForce cards run fp16-accumulate at twice the rate that Triton never sees.
_SPECS: tuple[GPUSpec, ...] = (
    GPUSpec(
        key="A100-SXM4-40GB",
        name="NVIDIA A100 SXM4 40GB",
        architecture="Ampere",
        compute_capability="8.0",
        sm_count=108,
        peak_fp32_tflops=19.5,
        peak_tf32_tflops=156.0,
        peak_fp16_tflops=312.0,
        peak_bf16_tflops=312.0,
        peak_fp8_tflops=None,
        memory_bandwidth_gbs=1555.0,
        memory_size_gb=40.0,
        memory_type="HBM2",
        l2_cache_mb=40.0,
        shared_memory_per_sm_kb=164,
        max_threads_per_sm=2048,
        tdp_watts=400,
        device_names=("NVIDIA A100-SXM4-40GB",),
        source=_A100_SOURCE,
    ),
    GPUSpec(
        key="A100-SXM4-80GB",
        name="NVIDIA A100 SXM4 80GB",
        architecture="Ampere",
        compute_capability="8.0",
        sm_count=108,
        peak_fp32_tflops=19.5,
        peak_tf32_tflops=156.0,
        peak_fp16_tflops=312.0,
        peak_bf16_tflops=312.0,
        peak_fp8_tflops=None,
        memory_bandwidth_gbs=2039.0,
        memory_size_gb=80.0,
        memory_type="HBM2e",
        l2_cache_mb=40.0,
        shared_memory_per_sm_kb=164,
        max_threads_per_sm=2048,
        tdp_watts=400,
        device_names=("NVIDIA A100-SXM4-80GB",),
        source=_A100_SOURCE,
    ),
    GPUSpec(
        key="A100-PCIe-40GB",
        name="NVIDIA A100 PCIe 40GB",
        architecture="Ampere",
        compute_capability="8.0",
        sm_count=108,
        peak_fp32_tflops=19.5,
        peak_tf32_tflops=156.0,
        peak_fp16_tflops=312.0,
        peak_bf16_tflops=312.0,
        peak_fp8_tflops=None,
        memory_bandwidth_gbs=1555.0,
        memory_size_gb=40.0,
        memory_type="HBM2",
        l2_cache_mb=40.0,
        shared_memory_per_sm_kb=164,
        max_threads_per_sm=2048,
        tdp_watts=250,
        device_names=("NVIDIA A100-PCIE-40GB", "NVIDIA A100-PCIe-40GB"),
        source=_A100_SOURCE,
    ),
    GPUSpec(
        key="A100-PCIe-80GB",
        name="NVIDIA A100 PCIe 80GB",
        architecture="Ampere",
        compute_capability="8.0",
        sm_count=108,
        peak_fp32_tflops=19.5,
        peak_tf32_tflops=156.0,
        peak_fp16_tflops=312.0,
        peak_bf16_tflops=312.0,
        peak_fp8_tflops=None,
        memory_bandwidth_gbs=1935.0,
        memory_size_gb=80.0,
        memory_type="HBM2e",
        l2_cache_mb=40.0,
        shared_memory_per_sm_kb=164,
        max_threads_per_sm=2048,
        tdp_watts=300,
        device_names=("NVIDIA A100 80GB PCIe",),
        source=_A100_SOURCE,
    ),
    GPUSpec(
        key="H100-SXM",
        name="NVIDIA H100 SXM5 80GB",
        architecture="Hopper",
        compute_capability="9.0",
        sm_count=132,
        peak_fp32_tflops=67.0,
        peak_tf32_tflops=494.7,
        peak_fp16_tflops=989.5,
        peak_bf16_tflops=989.5,
        peak_fp8_tflops=1979.0,
        memory_bandwidth_gbs=3350.0,
        memory_size_gb=80.0,
        memory_type="HBM3",
        l2_cache_mb=50.0,
        shared_memory_per_sm_kb=228,
        max_threads_per_sm=2048,
        tdp_watts=700,
        device_names=("NVIDIA H100 80GB HBM3",),
        source=_H100_SOURCE,
        aliases=("H100-SXM5", "H100-SXM5-80GB", "H100 SXM5 80GB"),
    ),
    GPUSpec(
        key="H100-PCIe",
        name="NVIDIA H100 PCIe 80GB",
        architecture="Hopper",
        compute_capability="9.0",
        sm_count=114,
        peak_fp32_tflops=51.0,
        peak_tf32_tflops=378.0,
        peak_fp16_tflops=756.5,
        peak_bf16_tflops=756.5,
        peak_fp8_tflops=1513.0,
        memory_bandwidth_gbs=2000.0,
        memory_size_gb=80.0,
        memory_type="HBM2e",
        l2_cache_mb=50.0,
        shared_memory_per_sm_kb=228,
        max_threads_per_sm=2048,
        tdp_watts=350,
        device_names=("NVIDIA H100 PCIe",),
        source=_H100_SOURCE,
    ),
    GPUSpec(
        key="H100-NVL",
        name="NVIDIA H100 NVL 94GB",
        architecture="Hopper",
        compute_capability="9.0",
        sm_count=132,
        peak_fp32_tflops=60.0,
        peak_tf32_tflops=417.5,
        peak_fp16_tflops=835.5,
        peak_bf16_tflops=835.5,
        peak_fp8_tflops=1670.5,
        memory_bandwidth_gbs=3900.0,
        memory_size_gb=94.0,
        memory_type="HBM3",
        l2_cache_mb=50.0,
        shared_memory_per_sm_kb=228,
        max_threads_per_sm=2048,
        tdp_watts=400,
        device_names=("NVIDIA H100 NVL",),
        source=_H100_SOURCE,
    ),
    GPUSpec(
        key="H200",
        name="NVIDIA H200 SXM 141GB",
        architecture="Hopper",
        compute_capability="9.0",
        sm_count=132,
        peak_fp32_tflops=67.0,
        peak_tf32_tflops=494.7,
        peak_fp16_tflops=989.5,
        peak_bf16_tflops=989.5,
        peak_fp8_tflops=1979.0,
        memory_bandwidth_gbs=4800.0,
        memory_size_gb=141.0,
        memory_type="HBM3e",
        # The datasheet gives no L2 size; an H200 reports 62,914,560 B (60 MiB) through
        # cudaDevAttrL2CacheSize (ncu device__attribute_l2_cache_size), not H100 SXM's 50.
        l2_cache_mb=60.0,
        shared_memory_per_sm_kb=228,
        max_threads_per_sm=2048,
        tdp_watts=700,
        device_names=("NVIDIA H200",),
        source=(
            "NVIDIA H200 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h200/); "
            "tensor peaks halved from the with-sparsity figures; SMs, L2 and shared memory "
            "from the device attributes Nsight Compute reports on an H200"
        ),
        aliases=("H200-SXM", "H200-SXM5", "H200 SXM 141GB"),
    ),
    GPUSpec(
        key="B200",
        name="NVIDIA B200 (HGX)",
        architecture="Blackwell",
        compute_capability="10.0",
        sm_count=148,
        peak_fp32_tflops=75.0,
        peak_tf32_tflops=1100.0,
        peak_fp16_tflops=2250.0,
        peak_bf16_tflops=2250.0,
        peak_fp8_tflops=4500.0,
        memory_bandwidth_gbs=8000.0,
        memory_size_gb=180.0,
        memory_type="HBM3e",
        l2_cache_mb=126.0,
        shared_memory_per_sm_kb=228,
        max_threads_per_sm=2048,
        tdp_watts=1000,
        device_names=("NVIDIA B200",),
        source=(
            "NVIDIA HGX B200 specifications (nvidia.com/en-us/data-center/hgx/), per GPU = "
            "HGX total / 8, tensor peaks halved from the with-sparsity figures; SM count and "
            "L2 from CUDA device properties (not in the datasheet)"
        ),
        aliases=("B200-SXM", "HGX-B200"),
    ),
    GPUSpec(
        key="L40S",
        name="NVIDIA L40S",
        architecture="Ada Lovelace",
        compute_capability="8.9",
        sm_count=142,
        peak_fp32_tflops=91.6,
        peak_tf32_tflops=183.0,
        peak_fp16_tflops=362.05,
        peak_bf16_tflops=362.05,
        peak_fp8_tflops=733.0,
        memory_bandwidth_gbs=864.0,
        memory_size_gb=48.0,
        memory_type="GDDR6",
        l2_cache_mb=96.0,
        shared_memory_per_sm_kb=100,
        max_threads_per_sm=1536,
        tdp_watts=350,
        device_names=("NVIDIA L40S",),
        source=(
            "NVIDIA L40S GPU datasheet (nvidia.com/en-us/data-center/l40s/); tensor peaks "
            "halved from the with-sparsity figures; SMs/L2 from the " + _ADA_SOURCE
        ),
    ),
    GPUSpec(
        key="RTX-4090",
        name="NVIDIA GeForce RTX 4090",
        architecture="Ada Lovelace",
        compute_capability="8.9",
        sm_count=128,
        peak_fp32_tflops=82.6,
        peak_tf32_tflops=82.6,
        peak_fp16_tflops=165.2,
        peak_bf16_tflops=165.2,
        peak_fp8_tflops=330.3,
        memory_bandwidth_gbs=1008.0,
        memory_size_gb=24.0,
        memory_type="GDDR6X",
        l2_cache_mb=72.0,
        shared_memory_per_sm_kb=100,
        max_threads_per_sm=1536,
        tdp_watts=450,
        device_names=("NVIDIA GeForce RTX 4090",),
        source=_ADA_SOURCE + " (GeForce RTX 4090 column, dense FP32-accumulate tensor peaks)",
        aliases=("4090", "GeForce RTX 4090"),
    ),
)

GPU_SPECS_DATABASE: Mapping[str, GPUSpec] = MappingProxyType({s.key: s for s in _SPECS})


def _normalise(name: str) -> str:
    # Vendor and product-line words vary between tools ("NVIDIA GeForce RTX 4090" vs "rtx4090");
    # the model and variant do not, so compare on those alone.
    lowered = re.sub(r"\b(nvidia|geforce|tesla)\b", "", name.lower())
    return re.sub(r"[^a-z0-9]", "", lowered)


def _index() -> tuple[dict[str, GPUSpec], dict[str, GPUSpec]]:
    by_device = {d: s for s in _SPECS for d in s.device_names}
    by_normalised: dict[str, GPUSpec] = {}
    for spec in _SPECS:
        for name in (spec.key, spec.name, *spec.device_names, *spec.aliases):
            by_normalised.setdefault(_normalise(name), spec)
    return by_device, by_normalised


_BY_DEVICE_NAME, _BY_NORMALISED = _index()


def get_gpu_spec(name_or_key: str) -> GPUSpec:
    """The spec for a database key (any case), a device name, or a loosely written variant.

    Matching stays exact after normalisation on purpose: "NVIDIA H200 NVL" must not fall
    back to the H200 SXM figures, whose power limit and peaks differ.
    """
    for key, spec in GPU_SPECS_DATABASE.items():
        if key.lower() == name_or_key.strip().lower():
            return spec
    if name_or_key in _BY_DEVICE_NAME:
        return _BY_DEVICE_NAME[name_or_key]
    spec = _BY_NORMALISED.get(_normalise(name_or_key))
    if spec is None:
        raise UnknownGPUError(
            f"unknown GPU {name_or_key!r}; known keys: {', '.join(GPU_SPECS_DATABASE)}. "
            "Pass one of these keys, or add the GPU to GPU_SPECS_DATABASE in "
            "kernelopt/hardware/specs.py"
        )
    return spec


def detect_gpu_spec(device: int = 0) -> GPUSpec | None:
    """The spec of the visible CUDA GPU; None without CUDA or for a GPU the database lacks."""
    from kernelopt.hardware.gpus import cuda_available

    try:
        if not cuda_available():
            return None
        import torch

        return get_gpu_spec(torch.cuda.get_device_name(device))
    except Exception:  # detection is advisory: a broken driver must not stop a CPU run
        return None
