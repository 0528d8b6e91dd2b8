"""The offline policy: knobs read from the source, rules on per-program facts, the sweep's plan."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernelopt.hardware.specs import get_gpu_spec
from kernelopt.offline.judge import diagnose
from kernelopt.offline.space import SpaceLimits, feasible, kernel_groups, plan
from kernelopt.offline.tuner import (
    FIX_GROW,
    FIX_SHRINK,
    Direction,
    autotune_variants,
    direction_of,
    find_launch_params,
    knob_values,
    with_config,
)
from kernelopt.records import Roofline, SweepRow

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
H200 = get_gpu_spec("H200")


def test_parameters_come_from_constants_and_launch_keywords() -> None:
    params = {(p.name, p.value) for p in find_launch_params((EXAMPLES / "matmul" / "kernel.py").read_text())}
    assert params == {("BLOCK_M", 32), ("BLOCK_N", 32), ("BLOCK_K", 32), ("num_warps", 4), ("num_stages", 2)}


def test_a_configuration_sets_every_place_of_a_knob_and_keeps_the_rest() -> None:
    source = (EXAMPLES / "swish" / "kernel.py").read_text()
    changed_source = with_config(source, {"BLOCK_SIZE": 2048, "num_warps": 8})
    changed = [(a, b) for a, b in zip(source.splitlines(), changed_source.splitlines(), strict=True) if a != b]
    assert [b.strip() for _, b in changed] == [
        "BLOCK_SIZE = 2048",
        "swish_kernel[(triton.cdiv(n, BLOCK_SIZE),)](out, x, n, BLOCK_SIZE=BLOCK_SIZE, num_warps=8)",
    ]
    assert knob_values(changed_source) == {"BLOCK_SIZE": 2048, "num_warps": 8}


def test_a_configuration_is_written_where_it_belongs_on_a_line_with_non_ascii_text() -> None:
    # ast's columns count UTF-8 bytes: sliced as characters, "ééé" before the keywords cut the line two bytes early
    source = 'def f(x):\n    k[(1,)](x, "ééé", BLOCK=16, num_warps=4)  # 2 µs\n'
    assert with_config(source, {"BLOCK": 64, "num_warps": 8}).splitlines()[1] == \
        '    k[(1,)](x, "ééé", BLOCK=64, num_warps=8)  # 2 µs'


SEED_LAUNCHES = """
def call(x, y, out):
    poi[(8,)](x, XBLOCK=1024, num_warps=4, num_stages=1)
    tem[(8, 4)](x, y, out, BLOCK_M=64, BLOCK_N=128, BLOCK_K=32, GROUP_M=8, num_warps=8, num_stages=4)
"""


def test_a_seed_s_knobs_are_read_and_set_at_the_launch_that_sets_the_most_of_them() -> None:
    # A compiler seed's pointwise kernel, first in the file at num_stages=1, once set the scale: three stages asked
    # of the GEMM template gave it 4 x 3 (eight, capped), 532 KB of shared memory at 97's split tile on the H100.
    assert knob_values(SEED_LAUNCHES) == {"XBLOCK": 1024, "num_warps": 8, "num_stages": 4, "BLOCK_M": 64,
                                          "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8}
    changed = with_config(SEED_LAUNCHES, {"BLOCK_M": 128, "num_warps": 4, "num_stages": 3}).splitlines()
    assert changed[2].strip() == "poi[(8,)](x, XBLOCK=1024, num_warps=2, num_stages=1)"
    assert "BLOCK_M=128" in changed[3] and changed[3].endswith("num_warps=4, num_stages=3)")
    assert knob_values("\n".join(changed))["num_stages"] == 3
    # a launch is one place however it is laid out: over three lines it still leads the one-line kernel after it
    split = SEED_LAUNCHES.replace("tem[(8, 4)](x, y, out, ", "tem[(8, 4)](\n        x, y, out,\n        ").replace(
        "GROUP_M=8, num_warps", "GROUP_M=8,\n        num_warps")
    assert knob_values(split)["num_stages"] == 4 and knob_values(split)["num_warps"] == 8
    assert "num_warps=4, num_stages=3)" in with_config(split, {"num_warps": 4, "num_stages": 3})

CONSTANT_LAUNCHES = """
CONV_BLOCK_M = 64
CONV_BLOCK_N = 64

