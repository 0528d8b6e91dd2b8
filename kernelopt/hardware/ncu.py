"""Nsight Compute: the metrics we collect, a parser for its CSV, and a runner that never raises."""

from __future__ import annotations

import csv
import hashlib
import json
import math
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from types import MappingProxyType

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
    }
)

# Metrics every NVIDIA GPU since Volta knows; asking ncu for one it lacks fails the whole run.
DEFAULT_METRICS: tuple[str, ...] = tuple(m for m in NCU_METRICS if m not in (TENSOR_ACTIVE_PCT, TENSOR_GMMA_INST_PCT))
# Hopper extras: the all-tensor-pipe view and the wgmma issue rate. (wgmma also shows in the
# HMMA pipe metric: a Triton bf16 matmul on an H200 read 81.5% on both.)
HOPPER_METRICS: tuple[str, ...] = (TENSOR_ACTIVE_PCT, TENSOR_GMMA_INST_PCT)


def default_metrics(compute_capability: str | None = None) -> tuple[str, ...]:
    """The metric list for a GPU: the common set, plus the wgmma pipes from Hopper (9.0) on."""
    try:
        major = int(str(compute_capability).split(".")[0])
    except ValueError:
        return DEFAULT_METRICS
    return DEFAULT_METRICS + HOPPER_METRICS if major >= 9 else DEFAULT_METRICS


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
        return cls(False, (), {}, 0.0, _one_line(reason), report_path)


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


# ---------------------------------------------------------------- running


def _one_line(text: str, limit: int = 400) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _tail(text: str, lines: int = 3) -> str:
    kept = [line.strip() for line in text.splitlines() if line.strip()]
    return " / ".join(kept[-lines:]) or "(no output)"


def _fallback_ncu_paths() -> list[Path]:
    # Nsight Compute ships inside the CUDA toolkit, which often is not on PATH.
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    return [Path(root) / "bin" / "ncu" for root in roots if root]


def find_ncu(env: Mapping[str, str] | None = None) -> str | None:
    """The path of the `ncu` executable on PATH (or in the CUDA toolkit), or None."""
    path = (env or os.environ).get("PATH", os.environ.get("PATH", ""))
    found = shutil.which("ncu", path=path)
    if found:
        return found
    for candidate in _fallback_ncu_paths():
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def ncu_unavailable_reason() -> str | None:
    """Why ncu cannot profile here (no CUDA device, no ncu), or None when it can."""
    try:
        import torch

        if not torch.cuda.is_available():
            return "no CUDA device is visible, so there is no NCU profile (the roofline uses the floor alone)"
    except ImportError:
        return "torch is not installed, so no CUDA device can be checked"
    if find_ncu() is None:
        return "ncu (Nsight Compute) is not on PATH; install Nsight Compute or add its bin/ to PATH"
    return None


def ncu_cache_key(kernel_source: str, *, gpu_name: str, metrics: Sequence[str], extra: str = "") -> str:
    """A cache key covering what changes a profile: the code, the GPU, the metrics, the inputs."""
    digest = hashlib.sha256()
    for part in (kernel_source, gpu_name, ",".join(metrics), extra):
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()[:32]


class NcuCache:
    """Profiles stored as JSON by key, so the same kernel is never profiled twice."""

    def __init__(self, cache_dir: str | os.PathLike[str]) -> None:
        self.cache_dir = Path(cache_dir)

    def _path(self, key: str) -> Path:
        return self.cache_dir / f"{key}.json"

    def get(self, key: str) -> NcuProfile | None:
        """The stored profile for key, or None when absent or unreadable."""
        try:
            data = json.loads(self._path(key).read_text())
            kernels = tuple(KernelMetrics(**k) for k in data.pop("kernels"))
            return NcuProfile(kernels=kernels, **data)
        except (OSError, ValueError, TypeError, KeyError):
            return None

    def put(self, key: str, profile: NcuProfile) -> None:
        """Store profile under key; written whole, then renamed, so readers never see half."""
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        tmp = self._path(key).with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(profile)))
        os.replace(tmp, self._path(key))


