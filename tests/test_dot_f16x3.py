"""`dot.f16x3`: a kernel's fp32 products rewritten where they stand as three fp16 products of its own tiles,
scaled and split in registers each K step. Which statements it takes and which it leaves, the recorded compiler
seeds (a batched GEMM template, a convolution) rewritten and still computing the reference, the rewrite offered
as a move of the best kernel, and a rewritten seed through the verifier, its fp16 products measured."""

from __future__ import annotations

from pathlib import Path

import torch
from test_seed_translate import _run_both, problem_path, seed_text, shrunk_problem
from test_split_tf32 import _load

from kernelopt.harness.verify import HarnessSettings, Verifier
from kernelopt.offline.moves import _f16x3_rewrite, matmul_f16x3, structural_moves
from kernelopt.offline.moves.conv import tiles
from kernelopt.offline.moves.dot_f16x3 import to_f16x3
from kernelopt.offline.tuner import knob_values, with_config

ROOT = Path(__file__).resolve().parents[1]
BMM = "3_Batched_matrix_multiplication"

FORMS = '''
import triton
import triton.language as tl


@triton.jit
def kernel(a, b, acc, c, OFF: tl.constexpr = False):
    acc += tl.dot(a, b, allow_tf32=OFF, out_dtype=tl.float32)
    acc = tl.dot(tl.load(a), b, acc, input_precision="tf32x3")  # a comment stays behind
    keep_default = tl.dot(a, b)
    acc += tl.dot(a, b)
    keep_sum = tl.dot(a, b, input_precision="ieee") + c
    keep_other_acc = tl.dot(a, b, c, input_precision="ieee")
    keep_two = tl.dot(a, b, input_precision="ieee"); c += 1
'''


def test_only_an_fp32_products_own_accumulation_is_rewritten() -> None:
    out = to_f16x3(FORMS)
    assert out is not None
    assert out.count("def _fp16_parts(") == 1 and out.index("def _fp16_parts(") < out.index("def kernel(")
    # the two statements that add an fp32 product to their accumulator, each as three fp16 products
    assert "f16x3_0_ah, f16x3_0_al, f16x3_0_ia = _fp16_parts(a, -1)" in out
    assert "f16x3_1_ah, f16x3_1_al, f16x3_1_ia = _fp16_parts(tl.load(a), -1)" in out
    assert out.count("acc += f16x3_") == 2 and out.count("tl.dot(f16x3_") == 6
    # Triton's default (one TF32 product), a product with more after it, another accumulator, two statements on
    # a line: left as they are
    for kept in ("keep_default = tl.dot(a, b)", "    acc += tl.dot(a, b)\n",
                 'keep_sum = tl.dot(a, b, input_precision="ieee") + c',
                 'keep_other_acc = tl.dot(a, b, c, input_precision="ieee")', 'keep_two = tl.dot(a, b, input_precision'):
        assert kept in out, kept
    assert "    # a comment stays behind\n    # fp32 products as three fp16 products" in out  # above its block
    compile(out, "rewritten.py", "exec")
    assert to_f16x3(out) is None  # once is enough
    assert to_f16x3("def f(:\n") is None and to_f16x3(FORMS.replace("as tl", "as triton_language")) is None
    assert to_f16x3(FORMS.replace("import triton\n", "from triton import jit\n")) is None  # no `triton` for the helper


def test_a_form_feed_before_the_product_moves_no_line() -> None:
    # Python does not end a line at a form feed (str.splitlines does): the block replaces the product's own line
    source = FORMS.replace("@triton.jit\ndef kernel", "@triton.jit\n# page\x0cbreak\ndef kernel")
    clean = to_f16x3(FORMS)
    assert clean is not None
    assert to_f16x3(source) == clean.replace("@triton.jit\ndef kernel", "@triton.jit\n# page\x0cbreak\ndef kernel")


BATCHED_DOT = '''
import torch
import triton
import triton.language as tl


@triton.jit
def bdot(a_ptr, b_ptr, c_ptr, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    i = tl.arange(0, B)[:, None, None]
    m = tl.arange(0, M)[None, :, None]
    n = tl.arange(0, N)[None, None, :]
    k = tl.arange(0, K)
    a = tl.load(a_ptr + i * M * K + m * K + k[None, None, :])
    b = tl.load(b_ptr + i * K * N + k[None, :, None] * N + n)
    acc = tl.zeros((B, M, N), dtype=tl.float32)
    acc = tl.dot(a, b, acc, input_precision="ieee")
    tl.store(c_ptr + i * M * N + m * N + n, acc)


def run(a, b):
    c = torch.empty(a.shape[0], a.shape[1], b.shape[2])
    bdot[(1,)](a, b, c, B=a.shape[0], M=a.shape[1], N=b.shape[2], K=a.shape[2])
    return c
'''


