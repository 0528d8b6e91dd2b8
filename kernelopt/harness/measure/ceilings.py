"""Measured ceilings: the bandwidth and matmul peaks this GPU really sustains, cached per GPU.

Datasheet peaks are boost-clock figures no kernel reaches; a roofline against them calls a
kernel that is as fast as the hardware allows "70% efficient". Measuring once per GPU and
caching the result makes "at the roofline" mean near the physical limit.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from kernelopt.harness.sandbox.locks import device_lock

log = logging.getLogger(__name__)

MATMUL_DTYPES: tuple[str, ...] = ("fp32", "tf32", "bf16", "fp16")
# The largest square runs hot and lowers its clock; a smaller one often sustains more (cuBLAS:
# 712 TFLOP/s fp16 at 4096 against 675 at 8192 on an H200). The peak is the best of them.
MATMUL_SIZES: tuple[int, ...] = (4096, 8192)


@dataclass(frozen=True)
class Ceilings:
    """What one GPU sustains: device-copy bandwidth and dense matmul peaks per dtype."""

    gpu_name: str  # torch.cuda.get_device_name()
    bandwidth_gbs: float  # read + write bytes of a large device-to-device copy, per second
    peak_tflops: dict[str, float]  # "fp32", "tf32", "bf16", "fp16" -> TFLOP/s


def _median_ms(run: Callable[[], Any], trials: int, device: int) -> float:
    """Median time of run() in ms, with the same protocol every kernel is timed with."""
    import torch

    from kernelopt.harness.measure.timing import TimingConfig, measure

    config = TimingConfig(min_trials=trials, max_trials=trials)
    return measure(run, torch.device(f"cuda:{device}"), config).median_ms


def measure_bandwidth_gbs(device: int = 0, copy_bytes: int = 1 << 30, trials: int = 10) -> float:
    """Device-to-device copy bandwidth in GB/s, counting both the read and the write."""
    import torch

    src = torch.empty(copy_bytes, dtype=torch.uint8, device=f"cuda:{device}")
    dst = torch.empty_like(src)
    time_ms = _median_ms(lambda: dst.copy_(src), trials, device)
    return 2 * copy_bytes / (time_ms / 1e3) / 1e9


def measure_matmul_tflops(dtype_name: str, device: int = 0, size: int = 8192, trials: int = 10) -> float:
    """Dense square-matmul TFLOP/s for "fp32", "tf32", "bf16" or "fp16"."""
    import torch

    dtype = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[dtype_name]
    a = torch.randn(size, size, dtype=dtype, device=f"cuda:{device}")
    b = torch.randn(size, size, dtype=dtype, device=f"cuda:{device}")
    out = torch.empty_like(a)
    saved = torch.backends.cuda.matmul.allow_tf32
    # fp32 and tf32 share a dtype: only this switch tells cuBLAS which to run.
    torch.backends.cuda.matmul.allow_tf32 = dtype_name == "tf32"
    try:
        time_ms = _median_ms(lambda: torch.matmul(a, b, out=out), trials, device)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved
    return 2 * size**3 / (time_ms / 1e3) / 1e12


def measure_ceilings(device: int = 0) -> Ceilings:
    """Bandwidth and matmul peaks of a CUDA GPU, measured now (takes a few seconds)."""
    import torch

    return Ceilings(
        gpu_name=torch.cuda.get_device_name(device),
        bandwidth_gbs=measure_bandwidth_gbs(device),
        peak_tflops={
            name: max(measure_matmul_tflops(name, device, size) for size in MATMUL_SIZES) for name in MATMUL_DTYPES
        },
    )


def default_cache_dir() -> Path:
    """Where measured ceilings live: $XDG_CACHE_HOME (or ~/.cache)/kernelopt/ceilings."""
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "kernelopt" / "ceilings"


def _cache_file(gpu_name: str, cache_dir: Path) -> Path:
    return cache_dir / (re.sub(r"[^A-Za-z0-9._-]+", "_", gpu_name).strip("_") + ".json")


def save_ceilings(ceilings: Ceilings, cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Write ceilings to the cache; returns the file written."""
    path = _cache_file(ceilings.gpu_name, Path(cache_dir) if cache_dir else default_cache_dir())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(asdict(ceilings), indent=2))
    return path


def load_ceilings(gpu_name: str, cache_dir: str | os.PathLike[str] | None = None) -> Ceilings | None:
    """The cached ceilings of a GPU, or None when absent or unreadable."""
    path = _cache_file(gpu_name, Path(cache_dir) if cache_dir else default_cache_dir())
    try:
        data = json.loads(path.read_text())
        ceilings = Ceilings(
            gpu_name=str(data["gpu_name"]),
            bandwidth_gbs=float(data["bandwidth_gbs"]),
            peak_tflops={str(k): float(v) for k, v in data["peak_tflops"].items()},
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    # Two GPUs whose names slug alike must not share ceilings.
    return ceilings if ceilings.gpu_name == gpu_name else None


def load_or_measure_ceilings(
    cache_dir: str | os.PathLike[str] | None = None,
    device: int = 0,
    measure: Callable[[int], Ceilings] = measure_ceilings,
) -> Ceilings | None:
    """This GPU's ceilings from the cache, measured and cached on first use; None without CUDA."""
    from kernelopt.hardware.gpus import cuda_available

    try:
        if not cuda_available():  # no driver: no torch to import either
            return None
        import torch

        gpu_name = torch.cuda.get_device_name(device)
    except (ImportError, RuntimeError):
        return None
    cached = load_ceilings(gpu_name, cache_dir)
    if cached is not None:
        return cached
    try:
        with device_lock("cuda"):  # a measurement of the whole GPU: nothing may run beside it
            ceilings = measure(device)
    except RuntimeError as exc:  # out of memory on a small or shared GPU, a driver error
        log.warning("could not measure the ceilings of %s (%s); using the datasheet", gpu_name, exc)
        return None
    save_ceilings(ceilings, cache_dir)
    return ceilings
