"""How far 3xTF32 and 1xTF32 products land from the truth, judged by the verifier's fp32 rule (CPU).

An emulation, not the GPU: each fp32 operand is split as Triton's tf32x3 splits it (its TF32
part rounded to nearest with ties away, then the remainder rounded the same way) and the
products are fp32 matmuls of the parts, summed in fp32 (remainder terms first). Beside them, an
honest fp32 kernel with another summation order (K in blocks of 64, as a tiled kernel adds).

The rule is the verifier's (harness/measure/yardstick.py, correctness.py): |got - expected| <=
atol x scale + 1e-4 |expected| + the problem's own fp32 error there, atol 1e-4 and scale the
case's largest output over the first case's. The cases are the verifier's kinds on the problem's
own inputs: as given (KernelBench's matmuls use torch.rand; randn for a signed problem), wide
(x 100) and shifted (- 120). K as in the problems, M = N = 512 so that a CPU runs it in a minute.

    python3 benchmarks/tf32x3_accuracy.py
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import torch

WIDE_SCALE, SHIFT = 100.0, -120.0  # kernelopt/harness/measure/cases.py
CASES = {"given": (1.0, 0.0), "wide": (WIDE_SCALE, 0.0), "shifted": (1.0, SHIFT)}


def tf32(x: torch.Tensor) -> torch.Tensor:
    """x rounded to TF32 (10 mantissa bits), to nearest with ties away from zero."""
    bits = x.contiguous().view(torch.int32)
    return ((bits + 0x1000) & ~0x1FFF).view(torch.float32)


def three_tf32(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    a_big, b_big = tf32(a), tf32(b)
    a_small, b_small = tf32(a - a_big), tf32(b - b_big)
    return a_small @ b_big + a_big @ b_small + a_big @ b_big


def one_tf32(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return tf32(a) @ tf32(b)


def blocked_fp32(a: torch.Tensor, b: torch.Tensor, block: int = 64) -> torch.Tensor:
    out = torch.zeros(a.shape[0], b.shape[1])
    for k in range(0, a.shape[1], block):
        out += a[:, k : k + block] @ b[k : k + block]
    return out


def worst_ratio(got: torch.Tensor, truth: torch.Tensor, reference: torch.Tensor, atol: float) -> float:
    """The largest |got - expected| over the verifier's allowance (over 1 fails)."""
    expected = truth.float().double()
    allowance = atol + 1e-4 * expected.abs() + (reference.double() - truth).abs()
    return float(((got.double() - expected).abs() / allowance).max())


def main() -> int:
    torch.manual_seed(0)
    m = n = 512
    methods: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
        "fp32, K in blocks of 64": blocked_fp32, "3xTF32": three_tf32, "1xTF32": one_tf32}
    print("| inputs | K | case | " + " | ".join(methods) + " |")
    print("|---|---:|---|" + "---:|" * len(methods))
    failed = False
    for kind, make in {"torch.rand": torch.rand, "torch.randn": torch.randn}.items():
        for k in (32, 1024, 4096, 8192):
            base_peak = None
            for case, (scale, shift) in CASES.items():
                a, b = make(m, k) * scale + shift, make(k, n) * scale + shift
                truth = a.double() @ b.double()
                reference = a @ b
                peak = float(reference.abs().max())
                base_peak = base_peak or peak
                atol = 1e-4 * max(1.0, peak / base_peak)
                ratios = {name: worst_ratio(f(a, b), truth, reference, atol) for name, f in methods.items()}
                failed |= ratios["3xTF32"] > 1 or ratios["fp32, K in blocks of 64"] > 1
                cells = [f"{r:.3g}" + (" FAIL" if r > 1 else "") for r in ratios.values()]
                print(f"| {kind} | {k} | {case} | " + " | ".join(cells) + " |")
    print("\nworst |error| / allowance over the outputs; over 1 fails the verifier's fp32 rule")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
