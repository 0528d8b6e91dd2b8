"""The seed's Triton convolution (seed/conv.py) on a GPU: right for every kind, and how fast.

    python3 benchmarks/h200/conv_probe.py

First `conv_triton` as written against aten.convolution (fp32, TF32 off) for the CPU test's
kinds, the worst error relative to the largest output. Then level 2's convolution
(1_Conv2D_ReLU_BiasAdd: 128 x 64 x 128 x 128, 128 filters of 3 x 3) timed with
`triton.testing.do_bench` at a few tiles, at IEEE fp32 and at 3xTF32, against cuDNN in fp32 and
at TF32 (PyTorch's default for convolutions), each with its error against a float64 convolution
as a multiple of cuDNN fp32's. (At 3fa1593 this probe hunted a GPU-only error by variants of the
kernel's text; the kernel was right, see RESULTS (r).)
"""

import importlib.util
import tempfile
from pathlib import Path

import torch

from kernelopt.offline.tuner import with_config
from kernelopt.seed.conv import CONV_HELPER

CASES = {  # x, w, bias, stride, padding, dilation, transposed, output_padding, groups
    "conv1d strided dilated": ((2, 3, 11), (5, 3, 3), True, (2,), (1,), (2,), False, (0,), 1),
    "conv2d 1x1": ((2, 32, 8, 8), (16, 32, 1, 1), False, (1, 1), (0, 0), (1, 1), False, (0, 0), 1),
    "conv2d grouped": ((2, 4, 9, 11), (6, 2, 3, 3), True, (2, 1), (1, 1), (1, 2), False, (0, 0), 2),
    "conv3d strided": ((1, 2, 5, 6, 7), (3, 2, 3, 3, 3), True, (2, 2, 2), (1, 1, 1), (1, 1, 1), False, (0, 0, 0), 1),
    "convT3d": ((2, 8, 8, 8, 8), (8, 8, 3, 3, 3), True, (2, 2, 2), (1, 1, 1), (1, 1, 1), True, (1, 1, 1), 2),
}
# (CONV_BLOCK_M, CONV_BLOCK_N, CONV_BLOCK_K, num_warps, num_stages)
TILES = {"ieee": ((64, 64, 32, 4, 3), (128, 128, 32, 8, 3)), "tf32x3": ((128, 64, 32, 4, 4), (64, 64, 32, 4, 4))}
KEYS = ("CONV_BLOCK_M", "CONV_BLOCK_N", "CONV_BLOCK_K", "num_warps", "num_stages")


def _module(source: str, name: str):
    # @triton.jit reads its function's source from a file: each variant is a module of its own
    path = Path(tempfile.mkdtemp()) / f"{name}.py"
    path.write_text("import torch\nimport triton\nimport triton.language as tl\n" + source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    import triton
    from triton.testing import do_bench

    torch.backends.cudnn.allow_tf32 = False
    print(f"torch {torch.__version__}, triton {triton.__version__}", flush=True)
    written = _module(CONV_HELPER, "conv_as_written")
    for name, (xs, ws, has_bias, stride, padding, dilation, transposed, op, groups) in CASES.items():
        torch.manual_seed(0)
        x, w = torch.randn(xs, device="cuda"), torch.randn(ws, device="cuda")
        bias = torch.randn(ws[1] * groups if transposed else ws[0], device="cuda") if has_bias else None
        want = torch.ops.aten.convolution(x, w, bias, list(stride), list(padding), list(dilation), transposed,
                                          list(op), groups)
        got = written.conv_triton(x, w, bias, None, stride, padding, dilation, transposed, op, groups)
        print(f"{name}: worst error {(got - want).abs().max().item() / want.abs().max().item():.1e}", flush=True)

    torch.manual_seed(0)
    x = torch.rand(128, 64, 128, 128, device="cuda")
    w = torch.randn(128, 64, 3, 3, device="cuda") / 24
    bias = torch.randn(128, device="cuda")
    settings = ((1, 1), (0, 0), (1, 1), False, (0, 0), 1)
    exact = torch.nn.functional.conv2d(x.double(), w.double(), bias.double())
    flops = 2 * exact.numel() * 64 * 9

    def line(label: str, fn, base_err: float | None) -> float:
        out = fn()
        err = (out.double() - exact).abs().max().item()
        ms = do_bench(fn, warmup=25, rep=100)
        times = f", error {err / base_err:.2f}x cuDNN fp32's" if base_err else f", error {err:.2e}"
        print(f"{label:>44}: {ms:8.3f} ms, {flops / ms / 1e9:6.1f} TFLOP/s{times}", flush=True)
        return err

    base = line("cuDNN fp32 (TF32 off)", lambda: torch.nn.functional.conv2d(x, w, bias), None)
    torch.backends.cudnn.allow_tf32 = True
    line("cuDNN TF32 (the torch.compile baseline's)", lambda: torch.nn.functional.conv2d(x, w, bias), base)
    torch.backends.cudnn.allow_tf32 = False
    for precision, tiles in TILES.items():
        for tile in tiles:
            source = with_config(CONV_HELPER.replace('input_precision="ieee"', f'input_precision="{precision}"'),
                                 dict(zip(KEYS, tile, strict=True)))
            module = _module(source, f"conv_{precision}_{'_'.join(map(str, tile))}")
            try:
                run = lambda m=module: m.conv_triton(x, w, bias, None, *settings)  # noqa: E731
                line(f"conv_triton {precision} {tile}", run, base)
            except Exception as error:  # noqa: BLE001  (a probe: every failure is a finding)
                print(f"conv_triton {precision} {tile}: {type(error).__name__} {str(error)[:120]}", flush=True)


if __name__ == "__main__":
    main()
