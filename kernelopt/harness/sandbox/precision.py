"""The one-TF32-product rule: fp32 products at one TF32 product, found in the compiled IR and
measured against float64.

`tl.dot` on fp32 operands multiplies at one TF32 product unless told otherwise (Triton's
default): each product keeps 10 of fp32's 23 mantissa bits, about 1e-3 relative error. On inputs
of one sign (KernelBench's matmuls use torch.rand) the errors average down within fp32's
tolerance, so every measured case can pass; on signed inputs the same kernel misses it by
orders of magnitude (benchmarks/tf32x3_accuracy.py). The compiled TTIR says it outright
(`tt.dot ... inputPrecision = tf32 : tensor<..xf32> * tensor<..xf32>`).

A kernel may still use such products on purpose: an operand split beforehand into its TF32 part
and the remainder, multiplied `lo*hi + hi*lo + hi*hi` a K step at a time and each step's sum added
in fp32, is as accurate as `tf32x3` (RESULTS.md (al)). So a one-TF32 product passes only in a chain
of SPLIT_CHAIN on one accumulator (a lone one is refused as it stands: at a long K on same-sign
inputs PyTorch's own fp32 sum errs about as much as it does, so no measurement can tell them
apart), and a chained kernel is measured: every checked case with a float64 yardstick gives each
fp32 output's worst distance from the truth, as a multiple of the problem's own fp32 worst
(PyTorch's, at full fp32). Past FP32_ERROR_TIMES of it, or with no case to measure it on, it is
refused. On the H200 one TF32 product measured 152x (torch.rand) and 306x (torch.randn) cuBLAS
SGEMM's error at 4096^3; `tf32x3` and the folded split 0.2x. Other products below fp32's
precision on fp32 data (16- or 8-bit operands, `bf16x3`), and a kernel whose IR could not be read,
are measured where a case can. 3xTF32 (`tf32x3`) and `ieee` are not measured.

Under the interpreter `tl.dot` multiplies fp32 exactly whatever its precision, so the candidate's
process makes it round a TF32 operand to 10 mantissa bits as the compiled kernel does: the measurement
means the same on the CPU.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from kernelopt.harness.sandbox.fingerprint import Recorder

RULE = "one-tf32-product"
# A candidate's fp32 outputs may be this many times the problem's own worst fp32 error against float64.
FP32_ERROR_TIMES = 10.0
# A split's products: lo*hi, hi*lo and hi*hi, each on the one before's result as its accumulator
SPLIT_CHAIN = 3
_TF32_ON_FP32 = re.compile(
    r"\btt\.dot\b[^\n]*inputPrecision = tf32(?![\w])[^\n:]*: tensor<[^>\n]*xf32> \* tensor<[^>\n]*xf32>"
)
_DOT = re.compile(r"(%[^\s=]+) = tt\.dot (%[^\s,]+), (%[^\s,]+), (%[^\s,]+)[^\n]*")
# the operands' element types: fewer mantissa bits than fp32's where either is a 16-, 8- or 4-bit float or an
# 8- or 4-bit integer (Triton's tt.dot_scaled carries fp4 as i8)
_OPERANDS = re.compile(r": tensor<[^>\n]*x(\w+)> \* tensor<[^>\n]*x(\w+)>")
_LOW_TYPES = ("f16", "bf16", "f8", "f6", "f4", "i8", "i4")
_OTHER_PRECISION = re.compile(r"inputPrecision = (?!(?:tf32|tf32x3|ieee)\b)\w+")  # bf16x3, bf16x6; ieee goes unprinted
_TERMS = "(a split's lo*hi, hi*lo and hi*hi of two A operands and two B operands)"
_INSTEAD = ('pass input_precision="tf32x3" (three TF32 products on the tensor cores: fp32\'s accuracy) or "ieee", '
            "or split each operand once into its TF32 part and the remainder and add each K step's three products "
            "to the running sum in fp32")


@dataclass(frozen=True)
class Products:
    """A candidate's products on fp32 data below fp32's precision, read from its TTIR (fp32 outputs only)."""

    tf32: int = 0  # tt.dot at one TF32 product on fp32 operands
    lone: int = 0  # of those, the ones in no chain of SPLIT_CHAIN products on one accumulator: never a split
    low: int = 0  # other products below fp32's precision: 16- or 8-bit operands, bf16x3 and the like
    unknown: bool = False  # its IR could not be had: what it computes at is not known
    low_lone: int = 0  # 16- or 8-bit operand products in no such chain, where the problem's data is all fp32

    @property
    def measured(self) -> bool:
        """Whether the outputs' error from float64 decides (anything below fp32's precision, or unread)."""
        return bool(self.tf32 or self.low or self.unknown)


def read_products(ttirs: Iterable[str]) -> Products:
    """The one-TF32 products in these TTIR texts and the other low-precision products, and of each the ones
    in no split's chain: a product whose accumulator is another's (of the same kind) extends that one's chain,
    and a chain is a split's where it runs in threes, each three `lo*hi`, `hi*lo`, `hi*hi` of two A operands
    and two B operands (`_split_terms`): a K loop unrolled three times, or products on junk, are not."""
    tf32 = lone = low = low_lone = 0
    for text in ttirs:
        # a product's result -> the (A, B) operands of the products leading to it: one TF32 (0), low (1)
        chains: tuple[dict[str, list[tuple[str, str]]], ...] = ({}, {})
        fed: tuple[set[str], ...] = (set(), set())
        for line in text.splitlines():
            kind = _kind(line)
            if kind is None:
                if "tt.dot" in line and _OTHER_PRECISION.search(line) and "xf32> * tensor<" in line:
                    low += 1  # bf16x3 and the like: several products of their own, measured
                continue
            dot = _DOT.search(line)
            if dot is None:  # operands this reading cannot tell apart (tt.dot_scaled too): no chain to credit
                tf32, lone = (tf32 + 1, lone + 1) if kind == 0 else (tf32, lone)
                low, low_lone = (low + 1, low_lone + 1) if kind == 1 else (low, low_lone)
                continue
            result, a, b, acc = dot.groups()
            chains[kind][result] = [*chains[kind].get(acc, ()), (a, b)]
            fed[kind].add(acc)
        unsplit = [sum(len(terms) for result, terms in chain.items() if result not in fed[kind]
                       and not _split_terms(terms)) for kind, chain in enumerate(chains)]
        tf32, lone = tf32 + len(chains[0]), lone + unsplit[0]
        low, low_lone = low + len(chains[1]), low_lone + unsplit[1]
    return Products(tf32, lone, low, low_lone=low_lone)


def _kind(line: str) -> int | None:
    """0: a tt.dot at one TF32 product on fp32 operands; 1: one of 16-, 8- or 4-bit operands; None: neither."""
    if "tt.dot" not in line:
        return None
    if _TF32_ON_FP32.search(line):
        return 0
    operands = _OPERANDS.search(line)
    return 1 if operands and any(t.startswith(_LOW_TYPES) for t in operands.groups()) else None


def _split_terms(terms: list[tuple[str, str]]) -> bool:
    """Whether a chain's products run in threes of a split's terms: lo*hi, hi*lo and hi*hi of two distinct A
    operands and two distinct B operands, each hi in two of the three, in any order."""
    if not terms or len(terms) % SPLIT_CHAIN:
        return False
    for at in range(0, len(terms), SPLIT_CHAIN):
        three = terms[at:at + SPLIT_CHAIN]
        a_uses, b_uses = Counter(a for a, _ in three), Counter(b for _, b in three)
        if sorted(a_uses.values()) != [1, 2] or sorted(b_uses.values()) != [1, 2]:
            return False
        (a_hi, a_lo), (b_hi, b_lo) = (sorted(uses, key=lambda k, u=uses: -u[k]) for uses in (a_uses, b_uses))
        if sorted(three) != sorted([(a_lo, b_hi), (a_hi, b_lo), (a_hi, b_hi)]):
            return False
    return True


def products_found(recorder: Recorder, fp32_outputs: bool, source: str, low_data: bool = False) -> Products:
    """The candidate's launched products below fp32's precision, where its outputs are fp32. Only a source
    that calls a `dot` (its identifiers read as Python reads them) is compiled for this, under the
    interpreter; a kernel whose IR cannot be had is `unknown`, measured where it can be. `low_data`: the
    problem's own inputs are 16- or 8-bit, so its 16-bit products need no split's chain."""
    if not fp32_outputs or "dot" not in unicodedata.normalize("NFKC", source):
        return Products()
    texts = recorder.ttirs()
    if texts is None or recorder.failure is not None:
        print(f"no TTIR for the one-TF32-product rule ({recorder.failure}): measured", flush=True)
        return Products(unknown=True)
    found = read_products(texts.values())
    return replace(found, low_lone=0) if low_data else found


def low_data(values: Iterable[Any]) -> bool:
    """Whether any of these (a case's inputs) is a tensor of 16- or 8-bit floats or 8-bit integers."""
    import torch

    return any(isinstance(v, torch.Tensor) and (v.is_floating_point() and v.element_size() < 4
                                                or v.dtype in (torch.int8, torch.uint8)) for v in values)


def refusal(products: Products, ratio: float | None) -> str | None:
    """Why a candidate is refused for its products below fp32's precision, given its worst fp32 error as a
    multiple of the problem's own (None: not measurable); None when it is not. A one-TF32 product outside a
    split's chain is refused as it stands: at a long K PyTorch's own fp32 sum errs about as much."""
    found = f"{products.tf32} tl.dot multiply fp32 operands at one TF32 product (Triton's default input_precision)"
    if products.lone:
        measured = f" (measured: {ratio:.3g}x the problem's own fp32 error from float64)" if ratio is not None else ""
        return (f"{found}, {products.lone} of them outside a chain of {SPLIT_CHAIN} on one accumulator {_TERMS}"
                f"{measured}: about 1e-3 relative error, outside fp32's tolerance wherever sums cancel; {_INSTEAD}")
    if products.low_lone:
        measured = f" (measured: {ratio:.3g}x the problem's own fp32 error from float64)" if ratio is not None else ""
        return (f"{products.low} tl.dot multiply 16- or 8-bit operands on the problem's fp32 data, "
                f"{products.low_lone} of them outside a chain of {SPLIT_CHAIN} on one accumulator {_TERMS}{measured}: "
                f"one fp16 product keeps TF32's 10 mantissa bits, about 1e-3 relative error, which PyTorch's own "
                f"fp32 sum nears at a long K on same-sign inputs; {_INSTEAD}")
    if products.tf32 and ratio is None:
        return (f"{found}, and no case had a float64 yardstick to measure their error against; {_INSTEAD}")
    if products.measured and ratio is not None and ratio > FP32_ERROR_TIMES:
        what = found if products.tf32 else (f"{products.low} tl.dot multiply below fp32's precision" if products.low
                                            else "the products' precision could not be read from the compiled code")
        return (f"{what}: the outputs are {ratio:.3g}x the problem's own fp32 error from float64 (at most "
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