def call(x, out):
    conv[(8, 4)](x, out, BLOCK_M=CONV_BLOCK_M, BLOCK_N=CONV_BLOCK_N, num_warps=4, num_stages=3)
    poi[(8,)](out, XBLOCK=1024, num_warps=8, num_stages=1)
"""


def test_a_launch_that_passes_knob_constants_by_name_leads_the_one_that_sets_more_literals() -> None:
    # A compiler seed's convolution template reads its tile from module constants (BLOCK_M=CONV_BLOCK_M): counted by
    # literals alone, the pointwise kernel after it led, and three stages asked of the template became eight, 256 KB
    # of shared memory at the split product's first tile (level 2's 1_Conv2D_ReLU_BiasAdd on the H100).
    assert knob_values(CONSTANT_LAUNCHES) == {"CONV_BLOCK_M": 64, "CONV_BLOCK_N": 64, "num_warps": 4,
                                              "num_stages": 3, "XBLOCK": 1024}
    changed = with_config(CONSTANT_LAUNCHES, {"CONV_BLOCK_M": 128, "num_warps": 8, "num_stages": 3}).splitlines()
    assert changed[5].endswith("num_warps=8, num_stages=3)")
    assert changed[6].strip() == "poi[(8,)](out, XBLOCK=1024, num_warps=16, num_stages=1)"


LOCALS = """
class ModelNew(nn.Module):
    def forward(self, x, wide):
        block_m, block_n = 64, 64
        step = 1024
        chunk = 256
        if wide:
            chunk = 512
        rows = x.shape[0]
        out = torch.empty_like(x)
        k[(triton.cdiv(rows, block_m), triton.cdiv(x.shape[1], step))](x, out, BLOCK_M=block_m, BLOCK_N=block_n,
                                                                      BLOCK_K=block_n, STEP=step, CHUNK=chunk,
                                                                      WIDE=wide, num_warps=4)
        return out
