"""The 3xTF32 move: fp32 products found on the CUDA cores, rewritten for the tensor cores at fp32's
accuracy, diagnosed by the judger and offered as a move of the best kernel."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from test_seed_translate import _run_both, problem_path, seed_text, shrunk_problem

from kernelopt.offline.judge import FIX_TF32X3, diagnose
from kernelopt.offline.moves import structural_moves
from kernelopt.offline.moves.precision import fma_dots, to_tf32x3
from kernelopt.offline.tuner import knob_values, with_config
from kernelopt.records import Roofline

ROOT = Path(__file__).parents[1]
BMM = "3_Batched_matrix_multiplication"

FORMS = '''
import triton
import triton.language as tl


@triton.jit
def kernel(a, b, acc, OFF: tl.constexpr = False, ON: tl.constexpr = True):
    ALLOW_TF32: tl.constexpr = False
    w = tl.dot(a,
               b, acc, "ieee")
    x = tl.dot(a, b, allow_tf32=OFF, out_dtype=tl.float32)
    y = tl.dot(a, b, allow_tf32=ALLOW_TF32)
    z = tl.dot(a, b, acc=acc, input_precision="ieee", max_num_imprecise_acc=None)
    keep_default = tl.dot(a, b)
    keep_on = tl.dot(a, b, allow_tf32=ON)
    keep_done = tl.dot(a, b, input_precision="tf32x3")
    keep_other = other.dot(a, b, allow_tf32=False)
'''


def test_every_form_of_an_fma_dot_is_found_and_rewritten_and_nothing_else() -> None:
    assert len(fma_dots(FORMS)) == 4
    out = to_tf32x3(FORMS)
    assert out is not None
    lines = [line.strip() for line in out.splitlines() if "dot(" in line]
    assert lines == [
        "w = tl.dot(a, b, acc, input_precision='tf32x3')",
        "x = tl.dot(a, b, out_dtype=tl.float32, input_precision='tf32x3')",
        "y = tl.dot(a, b, input_precision='tf32x3')",
        "z = tl.dot(a, b, acc=acc, max_num_imprecise_acc=None, input_precision='tf32x3')",
        "keep_default = tl.dot(a, b)",  # Triton's default TF32 is not this move's to change
        "keep_on = tl.dot(a, b, allow_tf32=ON)",
        'keep_done = tl.dot(a, b, input_precision="tf32x3")',
        "keep_other = other.dot(a, b, allow_tf32=False)",
    ]
    assert fma_dots(out) == [] and to_tf32x3(out) is None  # once is enough
    assert to_tf32x3("def f(:\n") is None  # not Python: nothing to rewrite


def test_the_compilers_gemm_seed_is_rewritten_and_still_computes_the_reference(tmp_path: Path) -> None:
    seed = seed_text("max_autotune_triton", BMM)
    rewritten = to_tf32x3(seed)
    assert rewritten is not None
    changed = [(a, b) for a, b in zip(seed.splitlines(), rewritten.splitlines(), strict=True) if a != b]
    assert changed == [("        acc += tl.dot(a, b, allow_tf32=ALLOW_TF32)",
                        "        acc += tl.dot(a, b, input_precision='tf32x3')")]
    assert knob_values(rewritten) == knob_values(seed)  # the autotuner's pick stays the launch
    small = {k: min(v, 32) for k, v in knob_values(rewritten).items() if "BLOCK_" in k}
    seed_file = tmp_path / "seed.py"
    seed_file.write_text(with_config(rewritten, small))
    path = problem_path(BMM)
    expected, got = _run_both(shrunk_problem(path, tmp_path / path.name), seed_file)
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4)


def test_the_rewrite_is_a_move_of_the_best_kernel_for_fp32_problems_only() -> None:
    seed = seed_text("max_autotune_triton", BMM)
    moves = structural_moves(problem_path(BMM), 132, source=seed)
    rewrite = {m.name: m for m in moves.instances}["dot.tf32x3"]
    assert rewrite.source == to_tf32x3(seed) and rewrite.grid == ({},) and rewrite.cures == ("compute",)
    assert "1 fp32 tl.dot" in rewrite.why
    assert "dot.tf32x3" not in {m.name for m in structural_moves(problem_path(BMM), 132).instances}  # no kernel
    done = structural_moves(problem_path(BMM), 132, source=rewrite.source)
    assert "no tl.dot multiplying fp32 on the CUDA cores" in {s.name: s.why for s in done.skipped}["dot.tf32x3"]
    half = structural_moves(ROOT / "examples" / "matmul" / "problem.py", 132, source=seed)
    assert "dtype is float16" in {s.name: s.why for s in half.skipped}["dot.tf32x3"]


def _roofline(bound: str) -> Roofline:
    return Roofline(bottleneck=bound, compute_sol_pct=80.0, memory_sol_pct=30.0, efficiency_pct=40.0,
                    headroom_pct=60.0, at_roofline=False, uses_tensor_cores=False, peak_tflops=164.9)


def test_the_judger_names_fma_products_first_unless_the_kernel_is_memory_bound() -> None:
    seed = seed_text("max_autotune_triton", BMM)
    first = diagnose(_roofline("compute"), {}, source=seed)[0]
    assert first.category == "compute" and first.recommended_fixes == (FIX_TF32X3,)
    assert "1 tl.dot call(s) multiply fp32 on the CUDA cores" in first.summary and "165 TFLOP/s" in first.reasoning
    assert diagnose(None, {}, source=seed)[0].category == "compute"  # no profile yet: the source says enough
    assert all(b.category != "compute" for b in diagnose(_roofline("memory"), {}, source=seed))
    rewritten = to_tf32x3(seed)
    assert rewritten is not None
    assert all(b.category != "compute" for b in diagnose(_roofline("compute"), {}, source=rewritten))


@pytest.mark.parametrize("fix", [FIX_TF32X3])
def test_the_fix_moves_no_launch_knob(fix: str) -> None:
    from kernelopt.offline.tuner import Direction, direction_of

    assert direction_of(fix) == Direction()  # the structure changes; the sweep keeps its own direction
