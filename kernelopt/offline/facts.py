"""What the hardware sees of one launch: per-program facts from NCU's launch metrics and the source.

The offline judger reasons from these, not from speed-of-light percentages alone: how many
programs there are against how many the GPU can hold at once (waves), how much each program
and each thread moves, how many bytes an SM keeps in flight against what Little's law asks
of the memory system, what limits residency (registers, shared memory, warps), and which
loops step by a tunable block size.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass

from kernelopt.hardware import ncu
from kernelopt.hardware.gpu_spec import GPUSpec
from kernelopt.offline.moves.precision import fma_dots
from kernelopt.offline.tuner import kind_of
from kernelopt.syntax import parse


@dataclass(frozen=True)
class Thresholds:
    """Every number the offline rules decide by, in one place."""

    few_waves: float = 1.0  # fewer waves than this: part of the GPU idles for the whole launch
    tail_waves: float = 1.5  # between few_waves and this: the last partial wave costs a third or more
    min_bytes_per_thread: float = 16.0  # one 128-bit load per thread: less leaves the LSU half empty
    min_elements_per_thread: float = 4.0  # per loop step or per program, when bytes are unknown
    dram_latency_ns: float = 700.0  # HBM load latency under load, for Little's law
    inflight_margin: float = 1.0  # bytes in flight per SM must reach this x (bandwidth/SM x latency)
    few_resident_programs: int = 2  # an SM holding fewer programs than this cannot hide a stall
    max_registers_per_thread: int = 128  # above: registers start to cap residency
    excess_traffic_ratio: float = 1.5  # DRAM bytes over the minimum: data read more than once
    min_stages_for_loops: int = 3  # a K loop with fewer stages waits on every load
    busy_sol_pct: float = 60.0  # a unit this busy is worth naming, but only beside a per-program fact


@dataclass(frozen=True)
class Loop:
    """A loop in a @triton.jit kernel whose step is a tunable constexpr."""

    kernel: str
    step: str  # the constexpr name, e.g. BLOCK_K


@dataclass(frozen=True)
class ProgramFacts:
    """One launch seen per program (None where neither NCU nor the source says)."""

    programs: int | None = None  # grid size
    threads_per_program: int | None = None  # block size
    resident_per_sm: int | None = None  # programs one SM holds at once
    resident_limit: str | None = None  # what caps it: registers, shared memory, warps, blocks
    slots: int | None = None  # resident programs on the whole GPU
    waves: float | None = None
    read_bytes_per_program: float | None = None
    read_bytes_per_thread: float | None = None
    inflight_bytes_per_sm: float | None = None
    needed_inflight_bytes_per_sm: float | None = None  # Little's law: bandwidth per SM x latency
    registers_per_thread: int | None = None
    shared_mem_per_program: float | None = None
    spilled_sectors: float | None = None
    loops: tuple[Loop, ...] = ()
    knobs: Mapping[str, int] | None = None  # the source's tunable values (BLOCK_SIZE, num_warps, ...)
    fma_dots: int = 0  # tl.dot calls multiplying fp32 on the CUDA cores (input_precision="ieee")

    @property
    def elements_per_thread(self) -> float | None:
        """Elements one thread handles per step: the 1-D block size over the program's threads."""
        sizes = [v for k, v in (self.knobs or {}).items() if kind_of(k) not in ("warps", "stages", "switch")]
        if len(sizes) != 1 or not self.threads_per_program:
            return None
        return sizes[0] / self.threads_per_program


_LIMITS = (
    (ncu.OCCUPANCY_LIMIT_REGISTERS, "registers"),
    (ncu.OCCUPANCY_LIMIT_SHARED_MEM, "shared memory"),
    (ncu.OCCUPANCY_LIMIT_WARPS, "warps"),
    (ncu.OCCUPANCY_LIMIT_BLOCKS, "the block limit"),
)


def _int(metrics: Mapping[str, float], name: str) -> int | None:
    value = metrics.get(name)
    return None if value is None else int(round(value))


def loops_of(source: str) -> tuple[Loop, ...]:
    """Loops in @triton.jit functions that step by an upper-case (constexpr) name."""
    try:
        tree = parse(source)
    except SyntaxError:
        return ()
    found: list[Loop] = []
    for fn in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.decorator_list):
        for loop in (n for n in ast.walk(fn) if isinstance(n, ast.For) and isinstance(n.iter, ast.Call)):
            args = loop.iter.args
            if len(args) == 3 and isinstance(args[2], ast.Name) and args[2].id.isupper():
                found.append(Loop(fn.name, args[2].id))
    return tuple(dict.fromkeys(found))


def program_facts(
    metrics: Mapping[str, float],
    spec: GPUSpec | None,
    knobs: Mapping[str, int] | None = None,
    source: str = "",
    thresholds: Thresholds | None = None,
    dtype: str | None = None,
) -> ProgramFacts:
    """The per-program facts NCU's launch metrics, the GPU's spec and the source give; `dtype` is
    the problem's ("fp32", "fp16", ...; None: unknown), and products at ieee precision count as
    FMAs only in fp32 (an fp16 tl.dot runs on the tensor cores whatever its allow_tf32)."""
    programs = _int(metrics, ncu.GRID_SIZE)
    threads = _int(metrics, ncu.BLOCK_SIZE) or (32 * knobs["num_warps"] if knobs and "num_warps" in knobs else None)
    limits = [(int(metrics[m]), what) for m, what in _LIMITS if metrics.get(m)]
    resident, limit = min(limits) if limits else (None, None)
    if resident is None and threads and spec:
        resident, limit = spec.max_threads_per_sm // threads, "warps"
    slots = resident * spec.sm_count if resident and spec else None
    waves = metrics.get(ncu.WAVES_PER_SM) or (programs / slots if programs and slots else None)
    read = metrics.get(ncu.DRAM_BYTES_READ)
    per_program = read / programs if read and programs else None
    per_thread = per_program / threads if per_program and threads else None
    inflight = needed = None
    if per_program and resident and programs and spec:
        inflight = per_program * min(resident, programs / spec.sm_count)
    if spec:
        needed = spec.memory_bandwidth_gbs * 1e9 / spec.sm_count * (thresholds or Thresholds()).dram_latency_ns * 1e-9
    return ProgramFacts(
        programs=programs,
        threads_per_program=threads,
        resident_per_sm=resident,
        resident_limit=limit,
        slots=slots,
        waves=waves,
        read_bytes_per_program=per_program,
        read_bytes_per_thread=per_thread,
        inflight_bytes_per_sm=inflight,
        needed_inflight_bytes_per_sm=needed,
        registers_per_thread=_int(metrics, ncu.REGISTERS_PER_THREAD),
        shared_mem_per_program=metrics.get(ncu.SHARED_MEM_PER_BLOCK),
        spilled_sectors=metrics.get(ncu.LOCAL_LOAD_SECTORS),
        loops=loops_of(source),
        knobs=dict(knobs or {}),
        fma_dots=len(fma_dots(source)) if source and dtype in (None, "fp32") else 0,
    )


def size(nbytes: float) -> str:
    """Bytes for people: 4 B, 8.0 KiB, 1.2 MiB."""
    if nbytes < 1024:
        return f"{nbytes:.0f} B"
    if nbytes < 2**20:
        return f"{nbytes / 1024:.1f} KiB"
    return f"{nbytes / 2**20:.1f} MiB"