"""


def test_a_block_passed_through_a_local_bound_once_to_a_literal_is_a_knob_and_the_grid_follows_it() -> None:
    """31 of the benchmark's 40 plain kernels pass their block as `BLOCK=block`, `block = 8192` above: the
    sweep never varied it, nor saw the 64 x 64 sides beside a matmul's swept K step. A local bound twice,
    or a parameter, is no knob; a local passed under two names is one knob."""
    assert knob_values(LOCALS) == {"BLOCK_M": 64, "BLOCK_N": 64, "STEP": 1024, "num_warps": 4}
    changed = with_config(LOCALS, {"BLOCK_M": 128, "STEP": 4096})
    assert "block_m, block_n = 128, 64" in changed and "step = 4096" in changed
    assert "triton.cdiv(rows, block_m), triton.cdiv(x.shape[1], step)" in changed  # the grid reads the same local
    assert knob_values(changed) == {"BLOCK_M": 128, "BLOCK_N": 64, "STEP": 4096, "num_warps": 4}


AUTOTUNED = '''
import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_SIZE": 256}, num_warps=2),
        triton.Config({"BLOCK_SIZE": 1024}, num_warps=4),
    ],
    key=["n"],
)
@triton.jit
def k(x_ptr, n, BLOCK_SIZE: tl.constexpr):
    pass
'''


def test_autotune_configs_are_swept_frozen_one_by_one() -> None:
    frozen = autotune_variants(AUTOTUNED)
    configs = [config for config, _ in frozen]
    assert configs == [{"BLOCK_SIZE": 256, "num_warps": 2}, {"BLOCK_SIZE": 1024, "num_warps": 4}]
    winner = frozen[1][1]
    assert "256" not in winner and winner.count("triton.Config(") == 1 and 'key=["n"]' in winner
    # the frozen winner's values are knobs of their own: the next round tunes around them
    assert knob_values(winner) == {"BLOCK_SIZE": 1024, "num_warps": 4}
    assert autotune_variants(winner) == []


def test_the_naive_swish_on_the_h200_needs_more_work_per_program_not_less() -> None:
    # NCU on the H200: 2^26 fp32 elements, BLOCK_SIZE 128, 4 warps; both SOL% just under 40
    metrics = {"launch__grid_size": 524288.0, "launch__block_size": 128.0, "dram__bytes_read.sum": 2.0**28,
               "launch__occupancy_limit_warps": 16.0, "launch__occupancy_limit_blocks": 32.0}
    roofline = Roofline(bottleneck="underutilized", compute_sol_pct=39.0, memory_sol_pct=39.5, efficiency_pct=39.7,
                        headroom_pct=60.3, at_roofline=False, uses_tensor_cores=False, source="ncu")
    source = (EXAMPLES / "swish" / "kernel.py").read_text()
    found = diagnose(roofline, metrics, source=source, spec=H200)
    assert found[0].summary == "4 B per thread in flight: too little work per program"
    assert "524288 programs, 248.2 waves" in found[0].reasoning
    assert found[1].summary.startswith("8.0 KiB in flight per SM")
    assert all(b.recommended_fixes == (FIX_GROW,) for b in found)
    assert direction_of(found[0].recommended_fixes[0]) == Direction(size=1, warps=1)


def test_a_rule_needs_a_per_program_fact_not_a_sol_percentage() -> None:
    idle = Roofline(bottleneck="underutilized", compute_sol_pct=10.0, memory_sol_pct=10.0, efficiency_pct=10.0,
                    headroom_pct=90.0, at_roofline=False, uses_tensor_cores=False, source="ncu")
    assert [b.category for b in diagnose(idle, {})] == ["other"]  # SOL% alone: no rule fires
    few = {"launch__grid_size": 66.0, "launch__block_size": 256.0, "launch__occupancy_limit_warps": 8.0}
    found = diagnose(idle, few, spec=H200)
    assert found[0].summary == "0.06 waves: too few programs" and found[0].recommended_fixes == (FIX_SHRINK,)


def test_the_matmul_loop_with_two_stages_asks_for_more() -> None:
    found = diagnose(None, {}, source=(EXAMPLES / "matmul" / "kernel.py").read_text(), spec=H200)
    assert found[0].summary.startswith("2 pipeline stage(s) for a loop stepping by BLOCK_K")
    assert direction_of(found[0].recommended_fixes[0]).stages == 1


def test_the_plan_reaches_the_sizes_that_hit_the_floor() -> None:
    swish = plan({"BLOCK_SIZE": 128, "num_warps": 4}, Direction(size=1, warps=1), [], 48)
    assert {"BLOCK_SIZE": 2048, "num_warps": 8} in swish and {"BLOCK_SIZE": 4096, "num_warps": 8} in swish
    assert swish[0] == {"BLOCK_SIZE": 128, "num_warps": 4}  # the best itself, for the ranking
    assert all(feasible(c, SpaceLimits()) for c in swish[1:])
    matmul = plan({"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32, "num_warps": 4, "num_stages": 2},
                  Direction(stages=1), [], 48)
    assert {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "num_warps": 8, "num_stages": 3} in matmul


def test_a_slower_move_is_not_repeated_and_the_next_round_jumps_the_other_way() -> None:
    centre = {"BLOCK_SIZE": 128, "num_warps": 4}
    measured = [SweepRow(config={"BLOCK_SIZE": 128, "num_warps": 4}, round=1, time_ms=0.32, stage=3),
                SweepRow(config={"BLOCK_SIZE": 64, "num_warps": 4}, round=1, time_ms=0.63, stage=1)]
    # a diagnosis that still says "shrink": the measured slower step down is not taken further
    nxt = plan(centre, Direction(size=-1), measured, 48)
    assert all(c["BLOCK_SIZE"] >= 128 for c in nxt)
    assert {"BLOCK_SIZE": 256, "num_warps": 4} in nxt
    assert not any(c in ({"BLOCK_SIZE": 128, "num_warps": 4}, {"BLOCK_SIZE": 64, "num_warps": 4}) for c in nxt)


def test_tiles_past_the_gpus_shared_memory_are_not_planned() -> None:
    """On the H200 a round-2 matmul sweep compiled BLOCK_K 512 beside 128 x 64 tiles (393,216 B at
    two stages, the hardware allows 232,448): the estimate takes the K step from the knob's name."""
    from kernelopt.offline.space import SpaceLimits, feasible, tile_smem_bytes

    limits = SpaceLimits()
    too_big = {"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 512, "num_stages": 2, "num_warps": 8}
    assert tile_smem_bytes(too_big) == 393_216 and not feasible(too_big, limits)
    wide = {"BLOCK_M": 256, "BLOCK_N": 128, "BLOCK_K": 64, "num_stages": 4, "num_warps": 8}
    assert tile_smem_bytes(wide) == 196_608 and feasible(wide, limits)  # fits: K is the small side here
    assert feasible({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "num_stages": 3, "num_warps": 8}, limits)
    unnamed = {"TILE_A": 128, "TILE_B": 64, "TILE_C": 512, "num_stages": 2}
    assert tile_smem_bytes(unnamed) == 393_216  # no K named: the side that gives the most


def test_a_fixed_k_keeps_the_sweeps_k_step_dividing_it() -> None:
    """torch 2.11's mm template with K fixed (`K = 8224`) loads its K tiles with no mask, because the compiled
    BLOCK_K divided K; a BLOCK_K of 64 there would read past each row. Such a K step is not planned."""
    from kernelopt.offline.space import SpaceLimits, feasible
    from kernelopt.offline.tuner import Direction

    limits = SpaceLimits(element_bytes=4, fixed_k=frozenset({8224}))  # 32 x 257
    tile = {"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32, "num_stages": 4, "num_warps": 4}
    assert feasible(tile, limits) and not feasible({**tile, "BLOCK_K": 64}, limits)
    assert feasible({**tile, "BLOCK_K": 64}, SpaceLimits(element_bytes=4))
    planned = plan(tile, Direction(), [], 40, limits=limits)
    assert planned and all(8224 % c["BLOCK_K"] == 0 for c in planned)
    assert any(c["BLOCK_K"] == 64 for c in plan(tile, Direction(), [], 40, limits=SpaceLimits(element_bytes=4)))


def test_a_persistent_kernels_program_count_is_no_side_of_its_tile() -> None:
    """PROGRAMS (matmul.persistent, matmul.tma, looped_resident) once counted as a block size: a resident
    row loop's {BLOCK 8192, PROGRAMS 132} read as a 2-D tile of 2,112 values a thread, so no configuration
    around a measured one was ever planned, and a persistent matmul's 128 x 128 x 64 tile at three stages
    was estimated at 298 KB of shared memory (196,608 B in Triton's own compile)."""
    from kernelopt.offline.space import limits_for, tile_smem_bytes
    from kernelopt.offline.tuner import Direction
    from kernelopt.records import SweepRow

    limits = limits_for("float32")
    resident = {"BLOCK": 8192, "num_warps": 16, "PROGRAMS": 132}
    assert feasible(resident, limits)
    measured = [SweepRow(config=resident, round=1, time_ms=4.0, trials=10, stage=1)]
    around = plan(resident, Direction(), measured, 12, limits=limits)
    assert around and resident not in around
    assert {c["PROGRAMS"] for c in around} <= {66, 132, 264} and len({c["PROGRAMS"] for c in around}) > 1
    persistent = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "num_stages": 3, "num_warps": 8, "PROGRAMS": 132}
    assert tile_smem_bytes(persistent, 4) == 196_608 and feasible(persistent, limits)


def test_an_fp32_problem_s_tiles_are_staged_at_four_bytes_so_its_knob_plan_leaves_out_what_fp16_fits() -> None:
    """On the H200 the plain fp32 matmul's BLOCK_K 256 at three stages (64 x 64 tiles: 393 KB of fp32
    operands, read as 196 KB at two bytes) compiled for 21.6 s on two warps, then took 168-288 ms a
    call against 2.6 at its best."""
    from kernelopt.offline.space import limits_for, tile_smem_bytes
    from kernelopt.offline.tuner import Direction

    fat = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 256, "num_stages": 3, "num_warps": 2}
    assert tile_smem_bytes(fat, 4) == 393_216 and tile_smem_bytes(fat) == 196_608
    assert feasible(fat, limits_for("float16")) and not feasible(fat, limits_for("float32"))
    assert not feasible(fat, limits_for(None))  # an unknown dtype is taken at four bytes
    centre = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "num_warps": 4, "num_stages": 2}
    wide = [plan(centre, Direction(), [], 400, limits=limits_for(d)) for d in ("float16", "float32")]
    staged = [{tile_smem_bytes(c, b) for c in configs} for configs, b in zip(wide, (2, 4), strict=True)]
    assert max(staged[0]) > 227 * 1024 // 2 and max(staged[1]) <= 227 * 1024  # fp16 plans tiles fp32 cannot hold
    assert len(wide[1]) < len(wide[0])


