"""`matmul.split_f16_regs` and `bmm.split_f16_regs`: an fp32 product as three fp16 products with the larger operand's
tiles scaled and split in registers and the smaller split once. Offered where one operand is at most half the other,
accurate to fp32 over every magnitude either way round (C or C transposed), verified on tiny problems, refused with
its remainders taken out, and never writing an operand back to shared memory on an H200 (tests/test_moves_ptx.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from test_f16x3 import _moves
from test_split_tf32 import MOVES, TINY, _load

from kernelopt.harness.sandbox import precision
from kernelopt.harness.verify import HarnessSettings, Verifier
from kernelopt.offline.moves import matmul_regs
from kernelopt.offline.tuner import with_config


def test_it_is_offered_where_one_operand_is_at_most_half_the_other_and_says_why_not_elsewhere() -> None:
    bmm, _ = _moves("3_Batched_matrix_multiplication.py")  # B (1024 x 2048) four times A (512 x 1024)
    move = bmm["bmm.split_f16_regs"]
    assert "split into fp16 parts in registers" in move.why and "no operand written back" in move.why
    assert move.source.count("tl.dot(") == 3 and list(bmm).index("bmm.split_f16") < list(bmm).index(move.name)
    assert move.grid[0] == {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "num_warps": 8, "num_stages": 3}
    assert set(move.cures) == set(bmm["bmm.split_f16"].cures)
    standard, _ = _moves("2_Standard_matrix_multiplication_.py")  # B twice A
    assert "matmul.split_f16_regs" in standard
    _, square = _moves("1_Square_matrix_multiplication_.py")
    assert "within 2x of each other" in square["matmul.split_f16_regs"]
    _, large_k = _moves("6_Matmul_with_large_K_dimension_.py")  # split_f16's own reason: few tiles
    assert "leaves most SMs idle" in large_k["matmul.split_f16_regs"]
    _, volta = _moves("3_Batched_matrix_multiplication.py", capability="7.0")
    assert "no tensor-core products in Triton" in volta["bmm.split_f16_regs"]


@pytest.mark.parametrize("batched", [False, True])
@pytest.mark.parametrize(("m", "k", "n"), [(21, 37, 45), (50, 37, 19)])  # A smaller (C transposed), then B smaller
@pytest.mark.parametrize("transposed", [(False, False), (True, False), (False, True)])
def test_rows_of_every_magnitude_zeros_and_a_short_k_stay_within_fp32s_accuracy(
        batched: bool, m: int, k: int, n: int, transposed: tuple[bool, bool], tmp_path: Path) -> None:
    # A's rows from 1e-20 to 1e20 against B's columns from 1e-6 to 1e6, a row of zeros, a K that ends inside a tile,
    # M and N no multiple of any tile, A or B stored transposed: every output within fp32's own error from float64
    module = _load(tmp_path, with_config(matmul_regs.split_f16_regs(("A", "B"), (0, 1), transposed, batched), TINY))
    torch.manual_seed(1)
    lead = (3,) if batched else ()
    a = torch.randn(*lead, m, k) * torch.logspace(-20, 20, m)[:, None]
    b = torch.randn(*lead, k, n) * torch.logspace(-6, 6, n)
    a[..., 3, :] = 0.0
    args = (a.transpose(-1, -2).contiguous() if transposed[0] else a,
            b.transpose(-1, -2).contiguous() if transposed[1] else b)
    got = module.ModelNew()(*args)
    want = a.double() @ b.double()
    scale = a.double().abs() @ b.double().abs()
    assert got.shape == want.shape and not got[..., 3, :].any() and got.isfinite().all()
    live = scale > 0
    assert ((got.double() - want).abs()[live] / scale[live]).max().item() < 1e-6


@pytest.mark.parametrize("shape", [(20, 37, 19), (8, 37, 40)])
def test_an_infinity_gives_torchs_outputs_and_nan_only_where_torch_does(shape: tuple[int, int, int],
                                                                         tmp_path: Path) -> None:
    # an inf lies whole in its remainder (its part 0), split in registers (A, the larger) or once (B): it meets the
    # other operand's part, never a remainder of 0 (1.0 splits exactly), so inf * 1 is inf, not NaN
    m, k, n = shape
    module = _load(tmp_path, with_config(matmul_regs.split_f16_regs(("A", "B"), (0, 1), (False, False)), TINY))
    a, b = torch.ones(m, k), torch.ones(k, n)
    a[0, 3], b[5, 2], b[3, 7] = float("inf"), float("-inf"), 0.0
    got, want = module.ModelNew()(a, b), a @ b
    assert want.isnan().any() and want.isinf().any()
    assert torch.equal(got.isnan(), want.isnan()) and torch.equal(got.isinf(), want.isinf())
    assert torch.equal(got[want.isfinite()], want[want.isfinite()])


@pytest.mark.parametrize("problem", ["matmul.py", "bmm.py", "matmul3d.py"])  # transposed views: the accuracy tests
def test_the_template_passes_the_verifier(problem: str, tmp_path: Path, settings: HarnessSettings) -> None:
    from kernelopt.harness.problem import import_file
    from kernelopt.offline.moves import gemm
    from kernelopt.offline.moves.family import trace_family

    family = trace_family(import_file(MOVES / problem, "kernelopt_test_regs_family"))
    source = matmul_regs.split_f16_regs(family.input_names, family.operands, family.transposed, family.name == "bmm")
    if family.rows_flattened:  # torch.matmul's A of more dims: its rows, as matmul_moves gives every template (the
        source = gemm._on_rows(source, family)  # public 10 and 11 once came back as their rows: forward's return)
    kernel = tmp_path / "kernel.py"
    kernel.write_text(with_config(source, TINY))
    verdict = Verifier(MOVES / problem, tmp_path / "harness", settings).verify(kernel, time=False)
    assert verdict.accepted, verdict.reason
    assert "low-precision products on fp32, their outputs measured at" in verdict.reason, verdict.reason
    assert float(verdict.reason.split("measured at ")[1].split("x")[0]) <= precision.FP32_ERROR_TIMES


def test_the_template_without_its_remainders_is_refused(tmp_path: Path, settings: HarnessSettings) -> None:
    # x_hi * y_hi alone: one fp16 product of the scaled tiles, outside a split's chain
    source = with_config(matmul_regs.split_f16_regs(("A", "B"), (0, 1), (False, False)), TINY)
    three = ("step = tl.dot(x_lo, y_hi)\n        step = tl.dot(x_hi, y_lo, step)\n"
             "        acc += tl.dot(x_hi, y_hi, step)")
    assert three in source
    kernel = tmp_path / "kernel.py"
    kernel.write_text(source.replace(three, "acc += tl.dot(x_hi, y_hi)"))
    verdict = Verifier(MOVES / "matmul.py", tmp_path / "harness", settings).verify(kernel, time=False)
    assert not verdict.accepted and verdict.rule == "one-tf32-product", verdict.reason
