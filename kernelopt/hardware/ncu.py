"""Nsight Compute: the metrics we collect, a parser for both CSV layouts, and time-weighted aggregation.

Running ncu lives in `kernelopt.hardware.ncu_runner`.
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from kernelopt.records import one_line

GPU_TIME = "gpu__time_duration.sum"
DRAM_BYTES_READ = "dram__bytes_read.sum"
DRAM_BYTES_WRITE = "dram__bytes_write.sum"
SM_THROUGHPUT_PCT = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
MEMORY_THROUGHPUT_PCT = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"
DRAM_THROUGHPUT_PCT = "dram__throughput.avg.pct_of_peak_sustained_elapsed"
FFMA_THREAD_INSTS = "sm__sass_thread_inst_executed_op_ffma_pred_on.sum"
FADD_THREAD_INSTS = "sm__sass_thread_inst_executed_op_fadd_pred_on.sum"
FMUL_THREAD_INSTS = "sm__sass_thread_inst_executed_op_fmul_pred_on.sum"
TENSOR_HMMA_ACTIVE_PCT = "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"
REGISTERS_PER_THREAD = "launch__registers_per_thread"
WARPS_ACTIVE_PCT = "sm__warps_active.avg.pct_of_peak_sustained_active"
L2_HIT_RATE_PCT = "lts__t_sector_hit_rate.pct"
L1_HIT_RATE_PCT = "l1tex__t_sector_hit_rate.pct"
THEORETICAL_OCCUPANCY_PCT = "sm__maximum_warps_per_active_cycle_pct"
OCCUPANCY_LIMIT_REGISTERS = "launch__occupancy_limit_registers"
OCCUPANCY_LIMIT_SHARED_MEM = "launch__occupancy_limit_shared_mem"
OCCUPANCY_LIMIT_WARPS = "launch__occupancy_limit_warps"
OCCUPANCY_LIMIT_BLOCKS = "launch__occupancy_limit_blocks"
SHARED_MEM_PER_BLOCK = "launch__shared_mem_per_block"
LOCAL_LOAD_SECTORS = "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum"
TENSOR_ACTIVE_PCT = "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"
TENSOR_GMMA_INST_PCT = "sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_active"
GRID_SIZE = "launch__grid_size"
BLOCK_SIZE = "launch__block_size"
WAVES_PER_SM = "launch__waves_per_multiprocessor"

NCU_METRICS: Mapping[str, str] = MappingProxyType(
    {
        GPU_TIME: "Kernel duration on the GPU (ns).",
        DRAM_BYTES_READ: "Bytes read from device memory (DRAM/HBM).",
        DRAM_BYTES_WRITE: "Bytes written to device memory (DRAM/HBM).",
        SM_THROUGHPUT_PCT: "Compute speed of light: busiest SM unit/pipe as % of its peak.",
        MEMORY_THROUGHPUT_PCT: "Memory speed of light: busiest of L1, L2 and DRAM as % of peak.",
        DRAM_THROUGHPUT_PCT: "DRAM bandwidth used as % of peak.",
        FFMA_THREAD_INSTS: "FP32 fused multiply-adds executed (per thread, predicated on); 2 FLOPs.",
        FADD_THREAD_INSTS: "FP32 adds executed (per thread, predicated on); 1 FLOP.",
        FMUL_THREAD_INSTS: "FP32 multiplies executed (per thread, predicated on); 1 FLOP.",
        TENSOR_HMMA_ACTIVE_PCT: "Tensor pipe (HMMA: fp16/bf16/tf32 MMA) active cycles, % of peak.",
        REGISTERS_PER_THREAD: "Registers allocated per thread; high counts cap occupancy.",
        WARPS_ACTIVE_PCT: "Achieved occupancy: active warps as % of the SM's maximum.",
        L2_HIT_RATE_PCT: "L2 sector hit rate (%).",
        L1_HIT_RATE_PCT: "L1/TEX sector hit rate (%).",
        THEORETICAL_OCCUPANCY_PCT: "Theoretical occupancy: the launch's warp limit as % of max.",
        OCCUPANCY_LIMIT_REGISTERS: "Blocks per SM allowed by register use.",
        OCCUPANCY_LIMIT_SHARED_MEM: "Blocks per SM allowed by shared memory use.",
        OCCUPANCY_LIMIT_WARPS: "Blocks per SM allowed by the warp count.",
        OCCUPANCY_LIMIT_BLOCKS: "Blocks per SM allowed by the hardware block limit.",
        SHARED_MEM_PER_BLOCK: "Shared memory per block, static + dynamic (bytes).",
        LOCAL_LOAD_SECTORS: "Local-memory load sectors: register spills being read back.",
        TENSOR_ACTIVE_PCT: "Any tensor pipe (incl. Hopper wgmma) active cycles, % of peak.",
        TENSOR_GMMA_INST_PCT: "Hopper wgmma (GMMA) instructions issued, % of peak; > 0 means wgmma.",
        GRID_SIZE: "Programs (thread blocks) in the launch's grid.",
        BLOCK_SIZE: "Threads per program (thread block).",
        WAVES_PER_SM: "Grid size over the programs all SMs hold at once: how many times the GPU fills.",
    }
)

# Metrics every NVIDIA GPU since Volta knows; asking ncu for one it lacks fails the whole run.
DEFAULT_METRICS: tuple[str, ...] = tuple(m for m in NCU_METRICS if m not in (TENSOR_ACTIVE_PCT, TENSOR_GMMA_INST_PCT))
# Hopper extras: the all-tensor-pipe view and the wgmma issue rate. (wgmma also shows in the
# HMMA pipe metric: a Triton bf16 matmul on an H200 read 81.5% on both.)
HOPPER_METRICS: tuple[str, ...] = (TENSOR_ACTIVE_PCT, TENSOR_GMMA_INST_PCT)


def capability_major(compute_capability: str | None) -> int | None:
    """The major version of a compute capability ("9.0" -> 9), or None where it cannot be read."""
    head = str(compute_capability).split(".", 1)[0]
    return int(head) if head.isdigit() else None


def default_metrics(compute_capability: str | None = None) -> tuple[str, ...]:
    """The metric list for a GPU: the common set, plus the wgmma pipes from Hopper (9.0) on."""
    major = capability_major(compute_capability)
    return DEFAULT_METRICS + HOPPER_METRICS if major is not None and major >= 9 else DEFAULT_METRICS


@dataclass(frozen=True)
class KernelMetrics:
    """One profiled kernel launch: its name, duration and metrics in canonical units."""

    name: str
    time_ns: float
    metrics: dict[str, float]
    units: dict[str, str] = field(default_factory=dict)  # canonical unit per metric
    block_size: str = ""  # "(128, 1, 1)"
    grid_size: str = ""


@dataclass(frozen=True)
class NcuProfile:
    """The outcome of one ncu run: per-kernel metrics and their aggregate, or why it failed."""

    ok: bool
    kernels: tuple[KernelMetrics, ...]
    metrics: dict[str, float]
    total_time_ns: float
    error: str | None
    report_path: str | None

    @classmethod
    def failed(cls, reason: str, report_path: str | None = None) -> NcuProfile:
        """A profile that carries only the one-line reason it failed."""
        return cls(False, (), {}, 0.0, one_line(reason, 397), report_path)


# ---------------------------------------------------------------- parsing

# Identity columns of both CSV layouts; they hold numbers that are not metrics.
_META_COLUMNS = frozenset(
    {
        "ID",
        "Process ID",
        "Process Name",
        "Host Name",
        "Kernel Name",
        "Context",
        "Stream",
        "Block Size",
        "Grid Size",
        "Device",
        "CC",
        "Section Name",
        "Metric Name",
        "Metric Unit",
        "Metric Value",
        "Rule Name",
        "Rule Type",
        "Rule Description",
        "Estimated Speedup Type",
        "Estimated Speedup",
    }
)
_TIME_TO_NS = {"nsecond": 1.0, "ns": 1.0, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6, "second": 1e9, "s": 1e9}
# ncu's Kbyte/Mbyte/Gbyte are powers of 1000; KiB-style units (Kibyte) are powers of 1024.
_BYTE_UNIT = re.compile(r"^([KMGT]?)(i?)byte(/.*)?$")
_HZ_UNIT = re.compile(r"^([KMG]?)hz$", re.IGNORECASE)
_PREFIX_POWER = {"": 0, "K": 1, "M": 2, "G": 3, "T": 4}


def _canonical(value: float, unit: str) -> tuple[float, str]:
    """The value in ns, bytes or hertz where the unit is one of those, else unchanged."""
    if unit in _TIME_TO_NS:
        return value * _TIME_TO_NS[unit], "ns"
    byte = _BYTE_UNIT.match(unit)
    if byte:
        prefix, binary, per = byte.groups()
        base = 1024.0 if binary else 1000.0
        return value * base ** _PREFIX_POWER[prefix], "byte" + (per or "")
    hz = _HZ_UNIT.match(unit)
    if hz:
        return value * 1000.0 ** _PREFIX_POWER[hz.group(1).upper()], "hz"
    return value, unit


def _number(text: str) -> float | None:
    try:
        value = float(text.strip().replace(",", ""))
    except ValueError:  # "n/a", "", "no data", enum values like "PolicySpread"
        return None
    # ncu prints "nan" for ratios of zero counts; a NaN would poison every sum it enters.
    return value if math.isfinite(value) else None


def _tables(text: str) -> Iterable[tuple[list[str], list[list[str]]]]:
    """Each CSV table in ncu's stdout, with ==PROF== lines and program output dropped."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith('"ID",')]
    for n, start in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(lines)
        rows = list(csv.reader(lines[start:end]))
        header = rows[0]
        yield header, [r for r in rows[1:] if len(r) == len(header)]


