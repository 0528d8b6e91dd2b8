"""`matmul.split_k_f16x3` and `bmm.batched_f16x3`: an fp32 product as three fp16 products of tiles scaled by
powers of two and split in registers each K step, with no pass over A and B first. Offered where memory bounds
the split product (a long K over few output tiles, torch.bmm), accurate where a whole row's scale is not (a
tile's scale is its own), verified on tiny problems, and refused with its remainders taken out."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from test_split_f16 import MOVES, PROBLEMS, TINY
from test_split_tf32 import _load

from kernelopt.harness.verify import HarnessSettings, Verifier
from kernelopt.offline.moves import matmul, matmul_f16x3, structural_moves
from kernelopt.offline.tuner import with_config


def _moves(problem: str, capability: str = "9.0") -> tuple[dict, dict]:
    found = structural_moves(PROBLEMS / problem, capability=capability)
    return {m.name: m for m in found.instances}, {s.name: s.why for s in found.skipped}


def test_the_twins_are_offered_for_a_long_k_and_for_bmm_and_say_why_not_elsewhere() -> None:
    large_k, _ = _moves("6_Matmul_with_large_K_dimension_.py")
    move = large_k["matmul.split_k_f16x3"]
    assert "K=524288 split in SPLIT_K slices" in move.why and "split in registers" in move.why
    assert "occupancy" in move.cures and "memory" not in move.cures  # measured slower than the splits made once
    # each tile's own split counts (4 output tiles of 128 x 128 on 132 SMs: 32 slices first)
    assert move.grid[0] == {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "num_warps": 8, "num_stages": 3,
                            "SPLIT_K": 32}
    assert {c["SPLIT_K"] for c in move.grid} >= {16, 32, 64}
    assert "tl.dot(a, b, acc, input_precision=PRECISION)" not in move.source and "PRECISION" not in move.source
    assert move.source.count("tl.dot(") == 3
    bmm, _ = _moves("3_Batched_matrix_multiplication.py")
    assert "split in registers" in bmm["bmm.batched_f16x3"].why
    assert bmm["bmm.batched_f16x3"].source.startswith('"""matmul, fp32 products as three fp16 products')
    names = list(bmm)
    assert names.index("bmm.split_f16") < names.index("bmm.batched_f16x3")
    _, square = _moves("1_Square_matrix_multiplication_.py")
    assert "already fill 132 SMs" in square["matmul.split_k_f16x3"]
    _, volta = _moves("6_Matmul_with_large_K_dimension_.py", capability="7.0")
    assert "no tensor-core products in Triton (sm_80 and later)" in volta["matmul.split_k_f16x3"]
    fp16 = structural_moves(MOVES / "matmul_fp16.py")
    assert not any("f16x3" in name for name in [m.name for m in fp16.instances] + [s.name for s in fp16.skipped])


def test_the_rewrite_takes_only_a_template_of_matmul_pys_product() -> None:
    with pytest.raises(AssertionError, match="not a template of matmul.py's product"):
        matmul_f16x3.on_fp16_splits(matmul.on_tensor_cores(matmul.grouped(("A", "B"), (0, 1), (False, False)))
                                    .replace("_dot_range(", "_product("))


def test_a_tiles_scale_keeps_the_bits_a_rows_scale_would_lose(tmp_path: Path) -> None:
    # Row i of A: values near 1e10 in K's first 16 (one BLOCK_K tile), near 1 in the rest; B's rows there are
    # zero. The output is the small values' product alone: scaled by its row's largest, each small value would
    # fall to fp16's subnormals (1e-10 of 2^14) and keep a few bits; scaled by its own tile's, all of them.
    source = matmul_f16x3.on_fp16_splits(matmul.split_k(("A", "B"), (0, 1), (False, False)))
    module = _load(tmp_path, with_config(source, {**TINY, "SPLIT_K": 3}))
    torch.manual_seed(0)
    a, b = torch.randn(40, 150), torch.randn(150, 24)
    a[:, :16] *= 1e10
    b[:16] = 0.0
    got = module.ModelNew()(a, b)
    want = a.double() @ b.double()
    scale = a.double().abs() @ b.double().abs()
    assert got.dtype == torch.float32 and got.shape == (40, 24)
    error = ((got.double() - want).abs() / scale).max().item()
    fp32 = (((a @ b).double() - want).abs() / scale).max().item()
    assert error <= 2 * fp32 and error < 1e-6, (error, fp32)


