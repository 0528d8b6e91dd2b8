"""`matmul.split_tf32` and the measured one-TF32-product rule: operands split once into TF32 parts and
remainders, three plain TF32 products a K step; offered where the product is large (why not elsewhere), exact in
its split, verified on tiny problems; and the verifier's measurement of one-TF32 products against float64."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import numpy as np
import pytest
import torch

from kernelopt.harness.sandbox import precision
from kernelopt.harness.sandbox.reference import error_ratio
from kernelopt.harness.verify import HarnessSettings, Verifier
from kernelopt.offline.moves import matmul_split, structural_moves
from kernelopt.offline.moves.family import trace_family
from kernelopt.offline.tuner import with_config

ROOT = Path(__file__).resolve().parents[1]
MOVES = ROOT / "tests" / "data" / "moves"
PROBLEMS = ROOT / "benchmarks" / "kernelbench" / "problems"
CHEATS = ROOT / "tests" / "cheats"
TINY = {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 2}


def _source(problem: Path) -> str:
    from kernelopt.harness.problem import import_file

    family = trace_family(import_file(problem, "kernelopt_test_split_family"))
    template = matmul_split.bmm_split_tf32 if family.name == "bmm" else matmul_split.split_tf32
    return template(family.input_names, family.operands, family.transposed)


def _load(tmp_path: Path, source: str):  # noqa: ANN202 - the kernel module
    path = tmp_path / "split_kernel.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("kernelopt_test_split_kernel", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def test_the_split_is_offered_for_large_fp32_products_and_says_why_not_elsewhere() -> None:
    square = {m.name: m for m in structural_moves(PROBLEMS / "1_Square_matrix_multiplication_.py").instances}
    split = square["matmul.split_tf32"]
    assert [tuple(c.values()) for c in split.grid] == list(matmul_split.TILES)
    assert "compute" in split.cures and "three TF32 products a K step added in fp32" in split.why
    irregular = {m.name for m in structural_moves(PROBLEMS / "8_Matmul_with_irregular_shapes_.py").instances}
    assert "matmul.split_tf32" in irregular  # K=2949 and M, N off every tile: padded
    batched = {m.name: m for m in structural_moves(PROBLEMS / "3_Batched_matrix_multiplication.py").instances}
    assert "each batch's A and B split once" in batched["bmm.split_tf32"].why
    tiny = {s.name: s.why for s in structural_moves(MOVES / "bmm.py").skipped}
    assert "M=20, N=12, K=36: below 128 the product is bound by memory" in tiny["bmm.split_tf32"]
    for problem, why in (("4_Matrix_vector_multiplication_.py", "bound by memory"),
                         ("6_Matmul_with_large_K_dimension_.py", "4 output tiles of 128 x 128 for 132 SMs")):
        skipped = {s.name: s.why for s in structural_moves(PROBLEMS / problem).skipped}
        assert why in skipped["matmul.split_tf32"], skipped.get("matmul.split_tf32")
    volta = {s.name: s.why for s in structural_moves(PROBLEMS / "1_Square_matrix_multiplication_.py",
                                                     capability="7.0").skipped}
    assert "no TF32 tensor cores" in volta["matmul.split_tf32"]
    fp16 = structural_moves(MOVES / "matmul_fp16.py")
    assert "matmul.split_tf32" not in {m.name for m in fp16.instances} | {s.name for s in fp16.skipped}


def test_the_split_parts_are_exact_and_rounded_to_tf32(tmp_path: Path) -> None:
    # hi + lo is x exactly, hi keeps 10 mantissa bits (rounded to nearest: |lo| at most half of hi's last bit),
    # the padding is zeros, a non-finite value lies whole in the remainder (its part 0, so that inf meets no zero
    # remainder); fp32's largest does not round to inf.
    module = _load(tmp_path, with_config(_source(MOVES / "matmul.py"), TINY))
    x = torch.randn(37, 21) * torch.logspace(-30, 30, 21)
    x[0, :5] = torch.tensor([float("inf"), float("-inf"), float("nan"), torch.finfo(torch.float32).max, 1.0])
    hi, lo = module._split(torch.stack([x.T, -x.T]), 32, 48)  # two batches of a strided view, rows and K padded
    assert hi.shape == lo.shape == (2, 32, 48)
    assert not hi[:, 21:].any() and not lo[:, 21:].any() and not hi[:, :, 37:].any() and not lo[:, :, 37:].any()
    assert torch.equal(hi[1, :21, :37].nan_to_num(), -hi[0, :21, :37].nan_to_num())  # each batch its own
    h, r, want = hi[0, :21, :37], lo[0, :21, :37], x.T
    finite = want.isfinite()
    assert torch.equal((h.double() + r.double())[finite], want.double()[finite])
    assert not (h.view(torch.int32)[finite] & 0x1FFF).any()
    below_max = finite & (want.abs() < torch.finfo(torch.float32).max)  # the largest is truncated, not rounded up
    assert (r.abs() <= h.abs() * 2.0**-11)[below_max].all()
    assert r[0, 0] == float("inf") and r[1, 0] == float("-inf") and h[0, 0] == 0 and h[1, 0] == 0
    assert r[2, 0].isnan() and h[2, 0] == 0 and h[3, 0].isfinite() and h[3, 0] + r[3, 0] == want[3, 0]


@pytest.mark.parametrize("problem", ["matmul.py", "matmul_bt.py", "matmul3d.py", "bmm.py"])
def test_the_split_template_passes_the_verifier(problem: str, tmp_path: Path, settings: HarnessSettings) -> None:
    source = _source(MOVES / problem)
    if problem == "matmul3d.py":  # torch.matmul's A of more dims: its rows, as matmul_moves gives every template
        from kernelopt.harness.problem import import_file
        from kernelopt.offline.moves import gemm

        source = gemm._on_rows(source, trace_family(import_file(MOVES / problem, "kernelopt_test_split_3d")))
    kernel = tmp_path / "kernel.py"
    kernel.write_text(with_config(source, TINY))
    verdict = Verifier(MOVES / problem, tmp_path / "harness", settings).verify(kernel, time=False)
    assert verdict.accepted, verdict.reason
    # the looped kernel's TTIR is had on the host too: its three TF32 products measured, not passed unseen
    assert "one-TF32 products on fp32, their outputs measured at" in verdict.reason, verdict.reason


def test_the_split_without_its_remainders_is_one_tf32_product_and_refused(tmp_path: Path,
                                                                        settings: HarnessSettings) -> None:
    # hi * hi alone: the same loop and loads, one TF32 product of the rounded operands, measured hundreds of times
    # PyTorch's own error
    source = with_config(_source(MOVES / "matmul_bt.py"), TINY)
    three = ('step = tl.dot(a_lo, b_hi, input_precision="tf32")\n        step = tl.dot(a_hi, b_lo, step, '
             'input_precision="tf32")\n        acc += tl.dot(a_hi, b_hi, step, input_precision="tf32")')
    assert three in source
    kernel = tmp_path / "kernel.py"
    kernel.write_text(source.replace(three, 'acc += tl.dot(a_hi, b_hi, input_precision="tf32")'))
    verdict = Verifier(MOVES / "matmul_bt.py", tmp_path / "harness", settings).verify(kernel, time=False)
    assert not verdict.accepted and verdict.rule == "one-tf32-product", verdict.reason
    assert float(verdict.reason.split("(measured: ")[1].split("x")[0]) > 100


@pytest.mark.parametrize(("kernel", "accepted"), [("honest_split_tf32_matmul", True), ("cheat_tf32_matmul", False)])
def test_one_tf32_products_are_measured_against_float64(kernel: str, accepted: bool, tmp_path: Path,
                                                        settings: HarnessSettings) -> None:
    # Both launch tl.dot at one TF32 product on fp32 (the TTIR says so); the split's three add up to fp32's
    # accuracy, the lone product is hundreds of times PyTorch's own error.
    verdict = Verifier(CHEATS / "problem_matmul.py", tmp_path, settings).verify(CHEATS / f"{kernel}.py", time=False)
    assert verdict.accepted is accepted, verdict.reason
    if accepted:
        ratio = float(verdict.reason.split("measured at ")[1].split("x")[0])
        assert ratio <= precision.FP32_ERROR_TIMES
    else:
        assert verdict.rule == "one-tf32-product" and "outside a chain of 3" in verdict.reason
        assert float(verdict.reason.split("(measured: ")[1].split("x")[0]) > 100


def test_the_rule_refuses_a_lone_product_and_what_it_cannot_measure_or_measures_too_far_off() -> None:
    Products = precision.Products
    assert precision.refusal(Products(), None) is None  # nothing below fp32's precision: nothing to measure
    # a one-TF32 product outside a split's chain, however close it measured (at a long K on same-sign inputs
    # PyTorch's own fp32 sum errs about as much): refused as it stands
    assert "1 of them outside a chain of 3" in (precision.refusal(Products(tf32=1, lone=1), 0.5) or "")
    assert "no case had a float64 yardstick" in (precision.refusal(Products(tf32=3), None) or "")
    assert precision.refusal(Products(tf32=3), 9.9) is None
    assert "10.5x the problem's own fp32 error" in (precision.refusal(Products(tf32=3), 10.5) or "")
    # 16-bit operands or bf16x3, or a kernel whose IR could not be read: measured where a case can, else passed
    assert "2 tl.dot multiply below fp32's precision: the outputs are 40x" in (
        precision.refusal(Products(low=2), 40.0) or "")
    assert "could not be read" in (precision.refusal(Products(unknown=True), 40.0) or "")
    assert precision.refusal(Products(low=2), 2.0) is None and precision.refusal(Products(unknown=True), None) is None
    # the worst output of the worst case, each against its own yardstick's largest slack; none without one
    assert error_ratio([(1e-6, 1e-6), (8e-6, 2e-6), (5.0, None)]) == 4.0
    assert error_ratio([(5.0, None)]) is None
    assert error_ratio([(0.0, 0.0)]) == 0.0 and error_ratio([(1e-9, 0.0)]) == float("inf")


@pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1", reason="Triton's host compile of an interpreted kernel")
def test_the_compiled_products_are_read_by_precision_and_by_chain() -> None:
    import triton
    import triton.language as tl

    from kernelopt.harness.sandbox.fingerprint import compile_ttir

    @triton.jit
    def product(a_ptr, c_ptr, P: tl.constexpr):
        r = tl.arange(0, 16)
        a = tl.load(a_ptr + r[:, None] * 16 + r[None, :])
        if P == 0:
            c = tl.dot(a, a, input_precision="ieee")
        elif P == 1:
            c = tl.dot(a, a, input_precision="tf32x3")
        elif P == 2:
            c = tl.dot(a, a)  # Triton's default: one TF32 product
        elif P == 3:
            c = tl.dot(a.to(tl.float16), a.to(tl.float16))
        elif P == 4:
            c = tl.dot(a, a, input_precision="bf16x3")
        elif P == 5:  # a split's chain: lo*hi, hi*lo, hi*hi on one accumulator
            c = tl.dot(a, a, tl.dot(a * 2, a, tl.dot(a, a * 3)))
        else:  # two chained: no split
            c = tl.dot(a * 2, a, tl.dot(a, a * 3))
        tl.store(c_ptr + r[:, None] * 16 + r[None, :], c)

    def read(p: int) -> precision.Products:
        ttir = compile_ttir(product.fn, {"a_ptr": "*fp32", "c_ptr": "*fp32", "P": "constexpr"}, {"P": p})
        return precision.read_products([ttir])

    @triton.jit
    def total(a_ptr):
        r = tl.arange(0, 16)
        tl.store(a_ptr + r, tl.sum(tl.load(a_ptr + r), axis=0) + tl.zeros([16], tl.float32))

    # an interpreted launch first, as in a candidate's process: one through tl.sum and tl.zeros (triton.language's
    # own @jit functions) leaves some of tl.core's builtins wrapped by the interpreter (Triton 3.9)
    total[(1,)](torch.ones(16))
    Products = precision.Products
    assert read(0) == read(1) == Products()
    assert read(2) == Products(tf32=1, lone=1)
    assert read(3) == Products(low=1, low_lone=1)  # a 16-bit product outside a split's chain
    assert read(4) == Products(low=1)  # bf16x3: several products of its own, measured
    assert read(5) == Products(tf32=3) and read(6) == Products(tf32=2, lone=2)
    # a one-TF32 product printed in a form whose operands are not read: counted, and never credited a chain
    odd = "%c = tt.dot(%a, %b) {inputPrecision = tf32 : tensor<16x16xf32> * tensor<16x16xf32> -> tensor<16x16xf32>}"
    assert precision.read_products([odd]) == Products(tf32=1, lone=1)


def test_a_dot_spelled_in_other_letters_is_still_read_and_an_unread_ir_is_unknown() -> None:
    tf32 = ("%c = tt.dot %a, %b, %z, inputPrecision = tf32 : tensor<16x16xf32> * tensor<16x16xf32> -> "
            "tensor<16x16xf32>")

    class Recorded:
        failure: str | None = None

        def ttirs(self) -> dict[str, str]:
            return {"kernel": tf32}

    # fullwidth letters: Python reads the name as tl.dot, so the kernel runs it (NFKC)
    assert precision.products_found(Recorded(), True, "c = tl.\uff44\uff4f\uff54(a, b)").tf32 == 1
    assert precision.products_found(Recorded(), False, "c = tl.dot(a, b)") == precision.Products()  # fp16 out
    broken = Recorded()
    broken.failure = "launch 2: TypeError: an argument of type tuple is not fingerprinted"
    assert precision.products_found(broken, True, "c = tl.dot(a, b)") == precision.Products(unknown=True)


def test_a_lone_16_bit_product_on_fp32_data_is_refused_and_a_split_chain_of_them_measured() -> None:
    Products = precision.Products

    def dot(result: str, acc: str, dtype: str = "f16") -> str:
        return (f"{result} = tt.dot %a, %b, {acc} : tensor<16x16x{dtype}> * tensor<16x16x{dtype}> -> "
                "tensor<16x16xf32>")

    chain = "\n".join([_dot("%s1", "%alo", "%bhi", "%z"), _dot("%s2", "%ahi", "%blo", "%s1"),
                       _dot("%s3", "%ahi", "%bhi", "%s2")])
    assert precision.read_products([chain]) == Products(low=3)  # a split's lo*hi, hi*lo, hi*hi
    lone = dot("%c", "%z", "bf16")
    assert precision.read_products([lone]) == Products(low=1, low_lone=1)
    assert precision.read_products([lone + "\n" + chain]) == Products(low=4, low_lone=1)
    # refused as it stands, however close it measured; measured only where the problem's inputs are 16-bit
    why = precision.refusal(Products(low=1, low_lone=1), 5.2) or ""
    assert "16- or 8-bit operands on the problem's fp32 data, 1 of them outside a chain of 3" in why
    assert "(measured: 5.2x" in why
    assert precision.refusal(Products(low=3), 0.3) is None

    class Recorded:
        failure: str | None = None

        def ttirs(self) -> dict[str, str]:
            return {"kernel": lone}

    assert precision.products_found(Recorded(), True, "tl.dot(a, b)") == Products(low=1, low_lone=1)
    assert precision.products_found(Recorded(), True, "tl.dot(a, b)", low_data=True) == Products(low=1)
    assert precision.low_data([torch.ones(2, dtype=torch.float16), 3]) and not precision.low_data([torch.ones(2)])
    assert precision.low_data([torch.ones(2, dtype=torch.int8)]) and not precision.low_data([torch.ones(2).long()])


def _dot(result: str, a: str, b: str, acc: str, operands: str = "xf16> * tensor<16x16xf16") -> str:
    return f"{result} = tt.dot {a}, {b}, {acc} : tensor<16x16{operands}> -> tensor<16x16xf32>"


def test_a_chain_is_a_splits_only_where_its_threes_are_lo_hi_hi_lo_and_hi_hi() -> None:
    Products = precision.Products
    split = [_dot("%s1", "%alo", "%bhi", "%z"), _dot("%s2", "%ahi", "%blo", "%s1"), _dot("%s3", "%ahi", "%bhi", "%s2")]
    assert precision.read_products(["\n".join(split)]) == Products(low=3)
    assert precision.read_products(["\n".join(reversed(split))]) == Products(low=3, low_lone=1)  # no chain: lone
    # a plain K loop unrolled three times: three products of their own operands on one accumulator
    unrolled = [_dot("%c1", "%a1", "%b1", "%acc"), _dot("%c2", "%a2", "%b2", "%c1"), _dot("%c3", "%a3", "%b3", "%c2")]
    assert precision.read_products(["\n".join(unrolled)]) == Products(low=3, low_lone=3)
    # the product, then two on zeros to make up a chain
    junk = [_dot("%c1", "%a", "%b", "%acc"), _dot("%c2", "%za", "%zb", "%c1"), _dot("%c3", "%za", "%zb", "%c2")]
    assert precision.read_products(["\n".join(junk)]) == Products(low=3, low_lone=3)
    # two steps' splits on one accumulator: threes, each a split's
    six = [*split, _dot("%t1", "%alo", "%bhi", "%s3"), _dot("%t2", "%ahi", "%blo", "%t1"),
           _dot("%t3", "%ahi", "%bhi", "%t2")]
    assert precision.read_products(["\n".join(six)]) == Products(low=6)
    # a one-TF32 product feeding a chain of 16-bit ones is no link of it: lone as it stands
    tf32 = ("%c0 = tt.dot %x, %y, %z, inputPrecision = tf32 : tensor<16x16xf32> * tensor<16x16xf32> -> "
            "tensor<16x16xf32>")
    fed = [tf32, _dot("%s1", "%alo", "%bhi", "%c0"), _dot("%s2", "%ahi", "%blo", "%s1"),
           _dot("%s3", "%ahi", "%bhi", "%s2")]
    assert precision.read_products(["\n".join(fed)]) == Products(tf32=1, lone=1, low=3)
    # 8-bit integers (and fp4 carried as i8), either operand: counted, and lone outside a split's chain
    assert precision.read_products([_dot("%c", "%a", "%b", "%z", "xi8> * tensor<16x16xi8")]) == Products(
        low=1, low_lone=1)
    assert precision.read_products([_dot("%c", "%a", "%b", "%z", "xf32> * tensor<16x16xbf16")]) == Products(
        low=1, low_lone=1)


@pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1", reason="the interpreter's tl.dot")
def test_the_interpreter_multiplies_a_tf32_operand_at_tf32(monkeypatch: pytest.MonkeyPatch) -> None:
    import triton
    import triton.language as tl
    from triton.runtime import interpreter

    monkeypatch.setattr(interpreter.InterpreterBuilder, "create_dot", interpreter.InterpreterBuilder.create_dot)

    @triton.jit
    def product(a_ptr, b_ptr, c_ptr, PRECISION: tl.constexpr):
        r = tl.arange(0, 16)
        a = tl.load(a_ptr + r[:, None] * 16 + r[None, :])
        b = tl.load(b_ptr + r[:, None] * 16 + r[None, :])
        tl.store(c_ptr + r[:, None] * 16 + r[None, :], tl.dot(a, b, input_precision=PRECISION))

    a = torch.full((16, 16), 1.0 + 2.0**-12)  # past TF32's 10 mantissa bits: rounds to 1 (ties to even)
    b = torch.eye(16) * (1.0 + 3 * 2.0**-11)  # 1 + 1.5 of TF32's last bit: rounds up to 1 + 2^-9
    precision.emulate_tf32_in_interpreter()
    precision.emulate_tf32_in_interpreter()  # twice is once
    got = {}
    for mode in ("tf32", "tf32x3", "ieee"):
        c = torch.empty(16, 16)
        product[(1,)](a, b, c, PRECISION=mode)
        got[mode] = float(c[0, 0])
    assert got["tf32"] == np.float32(1.0 + 2.0**-9)
    assert got["tf32x3"] == got["ieee"] == np.float32((1.0 + 2.0**-12) * (1.0 + 3 * 2.0**-11))