def _kernel(row: Mapping[str, str], metrics: dict[str, float], units: dict[str, str]) -> KernelMetrics:
    return KernelMetrics(
        name=row.get("Kernel Name", ""),
        time_ns=metrics.get(GPU_TIME, 0.0),
        metrics=metrics,
        units=units,
        block_size=row.get("Block Size", ""),
        grid_size=row.get("Grid Size", ""),
    )


def _parse_long(header: list[str], rows: list[list[str]]) -> list[KernelMetrics]:
    by_id: dict[str, tuple[dict[str, str], dict[str, float], dict[str, str]]] = {}
    for raw in rows:
        row = dict(zip(header, raw, strict=True))
        value = _number(row["Metric Value"])
        if not row["Metric Name"] or value is None:
            continue
        _, metrics, units = by_id.setdefault(row["ID"], (row, {}, {}))
        metrics[row["Metric Name"]], units[row["Metric Name"]] = _canonical(value, row.get("Metric Unit", ""))
    return [_kernel(row, metrics, units) for row, metrics, units in by_id.values()]


def _parse_wide(header: list[str], rows: list[list[str]]) -> list[KernelMetrics]:
    # `--page raw` puts a units row (empty ID) right under the header.
    unit_row = rows[0] if rows and not rows[0][0].strip() else [""] * len(header)
    kernels = []
    for raw in rows:
        if not raw[0].strip():
            continue
        row = dict(zip(header, raw, strict=True))
        metrics: dict[str, float] = {}
        units: dict[str, str] = {}
        for name, unit, text in zip(header, unit_row, raw, strict=True):
            value = _number(text)
            if name in _META_COLUMNS or value is None:
                continue
            metrics[name], units[name] = _canonical(value, unit)
        kernels.append(_kernel(row, metrics, units))
    return kernels


