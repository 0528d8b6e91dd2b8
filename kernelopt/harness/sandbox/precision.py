"""The one-TF32-product rule: fp32 products at one TF32 product, found in the compiled IR and
measured against float64.

`tl.dot` on fp32 operands multiplies at one TF32 product unless told otherwise (Triton's
default): each product keeps 10 of fp32's 23 mantissa bits, about 1e-3 relative error. On inputs
of one sign (KernelBench's matmuls use torch.rand) the errors average down within fp32's
tolerance, so every measured case can pass; on signed inputs the same kernel misses it by
orders of magnitude (benchmarks/tf32x3_accuracy.py). The compiled TTIR says it outright
(`tt.dot ... inputPrecision = tf32 : tensor<..xf32> * tensor<..xf32>`).

A kernel may still use such products on purpose: an operand split beforehand into its TF32 part
and the remainder, multiplied `hi*hi + hi*lo + lo*hi` a K step at a time and each step's sum added
in fp32, is as accurate as `tf32x3` (RESULTS.md (al)). So where the TTIR has them, the verifier
measures: every checked case with a float64 yardstick gives each fp32 output's worst distance from
the truth, as a multiple of the problem's own fp32 worst (PyTorch's, at full fp32). A candidate
past FP32_ERROR_TIMES of it, or with no case to measure it on, is refused. On the H200 one TF32
product measured 152x (torch.rand) and 306x (torch.randn) cuBLAS SGEMM's error at 4096^3;
`tf32x3` and the folded split 0.2x. 3xTF32 (`tf32x3`) and `ieee` are not measured this way;
fp16/bf16 operands are the problem's own precision and never are.

Under the interpreter `tl.dot` multiplies fp32 exactly whatever its precision, so the candidate's
process makes it round a TF32 operand to 10 mantissa bits as the compiled kernel does: the measurement
means the same on the CPU.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Any

from kernelopt.harness.sandbox.fingerprint import Recorder

RULE = "one-tf32-product"
# A candidate's fp32 outputs may be this many times the problem's own worst fp32 error against float64.
FP32_ERROR_TIMES = 10.0
_TF32_ON_FP32 = re.compile(
    r"\btt\.dot\b[^\n]*inputPrecision = tf32(?![\w])[^\n:]*: tensor<[^>\n]*xf32> \* tensor<[^>\n]*xf32>"
)
_INSTEAD = ('pass input_precision="tf32x3" (three TF32 products on the tensor cores: fp32\'s accuracy) or "ieee", '
            "or split each operand once into its TF32 part and the remainder and add each K step's three products "
            "to the running sum in fp32")


def tf32_products(ttirs: Iterable[str]) -> int:
    """How many `tt.dot`s in these TTIR texts multiply fp32 operands at one TF32 product."""
    return sum(len(_TF32_ON_FP32.findall(text)) for text in ttirs)


def products_found(recorder: Recorder, fp32_outputs: bool, source: str) -> int:
    """How many of the candidate's launched `tt.dot`s multiply fp32 at one TF32 product, where its outputs
    are fp32. Only a source that calls a `dot` is compiled for this (under the interpreter); a kernel whose
    IR cannot be had is judged by its outputs alone."""
    if not fp32_outputs or "dot" not in source:
        return 0
    texts = recorder.ttirs()
    if texts is None:
        print(f"no TTIR for the one-TF32-product rule ({recorder.failure}): judged by its outputs", flush=True)
    return tf32_products(texts.values()) if texts else 0


def refusal(products: int, ratio: float | None) -> str | None:
    """Why a candidate with `products` one-TF32 products on fp32 is refused, given its worst fp32 error as a
    multiple of the problem's own (None: not measurable); None when it is not."""
    if not products:
        return None
    found = f"{products} tl.dot multiply fp32 operands at one TF32 product (Triton's default input_precision)"
    if ratio is None:
        return (f"{found}, and no case had a float64 yardstick to measure their error against: about 1e-3 "
                f"relative error, outside fp32's tolerance wherever sums cancel; {_INSTEAD}")
    if ratio > FP32_ERROR_TIMES:
        return (f"{found}: the outputs are {ratio:.3g}x the problem's own fp32 error from float64 (at most "
                f"{FP32_ERROR_TIMES:g}x); {_INSTEAD}")
    return None


def emulate_tf32_in_interpreter() -> None:
    """Under TRITON_INTERPRET=1, make `tl.dot` at input_precision "tf32" read fp32 operands at TF32: rounded
    to nearest (ties to even) at 10 of the mantissa's 23 bits, as Triton's compiled products convert them
    (unbiased: a truncation's bias would fail the tolerance on torch.rand inputs where the GPU passes).
    Elsewhere nothing."""
    if os.environ.get("TRITON_INTERPRET") != "1":
        return
    import numpy as np
    import triton.language as tl
    from triton.runtime import interpreter

    builder: Any = interpreter.InterpreterBuilder
    original = builder.create_dot
    if getattr(original, "kernelopt_tf32", False):
        return

    def tf32(handle: Any) -> Any:
        if handle.dtype.scalar != tl.float32:
            return handle
        bits = np.ascontiguousarray(handle.data, dtype=np.float32).view(np.uint32)
        special = (bits & np.uint32(0x7F800000)) == np.uint32(0x7F800000)  # Inf and NaN as they are
        rounded = (bits + ((bits >> np.uint32(13)) & np.uint32(1)) + np.uint32(0xFFF)) & np.uint32(0xFFFFE000)
        return interpreter.TensorHandle(np.where(special, bits, rounded).view(np.float32), handle.dtype.scalar)

    def create_dot(self: Any, a: Any, b: Any, d: Any, input_precision: Any, max_num_imprecise_acc: Any) -> Any:
        if str(input_precision).rsplit(".", 1)[-1].upper() == "TF32":
            a, b = tf32(a), tf32(b)
        return original(self, a, b, d, input_precision, max_num_imprecise_acc)

    create_dot.kernelopt_tf32 = True  # type: ignore[attr-defined]
    builder.create_dot = create_dot
