"""The one-TF32-product rule: fp32 products at Triton's default precision, read from the compiled IR.

`tl.dot` on fp32 operands multiplies at one TF32 product unless told otherwise (Triton's
default): each product keeps 10 of fp32's 23 mantissa bits, about 1e-3 relative error. On inputs
of one sign (KernelBench's matmuls use torch.rand) the errors average down within fp32's
tolerance, so every measured case can pass; on signed inputs the same kernel misses it by
orders of magnitude (benchmarks/tf32x3_accuracy.py). The compiled TTIR says it outright
(`tt.dot ... inputPrecision = tf32 : tensor<..xf32> * tensor<..xf32>`), so a candidate with
fp32 outputs is refused on it, with what to write instead. 3xTF32 (`tf32x3`) and `ieee` keep
fp32's accuracy; fp16/bf16 operands are the problem's own precision and are never refused.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from kernelopt.harness.sandbox.calls import Rejected
from kernelopt.harness.sandbox.fingerprint import Recorder

RULE = "one-tf32-product"
_TF32_ON_FP32 = re.compile(
    r"\btt\.dot\b[^\n]*inputPrecision = tf32(?![\w])[^\n:]*: tensor<[^>\n]*xf32> \* tensor<[^>\n]*xf32>"
)


def tf32_products(ttirs: Iterable[str]) -> int:
    """How many `tt.dot`s in these TTIR texts multiply fp32 operands at one TF32 product."""
    return sum(len(_TF32_ON_FP32.findall(text)) for text in ttirs)


def check(recorder: Recorder, fp32_outputs: bool, source: str) -> None:
    """Raise Rejected when a candidate whose outputs are fp32 launched a kernel multiplying fp32 at
    one TF32 product. Only a source that calls a `dot` is compiled for this (under the interpreter);
    a kernel whose IR cannot be had is judged by its outputs alone, as before."""
    if not fp32_outputs or "dot" not in source:
        return
    texts = recorder.ttirs()
    found = tf32_products(texts.values()) if texts else 0
    if found:
        raise Rejected(
            RULE,
            f"{found} tl.dot multiply fp32 operands at one TF32 product (Triton's default input_precision): "
            "about 1e-3 relative error, outside fp32's tolerance wherever sums cancel; pass "
            'input_precision="tf32x3" (three TF32 products on the tensor cores: fp32\'s accuracy) or "ieee"',
        )