def parse_ncu_csv(text: str) -> list[KernelMetrics]:
    """The kernels in ncu's CSV, long (one row per metric) or `--page raw` (one per kernel)."""
    kernels: list[KernelMetrics] = []
    for header, rows in _tables(text):
        if "Metric Name" in header and "Metric Value" in header:
            kernels.extend(_parse_long(header, rows))
        else:
            kernels.extend(_parse_wide(header, rows))
    return kernels


def aggregate_kernels(kernels: Sequence[KernelMetrics]) -> dict[str, float]:
    """One metric set for several kernels: counters summed, rates and ratios time-weighted.

    A `.sum` metric counts events (bytes, instructions, ns) and adds up across launches;
    `.max`/`.min` keep the extreme; every other metric (percentages, averages, per-thread
    figures) describes the launch while it ran, so each kernel weighs by its duration.
    """
    names = {name for k in kernels for name in k.metrics}
    result: dict[str, float] = {}
    for name in sorted(names):
        present = [k for k in kernels if name in k.metrics]
        values = [k.metrics[name] for k in present]
        if name.endswith(".sum"):
            result[name] = sum(values)
        elif name.endswith(".max"):
            result[name] = max(values)
        elif name.endswith(".min"):
            result[name] = min(values)
        else:
            weights = [k.time_ns for k in present]
            total = sum(weights)
            if total > 0:
                result[name] = sum(v * w for v, w in zip(values, weights, strict=True)) / total
            else:
                result[name] = sum(values) / len(values)
    return result
