"""torch.triu or torch.tril of a product: the family reads the triangle, and each matmul template computes only
the tiles it keeps (offline/moves/matmul_triangle.py)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from helpers import product_problem

from kernelopt.harness.verify import HarnessSettings, Verifier
from kernelopt.offline.moves import (
    matmul,
    matmul_f16x3,
    matmul_kmajor,
    matmul_split,
    matmul_split_f16,
    matmul_triangle,
    structural_moves,
)
from kernelopt.offline.tuner import with_config

MOVES = Path(__file__).parent / "data" / "moves"
TINY = {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 2}
AB, FLAT = ("A", "B"), (False, False)


@pytest.mark.parametrize(("forward", "inputs", "expected"), [
    ("torch.triu(torch.matmul(A, B))", "[torch.randn(M, K), torch.randn(K, L)]", ("matmul", ("triu", 0))),
    ("torch.tril(A @ B, diagonal=-2)", "[torch.randn(M, K), torch.randn(K, L)]", ("matmul", ("tril", -2))),
    ("torch.triu(A @ B.t(), 3)", "[torch.randn(M, K), torch.randn(L, K)]", ("matmul", ("triu", 3))),
    ("torch.triu(torch.bmm(A, B))", "[torch.randn(N, M, K), torch.randn(N, K, L)]", ("bmm", ("triu", 0))),
    ("torch.matmul(A, B)", "[torch.randn(M, K), torch.randn(K, L)]", ("matmul", ())),
    # what the templates do not compute: a triangle of an operand, the result moved, each of A's leading dims' own
    ("torch.triu(A) @ B", "[torch.randn(M, K), torch.randn(K, L)]", ("other", ())),
    ("torch.triu(A @ B).t()", "[torch.randn(M, K), torch.randn(K, M)]", ("other", ())),
    ("torch.triu(torch.matmul(A, B))", "[torch.randn(N, M, K), torch.randn(K, L)]", ("other", ())),
    ("torch.triu(A @ B) + 1", "[torch.randn(M, K), torch.randn(K, L)]", ("other", ())),
])
def test_the_family_reads_the_triangle_of_the_product(forward: str, inputs: str, expected: tuple,
                                                       tmp_path: Path) -> None:
    problem = product_problem(tmp_path, forward, inputs)
    family = structural_moves(problem).family
    assert family is not None and (family.name, family.triangle) == expected, family


@pytest.mark.parametrize(("kind", "diagonal"), [("triu", 0), ("triu", 5), ("triu", -7), ("tril", 0), ("tril", 3),
                                                ("tril", -20)])
def test_a_tile_is_skipped_exactly_when_the_triangle_keeps_none_of_it(kind: str, diagonal: int) -> None:
    # the rewrite's test of a tile against every output in it: a tile with a kept output must be multiplied (the
    # verifier would see zeros), one with none should not be (only time lost)
    live = matmul_triangle.live_tile(kind, diagonal)
    keeps = (lambda i, j: j - i >= diagonal) if kind == "triu" else (lambda i, j: j - i <= diagonal)
    for block_m, block_n in ((16, 16), (16, 32), (64, 16)):
        for pid_m, pid_n in itertools.product(range(6), range(6)):
            outputs = itertools.product(range(pid_m * block_m, (pid_m + 1) * block_m),
                                        range(pid_n * block_n, (pid_n + 1) * block_n))
            scope = {"pid_m": pid_m, "pid_n": pid_n, "BLOCK_M": block_m, "BLOCK_N": block_n}
            assert eval(live, {}, scope) == any(keeps(i, j) for i, j in outputs), (block_m, block_n, pid_m, pid_n)


_TEMPLATES = {
    "grouped": lambda: matmul.grouped(AB, (0, 1), FLAT),
    "grouped_tf32x3": lambda: matmul.on_tensor_cores(matmul.grouped(AB, (0, 1), FLAT)),
    "persistent": lambda: matmul.persistent(AB, (0, 1), FLAT, 3),
    "split_k": lambda: matmul.split_k(AB, (0, 1), FLAT),
    "split_k_f16x3": lambda: matmul_f16x3.on_fp16_splits(matmul.split_k(AB, (0, 1), FLAT)),
    "aligned": lambda: matmul.aligned(AB, (0, 1), FLAT),
    "k_major_tf32x3": lambda: matmul.on_tensor_cores(matmul_kmajor.k_major(AB, (0, 1), FLAT)),
    "split_f16": lambda: matmul_split_f16.split_f16(AB, (0, 1), FLAT),
    "split_f16_tma": lambda: matmul_split_f16.split_f16_tma(AB, (0, 1), FLAT, 3),
    "split_tf32": lambda: matmul_split.split_tf32(AB, (0, 1), FLAT),
    "bmm.batched": lambda: matmul.batched(AB, (0, 1), FLAT),
    "bmm.batched_f16x3": lambda: matmul_f16x3.on_fp16_splits(matmul.batched(AB, (0, 1), FLAT)),
    "bmm.split_f16": lambda: matmul_split_f16.bmm_split_f16(AB, (0, 1), FLAT),
}


@pytest.mark.parametrize("template", list(_TEMPLATES))
def test_each_template_on_the_triangle_passes_the_verifier(template: str, tmp_path: Path,
                                                             settings: HarnessSettings) -> None:
    # triu(A @ B, 1) and each batch's tril(A @ B, -1), 37 x 29 x 45 in tiles of 16: tiles wholly outside, crossed
    # by the diagonal, and wholly inside, with the edges' masks
    problem, kind, diagonal = (MOVES / "bmm_tril.py", "tril", -1) if template.startswith("bmm.") else \
        (MOVES / "matmul_triu.py", "triu", 1)
    source = matmul_triangle.on_triangle(_TEMPLATES[template](), kind, diagonal)
    assert source is not None and "live = _live_tile(pid_m, pid_n, BLOCK_M, BLOCK_N)" in source
    config = {**TINY, **({"PROGRAMS": 3} if "PROGRAMS" in source else {}),
              **({"SPLIT_K": 2} if "SPLIT_K = " in source else {})}
    kernel = tmp_path / "kernel.py"
    kernel.write_text(with_config(source, config))
    verdict = Verifier(problem, tmp_path / "harness", settings).verify(kernel, time=False)
    assert verdict.accepted, verdict.reason
    if template not in ("grouped", "bmm.batched"):  # the check that can fail: once each for matmul and bmm
        return
    # the template as it was, every output written: refused (the triangle's zeros are the reference's work)
    kernel.write_text(with_config(_TEMPLATES[template](), config))
    verdict = Verifier(problem, tmp_path / "harness_full", settings).verify(kernel, time=False)
    assert not verdict.accepted


def test_the_moves_on_a_triangle_are_rewritten_and_a_descriptor_store_does_not_apply(tmp_path: Path) -> None:
    moves = structural_moves(MOVES / "matmul_triu.py")
    assert moves.family is not None and moves.family.triangle == ("triu", 1)
    assert moves.instances and all("_live_tile(" in m.source and "torch.triu (diagonal 1) keeps" in m.why
                                   for m in moves.instances)
    # fp16: the TMA template stores its tiles through a tensor descriptor, which the rewrite does not take
    fp16 = tmp_path / "fp16.py"
    fp16.write_text((MOVES / "matmul_triu.py").read_text().replace("torch.randn(M, K), torch.randn(K, N)",
                                                                   "torch.randn(M, K).half(), torch.randn(K, N).half()")
                    .replace("M, K, N = 37, 29, 45", "M, K, N = 256, 64, 256"))
    moves = structural_moves(fp16)
    skipped = {s.name: s.why for s in moves.skipped}
    assert "torch.triu of the product" in skipped["matmul.tma"], skipped
    assert "matmul.grouped" in [m.name for m in moves.instances]
