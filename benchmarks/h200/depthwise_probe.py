"""The depthwise stencil (seed/stencil.py DEPTHWISE) on a GPU: its taps unrolled against the loop it replaced, and
what the per-tap padding masks cost.

    python3 benchmarks/h200/depthwise_probe.py [OLD_DEPTHWISE_TEXT]      # e.g. .gpu/dw_old.txt

For KernelBench 82's depthwise shape, unpadded and padded by 1 (as 86's depthwise half is), at six tiles: the
stencil as written (interior tiles of a padded problem unmasked); and at two tiles, with every tap masked, interior
tiles too (what the interior path saves), and, where a file is given, the previous text (a loop over runtime KD, KH,
KW). Each is checked against cuDNN in fp32 (worst error relative to the largest output) and timed with
triton.testing.do_bench (L2 cleared between runs), beside cuDNN itself and the floor at 4.8 TB/s.
"""

import sys
from pathlib import Path

import torch
from conv_probe import _module  # the probe beside this one (benchmarks/h200/ is the script's own path)

from kernelopt.seed.stencil import DEPTHWISE

SHAPES = {  # x shape, weight shape, padding
    "82": ((16, 64, 512, 512), (64, 1, 3, 3), (0, 0)),
    "82 padded": ((16, 64, 512, 512), (64, 1, 3, 3), (1, 1)),
}
# the first three: Triton gives the loads 4 (or 2) values a thread along W, so an unaligned tap's scalar loads span
# 4x the bytes a warp uses; the last three hold one output a thread (lanes along W, one value each)
TILES = ((32, 32, 4), (8, 64, 4), (1, 512, 4), (4, 32, 4), (8, 32, 8), (1, 128, 4))
COMPARED = ((32, 32, 4), (4, 32, 4))  # the tiles the masked and old stencils are timed at too


def _launch(source: str, warps: int) -> str:
    return source.replace("num_warps=4,", f"num_warps={warps},")


def main() -> None:
    from triton.testing import do_bench

    torch.backends.cudnn.allow_tf32 = False
    variants = {}
    for warps in sorted({t[2] for t in TILES}):
        variants[("new", warps)] = _module(_launch(DEPTHWISE, warps), f"dw_new_{warps}")
        # every tap masked, interior tiles too (od < 0 never holds)
        masked = DEPTHWISE.replace("PADDED=any(padding)", "PADDED=True").replace("    if inside:\n",
                                                                                  "    if od < 0:\n")
        assert masked.count("PADDED=True") == 1 and masked.count("if od < 0:") == 1
        variants[("masked", warps)] = _module(_launch(masked, warps), f"dw_masked_{warps}")
        if len(sys.argv) > 1:
            variants[("old", warps)] = _module(_launch(Path(sys.argv[1]).read_text(), warps), f"dw_old_{warps}")
    for name, (xs, ws, padding) in SHAPES.items():
        _shape(name, xs, ws, padding, variants, do_bench)
        torch.cuda.empty_cache()


def _shape(name, xs, ws, padding, variants, do_bench) -> None:
    torch.manual_seed(0)
    x, w = torch.randn(xs, device="cuda"), torch.randn(ws, device="cuda")
    groups = xs[1]
    want = torch.nn.functional.conv2d(x, w, None, 1, padding, 1, groups)
    cudnn = do_bench(lambda: torch.nn.functional.conv2d(x, w, None, 1, padding, 1, groups))
    floor = (x.numel() + want.numel()) * 4 / 4.8e12 * 1e3
    print(f"{name}: cuDNN fp32 {cudnn:.3f} ms, floor {floor:.3f} ms", flush=True)
    for bh, bw, warps in TILES:
        for kind in ("new", "masked", "old"):
            module = variants.get((kind, warps))
            if module is None or (kind != "new" and (bh, bw, warps) not in COMPARED):
                continue
            out = torch.empty_like(want)

            def run(module=module, out=out, bh=bh, bw=bw):
                return module.conv_depthwise(x, w, None, out, (1, 1), padding, (1, 1), groups, bh, bw)

            run()
            err = ((out - want).abs().max() / want.abs().max()).item()
            ms = do_bench(run)
            print(f"  {kind:6s} {bh:3d} x {bw:3d} / {warps} warps: {ms:.3f} ms ({floor / ms:.0%} of floor), "
                  f"error {err:.1e}", flush=True)

if __name__ == "__main__":
    main()