def test_a_round_of_the_plain_fp32_matmul_plans_no_tile_past_shared_memory_at_four_bytes(tmp_path: Path) -> None:
    """The round's plan (`tune._plan`) hands the problem's dtype to the estimate: at two bytes an
    element, tiles past the H200's shared memory in fp32 (a K step of 256 beside 64 x 64 tiles on
    three stages: 393 KB) would be planned for the plain fp32 matmul."""
    from helpers import fast_context

    from kernelopt.harness.problem import source_hash
    from kernelopt.nodes.tune import _plan
    from kernelopt.offline.space import tile_smem_bytes
    from kernelopt.offline.tuner import FIX_SWEEP
    from kernelopt.records import BottleneckResult, KernelRecord, Timing

    root = Path(__file__).resolve().parents[1] / "benchmarks" / "kernelbench"
    name = "1_Square_matrix_multiplication_.py"
    source = (root / "kernels" / name).read_text()
    (tmp_path / "best.py").write_text(source)
    timing = Timing(3.2, 3.2, 3.2, 3.2, 3.2, 9, "cuda_events")
    best = KernelRecord(str(tmp_path / "best.py"), source_hash(source), timing, 0)
    untuned = BottleneckResult("other", "untuned", "", ("",), (FIX_SWEEP,))
    task: dict = {"run_dir": str(tmp_path), "problem_file": str(root / "problems" / name), "gpu_key": "H200",
                  "round": 1, "repair": 0, "best": best, "failed": [], "idea": (untuned, "", FIX_SWEEP)}
    planned, _ = _plan(source, task, fast_context(tmp_path), 400)  # type: ignore[arg-type]  (past the whole space)
    own = [p.config for p in planned if not p.move]
    assert len(own) > 100 and {c["BLOCK_K"] for c in own} > {32}  # the kernel's own tiles are swept
    assert max(tile_smem_bytes(c, 4) for c in own) <= 227 * 1024  # 442,368 B planned without the dtype


