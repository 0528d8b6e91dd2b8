"""A batched product of inputs of more dims (torch.matmul or einsum of (..., M, K) and (..., K, N) inputs with the
same leading dims, as attention's scores are): torch.bmm's family, its leading dims viewed as the batch, read from
where its operands lie in memory (offline/moves/family_products.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import product_problem

from kernelopt.harness.problem import import_file
from kernelopt.harness.verify import HarnessSettings, Verifier
from kernelopt.offline.moves import (
    MoveInstance,
    gemm,
    matmul,
    matmul_f16x3,
    matmul_kmajor,
    matmul_split,
    matmul_split_f16,
    matmul_triangle,
    structural_moves,
)
from kernelopt.offline.moves.family import trace_family
from kernelopt.offline.tuner import with_config

MOVES = Path(__file__).parent / "data" / "moves"
TINY = {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 2}


@pytest.mark.parametrize(("forward", "inputs", "expected"), [
    ("torch.matmul(A, B)", "[torch.randn(2, 3, M, K), torch.randn(2, 3, K, L)]", ("bmm", (False, False), True)),
    ("A @ B.transpose(-1, -2)", "[torch.randn(2, 3, M, K), torch.randn(2, 3, L, K)]", ("bmm", (False, True), True)),
    ('torch.einsum("abik,abkj->abij", A, B)', "[torch.randn(2, 3, M, K), torch.randn(2, 3, K, L)]",
     ("bmm", (False, False), True)),
    ("torch.matmul(A, B)", "[torch.randn(3, M, K), torch.randn(3, K, L)]", ("bmm", (False, False), False)),
    # B broadcast over A's batch (a copy of it, expanded), or leading dims that differ: no batch of both
    ("torch.matmul(A, B)", "[torch.randn(2, 3, M, K), torch.randn(3, K, L)]", ("other", (), False)),
    ("torch.matmul(A, B)", "[torch.randn(2, 3, M, K), torch.randn(1, 3, K, L)]", ("other", (), False)),
    # the product's batches moved before it is returned
    ("torch.matmul(A, B).transpose(0, 1)", "[torch.randn(2, 3, M, K), torch.randn(2, 3, K, L)]", ("other", (), False)),
])
def test_a_product_of_inputs_of_more_dims_is_a_bmm_over_their_leading_dims(forward: str, inputs: str,
                                                                             expected: tuple, tmp_path: Path) -> None:
    problem = product_problem(tmp_path, forward, inputs)
    family = structural_moves(problem).family
    assert family is not None
    assert (family.name, family.transposed, family.rows_flattened) == expected, family


def _family(problem: Path):  # noqa: ANN202 - a Family
    return trace_family(import_file(problem, f"kernelopt_test_products_{problem.stem}"))


_TEMPLATES = {
    "bmm.batched": lambda f: matmul.batched(f.input_names, f.operands, f.transposed),
    "bmm.batched_f16x3": lambda f: matmul_f16x3.on_fp16_splits(matmul.batched(f.input_names, f.operands,
                                                                                f.transposed)),
    "bmm.k_major_tf32x3": lambda f: matmul.on_tensor_cores(matmul_kmajor.bmm_k_major(f.input_names, f.operands,
                                                                                      f.transposed)),
    "bmm.split_f16": lambda f: matmul_split_f16.bmm_split_f16(f.input_names, f.operands, f.transposed),
    "bmm.split_f16_tma": lambda f: matmul_split_f16.split_f16_tma(f.input_names, f.operands, f.transposed, 3,
                                                                  batched=True),
    "bmm.split_tf32": lambda f: matmul_split.bmm_split_tf32(f.input_names, f.operands, f.transposed),
}


@pytest.mark.parametrize("triangle", [(), ("tril", -1)], ids=["product", "tril"])
@pytest.mark.parametrize("template", list(_TEMPLATES))
def test_each_bmm_template_over_leading_dims_passes_the_verifier(template: str, triangle: tuple, tmp_path: Path,
                                                                  settings: HarnessSettings) -> None:
    # (2, 3, 20, 36) @ (2, 3, 12, 36)^T: six batches of 20 x 36 x 12 in tiles of 16; and each matrix's tril(-1)
    problem = MOVES / "matmul4d.py"
    if triangle:
        problem = tmp_path / "tril4d.py"
        problem.write_text((MOVES / "matmul4d.py").read_text().replace(
            "return torch.matmul(A, B.transpose(-1, -2))",
            "return torch.tril(torch.matmul(A, B.transpose(-1, -2)), -1)"))
    family = _family(problem)
    assert (family.name, family.rows_flattened, family.triangle) == ("bmm", True, triangle)
    move = MoveInstance(template, "", _TEMPLATES[template](family), ())
    (move,) = gemm._on_batches(family, [move])
    source = move.source
    if triangle:
        source = matmul_triangle.on_triangle(source, *triangle)
        assert source is not None
    assert "A.reshape(-1, *A.shape[-2:])" in source and "B.reshape(-1, *B.shape[-2:]).transpose(1, 2)" in source
    kernel = tmp_path / "kernel.py"
    kernel.write_text(with_config(source, {**TINY, **({"PROGRAMS": 3} if "PROGRAMS" in source else {})}))
    verdict = Verifier(problem, tmp_path / "harness", settings).verify(kernel, time=False)
    assert verdict.accepted, verdict.reason


def test_the_moves_of_a_4d_product_view_the_batch_and_count_its_tiles(tmp_path: Path) -> None:
    # every bmm move of the 4-D problem is written over the leading dims; the split moves count the tiles of all six
    # batches: 6 x 16 tiles of 128 x 128 at 512^2 fill 132 SMs (the first dim's 2 x 16 would not)
    moves = structural_moves(MOVES / "matmul4d.py")
    assert moves.instances and all("A.reshape(-1, *A.shape[-2:])" in m.source for m in moves.instances)
    assert all(".view(*_lead_dims, *c.shape[-2:])" in m.source for m in moves.instances)
    large = tmp_path / "large.py"
    large.write_text((MOVES / "matmul4d.py").read_text().replace("BATCH, HEADS, M, K, N = 2, 3, 20, 36, 12",
                                                                 "BATCH, HEADS, M, K, N = 2, 3, 512, 256, 512"))
    names = [m.name for m in structural_moves(large).instances]
    assert "bmm.split_f16" in names, names


@pytest.mark.parametrize(("forward", "inputs", "move"), [
    ("torch.matmul(a, b)", "[torch.randn(2, 3, 20, 36), torch.randn(2, 3, 36, 12)]", "bmm.batched"),
    ('torch.einsum("bil,lk->bik", a, b)', "[torch.randn(2, 20, 36), torch.randn(36, 12)]", "matmul.grouped"),
])
def test_inputs_named_as_the_templates_locals_keep_their_leading_dims(
    forward: str, inputs: str, move: str, tmp_path: Path, settings: HarnessSettings
) -> None:
    # forward(self, a, b): the template's `a, b = ...` rebinds them; the leading dims are taken before it
    problem = product_problem(tmp_path, forward, inputs, "named_ab.py")
    problem.write_text(problem.read_text().replace("A: torch.Tensor, B: torch.Tensor", "a, b"))
    found = next(m for m in structural_moves(problem).instances if m.name == move)
    kernel = tmp_path / "kernel.py"
    kernel.write_text(with_config(found.source, TINY))
    verdict = Verifier(problem, tmp_path / "harness", settings).verify(kernel, time=False)
    assert verdict.accepted, verdict.reason
