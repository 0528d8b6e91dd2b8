"""`dot.split_f16`: the compiler seed's GEMM templates (a Linear with its epilogue) on operands split once into
fp16 parts before the launch. The rewrite of recorded Inductor output, where it applies and why not elsewhere,
and the rewritten seed verified under the interpreter on a small copy of a level-2 problem."""

from __future__ import annotations

from pathlib import Path

import torch
from test_seed_translate import seed_text

from kernelopt.harness.problem import import_file
from kernelopt.harness.verify import HarnessSettings, Verifier
from kernelopt.offline.moves import matmul_split_f16, structural_moves
from kernelopt.offline.moves.seed_split import to_split_f16
from kernelopt.offline.tuner import with_config

ROOT = Path(__file__).resolve().parents[1]
LEVEL2 = ROOT / "benchmarks" / "kernelbench" / "level2"
PROBLEMS = ROOT / "benchmarks" / "kernelbench" / "problems"
ATTENTION = ROOT / "tests" / "data" / "moves" / "attention.py"
ATTENTION_SEED = ROOT / "tests" / "data" / "seeds" / "97_ScaledDotProductAttention.py"


def test_the_gemm_templates_loop_runs_on_split_operands_made_before_its_launch() -> None:
    seed = seed_text("max_autotune_triton", "99_Matmul_GELU_Softmax")
    rewritten = to_split_f16(seed)
    assert rewritten is not None
    # the K loop is the split product; the template's program order and its fused bias (the suffix) stay
    assert "acc = split16_product(split_ah, split_al, split_bh, split_bl, split_ia, split_ib, split_kp" in rewritten
    assert "for k_idx in range" not in rewritten and "tl.dot(a, b" not in rewritten
    assert "pid_m = group_id * GROUP_M" in rewritten and "tmp1 = acc + tmp0" in rewritten
    # A (x, 1024 x 8192 by the template's strides) and B's transpose (the weight as stored) are split in forward,
    # before the launch, which passes the parts by name
    assert "torch.as_strided(x, ((s77), 8192), (8192, 1))" in rewritten
    assert "torch.as_strided(self.linear.weight, (8192, 8192), (8192, 1))" in rewritten
    forward = rewritten[rewritten.index("def forward"):]
    assert forward.index("_split16_operands(") < forward.index("triton_tem_fused_addmm_t_0[")
    assert "split_kp=split_kp)" in forward
    # a file without a template is left as it is
    assert to_split_f16(seed_text("default", "19_ReLU")) is None


def test_a_batched_templates_parts_are_split_a_batch_at_a_time_and_read_at_its_batch() -> None:
    # 97's seed on the H200 (torch 2.11): Q K^T and the softmax's P V as the compiler's batched template, the batch
    # the launch's second grid axis (program_id(1)), A and B a stride apart a batch
    rewritten = to_split_f16(ATTENTION_SEED.read_text())
    assert rewritten is not None
    assert rewritten.count("acc = split16_batch_product(") == 2 and "tl.dot(a, b" not in rewritten
    forward = rewritten[rewritten.index("def forward"):]
    # the batch count from the grid; A as (batches, M, K) and B's transpose as (batches, N, K) by the strides
    assert "torch.as_strided(buf0, (s24 * s33, (s46), (s40)), ((s46)*(s40), (s40), 1))" in forward
    assert "torch.as_strided(V, (s24 * s33, (s48), (s60)), ((s48)*(s60), 1, (s48)))" in forward
    assert forward.count("split_ra=split_ra, split_rb=split_rb)") == 2
    # the recorded batched matmul (3) reads the same way; a batch axis that needs the launch's meta is not read
    bmm = seed_text("max_autotune_triton", "3_Batched_matrix_multiplication")
    assert "split16_batch_product(" in (to_split_f16(bmm) or "")
    assert to_split_f16(bmm.replace(", s85, 1)](A, B", ", meta['BLOCK_M'], 1)](A, B")) is None