def test_a_compiler_reduction_s_few_rows_count_in_the_values_each_thread_holds() -> None:
    """On the H200, round 2 of 35_GroupNorm_ from its seed (XBLOCK 1, R0_BLOCK 2048, 16 warps) measured
    XBLOCK 8-16 x R0_BLOCK 2048 on 1-4 warps: 193-410 ms a call against the seed's 5.4. A side under
    SIZE_MIN was no side, so the tile was read as a 1-D block of 2,048 values."""
    limits = SpaceLimits()
    for rows, warps in ((8, 4), (16, 4), (8, 1)):  # 128-512 values per thread
        assert not feasible({"XBLOCK": rows, "R0_BLOCK": 2048, "num_warps": warps, "num_stages": 1}, limits)
    assert feasible({"XBLOCK": 2, "R0_BLOCK": 2048, "num_warps": 16, "num_stages": 2}, limits)  # 8 per thread
    assert feasible({"XBLOCK": 1, "R0_BLOCK": 2048, "num_warps": 16, "num_stages": 1}, limits)
    assert not feasible({"XBLOCK": 2, "R0_BLOCK": 8, "num_warps": 16}, limits)  # fewer values than threads
    assert feasible({"XBLOCK": 64, "R0_BLOCK": 8, "num_warps": 4}, limits)  # the RMSNorm seed's own pick
    centre = {"XBLOCK": 1, "R0_BLOCK": 2048, "num_warps": 16, "num_stages": 1}
    planned = plan(centre, Direction(size=1), [], 48)
    assert planned and all(c["XBLOCK"] * c["R0_BLOCK"] <= 64 * 32 * c["num_warps"] for c in planned)
    # a GEMM's tile keeps its own rule: accumulators spread over tl.dot's fragments
    assert feasible({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "num_warps": 4, "num_stages": 3}, limits)


