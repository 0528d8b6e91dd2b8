"""The seed's direct convolutions (seed/direct.py) at level-2 sizes, helper text against helper text and tile against
tile, beside cuDNN at fp32 and at TF32 (a CUDA host; about 2 s a convolution and tile).

    python3 benchmarks/h200/direct_probe.py [HELPER_TXT ...] [--tiles JSON_LIST] [--only REGEX]

A HELPER_TXT is a convolution helper's whole text (`python -c "from kernelopt.seed.conv import CONV_HELPER;
print(CONV_HELPER)" > F`): none, the installed one. Each convolution's output is checked against cuDNN's at fp32
(the largest difference relative to the output's largest magnitude) and timed with CUDA events over 20 calls
after a warm-up (the median of 5 such), no L2 flush: kernel against kernel, not the verifier's figure. One
Markdown table a convolution.
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

# name: (input shape, weight shape, stride, padding, dilation, transposed, output padding); every one has a bias
CONVS = {
    "conv3d 3->16 k3 (128,3,16,32,32)": ((128, 3, 16, 32, 32), (16, 3, 3, 3, 3), 1, 0, 1, False, 0),
    "conv2d 3->16 k3 (128,3,32,32)": ((128, 3, 32, 32), (16, 3, 3, 3), 1, 0, 1, False, 0),
    "conv2d 3->64 k3 (16,3,256,256)": ((16, 3, 256, 256), (64, 3, 3, 3), 1, 1, 1, False, 0),
    "convT3d 3->16 k3 s2 (128,3,16,32,32)": ((128, 3, 16, 32, 32), (3, 16, 3, 3, 3), 2, 1, 1, True, 1),
    "convT2d 3->16 k3 s2 (128,3,64,64)": ((128, 3, 64, 64), (3, 16, 3, 3), 2, 1, 1, True, 1),
}
TILES = [{"CONV_BLOCK_M": m, "CONV_BLOCK_N": n, "num_warps": w}
         for m, n, w in ((64, 16, 4), (128, 16, 4), (128, 16, 8), (64, 16, 2), (64, 8, 4), (256, 16, 8))]


def _ms(fn: Any) -> float:
    import torch

    if not torch.cuda.is_available():
        fn()
        return float("nan")
    for _ in range(3):
        fn()
    medians = []
    for _ in range(5):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(20):
            fn()
        end.record()
        torch.cuda.synchronize()
        medians.append(start.elapsed_time(end) / 20)
    return statistics.median(medians)


def _space(helper: str) -> dict[str, Any]:
    """The helper's names, its text imported from a file of its own (Triton reads a kernel's source from its file)."""
    import importlib.util
    import tempfile

    path = Path(tempfile.mkdtemp()) / "conv_helper.py"
    path.write_text("import torch\nimport triton\nimport triton.language as tl\n" + helper)
    spec = importlib.util.spec_from_file_location(f"conv_helper_{abs(hash(helper))}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return vars(module)


def main(argv: list[str] | None = None) -> int:
    import torch

    from kernelopt.offline.tuner import with_config
    from kernelopt.seed.conv import CONV_HELPER

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("helpers", nargs="*", type=Path)
    parser.add_argument("--tiles", type=json.loads, default=TILES)
    parser.add_argument("--only", default="", help="a regular expression the convolutions' names match")
    parser.add_argument("--device", default="cuda", help="cpu: a check of this script under TRITON_INTERPRET=1 "
                        "(one sample, spatial sizes cut by 8; no timing worth reading)")
    args = parser.parse_args(argv)
    helpers = {p.name: p.read_text() for p in args.helpers} or {"installed": CONV_HELPER}
    for name, (shape, wshape, s, p, d, transposed, op) in CONVS.items():
        if not re.search(args.only, name):
            continue
        torch.manual_seed(0)
        if args.device == "cpu":
            shape = (1, shape[1], *(max(4, n // 8) for n in shape[2:]))
        x = torch.randn(shape, device=args.device)
        w = torch.randn(wshape, device=args.device) / (wshape[1] * wshape[2] * wshape[3]) ** 0.5
        b = torch.randn(wshape[1] if transposed else wshape[0], device=args.device)
        dims = len(shape) - 2
        stride, pad, dil, opad = ([v] * dims for v in (s, p, d, op))
        aten = functools.partial(torch.ops.aten.convolution, x, w, b, stride, pad, dil, transposed, opad, 1)
        torch.backends.cudnn.allow_tf32 = False
        want = aten()
        rows = [f"### {name}", "", f"cuDNN fp32 {_ms(aten):.4f} ms", ""]
        torch.backends.cudnn.allow_tf32 = True
        rows[2] += f"; cuDNN TF32 {_ms(aten):.4f} ms; output {want.numel() * 4 / 1e6:.0f} MB"
        torch.backends.cudnn.allow_tf32 = False
        rows += ["| helper | tile | ms | max error / max output |", "|---|---|---:|---:|"]
        for label, helper in helpers.items():
            for tile in args.tiles:
                try:
                    conv = _space(with_config(helper, tile))["conv_triton"]
                    run = functools.partial(conv, x, w, b, None, stride, pad, dil, transposed, opad, 1)
                    error = ((run() - want).abs().max() / want.abs().max()).item()
                    rows.append(f"| {label} | {json.dumps(tile)} | {_ms(run):.4f} | {error:.1e} |")
                except Exception as e:  # noqa: BLE001  (a tile that fails is a row that says so)
                    rows.append(f"| {label} | {json.dumps(tile)} | failed: {str(e).splitlines()[0][:80]} | - |")
        print("\n".join(rows) + "\n", flush=True)
        del x, want
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
