"""Structural moves: the family read from the reference, each template verified on a tiny problem,
and the offline optimizer measuring, choosing and accepting a move in a whole run."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from helpers import fast_context, product_problem, run_graph

from kernelopt.harness.problem import source_hash
from kernelopt.harness.verify import HarnessSettings, Verifier
from kernelopt.offline.moves import matmul, matmul_kmajor, matmul_tma, pooling3d, resident, rows, structural_moves
from kernelopt.offline.moves.family import trace_family
from kernelopt.offline.structures import alive_plans, dead_moves, measured_moves, move_plans
from kernelopt.offline.tuner import knob_values, with_config

ROOT = Path(__file__).parents[1]
MOVES = Path(__file__).parent / "data" / "moves"
PROBLEMS = ROOT / "benchmarks" / "kernelbench" / "problems"


def _family(path: Path):  # noqa: ANN202 - a Family
    from kernelopt.harness.problem import import_file

    return trace_family(import_file(path, "kernelopt_test_family"))


@pytest.mark.parametrize(
    ("problem", "name", "dim"),
    [
        (PROBLEMS / "23_Softmax.py", "softmax", 1),
        (PROBLEMS / "24_LogSoftmax.py", "log_softmax", 1),
        (PROBLEMS / "38_L1Norm_.py", "row_l1_norm", 1),
        (PROBLEMS / "39_L2Norm_.py", "row_l2_norm", 1),
        (MOVES / "softmax3d.py", "softmax", 1),
        (PROBLEMS / "19_ReLU.py", "elementwise", None),
        (PROBLEMS / "27_SELU_.py", "elementwise", None),  # aten.elu with SELU's two constants
        (PROBLEMS / "89_cumsum.py", "scan", 1),
        (PROBLEMS / "94_MSELoss.py", "other", None),  # no template written for a loss
        (PROBLEMS / "36_RMSNorm_.py", "row_rms_norm", 1),
        (PROBLEMS / "37_FrobeniusNorm_.py", "other", None),  # a norm over every dim: no row
        (PROBLEMS / "34_InstanceNorm.py", "standardize", 2),  # rows from dim 2 on: each (batch, channel) plane
        (MOVES / "instance_norm.py", "standardize", 2),
        (PROBLEMS / "40_LayerNorm.py", "standardize", 1),  # with its weight and bias (the affine form)
        (MOVES / "layer_norm.py", "standardize", 1),
        (PROBLEMS / "35_GroupNorm_.py", "standardize", 1),  # 8 groups of 8 channels: 8 rows a sample
        (MOVES / "group_norm.py", "standardize", 1),
    ],
)
def test_the_family_is_read_from_the_reference_on_meta(problem: Path, name: str, dim: int | None) -> None:
    family = _family(problem)
    assert (family.name, family.dim) == (name, dim)


def test_a_transposed_operand_is_seen_as_one() -> None:
    family = _family(PROBLEMS / "17_Matmul_with_transposed_B.py")
    assert family.name == "matmul" and family.operands == (0, 1) and family.transposed == (False, True)
    assert _family(MOVES / "matmul_bt.py").transposed == (False, True)
    batched = _family(MOVES / "bmm.py")  # B.transpose(1, 2): the last two dims, a matrix's transpose
    assert batched.name == "bmm" and batched.operands == (0, 1) and batched.transposed == (False, True)
    assert _family(PROBLEMS / "3_Batched_matrix_multiplication.py").transposed == (False, False)


def test_a_view_that_is_no_matrix_transpose_leaves_the_operand_unknown(tmp_path: Path) -> None:
    # bmm(A.transpose(0, 1), B) swaps batch and rows: no template's operand, so no template at all.
    source = (MOVES / "bmm.py").read_text().replace("torch.bmm(A, B.transpose(1, 2))",
                                                      "torch.bmm(A.transpose(0, 1), B.transpose(1, 2))")
    (tmp_path / "bmm_swapped.py").write_text(source.replace("torch.randn(BATCH, M, K)", "torch.randn(M, BATCH, K)"))
    assert _family(tmp_path / "bmm_swapped.py").name == "other"


def test_moves_that_do_not_apply_say_why() -> None:
    softmax = structural_moves(PROBLEMS / "23_Softmax.py")  # 4096 rows of 393,216
    assert [m.name for m in softmax.instances] == ["softmax.looped_online", "softmax.one_read", "softmax.l2_pieces"]
    # every piece of a row resident at once: no more pieces than the SMs are estimated to hold (132 on the H200)
    assert all(-(-393216 // c["CHUNK"]) <= 132 * resident.per_sm(resident.estimated_registers(
        c["CHUNK"] // (32 * c["num_warps"])), c["num_warps"]) for c in softmax.instances[1].grid)
    # 96 pieces: the fastest on the H200; each piece merges (LAST_MERGES 0: fewer than two pieces an SM)
    assert softmax.instances[1].grid[0] == {"CHUNK": 4096, "num_warps": 8, "LAST_MERGES": 0}
    assert {c["LAST_MERGES"] for c in softmax.instances[1].grid} == {0}
    # 24 SMs hold 96 pieces of 4096 (4 an SM at an estimated 64 registers a thread); 23 hold no launch's pieces
    few_sms = {m.name: m.grid for m in structural_moves(PROBLEMS / "23_Softmax.py", sm_count=24).instances}
    assert few_sms["softmax.one_read"][:2] == ({"CHUNK": 4096, "num_warps": 8, "LAST_MERGES": 0},
                                               {"CHUNK": 4096, "num_warps": 8, "LAST_MERGES": 1})  # 4 pieces an SM
    tiny_gpu = {s.name: s.why for s in structural_moves(PROBLEMS / "23_Softmax.py", sm_count=23).skipped}
    assert "needs more pieces than the 23 SMs are estimated to hold at once" in tiny_gpu["softmax.one_read"]
    why = {s.name: s.why for s in softmax.skipped}
    assert "393216 values is more than" in why["softmax.rows_in_registers"]
    # l2_pieces: the pieces resident at once keep their values within half of L2 (an H100's 50 MiB when told
    # nothing), the programs an SM holds bounded by its threads alone (a compile of fewer registers holds more)
    l2 = softmax.instances[2]
    assert l2.grid[0]["CHUNK"] == 12288 and all(
        132 * min(resident.SM_PROGRAMS, 2048 // (32 * c["num_warps"])) * c["CHUNK"] * 4 <= 0.5 * 50 * 2**20
        for c in l2.grid)
    assert {"CHUNK": 16384, "BLOCK": 4096, "num_warps": 16, "LAST_MERGES": 0} not in l2.grid  # 33 MiB at 4 an SM
    tiny_l2 = {s.name: s.why for s in structural_moves(PROBLEMS / "23_Softmax.py", l2_mb=4).skipped}
    assert "within 50% of the 4 MiB L2" in tiny_l2["softmax.l2_pieces"]
    assert "4096 rows already give" in why["softmax.split_row"]
    # a 1.5 MiB row on each of 132 SMs is 198 MiB in flight: no L2 holds them between the passes
    assert "1.50 MiB on each of 132 SMs is more than 60% of the 60 MiB L2" in \
        {s.name: s.why for s in structural_moves(PROBLEMS / "23_Softmax.py", l2_mb=60).skipped}[
            "softmax.looped_resident"]
    large_k = structural_moves(PROBLEMS / "6_Matmul_with_large_K_dimension_.py")
    assert {m.name for m in large_k.instances} == {"matmul.grouped", "matmul.split_k", "matmul.grouped_tf32x3",
                                                   "matmul.split_k_tf32x3", "matmul.k_major_tf32x3",
                                                   "matmul.k_major_split_k_tf32x3", "matmul.split_k_f16x3",
                                                   "matmul.split_k_parts"}
    assert "TMA tiles are tried for 16-bit operands" in {s.name: s.why for s in large_k.skipped}["matmul.tma"]
    split = next(m for m in large_k.instances if m.name == "matmul.split_k")
    programs = [-(-256 // c["BLOCK_M"]) * -(-256 // c["BLOCK_N"]) * c["SPLIT_K"] for c in split.grid]
    assert all(66 <= p <= 264 for p in programs[:3])  # a 256 x 256 output: each tile's first split fills the 132 SMs
    assert {c["SPLIT_K"] for c in split.grid} >= {16, 32, 64} and all(524288 // c["SPLIT_K"] >= 2 * c["BLOCK_K"]
                                                                       for c in split.grid)
    square = structural_moves(PROBLEMS / "1_Square_matrix_multiplication_.py")
    assert [m.name for m in square.instances] == ["matmul.grouped", "matmul.persistent", "matmul.grouped_tf32x3",
                                                  "matmul.persistent_tf32x3", "matmul.k_major_tf32x3",
                                                  "matmul.split_f16", "matmul.split_f16_tma", "matmul.split_tf32"]
    assert square.instances[-4].why.startswith("B stored with K strided")
    transposed_b = {s.name: s.why for s in structural_moves(PROBLEMS / "17_Matmul_with_transposed_B.py").skipped}
    assert "stored with K contiguous and rows of a multiple of 16" in transposed_b["matmul.k_major_tf32x3"]
    assert {c["PROGRAMS"] for c in square.instances[1].grid} == {132, 264}
    assert "already fill 132 SMs" in {s.name: s.why for s in square.skipped}["matmul.split_k"]
    assert "load aligned already" in {s.name: s.why for s in square.skipped}["matmul.aligned"]
    irregular = structural_moves(PROBLEMS / "8_Matmul_with_irregular_shapes_.py")  # K=2949, N=5921
    aligned = {m.name: m for m in irregular.instances if m.name.startswith("matmul.aligned")}
    assert set(aligned) == {"matmul.aligned", "matmul.aligned_tf32x3"}
    assert "A's 2949, B's 5921 elements are no multiple of 16" in aligned["matmul.aligned"].why
    k_major = next(m for m in irregular.instances if m.name == "matmul.k_major_tf32x3")
    assert "B stored with K strided" in k_major.why and "K=2949, no multiple of 16" in k_major.why
    assert "compute" in aligned["matmul.aligned_tf32x3"].cures  # the FMA diagnosis puts its 3xTF32 form first
    loss = structural_moves(PROBLEMS / "94_MSELoss.py")
    assert not loss.instances
    assert "no template for this reference (its operators: sub, pow, mean)" in loss.skipped[0].why


def test_fp32_matmul_never_runs_on_tf32() -> None:
    family = _family(MOVES / "matmul_bt.py")
    for source in (matmul.grouped(family.input_names, family.operands, family.transposed),
                   matmul.split_k(family.input_names, family.operands, family.transposed)):
        assert 'precision = "ieee" if a.dtype == torch.float32' in source
        assert "input_precision=PRECISION" in source
        twin = matmul.on_tensor_cores(source)  # three TF32 products, never one
        assert 'precision = "tf32x3" if a.dtype == torch.float32' in twin and '"ieee"' not in twin


def test_an_fp32_matmul_gets_a_3xtf32_twin_of_each_template_and_fp16_gets_none() -> None:
    square = structural_moves(PROBLEMS / "1_Square_matrix_multiplication_.py")
    by_name = {m.name: m for m in square.instances}
    for name in ("matmul.grouped", "matmul.persistent"):
        twin = by_name[f"{name}_tf32x3"]
        assert twin.source == matmul.on_tensor_cores(by_name[name].source)
        assert "compute" in twin.cures and "3xTF32" in twin.why
    # K-major tiles at 3xTF32 start from a deep K tile (round 2 found BLOCK_K 64 in every K-major 3xTF32 matmul
    # of pass c3), with no K tile of 16: the K-major copy's, and a twin's whose operands are stored K-major
    # (B transposed); a strided B's twin, transposing its tiles each K step, and the persistent grid keep theirs
    deep = by_name["matmul.k_major_tf32x3"].grid
    assert deep[0]["BLOCK_K"] == 64 and all(c["BLOCK_K"] >= 32 for c in deep), deep
    assert {c["BLOCK_K"] for c in by_name["matmul.grouped"].grid} == {16, 32}
    assert by_name["matmul.grouped_tf32x3"].grid == by_name["matmul.grouped"].grid
    assert by_name["matmul.persistent_tf32x3"].grid == by_name["matmul.persistent"].grid
    stored = {m.name: m.grid for m in structural_moves(PROBLEMS / "17_Matmul_with_transposed_B.py").instances}
    assert stored["matmul.grouped_tf32x3"] == deep and "matmul.k_major_tf32x3" not in stored
    batched = {m.name: m.grid for m in structural_moves(PROBLEMS / "3_Batched_matrix_multiplication.py").instances}
    assert batched["bmm.k_major_tf32x3"] == deep
    assert batched["bmm.batched_tf32x3"] == batched["bmm.batched"] == by_name["matmul.grouped"].grid
    # an A100's 163 KB of shared memory holds no 128 x 128 x 64 fp32 tile at three stages
    ampere = {m.name: m.grid for m in structural_moves(PROBLEMS / "1_Square_matrix_multiplication_.py",
                                                         capability="8.0").instances}
    assert ampere["matmul.k_major_tf32x3"] == by_name["matmul.grouped"].grid
    half = structural_moves(ROOT / "examples" / "matmul" / "problem.py")  # fp16: the tensor cores are its own
    assert half.family is not None and half.family.dtype == "float16"
    assert not any("tf32x3" in m.name for m in half.instances)
    # fp16 rows of whole 16-byte units: its tiles can come by TMA, over one or two programs an SM
    tma = next(m for m in half.instances if m.name == "matmul.tma")
    assert {c["PROGRAMS"] for c in tma.grid} == {132, 264} and "tensor descriptors" in tma.why


def test_split_k_counts_keep_two_k_steps_a_slice_and_fall_back_to_the_largest_that_does() -> None:
    deep = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}
    assert matmul.split_counts(256, 256, 524288, deep, 132) == [32, 64, 16]  # 4 tiles: 128 programs first
    # K 2048 at BLOCK_K 64: 32 steps, so at most 16 slices of two; the SM-filling guesses (32, 64, 16) keep 16
    assert matmul.split_counts(256, 256, 2048, deep, 132) == [16]
    # K 1024: 16 slices would be one step each; 8 slices of two is the largest split, though fewer than the SMs want
    assert matmul.split_counts(256, 256, 1024, deep, 132) == [8]
    assert matmul.split_counts(256, 256, 200, deep, 132) == []  # not even two slices of two steps


def test_a_long_k_with_b_stored_n_major_gets_the_k_major_copy_before_the_split_product() -> None:
    # 6_Matmul (256 x 524288 by 524288 x 256, B as stored): 4 output tiles, so K is split; B's K is strided,
    # so a 3xTF32 product transposes each B tile every K step (its best in pass c3: split_k_tf32x3 at 1.27 ms,
    # 40% of the floor). The K-major copy goes before the split product too, at the deep K tiles, each tile's
    # SPLIT_K guess filling the 132 SMs about once.
    large_k = {m.name: m for m in structural_moves(PROBLEMS / "6_Matmul_with_large_K_dimension_.py").instances}
    move = large_k["matmul.k_major_split_k_tf32x3"]
    assert "B stored with K strided" in move.why
    assert "K=524288 split in SPLIT_K slices for the 4 output tiles" in move.why
    assert 'precision = "tf32x3"' in move.source and "k_major_kernel" in move.source and "partial_kernel" in move.source
    assert move.grid[0]["BLOCK_K"] == 64 and all(c["BLOCK_K"] >= 32 for c in move.grid)
    programs = [-(-256 // c["BLOCK_M"]) * -(-256 // c["BLOCK_N"]) * c["SPLIT_K"] for c in move.grid]
    assert all(66 <= p <= 264 for p in programs[:3]), programs
    assert "compute" in move.cures and "occupancy" in move.cures
    # B stored transposed (K contiguous): no copy, so no K-major split either, and why
    skipped = {s.name: s.why for s in structural_moves(PROBLEMS / "17_Matmul_with_transposed_B.py").skipped}
    assert "stored with K contiguous" in skipped["matmul.k_major_split_k_tf32x3"]
    # a square 4096 product fills the SMs with its own tiles: the K-major copy, no split
    square = structural_moves(PROBLEMS / "1_Square_matrix_multiplication_.py")
    assert "matmul.k_major_tf32x3" in [m.name for m in square.instances]
    assert "already fill 132 SMs" in {s.name: s.why for s in square.skipped}["matmul.k_major_split_k_tf32x3"]


@pytest.mark.parametrize(("template", "problem"), [("grouped", "matmul_bt.py"), ("split_k", "matmul_bt.py"),
                                                  ("aligned", "matmul.py"), ("batched", "bmm.py"),
                                                  ("k_major", "matmul.py"), ("bmm_k_major", "bmm.py"),
                                                  ("k_major_split_k", "matmul.py")])
def test_each_3xtf32_twin_passes_the_verifier(
    template: str, problem: str, tmp_path: Path, settings: HarnessSettings
) -> None:
    # The interpreter multiplies in fp32 whatever the precision: this checks the twin is a whole,
    # correct kernel that Triton accepts; its accuracy and speed on tensor cores are the GPU's to show.
    family = _family(MOVES / problem)
    module = matmul_kmajor if "k_major" in template else matmul
    source = matmul.on_tensor_cores(getattr(module, template)(family.input_names, family.operands, family.transposed))
    config = {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 2, "SPLIT_K": 3}
    accepted, reason = _verify(MOVES / problem, with_config(source, config), tmp_path, settings)
    assert accepted, reason


# (file, the reduction written in its place, the family's op): every reduction and both structures.
REDUCTIONS = [
    ("reduce_argmax.py", None, "argmax"),
    ("reduce_argmax.py", "torch.sum(x, dim=1, keepdim=True)", "sum"),
    ("reduce_argmax.py", "torch.max(x, dim=1)[0]", "max"),
    ("reduce_mean_last.py", None, "mean"),
    ("reduce_mean_last.py", "torch.min(x, dim=-1)[1]", "argmin"),
    ("reduce_mean_last.py", "torch.amax(x, dim=2)", "amax"),
    ("reduce_argmax.py", "torch.prod(x, dim=1)", "prod"),  # the wide case overflows: the reference drops it
    ("reduce_argmax.py", "torch.norm(x, dim=1)", "norm2"),
    ("reduce_mean_last.py", "torch.norm(x, p=1, dim=-1, keepdim=True)", "norm1"),
    ("reduce_argmax.py", "torch.logsumexp(x, dim=1)", "logsumexp"),
    ("reduce_mean_last.py", "torch.logsumexp(x, dim=-1, keepdim=True)", "logsumexp"),
]


@pytest.mark.parametrize(("problem", "expression", "op"), REDUCTIONS)
def test_each_reduction_template_passes_the_verifier(
    problem: str, expression: str | None, op: str, tmp_path: Path, settings: HarnessSettings
) -> None:
    path = MOVES / problem
    if expression:
        source = path.read_text()
        written = source.replace("torch.argmax(x, dim=1)", expression).replace("torch.mean(x, dim=-1)", expression)
        path = tmp_path / problem
        path.write_text(written)
    moves = structural_moves(path)
    assert moves.family is not None and (moves.family.name, moves.family.ops) == ("reduce", (op,))
    (move,) = moves.instances
    structure = "rows" if problem == "reduce_mean_last.py" else "columns"
    assert move.name == f"reduce_{op}.{structure}"
    small = {"ROWS": 2, "BLOCK": 64, "BLOCK_N": 8, "BLOCK_I": 16}  # every loop runs several blocks, edges masked
    accepted, reason = _verify(path, with_config(move.source, small), tmp_path, settings)
    assert accepted, reason


def test_a_reduction_over_every_dim_or_with_two_outputs_is_no_row(tmp_path: Path) -> None:
    source = (MOVES / "reduce_argmax.py").read_text()
    for expression in ("torch.sum(x)", "torch.max(x, dim=1)", "torch.sum(x, dim=(1, 2))"):
        (tmp_path / "p.py").write_text(source.replace("torch.argmax(x, dim=1)", expression))
        assert _family(tmp_path / "p.py").name == "other", expression


def test_the_batched_matmul_is_a_move_of_torch_bmm_problems(tmp_path: Path) -> None:
    bmm = structural_moves(PROBLEMS / "3_Batched_matrix_multiplication.py")
    assert [m.name for m in bmm.instances] == ["bmm.batched", "bmm.batched_tf32x3", "bmm.k_major_tf32x3",
                                               "bmm.split_f16", "bmm.split_f16_tma", "bmm.split_tf32",
                                               "bmm.split_f16_regs", "bmm.batched_f16x3"]
    assert "bmm_kernel" in bmm.instances[0].source and "B.transpose" not in bmm.instances[0].source
    assert 'precision = "tf32x3"' in bmm.instances[1].source and "compute" in bmm.instances[1].cures
    # each batch of B is stored K x N (N contiguous): copied K-major before the TF32 products
    k_major = bmm.instances[2]
    assert "B stored with K strided" in k_major.why and "each batch copied K-major" in k_major.why
    assert 'precision = "tf32x3"' in k_major.source and "k_major_kernel" in k_major.source
    # B entering transposed (stored N x K) with K=36: K contiguous, but no multiple of 16, so both are padded
    small = {m.name: m.why for m in structural_moves(MOVES / "bmm.py").instances}
    assert "K=36, no multiple of 16" in small["bmm.k_major_tf32x3"] and "stored with K strided" not in small[
        "bmm.k_major_tf32x3"]
    aligned = tmp_path / "bmm_aligned.py"  # K contiguous in both, K=64: nothing to copy, and the report says why
    sizes = "BATCH, M, K, N = 3, 20, 36, 12"
    aligned.write_text((MOVES / "bmm.py").read_text().replace(sizes, sizes.replace("36", "64")))
    skipped = {s.name: s.why for s in structural_moves(aligned).skipped}
    assert "stored with K contiguous" in skipped["bmm.k_major_tf32x3"]


def test_a_matmul_of_a_3d_tensor_and_a_matrix_takes_the_matmul_moves_on_its_rows(tmp_path: Path, settings) -> None:
    # torch.matmul(A, B), A (N, M, K), B (K, L): a view of A as N*M rows, then mm (KernelBench's 3-D tensor-matrix
    # product): each 2-D template runs on the rows and gives them back their dims
    moves = structural_moves(MOVES / "matmul3d.py")
    assert moves.family is not None and moves.family.name == "matmul" and moves.family.rows_flattened
    names = [m.name for m in moves.instances]
    assert names == ["matmul.grouped", "matmul.aligned", "matmul.grouped_tf32x3", "matmul.aligned_tf32x3",
                     "matmul.k_major_tf32x3"], names
    skipped = {s.name: s.why for s in moves.skipped}
    assert "24 output tiles" not in skipped["matmul.persistent"] and "1 output tiles" in skipped["matmul.persistent"]
    config = {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 2}
    for move in moves.instances:
        assert "a, b = A.reshape(-1, A.shape[-1]), " in move.source
        assert "_lead_dims = A.shape[:-1]" in move.source and "return c.view(*_lead_dims, -1)" in move.source
        (tmp_path / move.name).mkdir()
        accepted, reason = _verify(MOVES / "matmul3d.py", with_config(move.source, config), tmp_path / move.name,
                                   settings)
        assert accepted, (move.name, reason)
    # an A whose leading dims are swapped cannot be viewed as rows (torch.matmul copies it): not a matmul then
    swapped = tmp_path / "matmul3d_t.py"
    swapped.write_text((MOVES / "matmul3d.py").read_text().replace("torch.matmul(A, B)",
                                                                   "torch.matmul(A.transpose(0, 1), B)"))
    family = structural_moves(swapped).family
    assert family is not None and family.name == "other"



def test_an_einsum_product_takes_the_matmul_moves_read_from_its_operands_memory(tmp_path: Path, settings) -> None:
    # torch.einsum("bijl,lk->bijk"): unsqueezes, permutes of sizes of 1 and views, then a bmm of one batch. Its
    # operands are A's memory as rows and B as it lies, the result the product's memory: the 2-D templates on rows
    moves = structural_moves(MOVES / "einsum4d.py")
    assert moves.family is not None and moves.family.name == "matmul" and moves.family.rows_flattened
    assert moves.family.operands == (0, 1) and moves.family.transposed == (False, False)
    config = {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 2}
    for move in [m for m in moves.instances if m.name in ("matmul.grouped", "matmul.grouped_tf32x3")]:
        assert "_lead_dims = A.shape[:-1]" in move.source and "return c.view(*_lead_dims, -1)" in move.source
        (tmp_path / move.name).mkdir()
        accepted, reason = _verify(MOVES / "einsum4d.py", with_config(move.source, config), tmp_path / move.name,
                                   settings)
        assert accepted, (move.name, reason)


@pytest.mark.parametrize(("forward", "inputs", "expected"), [
    # products einsum and tensordot reach through views: each operand an input's memory as a matrix or its transpose
    ('torch.einsum("ik,kj->ij", A, B)', "[torch.randn(M, K), torch.randn(K, L)]", ("matmul", (0, 1), (False, False))),
    ('torch.einsum("ki,kj->ij", A, B)', "[torch.randn(K, M), torch.randn(K, L)]", ("matmul", (0, 1), (True, False))),
    ('torch.einsum("ik,jk->ij", A, B)', "[torch.randn(M, K), torch.randn(L, K)]", ("matmul", (0, 1), (False, True))),
    ('torch.einsum("ij,jk->ki", A, B)', "[torch.randn(M, K), torch.randn(K, L)]", ("matmul", (1, 0), (True, True))),
    ("torch.tensordot(A, B, dims=([2], [0]))", "[torch.randn(N, M, K), torch.randn(K, L)]",
     ("matmul", (0, 1), (False, False))),
    ('torch.einsum("bik,bkj->bij", A, B)', "[torch.randn(N, M, K), torch.randn(N, K, L)]",
     ("bmm", (0, 1), (False, False))),
    ('torch.einsum("bik,bjk->bij", A, B)', "[torch.randn(N, M, K), torch.randn(N, L, K)]",
     ("bmm", (0, 1), (False, True))),
    # what no template computes: an operand that is part of an input or a permuted copy, the result permuted
    ('torch.einsum("bij,jk->bik", A.transpose(0, 1), B)', "[torch.randn(M, N, K), torch.randn(K, L)]", None),
    ('torch.einsum("ik,kj->ij", A[1:], B)', "[torch.randn(M, K), torch.randn(K, L)]", None),
    ('torch.einsum("bik,kj->bji", A, B)', "[torch.randn(N, M, K), torch.randn(K, L)]", None),
    ('torch.einsum("ik,kj->ij", A, B).unsqueeze(0)', "[torch.randn(M, K), torch.randn(K, L)]", None),
    ('torch.einsum("bik,kj->bij", A, B.reshape(K, L))', "[torch.randn(N, M, K), torch.randn(K * L)]", None),
])
def test_a_product_is_read_from_where_its_operands_lie_in_memory(forward: str, inputs: str, expected: Any,
                                                                   tmp_path: Path) -> None:
    problem = product_problem(tmp_path, forward, inputs)
    family = structural_moves(problem).family
    assert family is not None
    if expected is None:
        assert family.name == "other", family
    else:
        assert (family.name, family.operands, family.transposed) == expected, family


@pytest.mark.parametrize(("forward", "inputs"), [
    # mm of A's rows written out and returned 2-D: the templates would give back A's dims
    ("torch.mm(A.reshape(-1, A.shape[-1]), B)", "[torch.randn(N, M, K), torch.randn(K, L)]"),
    # W (L, K) @ X's rows transposed: no template takes an operand of more dims as its matrix B
    ("torch.mm(A, B.reshape(-1, B.shape[-1]).t())", "[torch.randn(L, K), torch.randn(N, M, K)]"),
    # X's rows transposed as A: the transpose of a view is not an input's
    ("torch.mm(B.reshape(-1, B.shape[-1]).t(), A)", "[torch.randn(N * M, L), torch.randn(N, M, K)]"),
])
def test_a_view_of_an_input_as_rows_is_taken_only_as_torch_matmuls_own_a(forward: str, inputs: str,
                                                                          tmp_path: Path) -> None:
    problem = product_problem(tmp_path, forward, inputs)
    family = structural_moves(problem).family
    assert family is not None and family.name == "other" and not family.rows_flattened, family


@pytest.mark.parametrize(("forward", "inputs"), [
    # the product transposed where the shapes still agree (m == n; square), cast, or returned beside an input:
    # the templates return the product itself
    ("torch.matmul(A, B).transpose(1, 2)", "[torch.randn(N, L, K), torch.randn(K, L)]"),
    ("torch.mm(A.reshape(-1, A.shape[-1]), B).t().reshape(A.shape[0], A.shape[1], -1)",
     "[torch.randn(N, M, K), torch.randn(K, N * M)]"),
    ("torch.matmul(A, B).half()", "[torch.randn(N, M, K), torch.randn(K, L)]"),
    ("torch.mm(A, B).t()", "[torch.randn(L, K), torch.randn(K, L)]"),
    ("(torch.mm(A, B), A)", "[torch.randn(L, K), torch.randn(K, L)]"),
])
def test_only_the_product_itself_returned_is_the_matmul_family(forward: str, inputs: str, tmp_path: Path) -> None:
    problem = product_problem(tmp_path, forward, inputs)
    family = structural_moves(problem).family
    assert family is not None and family.name == "other", family
    # the product through a plain view of the same values is
    problem.write_text((MOVES / "matmul3d.py").read_text().replace(
        "torch.matmul(A, B)", "torch.mm(A.reshape(-1, A.shape[-1]), B).view(A.shape[0], A.shape[1], -1)"))
    assert structural_moves(problem).family.name == "matmul"


def test_a_batch_norm_of_an_inputs_rows_is_not_the_batch_norm_family(tmp_path: Path) -> None:
    # BatchNorm1d over a 3-D input viewed as (rows, C): its channels are the last dim, not the template's dim 1
    problem = tmp_path / "problem.py"
    problem.write_text((MOVES / "batch_norm.py").read_text()
                       .replace("nn.BatchNorm2d(num_features)", "nn.BatchNorm1d(num_features)")
                       .replace("return self.bn(x)", "return self.bn(x.reshape(-1, x.shape[-1]))")
                       .replace("torch.randn(batch, features, height, width)", "torch.randn(batch, height, features)"))
    family = structural_moves(problem).family
    assert family is not None and family.name == "other", family
    # the same module on the input itself is the family
    plain = tmp_path / "plain.py"
    plain.write_text((MOVES / "batch_norm.py").read_text())
    assert structural_moves(plain).family.name == "batch_norm"


def test_rows_a_row_per_sm_of_which_fits_l2_get_the_resident_loop() -> None:
    # 38_L1Norm_: 32768 rows of 65535 fp32 (0.25 MiB): a row on each of 132 SMs is 33 MiB, within 60% of an
    # H200's 60 MiB L2 (two per SM are not); an H100's 50 MiB leaves 30 for them: too few
    problem = PROBLEMS / "38_L1Norm_.py"
    h200 = structural_moves(problem, 132, l2_mb=60)
    names = [m.name for m in h200.instances]
    assert names == ["row_l1_norm.looped_resident", "row_l1_norm.looped_online", "row_l1_norm.one_read"], names
    assert "rows of 65535 start off a 16-byte boundary" in {s.name: s.why for s in h200.skipped}[
        "row_l1_norm.l2_pieces"]
    resident = h200.instances[0]
    assert {c["PROGRAMS"] for c in resident.grid} == {132} and resident.grid[0] == {
        "BLOCK": 8192, "num_warps": 16, "PROGRAMS": 132}
    assert "memory" in resident.cures and 'eviction_policy="evict_last"' in resident.source
    h100 = {s.name: s.why for s in structural_moves(problem, 132, l2_mb=50).skipped}
    assert "0.25 MiB on each of 132 SMs is more than 60% of the 50 MiB L2" in h100["row_l1_norm.looped_resident"]
    # fewer SMs: two rows per SM fit, the persistent programs sweep both
    assert {c["PROGRAMS"] for c in structural_moves(problem, 66, l2_mb=60).instances[0].grid} == {66, 132}
    # rows that fit registers, or a wave of rows: nothing to keep in L2
    few = {s.name: s.why for s in structural_moves(problem, 40000, l2_mb=1e6).skipped}
    assert "32768 rows are a program per row in one wave already" in few["row_l1_norm.looped_resident"]


# Small knob values so that every loop runs several blocks and every edge is masked.
ROW_CASES = [
    (problem, template, config)
    for problem in ("softmax3d.py", "log_softmax.py", "l1norm.py", "l2norm.py")
    for template, config in (("rows_in_registers", {"ROWS": 4}), ("looped_online", {"BLOCK": 16}),
                             ("split_row", {"CHUNK": 32, "BLOCK": 16}), ("one_read", {"CHUNK": 32}),
                             ("looped_resident", {"BLOCK": 16, "PROGRAMS": 3}),
                             ("l2_pieces", {"CHUNK": 32, "BLOCK": 16}))
]


def _verify(problem: Path, source: str, tmp_path: Path, settings: HarnessSettings) -> tuple[bool, str]:
    kernel = tmp_path / "kernel.py"
    kernel.write_text(source)
    verdict = Verifier(problem, tmp_path / "harness", settings).verify(kernel, time=False)
    return verdict.accepted, verdict.reason


@pytest.mark.parametrize(("problem", "template", "config"), ROW_CASES)
def test_each_row_template_passes_the_verifier(
    problem: str, template: str, config: dict[str, int], tmp_path: Path, settings: HarnessSettings
) -> None:
    from kernelopt.offline.moves import rows_l2

    family = _family(MOVES / problem)
    source = getattr(rows, template, None) or getattr(rows_l2, template)
    source = source(family.name, family.dim, family.input_names)
    assert set(config) <= set(knob_values(source))  # the sweep can turn the template's knobs
    accepted, reason = _verify(MOVES / problem, with_config(source, config), tmp_path, settings)
    assert accepted, reason


@pytest.mark.parametrize("problem", ["leaky_relu.py", "gelu.py", "swish.py", "tanh.py"])
def test_the_streaming_elementwise_template_passes_the_verifier(
    problem: str, tmp_path: Path, settings: HarnessSettings
) -> None:
    moves = structural_moves(MOVES / problem)
    assert [m.name for m in moves.instances] == ["elementwise.streaming"]
    source = with_config(moves.instances[0].source, {"BLOCK": 256})  # 3000 values: 12 programs, the last masked
    assert 'eviction_policy="evict_first"' in source
    accepted, reason = _verify(MOVES / problem, source, tmp_path, settings)
    assert accepted, reason


ACTIVATIONS = {  # forward's expression -> the ops the family reads
    "torch.selu(x)": ("elu",),
    "torch.nn.functional.elu(x, alpha=0.7)": ("elu",),
    "torch.nn.functional.softplus(x)": ("softplus",),
    "torch.nn.functional.softsign(x)": ("abs", "add", "div"),
    "torch.nn.functional.hardtanh(x, -2.0, 2.0)": ("hardtanh",),
    "torch.nn.functional.relu6(x)": ("hardtanh",),
    "torch.nn.functional.gelu(x, approximate='tanh')": ("gelu",),
    "0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))":
        ("mul", "pow", "mul", "add", "mul", "tanh", "add", "mul"),
    "torch.nn.functional.silu(x)": ("silu",),
    "torch.nn.functional.mish(x)": ("mish",),
    "torch.nn.functional.hardswish(x)": ("hardswish",),
}


@pytest.mark.parametrize("expression", sorted(ACTIVATIONS))
def test_each_activation_streams_through_the_verifier(
    expression: str, tmp_path: Path, settings: HarnessSettings
) -> None:
    # randn * 4: both sides of every kink, softplus's threshold and the tanh GELU's tails.
    source = (MOVES / "gelu.py").read_text()
    problem = tmp_path / "activation.py"
    problem.write_text("import math\n" + re.sub(r"return .+\n", f"return {expression}\n", source, count=1))
    family = _family(problem)
    assert (family.name, family.ops) == ("elementwise", ACTIVATIONS[expression])
    (move,) = structural_moves(problem).instances
    accepted, reason = _verify(problem, with_config(move.source, {"BLOCK": 64}), tmp_path, settings)
    assert accepted, reason


@pytest.mark.parametrize(("problem", "order"), [(p, o) for o in (0, 1)
                                              for p in ("max_pool2d.py", "avg_pool1d.py", "avg_pool2d.py")])
def test_each_pooling_template_passes_the_verifier(
    problem: str, order: int, tmp_path: Path, settings: HarnessSettings
) -> None:
    moves = structural_moves(MOVES / problem)
    # stride 2 (or one row): no strip; `interior` (tests/test_pooling_interior.py) is tiled's own loop at the edges
    assert [m.name for m in moves.instances] == ["pooling.tiled", "pooling.interior", "pooling.flat"]
    assert "pooling.rolling" in {s.name for s in moves.skipped}
    move = {m.name: m for m in moves.instances}[("pooling.tiled", "pooling.flat")[order]]
    if move.name == "pooling.tiled":
        assert set(knob_values(move.source)) == {"BLOCK_H", "BLOCK_W", "num_warps"}
        if problem == "avg_pool1d.py":  # one row: stretches of it, 1-16 outputs per thread (one: lanes along it)
            assert all(c["BLOCK_H"] == 1 and 1 <= c["BLOCK_W"] // (32 * c["num_warps"]) <= 16 for c in move.grid)
            assert {"BLOCK_H": 1, "BLOCK_W": 1024, "num_warps": 4} in move.grid
            assert {"BLOCK_H": 1, "BLOCK_W": 256, "num_warps": 8} in move.grid
        else:  # and two tiles of one output a thread, rows of 128
            assert all(c in move.grid for c in pooling3d.ONE_A_THREAD)
        source = with_config(move.source, {"BLOCK_H": 2, "BLOCK_W": 4})  # masked tiles on both axes
    else:  # one flat range: a block of 64 crosses rows (and planes) and ends past the output
        assert set(knob_values(move.source)) == {"BLOCK", "num_warps"}
        assert all(1 <= c["BLOCK"] // (32 * c["num_warps"]) <= 16 for c in move.grid)
        assert {"BLOCK": 128, "num_warps": 4} in move.grid and {"BLOCK": 256, "num_warps": 8} in move.grid
        source = with_config(move.source, {"BLOCK": 64})
    accepted, reason = _verify(MOVES / problem, source, tmp_path, settings)
    assert accepted, reason


@pytest.mark.parametrize(("problem", "window", "pad"), [
    ("max_pool2d.py", "[4, 1, 1, 1]", None),  # 42_Max_Pooling_2D's window: 4 x 4, stride 1, padding 1
    ("max_pool2d.py", "[1, 1, 0, 1]", None),  # one row tall: nothing carried
    ("avg_pool2d.py", "[3, 1, 1]", None),  # padding left out of the count: rows and columns inside counted
    ("avg_pool2d.py", "[3, 1, 1]", "count_include_pad=True"),
])
def test_the_rolling_pool_carries_row_reductions_down_a_strip_and_passes_the_verifier(
    problem: str, window: str, pad: str | None, tmp_path: Path, settings: HarnessSettings
) -> None:
    text = (MOVES / problem).read_text().replace("return [3, 2, 1, 2]", f"return {window}")
    text = text.replace("return [3, 2, 1]", f"return {window}")
    text = text.replace("count_include_pad=False", pad or "count_include_pad=False")
    path = tmp_path / problem
    path.write_text(text)
    moves = structural_moves(path)
    move = next(m for m in moves.instances if m.name == "pooling.rolling")
    assert set(knob_values(move.source)) == {"ROWS", "BLOCK_W", "num_warps"}
    kh = int(window.strip("[]").split(",")[0])
    # the window's other rows, reduced before the strip and carried
    assert len(re.findall(r"^    h\d+ = across\(", move.source, re.MULTILINE)) == kh - 1
    # strips of 4 rows and blocks of 16 columns over 13 x 17 or 11 x 14 inputs, the window's padding masked at the
    # edges (a wider block: half the interpreted programs of 8)
    accepted, reason = _verify(path, with_config(move.source, {"ROWS": 4, "BLOCK_W": 16}), tmp_path, settings)
    assert accepted, reason


def test_the_rolling_pool_is_skipped_where_the_window_does_not_slide_one_row_a_step(tmp_path: Path) -> None:
    for window in ("[3, 2, 1, 2]", "[3, 1, 1, 2]"):  # stride 2; stride 1 with dilation 2
        path = tmp_path / "pool.py"
        path.write_text((MOVES / "max_pool2d.py").read_text().replace("return [3, 2, 1, 2]", f"return {window}"))
        moves = structural_moves(path)
        assert "pooling.rolling" not in [m.name for m in moves.instances]
        assert "rows a step" in {s.name: s.why for s in moves.skipped}["pooling.rolling"]
    one_row = structural_moves(MOVES / "avg_pool1d.py")
    assert "no window to slide" in {s.name: s.why for s in one_row.skipped}["pooling.rolling"]


@pytest.mark.parametrize("problem", ["rms_norm.py", "softmax3d.py", "log_softmax.py"])
def test_the_columns_template_passes_the_verifier(problem: str, tmp_path: Path, settings: HarnessSettings) -> None:
    family = _family(MOVES / problem)
    source = rows.columns(family.name, family.dim, family.input_names, family.eps)
    # 4-row steps down the reduced dim, 4 positions a program: several steps and masked edges everywhere
    accepted, reason = _verify(MOVES / problem, with_config(source, {"BLOCK_N": 4, "BLOCK_I": 4}), tmp_path, settings)
    assert accepted, reason


def test_standardized_rows_off_a_16_byte_boundary_are_not_walked_in_l2_pieces(tmp_path: Path) -> None:
    # 34_InstanceNorm's planes of 512 x 512 are offered l2_pieces; planes of 511 x 511 (261,121 values, odd) would
    # start off a 16-byte boundary and every walk would load value by value
    aligned = structural_moves(PROBLEMS / "34_InstanceNorm.py")
    assert "standardize.l2_pieces" in [m.name for m in aligned.instances]
    odd = tmp_path / "odd.py"
    odd.write_text((PROBLEMS / "34_InstanceNorm.py").read_text().replace("dim1 = 512", "dim1 = 511")
                   .replace("dim2 = 512", "dim2 = 511"))
    moves = structural_moves(odd)
    assert "standardize.l2_pieces" not in [m.name for m in moves.instances]
    assert "rows of 261121 start off a 16-byte boundary" in {s.name: s.why for s in moves.skipped}[
        "standardize.l2_pieces"]


def test_a_layer_norm_with_its_affine_is_standardized_and_its_few_long_rows_split() -> None:
    layer = structural_moves(PROBLEMS / "40_LayerNorm.py")  # 16 rows of 4,194,304 with a weight and a bias
    assert [m.name for m in layer.instances] == ["standardize.looped_online", "standardize.split_row"]
    # l2_pieces would read the row's 32 MiB of weight and bias from DRAM again for every row
    assert "32.0 MiB of weight and bias" in {s.name: s.why for s in layer.skipped}["standardize.l2_pieces"]
    split = layer.instances[1]
    assert "self.ln.weight" in split.source and "self.ln = nn.LayerNorm(" in split.source
    assert 16 * 4194304 // split.grid[0]["CHUNK"] >= 2 * 132  # 16 rows become several programs per SM
    many = structural_moves(PROBLEMS / "34_InstanceNorm.py")  # 7168 rows: split_row does not apply
    assert "7168 rows already give" in {s.name: s.why for s in many.skipped}["standardize.split_row"]
    groups = structural_moves(PROBLEMS / "35_GroupNorm_.py")  # 896 rows of 2,097,152: long, under 8 per SM
    assert "standardize.split_row" in [m.name for m in groups.instances]

def test_a_strided_reduction_takes_the_columns_move() -> None:
    moves = structural_moves(PROBLEMS / "36_RMSNorm_.py")  # (112, 64, 512, 512), features strided by 262144
    assert [m.name for m in moves.instances] == ["row_rms_norm.columns"]
    assert moves.family is not None and moves.family.eps == 1e-5
    assert moves.instances[0].grid[0]["BLOCK_N"] == 64  # all 64 features in one tile first
    assert "strided by 262144" in moves.skipped[0].why


@pytest.mark.parametrize(("template", "config"), [("rows_in_registers", {"ROWS": 4}), ("looped_online", {"BLOCK": 16}),
                                                 ("one_read", {"CHUNK": 16}),
                                                 # rows of 35 in three pieces; the last piece's second block is empty
                                                 ("split_row", {"CHUNK": 16, "BLOCK": 8}),
                                                 ("l2_pieces", {"CHUNK": 16, "BLOCK": 8})])
@pytest.mark.parametrize("problem", ["instance_norm.py", "layer_norm.py", "group_norm.py"])
def test_each_standardize_template_passes_the_verifier(
    template: str, config: dict[str, int], problem: str, tmp_path: Path, settings: HarnessSettings
) -> None:
    # layer_norm.py: a weight and a bias per element of the row; group_norm.py: 3 groups of 2 channels,
    # a weight and a bias per channel. The verifier draws them by name (its parameters case).
    from kernelopt.offline.moves import _affine, standardize, standardize_l2

    family = _family(MOVES / problem)
    assert family.name == "standardize" and family.eps == 1e-5
    make = getattr(standardize, template, None) or getattr(standardize_l2, template)
    assert (family.dim, family.groups, family.state) == {
        "instance_norm.py": (2, 1, ()), "layer_norm.py": (1, 1, ("ln.weight", "ln.bias")),
        "group_norm.py": (1, 3, ("gn.weight", "gn.bias"))}[problem]
    affine = _affine(family, MOVES / problem)
    source = make(family.dim, family.eps, family.input_names, affine, family.groups)
    accepted, reason = _verify(MOVES / problem, with_config(source, config), tmp_path, settings)
    assert accepted, reason
    if affine and template == "looped_online":  # the affine left out is wrong on the drawn weights (once a problem)
        plain = make(family.dim, family.eps, family.input_names, standardize.Affine(affine.init, "None", "None"),
                     family.groups)
        (tmp_path / "plain").mkdir()
        accepted, reason = _verify(MOVES / problem, with_config(plain, config), tmp_path / "plain", settings)
        assert not accepted and "incorrect" in reason.lower()


@pytest.mark.parametrize(("template", "problem"), [("grouped", "matmul_bt.py"), ("split_k", "matmul_bt.py"),
                                                  ("grouped", "matmul.py"), ("persistent", "matmul.py"),
                                                  ("aligned", "matmul.py"), ("aligned", "matmul_bt.py"),
                                                  ("batched", "bmm.py"), ("tma", "matmul_fp16.py")])
def test_each_matmul_template_passes_the_verifier(
    template: str, problem: str, tmp_path: Path, settings: HarnessSettings
) -> None:
    family = _family(MOVES / problem)
    persistent = template in ("persistent", "tma")
    args = (family.input_names, family.operands, family.transposed) + ((3,) if persistent else ())
    source = getattr(matmul_tma if template == "tma" else matmul, template)(*args)
    # 3 programs for 6 output tiles: each program walks two; the split-K sum in programs of 32
    # outputs (its grid follows the knob: a literal grid once left 7 in 8 outputs unwritten)
    config = {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 2, "SPLIT_K": 3, "PROGRAMS": 3, "SUM_BLOCK": 32}
    accepted, reason = _verify(MOVES / problem, with_config(source, config), tmp_path, settings)
    assert accepted, reason


@pytest.mark.parametrize("transposed", [(False, False), (False, True), (True, False)])
def test_the_tma_template_describes_what_it_can_and_multiplies_the_rest_without(transposed, tmp_path: Path) -> None:
    # Rows of whole 16-byte units go through the descriptors (the grouped kernel is never called); rows
    # of 37 fp16 values (74 bytes), or a view that starts mid-row, cannot, and the grouped kernel takes them.
    import torch

    source = matmul_tma.tma(("A", "B"), (0, 1), transposed, 3)
    module = _load(tmp_path, with_config(source, {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 2}))

    def product(m: int, k: int, n: int, offset: int = 0) -> tuple[Any, Any]:
        a = torch.randn((k, m) if transposed[0] else (m, k), dtype=torch.float16)
        b = torch.randn(k * n + offset, dtype=torch.float16)[offset:].view((n, k) if transposed[1] else (k, n))
        out = module.ModelNew()(a, b)
        want = (a.T if transposed[0] else a).float() @ (b.T if transposed[1] else b).float()
        return out, want

    def refused(*args: object, **kwargs: object) -> None:
        raise AssertionError("this kernel was not to run")

    grouped, described = module.matmul_kernel, module.matmul_tma_kernel
    module.matmul_kernel = refused
    out, want = product(40, 72, 24)  # 7 programs' worth of tiles over 3 programs
    torch.testing.assert_close(out.float(), want, atol=2e-2, rtol=2e-2)
    module.matmul_kernel, module.matmul_tma_kernel = grouped, refused
    for shape, offset in (((37, 37, 37), 0), ((40, 72, 24), 1)):
        out, want = product(*shape, offset=offset)
        torch.testing.assert_close(out.float(), want, atol=2e-2, rtol=2e-2)
    module.matmul_tma_kernel = described
    # a broadcast operand (stride 0) repeats its rows: no descriptor for it
    assert module._layout(torch.randn(1, 64, dtype=torch.float16).expand(32, 64)) is None


def test_the_tma_move_is_skipped_where_an_operand_or_the_output_has_rows_a_descriptor_cannot_describe(
    tmp_path: Path,
) -> None:
    problem = (MOVES / "matmul_fp16.py").read_text()
    assert [m.name for m in structural_moves(MOVES / "matmul_fp16.py").instances].count("matmul.tma") == 1
    for sizes, named in (("M, K, N = 40, 72, 36", "the output's 36"), ("M, K, N = 40, 60, 24", "A's 60")):
        path = tmp_path / f"{named.split()[0]}.py"
        path.write_text(problem.replace("M, K, N = 40, 72, 24", sizes))
        moves = structural_moves(path)
        assert "matmul.tma" not in [m.name for m in moves.instances]
        why = {s.name: s.why for s in moves.skipped}["matmul.tma"]
        assert named in why and "16 bytes" in why, why


def test_the_tma_move_is_skipped_on_a_gpu_older_than_hopper() -> None:
    # on an A100 (8.0) or an L40S (8.9) the file would run its grouped fallback: the grouped kernel timed twice
    for capability in ("8.0", "8.9"):
        moves = structural_moves(MOVES / "matmul_fp16.py", 108, capability=capability)
        assert "matmul.tma" not in [m.name for m in moves.instances]
        assert "matmul.grouped" in [m.name for m in moves.instances]
        assert f"compute capability {capability}" in {s.name: s.why for s in moves.skipped}["matmul.tma"]
    for capability in ("9.0", "10.0"):
        moves = structural_moves(MOVES / "matmul_fp16.py", 132, capability=capability)
        assert "matmul.tma" in [m.name for m in moves.instances]


@pytest.mark.parametrize(("transposed", "k"), [((False, False), 64), ((True, True), 64), ((False, True), 64),
                                              ((False, True), 70)])
@pytest.mark.parametrize(("template", "kernel"), [("k_major", "matmul_kernel"), ("k_major_split_k", "partial_kernel")])
def test_the_k_major_template_copies_only_an_operand_whose_k_is_strided_or_rows_unaligned(
    transposed, k, template: str, kernel: str, tmp_path: Path
) -> None:
    # A @ B: B (K x N) is copied as B.T; A.T @ B.T: A (stored K x M) is copied; A @ B.T: nothing is, unless
    # K=70 is no multiple of 16: then both are copied with K padded with zeros to 80, and the product runs
    # over 80, its operands' rows 16 elements apart (what lets Triton load them in whole vectors). The same
    # copies come before the grouped product and before the split-K one (SPLIT_K 3 at BLOCK_K 16: slices of 32,
    # the third empty at K 64 and 16 long at K 80, summed).
    import torch

    source = matmul.on_tensor_cores(getattr(matmul_kmajor, template)(("A", "B"), (0, 1), transposed))
    config = {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 2, "SPLIT_K": 3}
    module = _load(tmp_path, with_config(source, config))
    copied: list[tuple[int, ...]] = []
    copy, product = module._transposed, getattr(module, kernel)
    module._transposed = lambda x: copied.append(tuple(x.shape)) or copy(x)
    given: list[tuple[int, ...]] = []

    class Seen:  # the product's launch, as forward makes it: K and the operands' strides
        def __getitem__(self, grid):
            def launch(a, b, c, M, N, K, sam, sak, sbk, sbn, *rest, **knobs):
                given.append((K, sam, sak, sbk, sbn))
                return product[grid](a, b, c, M, N, K, sam, sak, sbk, sbn, *rest, **knobs)
            return launch

    setattr(module, kernel, Seen())
    m, n = 37, 21
    a = torch.randn((k, m) if transposed[0] else (m, k))
    b = torch.randn((n, k) if transposed[1] else (k, n))
    out = module.ModelNew()(a, b)
    torch.testing.assert_close(out, (a.T if transposed[0] else a) @ (b.T if transposed[1] else b), atol=1e-4, rtol=1e-4)
    want = {(False, False): [(k, n)], (True, True): [(k, m)], (False, True): [] if k % 16 == 0 else [(k, m), (k, n)]}
    assert copied == want[transposed]
    (k_run, sam, sak, sbk, sbn), = given
    assert sak == 1 and sbk == 1  # K contiguous in both
    assert k_run % 16 == 0 and sam % 16 == 0 and sbn % 16 == 0 and k_run - k < 16


@pytest.mark.parametrize(("transposed", "k"), [((False, False), 64), ((True, True), 64), ((False, True), 64),
                                              ((False, True), 70)])
def test_the_batched_k_major_template_copies_each_batch_of_an_operand_whose_k_is_strided(transposed, k, tmp_path):
    # torch.bmm(A, B): each batch of B (K x N) is copied as its transpose; with A and B both entering transposed,
    # A's; with B entering transposed nothing is, unless K=70 is no multiple of 16 (both, K padded with zeros)
    import torch

    source = matmul.on_tensor_cores(matmul_kmajor.bmm_k_major(("A", "B"), (0, 1), transposed))
    module = _load(tmp_path, with_config(source, {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 2}))
    copied: list[tuple[int, ...]] = []
    copy, product = module._transposed, module.bmm_kernel
    module._transposed = lambda x: copied.append(tuple(x.shape)) or copy(x)
    given: list[tuple[int, ...]] = []

    class Seen:  # the product's launch: K and the operands' strides
        def __getitem__(self, grid):
            def launch(a, b, c, M, N, K, sab, sam, sak, sbb, sbk, sbn, *rest, **knobs):
                given.append((K, sab, sam, sak, sbb, sbk, sbn))
                return product[grid](a, b, c, M, N, K, sab, sam, sak, sbb, sbk, sbn, *rest, **knobs)
            return launch

    module.bmm_kernel = Seen()
    batches, m, n = 3, 37, 21
    a = torch.randn((batches, k, m) if transposed[0] else (batches, m, k))
    b = torch.randn((batches, n, k) if transposed[1] else (batches, k, n))
    out = module.ModelNew()(a, b)
    want_out = torch.bmm(a.transpose(1, 2) if transposed[0] else a, b.transpose(1, 2) if transposed[1] else b)
    torch.testing.assert_close(out, want_out, atol=1e-4, rtol=1e-4)
    want = {(False, False): [(batches, k, n)], (True, True): [(batches, k, m)],
            (False, True): [] if k % 16 == 0 else [(batches, k, m), (batches, k, n)]}
    assert copied == want[transposed]
    (k_run, sab, sam, sak, sbb, sbk, sbn), = given
    assert sak == 1 and sbk == 1 and k_run % 16 == 0 and k_run - k < 16  # K contiguous in both
    assert sam % 16 == 0 and sbn % 16 == 0 and sab % 16 == 0 and sbb % 16 == 0
    if transposed == (False, True):  # an A whose batches start off the 16-byte grid (a view at an odd offset)
        copied.clear()
        odd = torch.randn(batches * m * k + 1)[1:].view(batches, m, k)
        bt = torch.randn(batches, n, k)
        torch.testing.assert_close(module.ModelNew()(odd, bt), torch.bmm(odd, bt.transpose(1, 2)), atol=1e-4, rtol=1e-4)
        assert (batches, k, m) in copied


def test_a_sweep_sets_the_aligned_product_s_warps_not_the_copy_s() -> None:
    # The copy's launch came first in the file, so its 4 warps were the knob: a sweep's 8 made the product's 16.
    family = _family(MOVES / "matmul.py")
    for source in (matmul.aligned(family.input_names, family.operands, family.transposed),
                   matmul_kmajor.k_major(family.input_names, family.operands, family.transposed)):
        assert knob_values(source)["num_warps"] == 8
        for warps in (4, 8):
            assert f"PRECISION=precision, num_warps={warps}, num_stages=3)" in with_config(source, {"num_warps": warps})


def _load(tmp_path: Path, source: str) -> Any:
    import importlib.util

    path = tmp_path / "kernel.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"kernel_{abs(hash(source))}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_wrong_template_is_turned_down(tmp_path: Path, settings: HarnessSettings) -> None:
    # The verifier is what stands between a template and a run: a softmax template on a log-softmax problem fails.
    family = _family(MOVES / "log_softmax.py")
    source = rows.rows_in_registers("softmax", family.dim, family.input_names)
    accepted, reason = _verify(MOVES / "log_softmax.py", source, tmp_path, settings)
    assert not accepted and "incorrect" in reason.lower()


def _row(move: str, time_ms: float | None, path: Path, config: dict[str, int] | None = None) -> dict:
    return {"config": config or {"BLOCK": 64, "num_warps": 4}, "round": 1, "time_ms": time_ms, "trials": 5,
            "stage": 1, "error": None, "rule": None, "label": move, "verified": None, "path": str(path), "move": move}


def test_moves_never_measured_come_first_and_the_best_few_structures_stay_alive(tmp_path: Path) -> None:
    moves = structural_moves(MOVES / "log_softmax.py")
    planned = move_plans(moves.instances, set(), budget=4)
    assert {p.move for p in planned} == {"log_softmax.rows_in_registers"} and len(planned) == 4
    assert move_plans(moves.instances, {"log_softmax.rows_in_registers"}, budget=4) == []
    source = with_config(moves.instances[0].source, {"ROWS": 4, "num_warps": 4})
    (tmp_path / "a.py").write_text(source)
    tables = [{"round": 1, "rows": [_row("a.move", 1.0, tmp_path / "a.py", {"num_warps": 4}),
                                    _row("b.move", 1.5, tmp_path / "a.py", {"num_warps": 8}),
                                    _row("d.move", 2.1, tmp_path / "a.py", {"num_warps": 2}),
                                    _row("", 0.9, tmp_path / "a.py"), _row("c.move", None, tmp_path / "a.py")]}]
    assert measured_moves(tables) == {"a.move", "b.move", "c.move", "d.move"}  # a move that only failed was tried
    alive = alive_plans(tables, best_move="a.move", seed=0)
    # the runner-up lives on; the best's own is planned apart; d.move, over twice the fastest, is let go
    assert alive and {p.move for p in alive} == {"b.move"}
    assert all(p.config != {"num_warps": 8} for p in alive)  # nothing measured is measured again
    assert alive_plans(tables, best_move="a.move", seed=0, dead={"b.move"}) == []


def test_a_structure_the_verifier_refused_is_dead_but_never_the_best_kernels_own(tmp_path: Path) -> None:
    for name, text in (("a.py", "A = 1\n"), ("a2.py", "A = 2\n"), ("b.py", "B = 1\n")):
        (tmp_path / name).write_text(text)
    tables = [{"round": 0, "rows": [_row("a.move", 1.0, tmp_path / "a.py"), _row("a.move", 1.1, tmp_path / "a2.py"),
                                    _row("b.move", 1.2, tmp_path / "b.py")]}]
    refused = [source_hash("A = 2\n"), "f" * 64]
    assert dead_moves(refused, tables) == {"a.move"}  # one refused kernel of a move kills the move
    assert dead_moves(refused, tables, best_move="a.move") == set()  # the best came from it: it passed
    assert dead_moves([], tables) == set()


def test_the_verifier_gets_neither_a_dead_structure_nor_a_row_far_slower_than_the_best(tmp_path: Path) -> None:
    # The H200 run of 6_Matmul verified matmul.grouped twice (swept at 16.7 ms against a 1.28 ms
    # best), and twice it was wrong on the larger case.
    from kernelopt.nodes.tune import VERIFY_WITHIN, _pick, _verifiable, table_path
    from kernelopt.records import KernelRecord, Timing

    texts = {"best.py": "SPLIT_K = 8\n", "grouped.py": "GROUP_M = 8\n", "near.py": "SPLIT_K = 16\n",
             "far.py": "SPLIT_K = 64\n", "other.py": "PERSISTENT = 1\n"}
    for name, text in texts.items():
        (tmp_path / name).write_text(text)
    rows = [_row("split_k", 1.0, tmp_path / "best.py"), _row("grouped", 0.9, tmp_path / "grouped.py"),
            _row("split_k", 1.05, tmp_path / "near.py"),
            _row("split_k", 1.0 * VERIFY_WITHIN + 0.05, tmp_path / "far.py"),
            _row("persistent", 1.1, tmp_path / "other.py")]
    table_path(tmp_path, 1).parent.mkdir(parents=True)
    table_path(tmp_path, 1).write_text(json.dumps({"round": 1, "rows": rows}))
    best = KernelRecord(str(tmp_path / "best.py"), source_hash(texts["best.py"]),
                        Timing(1.0, 1.0, 1.0, 1.0, 1.0, 5, "cuda_events"), 0)
    refused = [source_hash(texts["grouped.py"])]  # an earlier round's grouped kernel was wrong
    task: dict[str, Any] = {"run_dir": str(tmp_path), "round": 1, "repair": 0, "best": best, "failed": refused}
    tables = [json.loads(table_path(tmp_path, 1).read_text())]
    picked = _pick(tables, {best.source_hash}, task, {})  # type: ignore[arg-type]
    chosen = {Path(c.path).read_text() for c in picked}
    assert chosen == {texts["other.py"], texts["near.py"]}  # neither grouped (dead) nor far (over the bar)
    task["failed"] = []
    again = _pick(tables, {best.source_hash}, task, {})  # type: ignore[arg-type]
    assert texts["grouped.py"] in {Path(c.path).read_text() for c in again}  # alive, it comes first
    # No best yet (a rejected seed's repair): the bar is the fastest row still to try, not the
    # fastest row (here the refused grouped kernel, whose 0.9 ms would bar every other)
    slow = [_row("grouped", 0.9, tmp_path / "grouped.py"), _row("split_k", 1.3, tmp_path / "near.py"),
            _row("split_k", 1.3 * VERIFY_WITHIN + 0.1, tmp_path / "far.py")]
    table_path(tmp_path, 0).write_text(json.dumps({"round": 0, "rows": slow, "gpu_times": True}))
    repair = {"run_dir": str(tmp_path), "round": 0, "repair": 1, "best": None, "failed": refused}
    picked = _pick([json.loads(table_path(tmp_path, 0).read_text())], set(refused), repair, {})  # type: ignore[arg-type]
    assert [Path(c.path).read_text() for c in picked] == [texts["near.py"]]
    # Under the interpreter the host's times are too loose for the bar: the far row stays verifiable
    task["failed"] = refused
    on_host = _verifiable(tables[0]["rows"], task, {"grouped"}, {best.source_hash}, gpu_times=False)  # type: ignore[arg-type]
    on_gpu = _verifiable(tables[0]["rows"], task, {"grouped"}, {best.source_hash}, gpu_times=True)  # type: ignore[arg-type]
    assert texts["far.py"] in {Path(r["path"]).read_text() for r in on_host}
    assert {Path(r["path"]).read_text() for r in on_gpu} == {texts["near.py"], texts["other.py"]}


def test_the_offline_optimizer_takes_a_move_and_accepts_it_when_faster(tmp_path: Path) -> None:
    # A three-pass kernel over 16-value blocks against whole rows in registers: under the interpreter
    # the move runs a fraction of the program steps, far outside the timing noise.
    inputs = {"problem_source": (MOVES / "log_softmax.py").read_text(),
              "kernel_source": (MOVES / "log_softmax_kernel.py").read_text()}
    final, events = run_graph(inputs, fast_context(tmp_path, max_rounds=1, sweep_configs=4))
    run_dir = Path(final["run_dir"])
    table = json.loads((run_dir / "sweeps" / "round-001.json").read_text())
    assert {r["move"] for r in table["rows"]} == {"log_softmax.rows_in_registers", ""}
    assert table["moves"]["family"] == "log_softmax"
    skipped = {s["name"]: s["why"] for s in table["moves"]["skipped"]}
    assert skipped["log_softmax.looped_online"] == "rows of 100 fit in registers: a loop over them buys nothing"
    verdicts = [e for e in events if e["event"] == "verdict" and e["round"] == 1]
    assert verdicts[0]["change"].startswith("move log_softmax.rows_in_registers: ROWS=")
    assert verdicts[0]["outcome"] == "faster"
    assert "rows_kernel" in Path(final["best"].path).read_text()
    report = (run_dir / "report.md").read_text()
    assert "## Structural moves" in report and "log_softmax.looped_online does not apply" in report
    assert "move log_softmax.rows_in_registers" in report  # the attempt and its sweep row name the move


def test_the_diagnosis_puts_the_moves_that_answer_it_first() -> None:
    from kernelopt.offline.moves import by_diagnosis

    moves = structural_moves(PROBLEMS / "24_LogSoftmax.py", sm_count=132)
    assert [m.name for m in by_diagnosis(moves.instances, "memory")][0] in ("log_softmax.one_read",
                                                                          "log_softmax.looped_online")
    few_rows = structural_moves(MOVES / "softmax_long.py", sm_count=132)  # 3 rows of 300 on the CPU
    assert [m.name for m in few_rows.instances] == ["softmax.rows_in_registers"]
    large_k = structural_moves(PROBLEMS / "6_Matmul_with_large_K_dimension_.py")
    assert [m.name for m in by_diagnosis(large_k.instances, "occupancy")] == [
        "matmul.split_k", "matmul.split_k_tf32x3", "matmul.k_major_split_k_tf32x3", "matmul.split_k_f16x3",
        "matmul.split_k_parts", "matmul.grouped", "matmul.grouped_tf32x3", "matmul.k_major_tf32x3"]
    # the products split in registers answer no "memory" diagnosis (measured slower than the splits made once)
    assert [m.name for m in by_diagnosis(large_k.instances, "memory")] == [
        "matmul.grouped", "matmul.grouped_tf32x3", "matmul.k_major_tf32x3", "matmul.k_major_split_k_tf32x3",
        "matmul.split_k", "matmul.split_k_tf32x3", "matmul.split_k_f16x3", "matmul.split_k_parts"]
    bmm = [m.name for m in by_diagnosis(structural_moves(PROBLEMS / "3_Batched_matrix_multiplication.py").instances,
                                        "memory")]
    assert bmm[-1] == "bmm.batched_f16x3" and bmm.index("bmm.split_f16") < bmm.index("bmm.batched_f16x3")
    # FMA products diagnosed ("compute"): the 3xTF32 structures first.
    assert [m.name for m in by_diagnosis(large_k.instances, "compute")][:3] == [
        "matmul.grouped_tf32x3", "matmul.split_k_tf32x3", "matmul.k_major_tf32x3"]
    planned = move_plans(by_diagnosis(large_k.instances, "occupancy"), set(), budget=9)
    assert [p.move for p in planned].count("matmul.split_k") == 2  # the even share (1 of 9 for 8 moves) and the spare


def _jit_module(source: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The template's module with its kernels under the interpreter (the flag is read at decoration)."""
    import types

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    module = types.ModuleType("kernelopt_test_template")
    exec(compile(source, "template.py", "exec"), module.__dict__)  # noqa: S102 - our own template
    return module


