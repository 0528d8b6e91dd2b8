"""Which configurations a round's sweep measures: around the best, the diagnosis's way first,
never again what was measured, never further along a move that was measured slower.

A round's plan is half directed (the nearest configurations, steps the diagnosis asks for
cheaper than steps against it) and half exploration (a seeded sample of the rest of the space,
for tile kernels led by the balanced tiles kernel engineers start from). Configurations a
per-program estimate rules out (less than one element per thread, accumulators beyond the
registers, tiles beyond shared memory) are not planned at all.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kernelopt.offline.tuner import (
    SIZE_MAX,
    SIZE_MIN,
    SPAN_KNOBS,
    STAGES,
    WARPS,
    Direction,
    kind_of,
    size_range,
)
from kernelopt.records import SweepRow

Config = dict[str, int]


@dataclass(frozen=True)
class SpaceLimits:
    """The estimates a configuration must pass to be worth measuring, and how the plan is split."""

    min_elements_per_thread: float = 1.0  # a 1-D block smaller than its threads leaves threads idle
    max_elements_per_thread: float = 64.0  # more spills the registers of a 1-D block
    max_accumulators_per_thread: float = 256.0  # a 2-D tile's fp32 accumulators per thread
    max_tile_smem_bytes: float = 227 * 1024  # tile_smem_bytes: K step x other sides x stages x element_bytes
    element_bytes: int = 2  # of the operands a tile loop stages: the problem's dtype (fp32: 4)
    directed_share: float = 0.5  # the rest of the budget explores
    slower_margin: float = 0.10  # a move this much slower than where it started is not taken further
    hopeless_ratio: float = 2.0  # a value never within this of the best is not measured again
    # a K the kernel fixes (a compiler GEMM template's `K = 8192`) and may load with no mask: its K step divides it
    fixed_k: frozenset[int] = frozenset()


def _size_values(centre: int, direction: int, several: bool, low: int = SIZE_MIN, high: int = SIZE_MAX) -> list[int]:
    if centre < low or centre & (centre - 1):
        return [centre]  # not a power-of-two block size (a fixed width): left alone
    reach = (-1, 3) if several else (-1, 5)
    if direction < 0:
        reach = (-3, 1)
    elif direction == 0:
        reach = (-2, 2) if several else (-2, 4)
    shifted = (centre << k if k >= 0 else centre >> -k for k in range(reach[0], reach[1] + 1))
    return [v for v in shifted if low <= v <= high]


def values_of(name: str, centre: int, direction: int, several_sizes: bool) -> list[int]:
    """The values a knob may take this round."""
    kind = kind_of(name)
    if kind == "switch":  # the move's grid set it; a 0 would also be no size to step from
        return [centre]
    if kind == "warps":
        return sorted({*WARPS, centre})
    if kind == "stages":
        return sorted({*STAGES, centre})
    if kind == "programs":  # half and twice as many: from one per SM, two per SM and one per two SMs
        return sorted({v for v in (centre // 2, centre, centre * 2) if v >= 1})
    low, high = size_range(name)
    if kind == "group":
        return sorted({v for v in (centre // 2, centre, centre * 2) if low <= v <= high} | {centre})
    return _size_values(centre, direction, several_sizes, low, high)


def _spans(config: Mapping[str, int]) -> dict[str, int]:
    """The span knobs (CHUNK) at a span's size: a smaller CHUNK is some other count, taken as a block size."""
    return {k: v for k, v in config.items() if k in SPAN_KNOBS and v >= SPAN_KNOBS[k][0]}


def tile_sides(config: Mapping[str, int]) -> dict[str, int]:
    """The block sizes that are a program's tile: a span (CHUNK) walked in steps of another block is not one."""
    sized = {k: v for k, v in config.items() if kind_of(k) == "size" and v >= SIZE_MIN}
    sides = {k: v for k, v in sized.items() if k not in _spans(config)}
    return sides if sides else sized


# The compiler's element blocks: a pointwise or reduction kernel holds XBLOCK x R0_BLOCK values per program,
# one or more registers each (a Welford reduction keeps three), never spread over a tl.dot's fragments.
ELEMENT_BLOCKS = frozenset({"XBLOCK", "YBLOCK", "ZBLOCK", "RBLOCK", "R0_BLOCK", "R1_BLOCK"})


def values_per_program(config: Mapping[str, int]) -> int | None:
    """The values a compiler kernel's program holds (the product of its element blocks, a row count below
    SIZE_MIN included); None when the configuration has other block knobs."""
    sized = [k for k in config if kind_of(k) == "size"]
    if not sized or any(k not in ELEMENT_BLOCKS for k in sized):
        return None
    return math.prod(config[k] for k in sized)