_PERMISSION_HINT = (
    "no permission to read GPU counters (ERR_NVGPUCTRPERM); run as root or load the driver "
    "with NVreg_RestrictProfilingToAdminUsers=0 "
    "(https://developer.nvidia.com/ERR_NVGPUCTRPERM)"
)


def run_ncu(
    argv: list[str],
    *,
    env: dict[str, str] | None = None,
    timeout_s: float = 600.0,
    workdir: str,
    metrics: Sequence[str] = DEFAULT_METRICS,
    kernel_regex: str | None = None,
    ncu_path: str | None = None,
    report_path: str | None = None,
    cache: NcuCache | None = None,
    cache_key: str | None = None,
) -> NcuProfile:
    """Profile every kernel the program launches between cudaProfilerStart and Stop.

    Never raises: a failure comes back as ok=False with a one-line reason. The raw CSV is
    kept at report_path (default: <workdir>/ncu_raw.csv). A successful profile is stored in
    `cache` under `cache_key` and served from there next time.
    """
    if cache is not None and cache_key is not None:
        hit = cache.get(cache_key)
        if hit is not None:
            return hit
    ncu = shutil.which(ncu_path) if ncu_path else find_ncu(env)
    if ncu is None:
        return NcuProfile.failed(
            f"ncu (Nsight Compute) not found{f' at {ncu_path}' if ncu_path else ' on PATH'}; "
            "install Nsight Compute or put its bin/ directory on PATH"
        )
    # --profile-from-start off: the program brackets exactly one forward call with
    # cudaProfilerStart/Stop after warm-up, so autotuning and warm-up launches stay out.
    command = [
        ncu,
        "--csv",
        "--page",
        "raw",
        "--clock-control",
        "none",
        "--target-processes",
        "all",
        "--profile-from-start",
        "off",
        "--metrics",
        ",".join(metrics),
    ]
    if kernel_regex:
        command += ["--kernel-name", f"regex:{kernel_regex}"]
    command += list(argv)
    try:
        # A new session lets a timeout kill ncu and the program it launched together.
        proc = subprocess.Popen(
            command,
            cwd=workdir,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
    except OSError as exc:
        return NcuProfile.failed(f"could not start ncu ({ncu}): {exc}")
    try:
        stdout, stderr = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return NcuProfile.failed(f"ncu timed out after {timeout_s:g} s profiling {' '.join(argv)}")

    saved = report_path or str(Path(workdir) / "ncu_raw.csv")
    try:
        Path(saved).write_text(stdout)
    except OSError:
        saved = None
    if "ERR_NVGPUCTRPERM" in stdout or "ERR_NVGPUCTRPERM" in stderr:
        return NcuProfile.failed(_PERMISSION_HINT, saved)
    # `--page raw` adds device attributes and launch settings to what was asked for; keep only
    # the requested metrics so the state and the prompts stay small.
    wanted = {*metrics, GPU_TIME}
    kernels = tuple(
        replace(
            k,
            metrics={m: v for m, v in k.metrics.items() if m in wanted},
            units={m: u for m, u in k.units.items() if m in wanted},
        )
        for k in parse_ncu_csv(stdout)
    )
    if proc.returncode != 0:
        return NcuProfile.failed(
            f"ncu or the profiled program exited with code {proc.returncode}: {_tail(stderr or stdout)}", saved
        )
    if not kernels:
        regex_note = f" and match regex {kernel_regex!r}" if kernel_regex else ""
        return NcuProfile.failed(
            "ncu captured no kernels; the program must launch them between "
            f"torch.cuda.profiler.start() and stop(){regex_note}",
            saved,
        )
    profile = NcuProfile(
        ok=True,
        kernels=kernels,
        metrics=aggregate_kernels(kernels),
        total_time_ns=sum(k.time_ns for k in kernels),
        error=None,
        report_path=saved,
    )
    if cache is not None and cache_key is not None:
        cache.put(cache_key, profile)
    return profile