def test_a_batched_3d_product_splits_each_tiles_rows_and_columns_along_k(tmp_path: Path) -> None:
    # a 3-D tl.dot (batch, M, K) x (batch, K, N): the scales run along K (the last axis of A's tile, the one before
    # it of B's) and unscale through the batch dim too; every output within fp32's accuracy, with an inf as torch's
    out = to_f16x3(BATCHED_DOT)
    assert out is not None
    module = _load(tmp_path, out)
    torch.manual_seed(0)
    a, b = torch.randn(2, 16, 16) * torch.logspace(-8, 8, 16)[:, None], torch.randn(2, 16, 16)
    got, want = module.run(a, b), torch.bmm(a.double(), b.double())
    scale = torch.bmm(a.double().abs(), b.double().abs())
    assert ((got.double() - want).abs() / scale).max() < 1e-6
    a[1, 3, 5] = float("inf")
    got, want = module.run(a, b), torch.bmm(a, b)
    assert want[1, 3].isinf().all() and torch.equal(got.isinf(), want.isinf()) and not got.isnan().any()
    assert torch.equal(got[got.isinf()], want[want.isinf()])  # each with torch's sign


def test_the_compilers_batched_template_is_rewritten_and_still_computes_the_reference(tmp_path: Path) -> None:
    # torch.bmm's template (its batch stride read per program): dot.split_f16 leaves it; this takes its product
    seed = seed_text("max_autotune_triton", BMM)
    rewritten = to_f16x3(seed)
    assert rewritten is not None and "allow_tf32=ALLOW_TF32" not in rewritten
    assert knob_values(rewritten) == knob_values(seed)
    small = {k: min(v, 32) for k, v in knob_values(rewritten).items() if "BLOCK_" in k}
    seed_file = tmp_path / "seed.py"
    seed_file.write_text(with_config(rewritten, small))
    path = problem_path(BMM)
    expected, got = _run_both(shrunk_problem(path, tmp_path / path.name), seed_file)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


def test_the_rewrite_is_a_move_of_the_best_kernel_with_its_own_tiles() -> None:
    seed = seed_text("max_autotune_triton", BMM)
    moves = structural_moves(problem_path(BMM), 132, source=seed)
    rewrite = {m.name: m for m in moves.instances}["dot.f16x3"]
    assert rewrite.source == to_f16x3(seed) and rewrite.cures == ("compute",)
    assert rewrite.grid[0] == {} and [tuple(c.values()) for c in rewrite.grid[1:]] == list(matmul_f16x3.TILES)
    assert "1 fp32 product(s) as three fp16 products" in rewrite.why
    conv = seed_text("max_autotune_triton", "1_Conv2D_ReLU_BiasAdd")  # the seed's own implicit-GEMM convolution
    # (as a move it gives way to dot.conv_split_f16, the convolution's operands split once: test_conv_split.py)
    assert _f16x3_rewrite(conv, "9.0")[0][0].grid[1] == {"CONV_BLOCK_M": 128, "CONV_BLOCK_N": 128,
                                                         "CONV_BLOCK_K": 32, "num_warps": 8, "num_stages": 3}
    done = structural_moves(problem_path(BMM), 132, source=rewrite.source)
    assert "multiplying fp32 at fp32's accuracy" in {s.name: s.why for s in done.skipped}["dot.f16x3"]
    old = structural_moves(problem_path(BMM), 132, source=seed, capability="7.5")
    assert "no tensor-core products in Triton" in {s.name: s.why for s in old.skipped}["dot.f16x3"]
    # a best kernel at a K tile of 8 (fp32 products take it): fp16 products need 16, so its own launch is not offered
    shallow = with_config(seed, {"BLOCK_K": 8})
    grid = {m.name: m for m in structural_moves(problem_path(BMM), 132, source=shallow).instances}["dot.f16x3"].grid
    assert {} not in grid and all(c["BLOCK_K"] >= 16 for c in grid)


def test_the_rewritten_convolution_passes_the_verifier_with_its_products_measured(tmp_path: Path) -> None:
    # the convolution template (strided, dilated, grouped, with a bias) on a tiny problem: the implicit GEMM's
    # gathered tiles split each K step; the fp16 products measured against float64 within the bound
    # (the convolution family's own twin, conv.implicit_gemm_f16x3, is this rewrite of its template)
    problem = ROOT / "tests" / "data" / "moves" / "conv2d.py"
    moves = {m.name: m for m in structural_moves(problem).instances}
    conv = moves["conv.implicit_gemm_f16x3"].source
    assert conv == to_f16x3(moves["conv.implicit_gemm"].source).replace("conv.implicit_gemm:",  # type: ignore[union-attr]
                                                                        "conv.implicit_gemm_f16x3:", 1)
    family = structural_moves(problem).family
    assert family is not None and moves["conv.implicit_gemm_f16x3"].grid == tiles(matmul_f16x3.TILES, family)
    kernel = tmp_path / "kernel.py"
    kernel.write_text(with_config(conv, {"CONV_BLOCK_M": 16, "CONV_BLOCK_N": 16, "CONV_BLOCK_K": 16}))
    settings = HarnessSettings.detect(seeds=1, time_compile=False)
    verdict = Verifier(problem, tmp_path / "harness", settings).verify(kernel, time=False)
    assert verdict.accepted, verdict.reason
    assert "low-precision products on fp32, their outputs measured at" in verdict.reason, verdict.reason
    assert float(verdict.reason.split("measured at ")[1].split("x")[0]) < 2
