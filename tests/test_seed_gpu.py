"""The compiler seed made live on a CUDA host: torch.compile's Triton for a softmax, GEMMs, a
reduction, a tanh GELU and a transposed convolution (the seed's own Triton convolution where cuDNN was),
translated, cached, and accepted by the verifier like any kernel; then a run from it.

Run on the GPU host (max-autotune benchmarks GEMM tiles: allow minutes per test):
    PYTHONPATH=$PWD python3 -m pytest -m gpu --timeout 900 tests/test_seed_gpu.py -v
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from kernelopt.harness.guards import check_kernel_source
from kernelopt.harness.verify import HarnessSettings, Verifier
from kernelopt.offline.tuner import knob_values
from kernelopt.seed.obtain import compiler_seed

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]
ROOT = Path(__file__).resolve().parents[1]
PROBLEMS = {
    "softmax": ROOT / "examples" / "softmax" / "problem.py",
    "matmul": ROOT / "examples" / "matmul" / "problem.py",
    "layernorm": ROOT / "benchmarks" / "kernelbench" / "problems" / "40_LayerNorm.py",
    # the compiler leaves the convolution to cuDNN: the seed launches its own Triton one there
    "conv_transpose3d": ROOT / "tests" / "data" / "conv" / "conv_transpose3d.py",
    # the GEMM template indexed in int32 for the given size; a larger case's output passes 2**31
    "tall_skinny": ROOT / "benchmarks" / "kernelbench" / "problems" / "9_Tall_skinny_matrix_multiplication_.py",
    # sqrt(2 / math.pi): a global's number, lifted into the graph by some torch versions, an fp64 root
    "gelu_tanh": ROOT / "benchmarks" / "kernelbench" / "problems" / "88_MinGPTNewGelu.py",
    # cuDNN's convolution then InstanceNorm: the seed checked against fp32 math, not the default TF32's rounding
    # (scaled up by the norm past the check's tolerance), and the module's lifted divide_by kept as the compiler did
    "conv_instance_norm": ROOT / "tests" / "data" / "conv" / "conv_instance_norm.py",
    # a first layer's 3-D convolution, 3 channels to 16: the helper's direct kernel, not the implicit GEMM
    "conv3d_rgb": ROOT / "tests" / "data" / "conv" / "conv3d_rgb.py",
    # InstanceNorm2d warning on every call (a one-channel image of F features): one graph, the warning after it
    "rows_instance_norm": ROOT / "tests" / "data" / "seeds" / "rows_instance_norm.py",
    # scaled_dot_product_attention, compiled as its math (its products and softmax), not a fused library kernel
    "attention": ROOT / "tests" / "data" / "moves" / "attention.py",
}


@pytest.mark.parametrize("name", list(PROBLEMS))
def test_the_seed_is_made_cached_and_accepted_by_the_verifier(name: str, tmp_path: Path) -> None:
    problem = PROBLEMS[name]
    seed = compiler_seed(problem, tmp_path / "cache")
    text = Path(seed.path).read_text()
    assert not seed.cached and seed.kernels >= 1 and seed.gpu
    assert "specialize" in seed.rewrites  # its check passed with the sizes specialized
    assert "helper_size_value(" in text or name.startswith("conv")
    assert check_kernel_source(text) == [] and "torch._inductor" not in text
    knobs = knob_values(text)
    assert "num_warps" in knobs
    if name == "matmul":
        assert {"BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M"} <= set(knobs) and "extern_kernels" not in text
    if name == "softmax":  # a 4,096-wide row: the max and the sum in one loop, as the static compile writes it
        assert "helper_online_softmax_combine(" in text and text.count("tl.range(") == 2
    if name == "attention":
        assert "extern_kernels" not in text and "scaled_dot_product" not in text
    if name == "tall_skinny":
        assert "INDEX_DTYPE=index_dtype(" in text
    if name.startswith("conv"):
        assert "conv_triton(" in text and {"CONV_BLOCK_M", "CONV_BLOCK_N", "CONV_BLOCK_K"} <= set(knobs)
    started = time.monotonic()
    again = compiler_seed(problem, tmp_path / "cache")
    assert again.cached and again.path == seed.path and time.monotonic() - started < 5
    verifier = Verifier(problem, tmp_path / "verify", HarnessSettings.detect(seeds=2, time_compile=True))
    try:
        baselines = verifier.baselines()
        verdict = verifier.verify(seed.path)
    finally:
        verifier.close()
    assert verdict.accepted, verdict.reason
    assert verdict.timing is not None and verdict.timing.is_gpu_time
    compiled_ms = baselines.compile.median_ms if baselines.compile else None
    print(f"{name}: seed {verdict.timing.median_ms:.4f} ms, torch.compile {compiled_ms} ms")


def test_optimize_with_neither_kernel_nor_model_starts_from_the_seed(tmp_path: Path) -> None:
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)  # the wheels' folder too
    env = {**os.environ, "KERNELOPT_RUNS_DIR": str(tmp_path / "runs"), "PYTHONPATH": path}
    proc = subprocess.run(
        [sys.executable, "-m", "kernelopt.cli", "optimize", str(PROBLEMS["softmax"]), "--max-rounds", "1",
         "--no-profile", "--json", "--out", str(tmp_path / "run")],
        capture_output=True, text=True, env=env, timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = json.loads(proc.stdout)
    first = [a for a in summary["attempts"] if a["round"] == 0]
    assert len(first) == 1 and first[0]["change"].startswith("the compiler seed")
    assert summary["best_time_ms"] <= first[0]["time_ms"]
    print(f"softmax from the seed: {first[0]['time_ms']:.4f} ms -> {summary['best_time_ms']:.4f} ms, "
          f"torch.compile {summary.get('compile_ms')} ms")


@pytest.mark.parametrize(("folder", "name"), [("level2", "76_Gemm_Add_ReLU"), ("level2", "99_Matmul_GELU_Softmax"),
                                              ("families", "97_ScaledDotProductAttention")])
def test_the_seeds_gemm_on_split_fp16_operands_is_accepted_and_timed_at_full_size(folder: str, name: str,
                                                                                  tmp_path: Path) -> None:
    # dot.split_f16 on the compiler's seed of a level-2 Linear with its epilogue (76: the bias and ReLU fused
    # into the GEMM template's suffix; 99: the bias fused, GELU and softmax in a kernel after) and on attention's
    # two batched templates (97: 1,024 batches of 512 x 512 x 1024, then 512 x 1024 x 512): verified at full size
    # with every derived case, its fp16 products measured against float64, and timed beside the seed.
    from kernelopt.offline.moves import matmul_split_f16
    from kernelopt.offline.moves.seed_split import to_split_f16
    from kernelopt.offline.tuner import with_config

    problem = ROOT / "benchmarks" / "kernelbench" / folder / f"{name}.py"
    seed = compiler_seed(problem, tmp_path / "cache")
    rewritten = to_split_f16(Path(seed.path).read_text())
    assert rewritten is not None
    keys = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "num_warps", "num_stages")
    kernel = tmp_path / "split.py"
    kernel.write_text(with_config(rewritten, dict(zip(keys, matmul_split_f16.TILES[0], strict=True))))
    verifier = Verifier(problem, tmp_path / "verify", HarnessSettings.detect(seeds=1))
    try:
        verdict = verifier.verify(kernel)
        before = verifier.verify(seed.path)
    finally:
        verifier.close()
    assert verdict.accepted and verdict.timing is not None, verdict.reason
    assert "low-precision products on fp32, their outputs measured at" in verdict.reason, verdict.reason
    seed_ms = before.timing.median_ms if before.timing else None
    print(f"{name}: split {verdict.timing.median_ms:.4f} ms ({verdict.reason}); seed {seed_ms} ms")


@pytest.mark.parametrize(("folder", "name"), [("level2", "1_Conv2D_ReLU_BiasAdd"),
                                              ("problems", "3_Batched_matrix_multiplication")])
def test_the_seeds_products_split_in_registers_are_accepted_and_timed_at_full_size(folder: str, name: str,
                                                                                   tmp_path: Path) -> None:
    # dot.f16x3 on the compiler's seed: the level-2 convolution (its implicit GEMM's gathered tiles; pass c3l2's
    # best was the seed's convolution at 3xTF32, 6.77 ms, 13% of the floor) and torch.bmm's batched template (which
    # dot.split_f16 leaves alone). Verified at full size with every derived case, its fp16 products measured
    # against float64, and timed beside the same seed at 3xTF32 (dot.tf32x3), each at its own launch and at the
    # in-register split's first tile.
    from kernelopt.offline.moves import matmul_f16x3
    from kernelopt.offline.moves.dot_f16x3 import to_f16x3
    from kernelopt.offline.moves.precision import to_tf32x3
    from kernelopt.offline.tuner import knob_values, with_config

    problem = ROOT / "benchmarks" / "kernelbench" / folder / f"{name}.py"
    seed = Path(compiler_seed(problem, tmp_path / "cache").path).read_text()
    rewritten, tf32x3 = to_f16x3(seed), to_tf32x3(seed) or seed
    assert rewritten is not None
    prefix = "CONV_" if "CONV_BLOCK_M" in knob_values(rewritten) else ""
    tile = dict(zip((f"{prefix}BLOCK_M", f"{prefix}BLOCK_N", f"{prefix}BLOCK_K", "num_warps", "num_stages"),
                    matmul_f16x3.TILES[0], strict=True))
    times = {}
    verifier = Verifier(problem, tmp_path / "verify", HarnessSettings.detect(seeds=1))
    try:
        for label, source in (("f16x3", rewritten), ("f16x3 tile", with_config(rewritten, tile)),
                              ("tf32x3", tf32x3)):
            kernel = tmp_path / f"{label.replace(' ', '_')}.py"
            kernel.write_text(source)
            verdict = verifier.verify(kernel)
            assert verdict.accepted and verdict.timing is not None, f"{label}: {verdict.reason}"
            if label.startswith("f16x3"):
                assert "low-precision products on fp32, their outputs measured at" in verdict.reason, verdict.reason
            times[label] = verdict.timing.median_ms
            print(f"{name} {label}: {verdict.timing.median_ms:.4f} ms ({verdict.reason})")
    finally:
        verifier.close()
    print(f"{name}: " + ", ".join(f"{k} {v:.4f} ms" for k, v in times.items()))


def test_the_seeds_convolution_on_split_parts_is_accepted_and_timed_at_full_size(tmp_path: Path) -> None:
    # dot.conv_split_f16 (conv_split.rewrite) on the compiler's seed of level 2's convolution: the input's samples
    # and the weight's output channels split once into fp16 parts before the implicit GEMM. Verified at full size
    # with every derived case, its fp16 products measured against float64, timed at the split's first two tiles
    # beside the seed at 3xTF32 (pass c3l2's best, 6.77 ms), on TF32 parts (dot.conv_split_tf32) and the products split
    # in registers (dot.f16x3).
    from kernelopt.offline.moves import conv_split
    from kernelopt.offline.moves.dot_f16x3 import to_f16x3
    from kernelopt.offline.moves.precision import to_tf32x3
    from kernelopt.offline.tuner import with_config

    problem = ROOT / "benchmarks" / "kernelbench" / "level2" / "1_Conv2D_ReLU_BiasAdd.py"
    seed = Path(compiler_seed(problem, tmp_path / "cache").path).read_text()
    split = conv_split.rewrite(seed)
    assert split is not None
    keys = ("CONV_BLOCK_M", "CONV_BLOCK_N", "CONV_BLOCK_K", "num_warps", "num_stages")
    tiles = [dict(zip(keys, tile, strict=True)) for tile in conv_split.TILES[:2]]
    verifier = Verifier(problem, tmp_path / "verify", HarnessSettings.detect(seeds=1))
    try:
        tf32 = conv_split.rewrite(seed, tf32=True)  # dot.conv_split_tf32: the input split in registers
        assert tf32 is not None
        for label, source in (("split 0", with_config(split, tiles[0])), ("split 1", with_config(split, tiles[1])),
                              ("split_tf32", tf32), ("tf32x3", to_tf32x3(seed) or seed),
                              ("f16x3", to_f16x3(seed) or seed)):
            kernel = tmp_path / f"{label.replace(' ', '_')}.py"
            kernel.write_text(source)
            verdict = verifier.verify(kernel)
            if label == "split_tf32" and not verdict.accepted:
                # Three TF32 products keep about 21 bits a product (each low part rounded to TF32, lo x lo dropped):
                # on this problem their error sits at the rule's cap (9x and 10.3x of the 10x allowed over two H100
                # runs, each with its own private draws), so the one-TF32 rule may refuse it, and only that rule
                assert verdict.rule == "one-tf32-product" and "one TF32 product" in verdict.reason, verdict.reason
                print(f"1_Conv2D_ReLU_BiasAdd {label}: refused by the one-TF32 rule ({verdict.reason[:160]})")
                continue
            assert verdict.accepted and verdict.timing is not None, f"{label}: {verdict.reason}"
            if label.startswith("split "):
                assert "low-precision products on fp32, their outputs measured at" in verdict.reason, verdict.reason
            elif label == "split_tf32":  # one TF32 product a part, judged by the one-TF32 rule
                assert "one-TF32 products on fp32, their outputs measured at" in verdict.reason, verdict.reason
            print(f"1_Conv2D_ReLU_BiasAdd {label}: {verdict.timing.median_ms:.4f} ms ({verdict.reason})")
    finally:
        verifier.close()


@pytest.mark.parametrize("problem", ["1_Conv2D_ReLU_BiasAdd", "conv_channel_min"])
def test_the_seeds_fused_epilogue_is_accepted_and_timed_at_a_level_2_size(problem: str, tmp_path: Path) -> None:
    # fuse.conv_epilogue (level 2's 1: the bias, ReLU and second bias in the convolution's store) and fuse.conv_rows
    # (tests/data/conv/conv_channel_min.py at level 2's 25's shape, batch 32: the minimum over 64 channels and two
    # tanh, the convolution's output never written), each on the GPU's own compiler seed: verified at full size with
    # every derived case, timed beside the seed, and fused into the split product (dot.conv_split_f16) too
    from kernelopt.offline.moves import conv_epilogue, conv_reduce, conv_split

    path = ROOT / "benchmarks" / "kernelbench" / "level2" / f"{problem}.py"
    if not path.exists():
        path = tmp_path / f"{problem}.py"
        path.write_text((ROOT / "tests" / "data" / "conv" / f"{problem}.py").read_text()
                        .replace("torch.randn(1, 3, 6, 7)", "torch.randn(32, 16, 256, 256)")
                        .replace("return [3, 20]", "return [16, 64]"))
    seed = Path(compiler_seed(path, tmp_path / "cache").path).read_text()
    module = conv_epilogue if problem.startswith("1_") else conv_reduce
    fused = module.rewrite(seed)
    split = conv_split.rewrite(seed)
    assert split is not None
    verifier = Verifier(path, tmp_path / "verify", HarnessSettings.detect(seeds=1))
    times = {}
    try:
        for label, source in (("seed", seed), (module.NAME, fused), ("split", split),
                              (f"split + {module.NAME}", module.rewrite(split))):
            kernel = tmp_path / f"{label.replace(' ', '_').replace('+', 'and')}.py"
            kernel.write_text(source)
            verdict = verifier.verify(kernel)
            assert verdict.accepted and verdict.timing is not None, f"{label}: {verdict.reason}"
            times[label] = verdict.timing.median_ms
    finally:
        verifier.close()
    print(f"{problem}: " + ", ".join(f"{k} {v:.4f} ms" for k, v in times.items()))
