"""Where the seed's Triton convolution goes wrong on a GPU (it is right under the interpreter).

    python3 benchmarks/h200/conv_probe.py

Runs `conv_triton` (seed/conv.py) against aten.convolution (fp32, TF32 off) for the CPU test's
kinds and a KernelBench size, once as written and once per variant of its text (one pipeline
stage, int32 indices, a broadcast-sum instead of tl.dot, one fixed tile), and prints the worst
error of each, so the construct the GPU compiles differently is the one whose variant is right.
"""

import importlib.util
import tempfile
from pathlib import Path

import torch

from kernelopt.seed.conv import CONV_HELPER

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False

CASES = {  # x, w, bias, stride, padding, dilation, transposed, output_padding, groups
    "conv1d strided dilated": ((2, 3, 11), (5, 3, 3), True, (2,), (1,), (2,), False, (0,), 1),
    "conv2d 1x1": ((2, 32, 8, 8), (16, 32, 1, 1), False, (1, 1), (0, 0), (1, 1), False, (0, 0), 1),
    "conv2d plain": ((2, 4, 9, 11), (6, 4, 3, 3), False, (1, 1), (0, 0), (1, 1), False, (0, 0), 1),
    "conv2d grouped": ((2, 4, 9, 11), (6, 2, 3, 3), True, (2, 1), (1, 1), (1, 2), False, (0, 0), 2),
    "conv3d strided": ((1, 2, 5, 6, 7), (3, 2, 3, 3, 3), True, (2, 2, 2), (1, 1, 1), (1, 1, 1), False, (0, 0, 0), 1),
    "convT3d": ((2, 8, 8, 8, 8), (8, 8, 3, 3, 3), True, (2, 2, 2), (1, 1, 1), (1, 1, 1), True, (1, 1, 1), 2),
    "L2 conv2d 128x3": ((16, 64, 64, 64), (128, 64, 3, 3), False, (1, 1), (0, 0), (1, 1), False, (0, 0), 1),
}

DOT = 'acc = tl.dot(a, b, acc, input_precision="ieee")'
VARIANTS = {
    "as written": [],
    "num_stages=1": [("num_stages=2", "num_stages=1")],
    "int32 indices": [(".to(tl.int64)", "")],
    "tile 32x32x16": [("CONV_BLOCK_M = 64", "CONV_BLOCK_M = 32"), ("CONV_BLOCK_N = 64", "CONV_BLOCK_N = 32"),
                      ("CONV_BLOCK_K = 32", "CONV_BLOCK_K = 16")],
    "dot, then add": [(DOT, 'acc += tl.dot(a, b, input_precision="ieee")')],
    "tf32 dot": [(DOT, "acc = tl.dot(a, b, acc)")],
    "sum, not dot": [(DOT, "acc += tl.sum(a[:, :, None] * b[None, :, :], axis=1)"),
                     ("CONV_BLOCK_M = 64", "CONV_BLOCK_M = 16"), ("CONV_BLOCK_N = 64", "CONV_BLOCK_N = 16"),
                     ("CONV_BLOCK_K = 32", "CONV_BLOCK_K = 16")],
    "no helper": [("nb, od, oh, ow = conv_unflatten(rm, OD, OH, OW)",
                   "ow = rm % OW\n    od = rm // OW // OH % OD\n    oh = rm // OW % OH\n    nb = rm // OW // OH // OD"),
                  ("c, kd, kh, kw = conv_unflatten(rk, KD, KH, KW)",
                   "kw = rk % KW\n        kh = rk // KW % KH\n        kd = rk // KW // KH % KD\n"
                   "        c = rk // KW // KH // KD")],
}


def main() -> None:
    import triton

    device = "cuda" if torch.cuda.is_available() else "cpu"  # the CPU under TRITON_INTERPRET=1: the probe's own check
    print(f"torch {torch.__version__}, triton {triton.__version__}, {device}")
    for variant, edits in VARIANTS.items():
        source = CONV_HELPER
        for old, new in edits:
            assert old in source, (variant, old)
            source = source.replace(old, new)
        # @triton.jit reads its function's source from a file: each variant is a module of its own
        path = Path(tempfile.mkdtemp()) / "conv_variant.py"
        path.write_text("import torch\nimport triton\nimport triton.language as tl\n" + source)
        spec = importlib.util.spec_from_file_location(f"conv_variant_{len(variant)}_{abs(hash(variant))}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        space = vars(module)
        line = []
        for name, (xs, ws, has_bias, stride, padding, dilation, transposed, op, groups) in CASES.items():
            if device == "cpu" and name.startswith("L2"):
                continue
            torch.manual_seed(0)
            x, w = torch.randn(xs, device=device), torch.randn(ws, device=device)
            channels = ws[1] * groups if transposed else ws[0]
            bias = torch.randn(channels, device=device) if has_bias else None
            want = torch.ops.aten.convolution(x, w, bias, list(stride), list(padding), list(dilation), transposed,
                                              list(op), groups)
            try:
                got = space["conv_triton"](x, w, bias, None, stride, padding, dilation, transposed, op, groups)
                err = (got - want).abs().max().item() / max(want.abs().max().item(), 1e-9)
                line.append(f"{name}: {err:.1e}")
            except Exception as error:  # noqa: BLE001  (a probe: every failure is a finding)
                line.append(f"{name}: {type(error).__name__} {str(error)[:80]}")
        print(f"{variant:>15} | " + " | ".join(line), flush=True)


if __name__ == "__main__":
    main()