def kernel_groups(config: Mapping[str, int]) -> list[dict[str, int]]:
    """The configuration as one group of knobs per kernel, each judged alone: a constant PREFIX_WARPS sets its own
    kernel's warps (a file of two kernels: separable.two_pass's stencil at DW_WARPS beside its GEMM), and the knobs
    named PREFIX_... are that kernel's, its warps read as num_warps; the rest are the launch's own. A *_WARPS that no
    other knob shares a prefix with (NUM_WARPS) is the launch's warps where num_warps is not a knob."""
    main = dict(config)
    groups: list[dict[str, int]] = []
    for name in [k for k in config if k.endswith("_WARPS")]:
        prefix = name[: -len("WARPS")]
        members = {k: v for k, v in config.items() if k.startswith(prefix) and k != name}
        if members:
            groups.append({**members, "num_warps": config[name]})
            for k in (*members, name):
                main.pop(k, None)
        elif "num_warps" not in config:
            main["num_warps"] = main.pop(name)
    return [main, *groups]


def feasible(config: Mapping[str, int], limits: SpaceLimits) -> bool:
    """Whether per-program estimates leave the configuration worth compiling: each kernel's knobs
    (kernel_groups) judged alone."""
    return all(_feasible(group, limits) for group in kernel_groups(config))


def _feasible(config: Mapping[str, int], limits: SpaceLimits) -> bool:
    """Whether per-program estimates leave one kernel's configuration worth compiling.

    A compiler kernel's tile is judged by the values per thread, its few rows included: on the H200,
    35_GroupNorm_'s seed at XBLOCK 8-16 x R0_BLOCK 2048 on 1-4 warps (128-512 values per thread, read
    as a 1-D block of 2,048 because a side under SIZE_MIN was no side) took 193-410 ms a call, the
    seed's own launch 5.4."""
    warps = config.get("num_warps")
    held = values_per_program(config)
    if warps and held is not None:
        return limits.min_elements_per_thread <= held / (32 * warps) <= limits.max_elements_per_thread
    sides = tile_sides(config)
    if any(k % step for k in limits.fixed_k for step in _k_steps(sides)):  # past each row's end, unmasked
        return False
    spans = [v for k, v in _spans(config).items() if k not in sides]
    if spans and sides and min(spans) < max(sides.values()):  # a step past the span would read the next piece
        return False
    sizes = sorted(sides.values(), reverse=True)
    threads = 32 * warps if warps else None
    if threads and len(sizes) == 1:
        return limits.min_elements_per_thread <= sizes[0] / threads <= limits.max_elements_per_thread
    if threads and len(sizes) >= 2 and sizes[0] * sizes[1] / threads > limits.max_accumulators_per_thread:
        return False
    if len(sizes) >= 2 and "num_stages" in config:
        return tile_smem_bytes(config, limits.element_bytes) <= limits.max_tile_smem_bytes
    return True


def _k_steps(sides: Mapping[str, int]) -> list[int]:
    """The tile's K steps: its sides named ..K (BLOCK_K, BLOCK_SIZE_K)."""
    return [v for k, v in sides.items() if k.upper().rstrip("_").endswith("K")]


def tile_smem_bytes(config: Mapping[str, int], element_bytes: int = 2) -> int:
    """Shared memory of a pipelined tile loop: its K step times the other tile sides, per stage.

    The K step is the knob named ..K (BLOCK_K, BLOCK_SIZE_K); with none so named, whichever side
    gives the most (a BLOCK_K of 512 beside 128 x 64 tiles is 393 KB at two stages, past any GPU).
    """
    sized = tile_sides(config)
    stages = config.get("num_stages", 1)
    named_k = _k_steps(sized)
    total = sum(sized.values())
    if named_k:
        step = max(named_k)
        return step * (total - step) * stages * element_bytes
    return max(v * (total - v) for v in sized.values()) * stages * element_bytes


DTYPE_BYTES = {"float64": 8, "int64": 8, "float32": 4, "int32": 4, "float16": 2, "bfloat16": 2, "int16": 2,
               "int8": 1, "uint8": 1, "bool": 1, "float8_e4m3fn": 1, "float8_e5m2": 1}


def limits_for(dtype: str | None) -> SpaceLimits:
    """The limits for a problem of `dtype`: its tiles staged at its own element size (an unknown
    dtype at fp32's four bytes, the commoner KernelBench dtype)."""
    return SpaceLimits(element_bytes=DTYPE_BYTES.get(dtype or "", 4))


