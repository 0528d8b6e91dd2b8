"""`matmul.split_k_parts`: a split-K fp32 product on B's TF32 parts, split once and K-major, and A's tiles split in
registers. Offered where split-K applies, accurate to fp32 over every magnitude (TF32 keeps fp32's range), verified
on tiny problems, refused with its remainders taken out, and never writing an operand back to shared memory on an
H200 (tests/test_moves_ptx.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from test_f16x3 import _moves
from test_split_tf32 import MOVES, TINY, _load

from kernelopt.harness.sandbox import precision
from kernelopt.harness.verify import HarnessSettings, Verifier
from kernelopt.offline.moves import matmul_parts, structural_moves
from kernelopt.offline.tuner import with_config


def _module(tmp_path: Path, split_k: int, transposed: tuple[bool, bool] = (False, False)):  # noqa: ANN202
    source = matmul_parts.split_k_parts(("A", "B"), (0, 1), transposed)
    return _load(tmp_path, with_config(source, {**TINY, "SPLIT_K": split_k}))


def test_it_is_offered_where_split_k_is_at_its_grid_and_says_why_not_elsewhere() -> None:
    large_k, _ = _moves("6_Matmul_with_large_K_dimension_.py")
    move = large_k["matmul.split_k_parts"]
    assert "K=524288 split in SPLIT_K slices" in move.why and "no operand written back" in move.why
    assert move.grid == large_k["matmul.split_k"].grid and move.grid[0]["SPLIT_K"] == 32
    assert "occupancy" in move.cures and "memory" not in move.cures  # measured slower than the K-major copy's (H100)
    assert move.source.count("tl.dot(") == 3 and 'input_precision="tf32"' in move.source
    _, square = _moves("1_Square_matrix_multiplication_.py")
    assert "already fill 132 SMs" in square["matmul.split_k_parts"]
    _, volta = _moves("6_Matmul_with_large_K_dimension_.py", capability="7.0")
    assert "no TF32 tensor cores" in volta["matmul.split_k_parts"]
    fp16 = structural_moves(MOVES / "matmul_fp16.py")
    assert "matmul.split_k_parts" not in [m.name for m in fp16.instances] + [s.name for s in fp16.skipped]


@pytest.mark.parametrize("transposed", [(False, False), (True, False), (False, True)])
def test_rows_of_every_magnitude_zeros_and_slices_past_k_stay_within_fp32s_accuracy(
        transposed: tuple[bool, bool], tmp_path: Path) -> None:
    # rows from 1e-30 to 1e30 against columns from 1e-6 to 1e6 (TF32 parts need no scale), a row of zeros, a K that
    # ends inside a tile and SPLIT_K 5 over K's three tiles (two slices empty), A or B stored transposed
    module = _module(tmp_path, 5, transposed)
    torch.manual_seed(1)
    a, b = torch.randn(21, 37) * torch.logspace(-30, 30, 21)[:, None], torch.randn(37, 19)
    b = b * torch.logspace(-6, 6, 19)
    a[3] = 0.0
    args = (a.T.contiguous() if transposed[0] else a, b.T.contiguous() if transposed[1] else b)
    got = module.ModelNew()(*args)
    want = a.double() @ b.double()
    scale = a.double().abs() @ b.double().abs()
    assert got.shape == (21, 19) and not got[3].any() and got.isfinite().all()
    live = scale > 0
    assert ((got.double() - want).abs()[live] / scale[live]).max().item() < 1e-6


def test_an_infinity_gives_torchs_outputs_and_nan_only_where_torch_does(tmp_path: Path) -> None:
    # an inf of A lies whole in its remainder (its part 0), so it meets B's part, never a remainder of 0 (1.0 splits
    # exactly): inf * 1 is inf, not NaN; inf * 0 is NaN, as in torch; B's inf is split likewise by the split pass
    module = _module(tmp_path, 2)
    a, b = torch.ones(20, 37), torch.ones(37, 19)
    a[0, 3], b[5, 2], b[3, 7] = float("inf"), float("-inf"), 0.0
    got, want = module.ModelNew()(a, b), a @ b
    assert want.isnan().any() and want.isinf().any()
    assert torch.equal(got.isnan(), want.isnan()) and torch.equal(got.isinf(), want.isinf())
    assert torch.equal(got[want.isfinite()], want[want.isfinite()])


@pytest.mark.parametrize("problem", ["matmul.py"])  # transposed views: the accuracy test
def test_the_template_passes_the_verifier(problem: str, tmp_path: Path, settings: HarnessSettings) -> None:
    from kernelopt.harness.problem import import_file
    from kernelopt.offline.moves.family import trace_family

    family = trace_family(import_file(MOVES / problem, "kernelopt_test_parts_family"))
    source = matmul_parts.split_k_parts(family.input_names, family.operands, family.transposed)
    kernel = tmp_path / "kernel.py"
    kernel.write_text(with_config(source, {**TINY, "SPLIT_K": 3}))
    verdict = Verifier(MOVES / problem, tmp_path / "harness", settings).verify(kernel, time=False)
    assert verdict.accepted, verdict.reason
    assert "one-TF32 products on fp32, their outputs measured at" in verdict.reason, verdict.reason
    assert float(verdict.reason.split("measured at ")[1].split("x")[0]) <= precision.FP32_ERROR_TIMES


def test_the_template_without_its_remainders_is_refused(tmp_path: Path, settings: HarnessSettings) -> None:
    # a_hi * b_hi alone: one TF32 product of the rounded operands, outside a split's chain
    source = with_config(matmul_parts.split_k_parts(("A", "B"), (0, 1), (False, False)), {**TINY, "SPLIT_K": 2})
    three = ('step = tl.dot(a_lo, b_hi, input_precision="tf32")\n        step = tl.dot(a_hi, b_lo, step, '
             'input_precision="tf32")\n        acc += tl.dot(a_hi, b_hi, step, input_precision="tf32")')
    assert three in source
    kernel = tmp_path / "kernel.py"
    kernel.write_text(source.replace(three, 'acc += tl.dot(a_hi, b_hi, input_precision="tf32")'))
    verdict = Verifier(MOVES / "matmul.py", tmp_path / "harness", settings).verify(kernel, time=False)
    assert not verdict.accepted and verdict.rule == "one-tf32-product", verdict.reason