def test_rows_of_every_magnitude_zeros_and_a_short_k_stay_within_fp32s_accuracy(tmp_path: Path) -> None:
    # rows from 1e-30 to 1e30 against columns from 1e-6 to 1e6, a row of zeros, a K that ends inside a tile and
    # slices left empty by a SPLIT_K past K's tiles: every output within fp32's own error from float64
    source = matmul_f16x3.on_fp16_splits(matmul.split_k(("A", "B"), (0, 1), (False, False)))
    module = _load(tmp_path, with_config(source, {**TINY, "SPLIT_K": 5}))
    torch.manual_seed(1)
    a, b = torch.randn(21, 37) * torch.logspace(-30, 30, 21)[:, None], torch.randn(37, 19)
    b = b * torch.logspace(-6, 6, 19)  # B's columns too (the outputs, and their inverses' products, stay fp32)
    a[3] = 0.0
    got = module.ModelNew()(a, b)
    want = a.double() @ b.double()
    scale = a.double().abs() @ b.double().abs()
    assert not got[3].any() and got.isfinite().all()
    live = scale > 0
    error = ((got.double() - want).abs()[live] / scale[live]).max().item()
    assert error < 1e-6, error


@pytest.mark.parametrize(("problem", "template"), [("matmul.py", matmul.split_k), ("matmul_bt.py", matmul.split_k),
                                                   ("bmm.py", matmul.batched)])
def test_the_twins_pass_the_verifier(problem: str, template, tmp_path: Path,  # noqa: ANN001 - a template function
                                     settings: HarnessSettings) -> None:
    from kernelopt.harness.problem import import_file
    from kernelopt.offline.moves.family import trace_family

    family = trace_family(import_file(MOVES / problem, "kernelopt_test_f16x3_family"))
    source = matmul_f16x3.on_fp16_splits(template(family.input_names, family.operands, family.transposed))
    kernel = tmp_path / "kernel.py"
    kernel.write_text(with_config(source, {**TINY, "SPLIT_K": 2} if template is matmul.split_k else TINY))
    verdict = Verifier(MOVES / problem, tmp_path / "harness", settings).verify(kernel, time=False)
    assert verdict.accepted, verdict.reason
    assert "low-precision products on fp32, their outputs measured at" in verdict.reason, verdict.reason
    assert float(verdict.reason.split("measured at ")[1].split("x")[0]) < 2


def test_the_twin_without_its_remainders_is_refused(tmp_path: Path, settings: HarnessSettings) -> None:
    # hi * hi alone: one fp16 product of the scaled tiles, outside a split's chain: refused as it stands
    source = matmul_f16x3.on_fp16_splits(matmul.split_k(("A", "B"), (0, 1), (False, False)))
    three = ("step = tl.dot(a_lo, b_hi)\n        step = tl.dot(a_hi, b_lo, step)\n"
             "        step = tl.dot(a_hi, b_hi, step)")
    assert three in source
    kernel = tmp_path / "kernel.py"
    kernel.write_text(with_config(source.replace(three, "step = tl.dot(a_hi, b_hi)"), {**TINY, "SPLIT_K": 2}))
    verdict = Verifier(MOVES / "matmul.py", tmp_path / "harness", settings).verify(kernel, time=False)
    assert not verdict.accepted and verdict.rule == "one-tf32-product", verdict.reason
    assert "1 of them outside a chain of 3" in verdict.reason, verdict.reason


def test_an_infinity_gives_torchs_outputs_and_nan_only_where_torch_does(tmp_path: Path) -> None:
    # an inf lies whole in its tile's remainder (its part 0): it meets the other operand's fp16 part, never a
    # remainder of 0 (1.0 splits exactly), so inf * 1 is inf, not NaN; inf * 0 is NaN, as in torch
    source = matmul_f16x3.on_fp16_splits(matmul.split_k(("A", "B"), (0, 1), (False, False)))
    module = _load(tmp_path, with_config(source, {**TINY, "SPLIT_K": 2}))
    a, b = torch.ones(20, 37), torch.ones(37, 19)
    a[0, 3], b[5, 2], b[3, 7] = float("inf"), float("-inf"), 0.0
    got, want = module.ModelNew()(a, b), a @ b
    assert want.isnan().any() and want.isinf().any()
    assert torch.equal(got.isnan(), want.isnan()) and torch.equal(got.nan_to_num(), want.nan_to_num())