def key(config: Mapping[str, int]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(config.items()))


def _ruled_out(rows: Sequence[SweepRow], centre: Mapping[str, int], limits: SpaceLimits) -> dict[str, set[int]]:
    """Values not to try again: beyond a one-knob move from the centre that was slower, and
    values whose best time was never near the best."""
    timed = [r for r in rows if r.time_ms is not None]
    out: dict[str, set[int]] = {name: set() for name in centre}
    if not timed:
        return out
    best_ms = min(r.time_ms for r in timed if r.time_ms is not None)
    here = next((r.time_ms for r in timed if key(r.config) == key(centre)), None)
    for name, c in centre.items():
        by_value: dict[int, float] = {}
        for r in timed:
            if r.time_ms is not None and name in r.config:
                by_value[r.config[name]] = min(by_value.get(r.config[name], math.inf), r.time_ms)
        out[name] |= {v for v, ms in by_value.items() if ms > best_ms * limits.hopeless_ratio}
        if here is None:
            continue
        for r in timed:
            moved = [k for k in centre if r.config.get(k) != centre[k]]
            if moved != [name] or r.time_ms is None or r.time_ms <= here * (1 + limits.slower_margin):
                continue
            v = r.config[name]
            beyond = values_of(name, v, 0, True) + values_of(name, v, 0, False) + list(by_value)
            out[name] |= {w for w in [*beyond, v] if (w - c) * (v - c) > 0 and abs(w - c) >= abs(v - c)}
    return out


def _cost(config: Mapping[str, int], centre: Mapping[str, int], direction: Direction) -> float:
    total = 0.0
    for name, c in centre.items():
        v = config[name]
        step = v - c if kind_of(name) in ("stages", "switch") else math.log2(v / c)
        if step == 0:
            continue
        wanted = direction.of(name)
        # with no direction, larger first: per-program overhead is the commoner loss
        unit = (0.9 if step > 0 else 1.0) if wanted == 0 else (0.6 if wanted * step > 0 else 1.5)
        total += abs(step) * unit
    return total


def _balanced(centre: Mapping[str, int]) -> list[Config]:
    """Square tiles with a short reduction step, as kernel engineers start a tile kernel."""
    sizes = list(tile_sides(kernel_groups(centre)[0]))  # the launch's own tile, not another kernel's knobs
    if len(sizes) < 2:
        return []
    seeds = []
    for side, step, warps, stages in itertools.product((64, 128, 256), (32, 64), (4, 8), (3, 4)):
        config = dict(centre)
        for name in sizes:
            config[name] = step if name.upper().endswith("K") else side
        config.update({k: v for k, v in (("num_warps", warps), ("num_stages", stages)) if k in centre})
        seeds.append(config)
    return seeds


def plan(
    centre: Mapping[str, int],
    direction: Direction,
    measured: Sequence[SweepRow],
    budget: int,
    seed: int = 0,
    limits: SpaceLimits | None = None,
) -> list[Config]:
    """Up to `budget` configurations to measure this round, the centre (the best) first when
    it was never measured, then the directed ones, then exploration."""
    limits = limits or SpaceLimits()
    several = len(tile_sides(kernel_groups(centre)[0])) >= 2
    ruled = _ruled_out(measured, centre, limits)
    axes = {
        name: [v for v in values_of(name, c, direction.of(name), several) if v == c or v not in ruled[name]]
        for name, c in centre.items()
    }
    done = {key(r.config) for r in measured if r.rule != "time-budget"}  # one the budget kept from its check was not
    names = list(centre)
    space = [dict(zip(names, values, strict=True)) for values in itertools.product(*(axes[n] for n in names))]
    space = [c for c in space if key(c) not in done and (feasible(c, limits) or key(c) == key(centre))]
    rng = random.Random(seed)
    rng.shuffle(space)  # ties in cost are broken at random, not by the order of the axes
    space.sort(key=lambda c: (key(c) != key(centre), _cost(c, centre, direction)))
    directed = space[: max(min(budget, 2), math.ceil(budget * limits.directed_share))]
    chosen = {key(c) for c in directed}
    seeds = _balanced(centre) if not measured else []
    explore = [c for c in seeds if feasible(c, limits) and key(c) not in done | chosen]
    rest = [c for c in space if key(c) not in chosen]
    picks = directed + explore[: budget - len(directed)]
    picks += rng.sample(rest, min(len(rest), budget - len(picks))) if len(picks) < budget else []
    unique: dict[tuple[tuple[str, int], ...], Config] = {}
    for config in picks:
        unique.setdefault(key(config), config)
    return list(unique.values())[:budget]
