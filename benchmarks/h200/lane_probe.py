"""A probe of the `l2_pieces` stats walk with per-lane statistics: each thread keeps a running max and sum of exp
(softmax; the standardize family: Welford's count, mean and M2) for each of its values and the program reduces them
once, after the walk, where the template reduces the whole block on every step (four barriers a step, each step's
loads waiting on the last's reductions). Compiled for sm_90 (Triton 3.6): the walk loses its barriers; softmax at
CHUNK 12288 / BLOCK 4096 / 16 warps then holds 49 registers a thread (32 before: 2 programs an SM, not 4), at BLOCK
2048 / 8 warps 32.

    python3 benchmarks/h200/lane_probe.py PROBLEM OUT_DIR            # writes OUT_DIR/lane_*.py and base_*.py

Each configuration is written twice, as the template makes it (base_) and with per-lane statistics (lane_), for
`kernel_times.py PROBLEM --file ...` to time side by side at the problem's size.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

CONFIGS = ({"CHUNK": 12288, "BLOCK": 4096, "num_warps": 16, "LAST_MERGES": 0},
           {"CHUNK": 12288, "BLOCK": 2048, "num_warps": 8, "LAST_MERGES": 0},
           {"CHUNK": 8192, "BLOCK": 2048, "num_warps": 8, "LAST_MERGES": 0})

_BLOCK_STATS = """        blk_max = tl.max(x, axis=0)
        new_m = tl.maximum(m, blk_max)
        safe = tl.where(new_m == float('-inf'), 0.0, new_m)
        s = s * tl.exp(m - safe) + tl.sum(tl.where(mask, tl.exp(x - safe), 0.0), axis=0)
        m = new_m
    tl.store(m_ptr"""
_LANE_STATS = """        new_m = tl.maximum(m, x)
        safe = tl.where(new_m == float('-inf'), 0.0, new_m)
        s = s * tl.exp(m - safe) + tl.where(mask, tl.exp(x - safe), 0.0)
        m = new_m
    lane_m = m
    m = tl.max(lane_m, axis=0)
    s = tl.sum(s * tl.exp(lane_m - tl.where(m == float('-inf'), 0.0, m)), axis=0)
    tl.store(m_ptr"""
_BLOCK_INIT = """    m = tl.full((), float('-inf'), tl.float32)
    s = tl.zeros((), tl.float32)
    for start in range(0, CHUNK, BLOCK):"""
_LANE_INIT = """    m = tl.full((BLOCK,), float('-inf'), tl.float32)
    s = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, CHUNK, BLOCK):"""


# The standardize family's walk (InstanceNorm, GroupNorm, LayerNorm): Chan's merge of each block's count, mean and
# M2 (three block reductions a step, the second waiting on the first) becomes Welford's update a lane, merged by
# Chan's formula once after the walk. The values are less the row's first (pivot), as in the template.
_CHAN_INIT = """    count = tl.zeros((), tl.float32)
    piece_mean = tl.zeros((), tl.float32)
    piece_m2 = tl.zeros((), tl.float32)"""
_WELFORD_INIT = """    count = tl.zeros((BLOCK,), tl.float32)
    piece_mean = tl.zeros((BLOCK,), tl.float32)
    piece_m2 = tl.zeros((BLOCK,), tl.float32)"""
_CHAN_STEP = ("        count, piece_mean, piece_m2 = chan_step(tl.where(mask, x - pivot, 0.0), mask, count, "
              "piece_mean, piece_m2)\n    tl.store(mean_ptr + pid, piece_mean)")
_WELFORD_STEP = """        d = tl.where(mask, x - pivot, 0.0)
        count += mask.to(tl.float32)
        delta = d - piece_mean
        piece_mean += tl.where(mask, delta / tl.maximum(count, 1.0), 0.0)
        piece_m2 += tl.where(mask, delta * (d - piece_mean), 0.0)
    lane_count, lane_mean = count, piece_mean
    count = tl.sum(lane_count, axis=0)
    piece_mean = tl.sum(lane_count * lane_mean, axis=0) / tl.maximum(count, 1.0)
    spread = tl.where(lane_count > 0, lane_mean - piece_mean, 0.0)
    piece_m2 = tl.sum(piece_m2 + lane_count * spread * spread, axis=0)
    tl.store(mean_ptr + pid, piece_mean)"""


def lanes(source: str) -> str:
    """The l2_pieces kernel file with its stats walk on per-lane statistics (the online softmax's, or Welford's for
    the standardize family), the first occurrence only: the looped fallback kernel after it keeps its own."""
    if _BLOCK_STATS in source and _BLOCK_INIT in source:
        return source.replace(_BLOCK_INIT, _LANE_INIT, 1).replace(_BLOCK_STATS, _LANE_STATS, 1)
    if _CHAN_INIT in source and _CHAN_STEP in source:
        return source.replace(_CHAN_INIT, _WELFORD_INIT, 1).replace(_CHAN_STEP, _WELFORD_STEP, 1)
    raise ValueError("not an online-softmax or standardize l2_pieces file: its stats walk is not the template's")


def main(argv: list[str]) -> int:
    from kernelopt.offline.moves import structural_moves
    from kernelopt.offline.tuner import with_config

    problem, out = Path(argv[0]), Path(argv[1])
    out.mkdir(parents=True, exist_ok=True)
    moves = {m.name: m for m in structural_moves(problem).instances}
    move = next(m for name, m in moves.items() if name.endswith(".l2_pieces"))
    configs = CONFIGS if not move.name.startswith("standardize.") else (CONFIGS[0], CONFIGS[2])
    for n, config in enumerate(configs):
        source = with_config(move.source, config)
        (out / f"base_{n}.py").write_text(source)
        (out / f"lane_{n}.py").write_text(lanes(source))
        print(f"{n}: {json.dumps(config)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