def test_the_batched_split_is_offered_to_attention_and_computes_it(tmp_path: Path) -> None:
    moves = structural_moves(ATTENTION, source=ATTENTION_SEED.read_text())
    assert "dot.split_f16" in {m.name for m in moves.instances}
    # 3 heads of 40 x 24 (odd sizes: every tile masked or padded) against float64; the interpreter has no
    # libdevice.pow (the seed's softmax scale): exp(log(x) y) in its place. Not through the verifier: its derived cases
    # (inputs scaled by 100) make the softmax's logits near-ties now and then, where any product's rounding moves the
    # output far past fp32's own error (the GPU test at 97's size goes through it)
    seed = to_split_f16(ATTENTION_SEED.read_text())
    assert seed is not None
    seed = seed.replace("libdevice.pow(", "_pow(").replace(
        "\n\n@triton.jit\n", "\n\n@triton.jit\ndef _pow(x, y):\n    return tl.exp(tl.log(x) * y)\n\n\n@triton.jit\n", 1)
    (tmp_path / "kernel.py").write_text(with_config(seed, {"BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 16, "GROUP_M": 2}))
    kernel = import_file(tmp_path / "kernel.py", "kernelopt_attention_split")
    torch.manual_seed(0)
    q, k, v = (torch.rand(1, 3, 40, 24) for _ in range(3))
    want = torch.nn.functional.scaled_dot_product_attention(q.double(), k.double(), v.double())
    got = kernel.ModelNew()(q, k, v)
    assert got.shape == want.shape
    torch.testing.assert_close(got.double(), want, rtol=0, atol=1e-6)


def test_a_small_batched_matmul_seed_on_split_parts_passes_the_verifier(tmp_path: Path) -> None:
    # 3's recorded seed (torch.bmm on the compiler's batched template) on 3 batches of 37 x 150 by 150 x 29: the
    # batch's parts at their offsets, rows and K padded; the fp16 products measured against float64 within the bound
    seed = to_split_f16(seed_text("max_autotune_triton", "3_Batched_matrix_multiplication"))
    assert seed is not None
    small = {"BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 16, "GROUP_M": 2}
    (tmp_path / "kernel.py").write_text(with_config(seed, small))
    problem = (PROBLEMS / "3_Batched_matrix_multiplication.py").read_text()
    for old, new in (("batch_size = 128", "batch_size = 3"), ("m = 128 * 4", "m = 37"), ("k = 256 * 4", "k = 150"),
                     ("n = 512 * 4", "n = 29")):
        assert old in problem
        problem = problem.replace(old, new)
    (tmp_path / "problem.py").write_text(problem)
    settings = HarnessSettings.detect(seeds=1, time_compile=False)
    verdict = Verifier(tmp_path / "problem.py", tmp_path / "harness", settings).verify(tmp_path / "kernel.py",
                                                                                      time=False)
    assert verdict.accepted, verdict.reason
    assert "products on fp32, their outputs measured at" in verdict.reason


def test_the_rewrite_is_offered_for_fp32_seeds_outside_the_matmul_families() -> None:
    seed = seed_text("max_autotune_triton", "99_Matmul_GELU_Softmax")
    moves = structural_moves(LEVEL2 / "99_Matmul_GELU_Softmax.py", source=seed)
    split = {m.name: m for m in moves.instances}["dot.split_f16"]
    assert "compute" in split.cures and "fused epilogues kept" in split.why
    # its templates split once before the launch: not also every K step's tiles in every program
    assert "dot.f16x3" not in {m.name for m in moves.instances}
    assert "dot.split_f16 applies" in {s.name: s.why for s in moves.skipped}["dot.f16x3"]
    assert [tuple(c.values()) for c in split.grid[1:]] == list(matmul_split_f16.TILES) and split.grid[0] == {}
    old = structural_moves(LEVEL2 / "99_Matmul_GELU_Softmax.py", source=seed, capability="7.5")
    assert "no tensor-core products in Triton" in {s.name: s.why for s in old.skipped}["dot.split_f16"]
    # the matmul families have the split as a template move: no rewrite of their seed besides
    square = structural_moves(PROBLEMS / "9_Tall_skinny_matrix_multiplication_.py",
                              source=seed_text("max_autotune_triton", "9_Tall_skinny_matrix_multiplication_"))
    assert "dot.split_f16" not in {m.name for m in square.instances} | {s.name for s in square.skipped}


def test_the_rewritten_seed_passes_the_verifier_on_a_small_copy(tmp_path: Path) -> None:
    # 99's seed at 160 features (its sizes are the template's literals), 37 rows: the bias fused into the template's
    # suffix, GELU and the softmax after; the fp16 products measured against float64 within the bound
    seed = to_split_f16(seed_text("max_autotune_triton", "99_Matmul_GELU_Softmax"))
    assert seed is not None
    small = {"BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 16, "GROUP_M": 2, "R0_BLOCK": 32}
    (tmp_path / "kernel.py").write_text(with_config(seed.replace("8192", "160"), small))
    problem = (LEVEL2 / "99_Matmul_GELU_Softmax.py").read_text().replace("8192", "160")
    (tmp_path / "problem.py").write_text(problem.replace("batch_size = 1024", "batch_size = 37"))
    settings = HarnessSettings.detect(seeds=1, time_compile=False)
    verdict = Verifier(tmp_path / "problem.py", tmp_path / "harness", settings).verify(tmp_path / "kernel.py",
                                                                                      time=False)
    assert verdict.accepted, verdict.reason
    assert "low-precision products on fp32, their outputs measured at" in verdict.reason