def test_a_split_move_s_winner_has_neighbours_its_piece_a_span_and_never_shorter_than_a_step() -> None:
    """On the H200, round 2 after 33_BatchNorm's split won (CHUNK 65536, BLOCK 4096, 4 warps) planned
    nothing and stopped on search_exhausted: CHUNK was taken as a tile side (65536 x 4096 accumulators
    per 128 threads) and capped at 16384. A piece is a span the program walks in BLOCK steps."""
    centre = {"CHUNK": 65536, "BLOCK": 4096, "num_warps": 4}
    measured = [SweepRow(config={"CHUNK": c, "BLOCK": b, "num_warps": w}, round=1, time_ms=3.2, stage=3)
                for c in (65536, 131072) for b in (1024, 2048, 4096) for w in (4, 8)]
    nxt = plan(centre, Direction(), measured, 12)
    assert len(nxt) == 12
    assert {"CHUNK": 65536, "BLOCK": 8192, "num_warps": 4} in nxt
    assert {"CHUNK": 65536, "BLOCK": 4096, "num_warps": 2} in nxt
    assert any(c["CHUNK"] > 131072 for c in plan(centre, Direction(), measured, 64))  # a span's range: past 16384
    limits = SpaceLimits()
    assert not feasible({"CHUNK": 2048, "BLOCK": 4096, "num_warps": 4}, limits)  # a step past the piece
    assert feasible({"CHUNK": 8192, "num_warps": 8}, limits) and not feasible({"CHUNK": 65536, "num_warps": 4}, limits)


def test_a_one_read_piece_is_held_in_registers_and_a_small_chunk_is_just_a_block() -> None:
    from kernelopt.offline.moves import standardize

    # one_read's file has CHUNK as its one size knob (its looped fallback steps by it): the values a
    # program holds, judged per thread (a 131072-value piece at 2 warps was planned while it had a BLOCK);
    # LAST_MERGES is a switch (who merges a row's statistics) the launch sweep leaves where the move put it
    assert set(knob_values(standardize.one_read(1, 1e-5, ("x",)))) == {"CHUNK", "num_warps", "LAST_MERGES"}
    around = plan({"CHUNK": 8192, "num_warps": 8, "LAST_MERGES": 0}, Direction(), [], 48)
    assert len(around) > 4 and all(c["CHUNK"] / (32 * c["num_warps"]) <= 64 for c in around[1:])
    assert {c["LAST_MERGES"] for c in around} == {0}
    # a kernel's own CHUNK below a span's size (a count of something) is a block size like any other
    assert len(plan({"CHUNK": 4, "num_warps": 4}, Direction(), [], 8)) > 1
    assert len(plan({"CHUNK": 8, "BLOCK_SIZE": 1024, "num_warps": 4}, Direction(), [], 16)) > 1


@pytest.mark.parametrize("switch", [0, 1])
def test_a_move_s_switch_is_never_swept_and_a_switch_at_zero_plans(switch: int) -> None:
    # VECTORS (rows_in_registers: 16-byte accesses or 4-byte ones) and LAST_MERGES (standardize.one_read: who
    # merges a row's statistics) are a move's structural choices: a sweep around a kernel keeps them, and one at
    # 0 is no size (planning around VECTORS = 0 divided by it)
    from kernelopt.offline.facts import ProgramFacts
    from kernelopt.offline.moves import rows, standardize

    for source in (with_config(rows.rows_in_registers("row_l1_norm", 1, ("x",)), {"VECTORS": switch}),
                   with_config(standardize.one_read(1, 1e-5, ("x",)), {"LAST_MERGES": switch})):
        centre = knob_values(source)
        around = plan(centre, Direction(), [], 16)
        name = "VECTORS" if "VECTORS" in centre else "LAST_MERGES"
        assert len(around) > 1 and {c[name] for c in around} == {switch}, around
        assert ProgramFacts(threads_per_program=256, knobs=centre).elements_per_thread is not None