@pytest.mark.parametrize(("family", "vec", "n"), [("softmax", 1, 151), ("log_softmax", 1, 151), ("row_l1_norm", 1, 151),
                                                 ("row_rms_norm", 1, 151), ("standardize", 1, 151),
                                                 ("softmax", 4, 151), ("log_softmax", 4, 151), ("row_l1_norm", 4, 151),
                                                 ("row_l2_norm", 4, 151), ("softmax", 4, 129), ("row_l1_norm", 4, 129)])
def test_the_one_read_merge_is_exact_across_pieces(family: str, vec: int, n: int,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # The interpreter runs programs one at a time, so a program cannot wait for its row's later
    # pieces. The counter is set past the wait instead, and the kernel runs twice: the first run
    # leaves every piece's statistics in the buffers, the second merges all five of them.
    # Rows of 151 start 0, 3, 2 and 1 values past a 16-byte boundary: with VEC=4 each piece is an aligned
    # window of whole vectors, and the values of the rows beside it must neither count nor be overwritten
    # (rows 0 and 2 lie 100 above 1 and 3: a neighbour's max taken into a piece's would underflow its sum).
    # Rows of 129 in five pieces of 32: a row whose first whole vector is 1-3 values in has an empty last piece.
    import torch

    from kernelopt.offline.moves import standardize

    x = torch.randn(4, n) * 4 - 2
    x[::2] += 100
    if family == "standardize":
        source, extra = standardize.one_read(1, 1e-5, ("x",)), (1e-5,)
        expected = (x - x.mean(1, keepdim=True)) / torch.sqrt(x.var(1, unbiased=False, keepdim=True) + 1e-5)
    else:
        source, extra = rows.one_read(family, 1, ("x",), 1e-5), (1,)
        expected = {"softmax": torch.softmax(x, 1), "log_softmax": torch.log_softmax(x, 1),
                    "row_l1_norm": x / x.abs().mean(1, keepdim=True),
                    "row_l2_norm": x / x.norm(dim=1, keepdim=True),
                    "row_rms_norm": x / torch.sqrt((x**2).mean(1, keepdim=True) + 1e-5)}[family]
        assert _jit_module(source, monkeypatch).aligned_vector(x, n, 1) == 4  # the launch's own choice here
    module = _jit_module(source, monkeypatch)
    out, first, second = torch.full_like(x, float("nan")), torch.empty(4, 5), torch.empty(4, 5)
    for _ in range(2):
        count = torch.full((4,), 100, dtype=torch.int32)
        flag, row_stats = torch.zeros(4, dtype=torch.int32), torch.empty(4, 2)  # LAST_MERGES's: not read here
        if family == "standardize":  # no weight or bias: x stands in for their pointers, never read
            module.one_read_kernel[(20,)](out, x, x, x, first, second, count, flag, row_stats, n, *extra, 1, 1, 5,
                                          CHUNK=32, PIECES=8, has_w=False, has_b=False, UNIFORM=False, LAST=False)
        else:
            module.one_read_kernel[(20,)](out, x, first, second, count, flag, row_stats, n, *extra, 5, CHUNK=32,
                                          PIECES=8, VEC=vec, LAST=False)
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("affine", [False, True])
@pytest.mark.parametrize(("chunk", "block"), [(32, 8), (32, 32), (64, 16), (24, 16), (16, 32)])
def test_the_l2_pieces_kernel_walks_each_piece_twice_and_merges_its_row_exactly(
    chunk: int, block: int, affine: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The GPU's kernel itself (the interpreter's launch takes the looped one). As for one_read above, the counter is
    # set past the wait and the kernel runs twice: the second run merges every piece's statistics. Rows of 151 in
    # pieces of 16 to 64 (the last one short), walked in blocks of 8 to 32, a piece no multiple of its block (24 in
    # 16s) and a block longer than its piece (16 in 32) included; rows 0 and 2 lie 100 above 1 and 3 (the
    # pieces' statistics are of the values less the row's first); with a LayerNorm's weight and bias per value.
    import torch

    from kernelopt.offline.moves import standardize_l2

    x = torch.randn(4, 151) * 4 - 2
    x[::2] += 100
    weight, bias = torch.rand(151) + 0.5, torch.rand(151) - 0.5
    module = _jit_module(standardize_l2.l2_pieces(1, 1e-5, ("x",)), monkeypatch)
    chunks = -(-151 // chunk)
    out, means, m2s = torch.full_like(x, float("nan")), torch.empty(4, chunks), torch.empty(4, chunks)
    for _ in range(2):
        count = torch.full((4,), 100, dtype=torch.int32)
        flag, row_stats = torch.zeros(4, dtype=torch.int32), torch.empty(4, 2)  # LAST_MERGES's: not read here
        module.l2_pieces_kernel[(4 * chunks,)](
            out, x, weight if affine else x, bias if affine else x, means, m2s, count, flag, row_stats, 151, 1e-5, 1,
            1, chunks, CHUNK=chunk, BLOCK=block, PIECES=1 << (chunks - 1).bit_length(), has_w=affine, has_b=affine,
            UNIFORM=False, LAST=False)
    expected = torch.nn.functional.layer_norm(x, (151,), weight if affine else None, bias if affine else None, 1e-5)
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("family", ["softmax", "log_softmax", "row_l1_norm", "row_l2_norm", "row_rms_norm"])
def test_the_row_families_l2_pieces_kernel_merges_its_row_exactly(family: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # As the standardize family's above (the counter set past the wait, the kernel run twice): rows of 151 in five
    # pieces of 32 walked in blocks of 16, the last piece short; rows 0 and 2 lie 100 above 1 and 3, and row 3's
    # second piece is all -inf for softmax (a masked span: its own max is -inf, its sum 0, torch's answer kept).
    import torch

    from kernelopt.offline.moves import rows_l2

    x = torch.randn(4, 151) * 4 - 2
    x[::2] += 100
    if family in ("softmax", "log_softmax"):
        x[3, 32:64] = float("-inf")
    expected = {"softmax": torch.softmax(x, 1), "log_softmax": torch.log_softmax(x, 1),
                "row_l1_norm": x / x.abs().mean(1, keepdim=True), "row_l2_norm": x / x.norm(dim=1, keepdim=True),
                "row_rms_norm": x / torch.sqrt((x**2).mean(1, keepdim=True) + 1e-5)}[family]
    module = _jit_module(rows_l2.l2_pieces(family, 1, ("x",), 1e-5), monkeypatch)
    out, first, second = torch.full_like(x, float("nan")), torch.empty(4, 5), torch.empty(4, 5)
    for _ in range(2):
        count, flag, row_stats = torch.full((4,), 100, dtype=torch.int32), torch.zeros(4, dtype=torch.int32), \
            torch.empty(4, 2)
        module.l2_pieces_kernel[(20,)](out, x, first, second, count, flag, row_stats, 151, 1, 5, CHUNK=32, BLOCK=16,
                                       PIECES=8, LAST=False)
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("uniform", [True, False])
def test_the_l2_pieces_kernel_takes_a_group_norm_s_weight_a_channel(uniform: bool,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # GroupNorm: 2 samples of 4 channels of 8 x 8 in 2 groups, a row a group (2 channels, 128 values), a weight and a
    # bias a channel. Pieces of 32 in blocks of 16 lie inside one channel's plane of 64 (UNIFORM: one weight a
    # block), or each value's channel is found (UNIFORM off): the same answer, torch's.
    import torch

    from kernelopt.offline.moves import standardize_l2

    x = torch.randn(2, 4, 8, 8) * 3 + 50
    weight, bias = torch.rand(4) + 0.5, torch.rand(4) - 0.5
    module = _jit_module(standardize_l2.l2_pieces(1, 1e-5, ("x",)), monkeypatch)
    out, means, m2s = torch.full_like(x, float("nan")), torch.empty(4, 4), torch.empty(4, 4)
    for _ in range(2):  # the counter past the wait, twice: the second run merges every piece's statistics
        count, flag, row_stats = torch.full((4,), 100, dtype=torch.int32), torch.zeros(4, dtype=torch.int32), \
            torch.empty(4, 2)
        module.l2_pieces_kernel[(16,)](out, x, weight, bias, means, m2s, count, flag, row_stats, 128, 1e-5, 2, 64, 4,
                                       CHUNK=32, BLOCK=16, PIECES=4, has_w=True, has_b=True, UNIFORM=uniform,
                                       LAST=False)
    expected = torch.nn.functional.group_norm(x, 2, weight, bias, 1e-5)
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("vec", [1, 4])
@pytest.mark.parametrize("family", ["softmax", "log_softmax"])
def test_the_one_read_kernel_keeps_torch_s_answer_for_a_piece_of_minus_infinity(
    family: str, vec: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The GPU's one-read kernel itself (the interpreter's launch takes the looped one): a piece whose values
    # are all -inf (a masked span of logits) has no max of its own; softmax keeps exp(x - that max) and
    # scales it at the write, and must write zeros there, as torch does. A row all -inf is NaN in torch too.
    # VEC=4: rows of 151 off a 16-byte boundary, in aligned windows; row 3's head (its first value) is its max.
    import torch

    x = torch.randn(4, 151)
    x[0, 32:64] = float("-inf")  # the second piece of row 0, whole
    x[1, 140:] = float("-inf")  # part of the last piece of row 1
    x[2] = float("-inf")
    x[3, 0] = 50.0
    module = _jit_module(rows.one_read(family, 1, ("x",)), monkeypatch)
    out, first, second = torch.full_like(x, float("nan")), torch.empty(4, 5), torch.empty(4, 5)
    for _ in range(2):  # as above: the first run leaves every piece's statistics, the second merges them
        count = torch.full((4,), 100, dtype=torch.int32)
        flag, row_stats = torch.zeros(4, dtype=torch.int32), torch.empty(4, 2)
        module.one_read_kernel[(20,)](out, x, first, second, count, flag, row_stats, 151, 1, 5, CHUNK=32, PIECES=8,
                                      VEC=vec, LAST=False)
    assert not out[:2].isnan().any() and not out[3].isnan().any()
    expected = torch.softmax(x, 1) if family == "softmax" else torch.log_softmax(x, 1)
    torch.testing.assert_close(out, expected, atol=1e-6, rtol=1e-5, equal_nan=True)


@pytest.mark.parametrize("family", ["softmax", "log_softmax"])
@pytest.mark.parametrize(("structure", "config"), [
    ("rows_in_registers", {"ROWS": 2}), ("looped_online", {"BLOCK": 32}), ("split_row", {"CHUNK": 32, "BLOCK": 16}),
    ("one_read", {"CHUNK": 32}), ("columns", {"BLOCK_N": 16, "BLOCK_I": 4}),
    ("looped_resident", {"BLOCK": 32, "PROGRAMS": 2})])
def test_every_row_structure_gives_torch_s_answer_for_masked_logits(
    family: str, structure: str, config: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Spans of -inf (a mask's logits) over a whole block or piece, a row's start, its end: a running max of
    # -inf once made exp(-inf - -inf) a NaN that spread over the whole row.
    import torch

    x = torch.randn(5, 150)
    x[0, :64] = float("-inf")
    x[1, 32:96] = float("-inf")
    x[2, 140:] = float("-inf")
    x[4] = float("-inf")  # a row all -inf: NaN in torch, and here
    dim = 1
    if structure == "columns":  # the reduced dim strided: (150, 5, 1) reduced along dim 0
        x, dim = x.t().contiguous().reshape(150, 5, 1), 0
    module = _jit_module(with_config(getattr(rows, structure)(family, dim, ("x",)), config), monkeypatch)
    expected = torch.softmax(x, dim) if family == "softmax" else torch.log_softmax(x, dim)
    torch.testing.assert_close(module.ModelNew()(x), expected, atol=1e-5, rtol=1e-5, equal_nan=True)


@pytest.mark.parametrize("rows_per_program", [2, 4, 16])
@pytest.mark.parametrize("family", ["softmax", "log_softmax", "row_l1_norm", "row_l2_norm", "row_rms_norm"])
def test_rows_off_a_16_byte_boundary_are_read_in_whole_vectors_and_give_torch_s_answer(
    family: str, rows_per_program: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Rows of 151 fp32 start 0-3 values past a 16-byte boundary: rows_in_registers takes them in aligned windows of
    # whole vectors (VEC=4), each row's head value by value. Neighbouring rows lie 100 apart (a neighbour's max in
    # a row's would underflow its sum); softmax's rows carry -inf over a head, a span, a tail and a whole row; 16
    # rows a program leave programs with rows past the last.
    import torch

    x = torch.randn(12, 151)
    x[::2] += 100
    if "softmax" in family:
        x[1, :3] = float("-inf")
        x[3, 40:90] = float("-inf")
        x[5, 148:] = float("-inf")
        x[7] = float("-inf")
    module = _jit_module(with_config(rows.rows_in_registers(family, 1, ("x",), 1e-5), {"ROWS": rows_per_program}),
                         monkeypatch)
    assert module.aligned_vector(x, 151, 1) == 4 and module.aligned_vector(x[:, :148].contiguous(), 148, 1) == 1
    expected = {"softmax": lambda: torch.softmax(x, 1), "log_softmax": lambda: torch.log_softmax(x, 1),
                "row_l1_norm": lambda: x / x.abs().mean(1, keepdim=True),
                "row_l2_norm": lambda: x / x.norm(dim=1, keepdim=True),
                "row_rms_norm": lambda: x / torch.sqrt((x**2).mean(1, keepdim=True) + 1e-5)}[family]()
    torch.testing.assert_close(module.ModelNew()(x), expected, atol=1e-5, rtol=1e-5, equal_nan=True)


def test_rows_off_a_16_byte_boundary_are_swept_in_vectors_and_value_by_value(monkeypatch: pytest.MonkeyPatch) -> None:
    # Neither access wins on every shape (the H200: rows of 4,095 fp32 took 0.403 ms in vectors, 0.325 value by
    # value), so rows_in_registers's grid pairs each launch with VECTORS 1 and 0 where rows are off a boundary,
    # VECTORS=0 launches VEC=1, and both give torch's answer.
    import torch

    from kernelopt.offline.moves.family import Family
    from kernelopt.offline.moves.rowwise import row_moves

    def grid(n: int, dtype: str = "float32") -> list[dict[str, int]]:
        family = Family("softmax", ("x",), dim=1, ndim=2, dtype=dtype, shapes=((64, n),))
        (move,) = [m for m in row_moves(family, 132, 50.0)[0] if m.name == "softmax.rows_in_registers"]
        return list(move.grid)

    off = grid(4095)
    assert [c.get("VECTORS") for c in off[:4]] == [1, 0, 1, 0] and off[0] | {"VECTORS": 0} == off[1]
    assert all("VECTORS" not in c for c in grid(4096)) and "VECTORS" in grid(4092, "float16")[0]
    x = torch.randn(12, 151)
    x[::2] += 100
    x[3, 40:90] = float("-inf")
    source = rows.rows_in_registers("softmax", 1, ("x",))
    assert knob_values(source)["VECTORS"] == 1
    module = _jit_module(with_config(source, {"ROWS": 4, "VECTORS": 0}), monkeypatch)
    launched: list[int] = []
    kernel = module.rows_kernel

    class Recorder:
        def __getitem__(self, grid: Any) -> Any:
            def launch(*args: Any, **kwargs: Any) -> Any:
                launched.append(kwargs["VEC"])
                return kernel[grid](*args, **kwargs)
            return launch

    module.rows_kernel = Recorder()
    torch.testing.assert_close(module.ModelNew()(x), torch.softmax(x, 1), atol=1e-5, rtol=1e-5)
    module.VECTORS = 1
    module.ModelNew()(x)
    assert launched == [1, 4]


@pytest.mark.parametrize(("structure", "config"), [("rows", {"ROWS": 2, "BLOCK": 32}),
                                                   ("columns", {"BLOCK_N": 16, "BLOCK_I": 4})])
def test_logsumexp_over_masked_values_is_torch_s(structure: str, config: dict[str, int],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # the running max of logsumexp starts at -inf, and a first block of -inf kept it there: exp(-inf - -inf);
    # a value of +inf made it exp(inf - inf). torch: -inf for a row all -inf, inf for a row with +inf
    import torch

    from kernelopt.offline.moves import reduce

    x = torch.randn(6, 150)
    x[0, :64] = float("-inf")
    x[1, 32:96] = float("-inf")
    x[2, 140:] = float("-inf")
    x[4] = float("-inf")
    x[5, 70] = float("inf")
    dim = 1
    if structure == "columns":
        x, dim = x.t().contiguous(), 0
    module = _jit_module(with_config(getattr(reduce, structure)("logsumexp", dim, False, ("x",)), config), monkeypatch)
    torch.testing.assert_close(module.ModelNew()(x), torch.logsumexp(x, dim), atol=1e-5, rtol=1e-5)


def test_a_rejected_compiler_seed_is_replaced_by_the_structural_moves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Offline, a compiler seed that fails the check at round 0 (Inductor's one accumulator over a
    very long K did) is no dead end: the round's repair sweeps the problem's moves, and a correct
    one starts the run. The seed here skips the max subtraction: it overflows on wide values."""
    from kernelopt.nodes import setup
    from kernelopt.seed.obtain import CompilerSeed

    naive = (MOVES / "log_softmax_kernel.py").read_text()
    naive = naive.replace("tl.exp(x - row_max)", "tl.exp(x)")
    naive = naive.replace("x - row_max - tl.log(total)", "x - tl.log(total)")
    seed = tmp_path / "seed.py"
    seed.write_text(naive)
    made = CompilerSeed(str(seed), "2.11", "H200", kernels=1, compile_s=1.0, cached=False)
    monkeypatch.setattr(setup, "no_gpu_reason", lambda: None)
    monkeypatch.setattr(setup, "compiler_seed", lambda *args, **kwargs: made)
    inputs = {"problem_source": (MOVES / "log_softmax.py").read_text()}
    final, events = run_graph(inputs, fast_context(tmp_path, max_rounds=1, sweep_configs=3))
    verdicts = [e for e in events if e["event"] == "verdict"]
    assert verdicts[0]["round"] == 0 and verdicts[0]["outcome"] == "incorrect"
    assert verdicts[0]["change"].startswith("the compiler seed")
    replaced = [v for v in verdicts if v["round"] == 0 and v["repair"] == 1]
    assert replaced and replaced[0]["change"].startswith("move log_softmax.")
    assert replaced[0]["outcome"] not in ("incorrect", "rejected"), replaced[0]
    table = json.loads((Path(final["run_dir"]) / "sweeps" / "round-000-a1.json").read_text())
    assert table["basis"] == "the structural moves, in place of a rejected start"
    assert all(r["move"] for r in table["rows"])  # nothing of the rejected seed was swept
    assert final["best"] is not None and "no correct kernel" not in (final.get("stop_reason") or "")


def test_a_rejected_kernel_of_the_users_own_is_not_replaced(tmp_path: Path) -> None:
    from kernelopt.nodes.tune import moves_can_replace_start
    from kernelopt.records import Attempt
    from kernelopt.seed import COMPILER_SEED

    def _attempt(change: str) -> Attempt:
        return Attempt(round=0, repair=0, kernel_path="k.py", source_hash="x", outcome="incorrect", change=change)

    state: dict[str, Any] = {"round": 0, "best": None, "problem_file": str(MOVES / "log_softmax.py"), "gpu_key": "H200",
                             "run_dir": str(tmp_path)}
    ctx = fast_context(tmp_path)
    seed = _attempt(f"{COMPILER_SEED} (torch 2.11, H200)")
    mine = _attempt("the starting kernel")
    assert moves_can_replace_start(state, ctx, [seed])  # type: ignore[arg-type]
    assert not moves_can_replace_start(state, ctx, [mine])  # type: ignore[arg-type]  # the user is told it is wrong
    assert not moves_can_replace_start({**state, "uses_llm": True}, ctx, [seed])  # type: ignore[arg-type]
    assert not moves_can_replace_start({**state, "round": 1}, ctx, [seed])  # type: ignore[arg-type]
    no_moves = {**state, "problem_file": str(ROOT / "tests" / "cheats" / "problem_add.py")}  # "other": no moves
    assert not moves_can_replace_start(no_moves, ctx, [seed])  # type: ignore[arg-type]


def test_when_no_move_passes_either_the_run_says_there_is_no_correct_kernel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kernelopt.nodes import setup, tune
    from kernelopt.offline.moves import MoveInstance, Moves
    from kernelopt.seed.obtain import CompilerSeed

    broken = (MOVES / "log_softmax_kernel.py").read_text().replace("x - row_max - tl.log(total)", "x - row_max")
    seed = tmp_path / "seed.py"
    seed.write_text(broken)
    made = CompilerSeed(str(seed), "2.11", "H200", kernels=1, compile_s=1.0, cached=False)
    monkeypatch.setattr(setup, "no_gpu_reason", lambda: None)
    monkeypatch.setattr(setup, "compiler_seed", lambda *args, **kwargs: made)
    wrong = MoveInstance("log_softmax.wrong", "a move that is wrong too", broken, ({"BLOCK": 16}, {"BLOCK": 32}))
    monkeypatch.setattr(tune, "run_moves", lambda *args, **kwargs: Moves(None, (wrong,), ()))
    inputs = {"problem_source": (MOVES / "log_softmax.py").read_text()}
    final, events = run_graph(inputs, fast_context(tmp_path, max_rounds=1, sweep_configs=2))
    assert final["best"] is None
    assert final["stop_reason"].startswith("no correct kernel: incorrect")
    assert final["stop_reason"].endswith("no structural move passed either")
    assert (Path(final["run_dir"]) / "sweeps" / "round-000-a1.json").is_file()  # the moves were swept


def test_a_long_row_far_from_zero_is_standardised_to_fp32_s_own_accuracy(tmp_path: Path) -> None:
    # A row near -120 walked in 1,024 blocks: merged at magnitude 120, its running mean lost its low
    # digits (4.5e-5 off the truth after standardising, four times PyTorch's own error). Less the row's
    # first value, it is within 6.3e-7.
    import importlib.util

    import torch

    from kernelopt.offline.moves import standardize

    path = tmp_path / "looped.py"
    path.write_text(with_config(standardize.looped_online(1, 1e-5, ("x",)), {"BLOCK": 16}))
    spec = importlib.util.spec_from_file_location("looped_far_from_zero", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    torch.manual_seed(0)
    x = torch.rand(1, 16384) - 120
    truth = (x.double() - x.double().mean(1, keepdim=True)) / torch.sqrt(x.double().var(1, unbiased=False,
                                                                                         keepdim=True) + 1e-5)
    pytorch = (torch.nn.functional.layer_norm(x, (16384,), eps=1e-5).double() - truth).abs().max()
    ours = (module.ModelNew()(x).double() - truth).abs().max()
    assert ours < 1e-5 and ours < pytorch


def test_a_2d_pool_of_an_unbatched_plane_gets_no_pooling_template(tmp_path: Path) -> None:
    # (C, H, W) through nn.MaxPool2d: three dims, as a 1-D pool's (N, C, L), but the window is 3 x 3; the
    # templates read a 3-D input as rows, so none applies (before, tiled and flat were offered and wrong)
    path = tmp_path / "unbatched.py"
    path.write_text((MOVES / "max_pool2d.py").read_text().replace(
        "torch.randn(batch, channels, height, width)", "torch.randn(channels, height, width)"))
    moves = structural_moves(path)
    assert moves.family is not None and moves.family.ndim == 3
    assert not [m for m in moves.instances if m.name.startswith("pooling.")]
    assert "without a batch dim" in {s.name: s.why for s in moves.skipped}["pooling.tiled"]
    one_row = structural_moves(MOVES / "avg_pool1d.py").instances
    assert [m.name for m in one_row] == ["pooling.tiled", "pooling.interior", "pooling.flat"]


def test_a_group_norm_of_one_group_keeps_a_weight_per_channel(tmp_path: Path, settings: HarnessSettings) -> None:
    # GroupNorm(1, C): one row a sample, its weight and bias still one per channel (not one per element of the row:
    # read so, the template indexed past the weight and wrote NaN)
    problem = tmp_path / "group_norm_1.py"
    problem.write_text((MOVES / "group_norm.py").read_text().replace("features, groups, height, width = 2, 6, 3,",
                                                                   "features, groups, height, width = 2, 6, 1,"))
    family = _family(problem)
    assert (family.name, family.groups, family.state) == ("standardize", 1, ("gn.weight", "gn.bias"))
    (move,) = [m for m in structural_moves(problem).instances if m.name == "standardize.rows_in_registers"]
    assert "plane = math.prod(x.shape[2:])" in move.source
    accepted, reason = _verify(problem, with_config(move.source, {"ROWS": 2}), tmp_path, settings)
    assert accepted, reason
