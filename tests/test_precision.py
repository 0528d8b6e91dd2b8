"""The 3xTF32 move: fp32 products found on the CUDA cores, rewritten for the tensor cores at fp32's
accuracy, diagnosed by the judger and offered as a move of the best kernel."""

from __future__ import annotations

import re
from pathlib import Path

import torch
from test_seed_translate import _run_both, problem_path, seed_text, shrunk_problem

from kernelopt.offline.judge import FIX_TF32X3, diagnose
from kernelopt.offline.moves import structural_moves
from kernelopt.offline.moves.precision import (
    TF32X3_TILES,
    fma_dots,
    k_major_operands,
    literal_k,
    one_tile,
    to_tf32x3,
)
from kernelopt.offline.tuner import FIX_GROW, FIX_SWEEP, knob_values, with_config
from kernelopt.records import BottleneckResult, Roofline

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


@triton.jit
def template(a, b, ALLOW: tl.constexpr):
    v = tl.dot(a, b, allow_tf32=ALLOW)


def launch(a, b):
    template[(1,)](a, b, ALLOW=False)  # a launch's False reaches the kernel's constexpr
'''


def test_every_form_of_an_fma_dot_is_found_and_rewritten_and_nothing_else() -> None:
    assert len(fma_dots(FORMS)) == 5
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
        "v = tl.dot(a, b, input_precision='tf32x3')",
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
    assert rewrite.source == to_tf32x3(seed) and rewrite.cures == ("compute",)
    # its own launch first, then tiles 3xTF32 runs well at: the ieee pick is the wrong tile for it
    assert rewrite.grid[0] == {} and len(rewrite.grid) > 1
    assert {"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32, "num_warps": 4, "num_stages": 4} in rewrite.grid
    assert "1 fp32 tl.dot" in rewrite.why and "tiles 3xTF32 runs well at" in rewrite.why
    conv = seed_text("max_autotune_triton", "1_Conv2D_ReLU_BiasAdd")  # the seed's own convolution
    conv_move = {m.name: m for m in structural_moves(problem_path("1_Conv2D_ReLU_BiasAdd"), 132, conv).instances}
    assert {"CONV_BLOCK_M": 128, "CONV_BLOCK_N": 64, "CONV_BLOCK_K": 32, "num_warps": 4,
            "num_stages": 4} in conv_move["dot.tf32x3"].grid
    assert "dot.tf32x3" not in {m.name for m in structural_moves(problem_path(BMM), 132).instances}  # no kernel
    done = structural_moves(problem_path(BMM), 132, source=rewrite.source)
    assert "no tl.dot multiplying fp32 on the CUDA cores" in {s.name: s.why for s in done.skipped}["dot.tf32x3"]
    half = structural_moves(ROOT / "examples" / "matmul" / "problem.py", 132, source=seed)
    assert "dtype is float16" in {s.name: s.why for s in half.skipped}["dot.tf32x3"]


def test_a_k_major_gemm_seed_takes_the_deep_k_tiles_first_on_a_hopper() -> None:
    # nn.Linear's seed (x @ W.T): the template declares stride_ak = 1 and stride_bk = 1, both operands K-major,
    # the layout K-major 3xTF32 ran 10-11% faster at BLOCK_K 64 in on the H200; torch.bmm's B is N-major
    # (stride_bk = ks1) and keeps the table that ran best there, as do pre-Hopper GPUs and the convolution
    linear = seed_text("max_autotune_triton", "99_Matmul_GELU_Softmax")
    assert k_major_operands(linear) and not k_major_operands(seed_text("max_autotune_triton", BMM))
    grid = {m.name: m.grid for m in structural_moves(problem_path("99_Matmul_GELU_Softmax"), 132,
                                                     source=linear).instances}["dot.tf32x3"]
    assert grid[0] == {} and grid[1] == {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "num_warps": 8,
                                         "num_stages": 3}
    assert all(c["BLOCK_K"] >= 32 for c in grid[1:]) and {"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32,
                                                           "num_warps": 4, "num_stages": 4} in grid
    ampere = {m.name: m.grid for m in structural_moves(problem_path("99_Matmul_GELU_Softmax"), 108,
                                                       source=linear, capability="8.0").instances}["dot.tf32x3"]
    assert all(c["BLOCK_K"] <= 32 for c in ampere[1:])
    bmm = {m.name: m.grid for m in structural_moves(problem_path(BMM), 132,
                                                    source=seed_text("max_autotune_triton", BMM)).instances}
    assert all(c["BLOCK_K"] <= 32 for c in bmm["dot.tf32x3"][1:])
    conv = seed_text("max_autotune_triton", "1_Conv2D_ReLU_BiasAdd")
    conv_grid = {m.name: m.grid for m in structural_moves(problem_path("1_Conv2D_ReLU_BiasAdd"), 132,
                                                          conv).instances}["dot.tf32x3"]
    plain = [dict(zip(("CONV_BLOCK_M", "CONV_BLOCK_N", "CONV_BLOCK_K", "num_warps", "num_stages"), t, strict=True))
             for t in TF32X3_TILES]
    assert list(conv_grid[1:]) == plain
    # a template that fixes K (8192 here) may load its K tiles unmasked: no tile whose BLOCK_K does not divide it
    assert literal_k(linear) == {8192}
    odd = linear.replace("K = 8192", "K = 8224")  # a multiple of 32, not of 64
    assert literal_k(odd) == {8224}
    odd_grid = {m.name: m.grid for m in structural_moves(problem_path("99_Matmul_GELU_Softmax"), 132,
                                                         source=odd).instances}["dot.tf32x3"]
    assert odd_grid[1:] and all(8224 % c["BLOCK_K"] == 0 for c in odd_grid[1:])
    assert {c["BLOCK_K"] for c in grid[1:]} == {32, 64}
    assert not k_major_operands("def f(a, b):\n    stride_ak = 1\n    return a\n")  # no tl.dot: nothing to say


def _tiles(source: str) -> list[dict[str, int]]:
    """Each GEMM template launch's tile, in source order."""
    found = []
    for line in source.splitlines():
        if "triton_tem_" in line and "](" in line:
            found.append({k: int(v) for k, v in re.findall(r"(BLOCK_[MNK]|GROUP_M|num_warps|num_stages)=(\d+)", line)})
    return found


def test_every_gemm_of_a_seed_takes_the_rewrite_s_tiles_not_the_first_s_factor() -> None:
    # An MLP's seed has a GEMM template per nn.Linear, each at its own autotuned tile (45_Gemm_Sigmoid_LogSumExp on
    # the H200: 64 x 128 x 32 and 128 x 64 x 32). The sweep moves a knob's later places by the first's factor, so
    # the deep tile set on the first made the second 256 x 64 x 64, and the rewrite stayed at its own launch.
    linear = seed_text("max_autotune_triton", "99_Matmul_GELU_Softmax")
    assert one_tile(linear) == linear  # one GEMM: nothing to make alike
    launch = next(line for line in linear.splitlines() if "triton_tem_" in line and "](" in line)
    second = launch.replace("BLOCK_M=128, BLOCK_N=64, BLOCK_K=32", "BLOCK_M=64, BLOCK_N=128, BLOCK_K=16")
    two = linear.replace(launch, launch + "\n" + second.replace("num_warps=4", "num_warps=8"))
    assert _tiles(two)[0] != _tiles(two)[1]
    rewrite = {m.name: m for m in structural_moves(problem_path("99_Matmul_GELU_Softmax"), 132,
                                                   source=two).instances}["dot.tf32x3"]
    first, again = _tiles(rewrite.source)
    assert first == again == {"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8, "num_warps": 4,
                              "num_stages": 3}
    deep = rewrite.grid[1]
    assert deep == {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "num_warps": 8, "num_stages": 3}
    assert _tiles(with_config(rewrite.source, deep)) == [{**deep, "GROUP_M": 8}] * 2  # each GEMM at the tile
    # the first's BLOCK_K must divide every K a template fixes (its K loads may carry no mask), else as it was
    assert "each GEMM launch at the first's tile" in rewrite.why
    odd = two.replace("K = 8192", "K = 8208")  # 16 x 513: the first's BLOCK_K of 32 does not divide it
    assert literal_k(odd) == {8208} and one_tile(odd) == odd
    # a grid written with the tile's numbers would not follow a new tile: such a kernel keeps its launches
    grid = second.split("](")[0].strip()  # the second launch's `kernel[lambda meta: ...`, the first's the same
    fixed = two.replace(grid, "triton_tem_fused_addmm_t_0[(triton.cdiv(s77, 64) * triton.cdiv(8192, 128), 1, 1)", 1)
    assert fixed.count("lambda meta") == two.count("lambda meta") - 1 and one_tile(fixed) == fixed
    compile(fixed, "fixed.py", "exec")  # still Python: the launch was kept, not a parse failure


def test_a_k_a_template_fixes_counts_though_another_template_s_k_is_not_fixed() -> None:
    # before, one GEMM with K a run-time size left the fixed K of the other out, and a tile that reads past it in
    two = "def a(K):\n    tl.dot(x, y)\n\n\ndef b():\n    K = 48\n    tl.dot(x, y)\n"
    assert literal_k(two) == {48}


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


def test_an_fp16_problem_s_dots_are_never_judged_fma_products() -> None:
    """The fp16 matmul example's run on the H200 was told its products ran as FMAs (the seed's
    allow_tf32=False) and swept 3xTF32's cure for a round: fp16 multiplies on the tensor cores."""
    seed = seed_text("max_autotune_triton", BMM)
    assert diagnose(_roofline("compute"), {}, source=seed, dtype="fp32")[0].recommended_fixes == (FIX_TF32X3,)
    for dtype in ("fp16", "bf16"):
        assert all(FIX_TF32X3 not in b.recommended_fixes
                   for b in diagnose(_roofline("compute"), {}, source=seed, dtype=dtype))


def test_a_gemm_whose_memory_lead_is_on_chip_is_diagnosed_as_fma_products() -> None:
    """Level-2 GEMM seeds on the H200 were judged memory-bound (NCU's memory SOL leads, a unit on
    chip among them) and told to enlarge their blocks; with DRAM far below that lead, their FMA
    products are the diagnosis."""
    from kernelopt.hardware import RooflineAnalyzer, floor_from_counts, get_gpu_spec
    from kernelopt.hardware.ncu import DRAM_THROUGHPUT_PCT, MEMORY_THROUGHPUT_PCT, SM_THROUGHPUT_PCT

    floor = floor_from_counts(4 * (1024 * 8192 * 2 + 8192 * 8192), 2.0 * 1024 * 8192 * 8192, torch.float32)
    metrics = {SM_THROUGHPUT_PCT: 51.2, MEMORY_THROUGHPUT_PCT: 56.3, DRAM_THROUGHPUT_PCT: 6.0}
    roofline = RooflineAnalyzer(get_gpu_spec("H200")).analyze(metrics, floor, measured_time_ms=5.8)
    first = diagnose(roofline, metrics, source=seed_text("max_autotune_triton", BMM))[0]
    assert first.category == "compute" and first.recommended_fixes == (FIX_TF32X3,)


def test_a_round_with_a_cure_unmeasured_gives_the_kernels_own_knobs_a_few_rows(tmp_path: Path) -> None:
    from helpers import fast_context

    from kernelopt.harness.problem import source_hash
    from kernelopt.nodes.tune import OWN_BESIDE_A_CURE, _plan
    from kernelopt.records import KernelRecord, Timing

    seed = seed_text("max_autotune_triton", BMM)
    (tmp_path / "best.py").write_text(seed)
    timing = Timing(5.8, 5.8, 5.8, 5.8, 5.8, 9, "cuda_events")
    best = KernelRecord(str(tmp_path / "best.py"), source_hash(seed), timing, 0)
    fma = diagnose(_roofline("compute"), {}, source=seed)[0]
    task: dict = {"run_dir": str(tmp_path), "problem_file": str(problem_path(BMM)), "gpu_key": "H200",
                  "round": 1, "repair": 0, "best": best, "failed": [],
                  "idea": (fma, fma.root_causes[0], fma.recommended_fixes[0])}
    ctx = fast_context(tmp_path)
    planned, basis = _plan(seed, task, ctx, 48)  # type: ignore[arg-type]
    own = [p for p in planned if not p.move]
    first = basis["moves"]["first"]  # the moves that cure it: the rewrite, and the batched template's twin
    assert "dot.tf32x3" in first and planned[0].move in first and "dot.tf32x3" in {p.move for p in planned}
    assert 1 <= len(own) <= OWN_BESIDE_A_CURE
    # so does any diagnosis an unmeasured move answers (several passes over memory: the batched template)
    passes = BottleneckResult("memory", "several passes", "", ("",), (FIX_GROW,))
    capped, _ = _plan(seed, {**task, "idea": (passes, "", FIX_GROW)}, ctx, 48)  # type: ignore[arg-type]
    assert "bmm.batched" in {p.move for p in capped} and 1 <= len([p for p in capped if not p.move]) <= 8
    # a diagnosis whose fix is the knob sweep itself (an untuned launch) keeps the knobs' full share
    untuned = BottleneckResult("other", "untuned", "", ("",), (FIX_SWEEP,))
    full, _ = _plan(seed, {**task, "idea": (untuned, "", FIX_SWEEP)}, ctx, 48)  # type: ignore[arg-type]
    assert len([p for p in full if not p.move]) > OWN_BESIDE_A_CURE


def test_the_fix_moves_no_launch_knob() -> None:
    from kernelopt.offline.tuner import Direction, direction_of

    assert direction_of(FIX_TF32X3) == Direction()  # the structure changes; the sweep keeps its own direction


# TTIR lines as Triton 3.9 prints them for one kernel (compiled on this host for sm_90): the
# default precision on fp32 operands prints "tf32"; ieee is the unprinted default attribute.
TTIR = """
    %c = tt.dot %a_8, %b_12, %cst, inputPrecision = tf32 : tensor<32x32xf32> * tensor<32x32xf32> -> tensor<32x32xf32>
    %d = tt.dot %a_8, %b_12, %c : tensor<32x32xf32> * tensor<32x32xf32> -> tensor<32x32xf32>
    %e = tt.dot %a_8, %b_12, %d, inputPrecision = tf32x3 : tensor<32x32xf32> * tensor<32x32xf32> -> tensor<32x32xf32>
    %f = tt.dot %a, %b, %e, inputPrecision = tf32, maxNumImpreciseAcc = 0 : tensor<64x32xf32> * tensor<32x64xf32> -> ...
    %g = tt.dot %g, %g_13, %f, inputPrecision = tf32 : tensor<32x32xf16> * tensor<32x32xf16> -> tensor<32x32xf32>
"""


def test_one_tf32_product_on_fp32_operands_is_read_from_the_ttir() -> None:
    from kernelopt.harness.sandbox.precision import read_products

    assert read_products([TTIR]).tf32 == 2  # %c and %f: fp32 at one TF32 product; not ieee, tf32x3 or fp16 operands
    assert read_products([TTIR.replace("inputPrecision = tf32 :", "inputPrecision = tf32x3 :")]).tf32 == 1


_COMPILE_HERE = """
import importlib.util, sys
from kernelopt.harness.sandbox.fingerprint import compile_ttir
from kernelopt.harness.sandbox.precision import read_products
spec = importlib.util.spec_from_file_location("kernel_under_test", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
signature = {n: "*fp32" for n in ("a_ptr", "b_ptr", "c_ptr")} | {n: "i32" for n in ("M", "N", "K")}
signature |= {"BLOCK": "constexpr", "BLOCK_K": "constexpr"}
print(read_products([compile_ttir(module.matmul_kernel.fn, signature, {"BLOCK": 16, "BLOCK_K": 32})]).tf32)
"""


def test_the_ttir_of_a_default_precision_dot_compiled_here_is_refused(tmp_path: Path) -> None:
    # The rule reads what Triton itself prints: the cheat's kernel compiled for sm_90 on this host,
    # and the same kernel at input_precision="ieee" and "tf32x3". In a fresh process, as in the
    # worker: a process where the interpreter has run other kernels may not compile to TTIR.
    import subprocess
    import sys

    cheat = (Path(__file__).parent / "cheats" / "cheat_tf32_matmul.py").read_text()
    variants = {"default": cheat} | {p: cheat.replace("tl.dot(a, b)", f'tl.dot(a, b, input_precision="{p}")')
                                     for p in ("ieee", "tf32x3")}
    found = {}
    for name, source in variants.items():
        (tmp_path / f"{name}.py").write_text(source)
        run = subprocess.run([sys.executable, "-c", _COMPILE_HERE, str(tmp_path / f"{name}.py")],
                             capture_output=True, text=True, timeout=120, check=False)
        assert run.returncode == 0, run.stderr[-2000:]
        found[name] = int(run.stdout.split()[-1])
    assert found == {"default": 1, "ieee": 0, "tf32x3": 0}


def test_the_judger_node_reads_the_problem_s_dtype_from_the_floor(tmp_path: Path) -> None:
    """The node, not only the rule: the floor's dtype reaches diagnose (an fp16 floor: no FMA verdict)."""
    from kernelopt.context import Context
    from kernelopt.hardware import floor_from_counts
    from kernelopt.llm import RetryPolicy
    from kernelopt.nodes.judger import _judge
    from kernelopt.nodes.llm_calls import LLMCalls
    from kernelopt.records import Baselines, KernelRecord, Timing

    kernel = tmp_path / "seed.py"
    kernel.write_text(seed_text("max_autotune_triton", BMM))
    record = KernelRecord(str(kernel), "h", Timing(1.0, 1.0, 1.0, 1.0, 1.0, 10, "cuda"), 0)
    fixes = {}
    for dtype in (torch.float32, torch.float16):
        baselines = Baselines(eager=None, compile=None, floor=floor_from_counts(1 << 20, 1e9, dtype))
        state = {"baselines": baselines, "gpu_key": "H200", "rounds_without_gain": 0}
        calls = LLMCalls(state, "judger", RetryPolicy(0, 0.0, 0.0))
        judged = _judge(None, (record, _roofline("compute"), {}), state, Context(), calls)  # type: ignore[arg-type]
        fixes[dtype] = judged.diagnosis.recommended_fix
    assert fixes[torch.float32] == FIX_TF32X3 and fixes[torch.float16] != FIX_TF32X3