def test_a_sweep_after_a_slow_one_plans_what_its_pace_fits_in_the_target() -> None:
    from kernelopt.context import Context
    from kernelopt.nodes.tune import GPU_SWEEP_CONFIGS, GPU_SWEEP_MIN_CONFIGS, INTERPRETER_SWEEP_CONFIGS, _budget

    def table(wall_s: float, configs: int) -> dict:
        return {"wall_s": wall_s, "rows": [{}] * configs}

    assert _budget(Context(), True, []) == GPU_SWEEP_CONFIGS  # a run's first sweep: the default
    assert _budget(Context(), True, [table(8.0, 48)]) == GPU_SWEEP_CONFIGS  # quick: kept
    assert _budget(Context(), True, [table(8.0, 48), table(88.0, 48)]) == 16  # 1.8 s each: 30 s fit 16
    assert _budget(Context(), True, [table(600.0, 48)]) == GPU_SWEEP_MIN_CONFIGS
    assert _budget(Context(), False, [table(600.0, 6)]) == INTERPRETER_SWEEP_CONFIGS  # interpreter times: no pace
    assert _budget(Context(sweep_configs=20), True, [table(600.0, 48)]) == 20  # the setting wins


def test_sweep_tables_load_in_the_order_they_were_made(tmp_path: Path) -> None:
    # A repair's table (round-002-a1) comes after its round's, not before it as the names sort:
    # the pace of the next sweep is read from the last table.
    from kernelopt.nodes.tune import load_tables, table_path

    for round_, repair in ((2, 1), (10, 0), (2, 0), (1, 0), (2, 2)):
        path = table_path(tmp_path, round_, repair)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"round": round_, "repair": repair, "rows": []}))
    assert [(t["round"], t["repair"]) for t in load_tables(tmp_path)] == [(1, 0), (2, 0), (2, 1), (2, 2), (10, 0)]


def test_each_kernel_of_a_two_kernel_file_is_judged_on_its_own_knobs_and_warps() -> None:
    # separable.two_pass: the GEMM's tile at num_warps/num_stages beside the rows stencil's strip at DW_WARPS. Judged
    # as one tile, the strip's 512 joined the GEMM's sides and every configuration of the move asked 246 KB of
    # shared memory at four bytes (over 227 KB), the template's own included.
    limits = SpaceLimits(element_bytes=4)
    two = {"CONV_BLOCK_M": 64, "CONV_BLOCK_N": 64, "CONV_BLOCK_K": 32, "num_warps": 4, "num_stages": 3,
           "DW_ROWS": 16, "DW_ROW_W": 512, "DW_WARPS": 4}
    assert kernel_groups(two) == [{"CONV_BLOCK_M": 64, "CONV_BLOCK_N": 64, "CONV_BLOCK_K": 32, "num_warps": 4,
                                   "num_stages": 3}, {"DW_ROWS": 16, "DW_ROW_W": 512, "num_warps": 4}]
    assert feasible(two, limits) and feasible({**two, "CONV_BLOCK_M": 128, "CONV_BLOCK_N": 128, "num_warps": 8}, limits)
    assert not feasible({**two, "DW_ROW_W": 16384, "DW_ROWS": 64, "DW_WARPS": 1}, limits)  # the strip's own bound
    planned = plan(two, Direction(), [], 12, limits=limits)
    assert planned and all(c["DW_ROW_W"] in (256, 512, 1024) and c["DW_ROWS"] in (8, 16, 32) for c in planned)
    # a launch's warps under a constant of its own name (NUM_WARPS) is held to the values a thread may hold
    assert not feasible({"BLOCK_SIZE": 16384, "NUM_WARPS": 1}, limits)
    assert feasible({"BLOCK_SIZE": 1024, "NUM_WARPS": 4}, limits)
