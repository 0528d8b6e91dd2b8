"""How large the yardstick's slack floor must be for an honest kernel to pass (CPU, about 30 s):

    python benchmarks/slack_floor.py

Level 2's 33_Gemm_Scale_BatchNorm at its own size, on the verifier's case that shifts the inputs
by -120: the GEMM's rows share a large part that BatchNorm subtracts, so every rounding error of
the GEMM is amplified, by a different factor in each feature. The reference is PyTorch's fp32
result, the "kernel" the same computation with the GEMM summed in another order (blocks of 256
along K, in sequence), both against the float64 truth. Prints the median and largest errors of
each, and how many of the kernel's elements fail for each floor (SLACK_TIMES_MEDIAN times the
median of the reference's own error; 0 is the element-by-element slack alone).
"""

import time

import torch

from kernelopt.harness.measure.yardstick import MEDIAN_SAMPLE

BATCH, IN, OUT, SHIFT = 1024, 8192, 8192, -120.0


def main() -> None:
    torch.manual_seed(0)
    linear = torch.nn.Linear(IN, OUT)
    scale = torch.randn(OUT)
    x = torch.rand(BATCH, IN) + SHIFT
    began = time.perf_counter()
    with torch.no_grad():
        exact = (x.double() @ linear.weight.double().T + linear.bias.double()) * scale.double()
        truth = torch.nn.functional.batch_norm(exact, None, None, training=True)
        reference = torch.nn.functional.batch_norm(linear(x) * scale, None, None, training=True)
        summed = torch.zeros(BATCH, OUT)
        for k in range(0, IN, 256):
            summed += x[:, k : k + 256] @ linear.weight[:, k : k + 256].T
        kernel = torch.nn.functional.batch_norm((summed + linear.bias) * scale, None, None, training=True)
    own = (reference.double() - truth).abs()
    err = (kernel.double() - truth).abs()
    median = float(own.flatten()[:: max(1, own.numel() // MEDIAN_SAMPLE)].median())
    print(f"{time.perf_counter() - began:.0f} s; reference's own error: median {median:.3g}, largest "
          f"{float(own.max()):.3g}; the kernel's: median {float(err.median()):.3g}, largest {float(err.max()):.3g}")
    tolerance = 1e-4 + 1e-4 * truth.abs()
    for times in (0, 8, 16, 32):
        failed = int((err > tolerance + torch.clamp(own, min=times * median)).sum())
        print(f"floor {times:>2} x median: {failed} of {err.numel()} elements fail")


if __name__ == "__main__":
    main()
