"""Does the fp16 split product lose its time to waiting on the tensor cores? (a GPU probe; CUDA host)

`matmul.split_f16`'s K loop runs three chained products a step into an accumulator started at zero, then adds it to
the running fp32 sum: compiled for sm_90 by Triton 3.6, each step waits three times for the tensor cores to finish
(`WARPGROUP.DEPBAR.LE gsb0, 0x0` after each product: the next one takes its result as accumulator, and the fp32
add reads the last). On the H200 at 4096^3, halving the K step (twice the waits) took 1.051 ms against 0.870
(c3's sweep of 1_Square_matrix_multiplication_), so the waits may cost a fifth of the time.

The variants here keep each product on an accumulator of its own (lo*hi, hi*lo, hi*hi), so a step issues its three
products and goes on (one non-blocking `DEPBAR.LE gsb0, 0x3` a step). The hi*hi sum is added to the fp32 total and
restarted every FOLD steps (the tensor cores' accumulator keeps only the bits at its largest addend's scale, so a sum
run over the whole of K loses accuracy: `inplace`, for comparison); the two remainder sums are 2^-11 of it and run
whole. Four accumulators fit 128 x 64 tiles at 8 warps (164 registers); 128 x 128 spills 136 bytes.

Measured on an H100 (session 42, RESULTS.md (az)): the waits cost 5% at 128 x 64 and nothing at 128 x 128, where the
chain stays fastest (0.916 ms at 4096^3 against the fold's 0.922); never folding erred 5.9x torch's worst at K = 4096.
Not built.

Note: the verifier's static rule (harness/sandbox/precision.py) credits a split only as a chain of three products on
one accumulator; these variants would need it to read three accumulators summed.

    python3 benchmarks/h200/fold_probe.py [PROBLEM ...]       # default: 1_Square_matrix_multiplication_

Each variant's forward (split passes included) is timed over 30 calls with CUDA events (the median), and its worst
error against a float64 product over the first 512 rows is given as a multiple of torch's fp32 matmul's there (TF32
off): the verifier refuses past 10x.
"""

from __future__ import annotations

import importlib.util
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from softmax_probe import _time  # noqa: E402 - CUDA events, the median of a few calls

_CHAIN = """        step = tl.dot(a_lo, b_hi)
        step = tl.dot(a_hi, b_lo, step)
        acc += tl.dot(a_hi, b_hi, step)
"""
_OWN = """        lh = tl.dot(a_lo, b_hi, lh)
        hl = tl.dot(a_hi, b_lo, hl)
        hh = tl.dot(a_hi, b_hi, hh)
"""
_FOLD = """        if (k // BLOCK_K) % FOLD == FOLD - 1:
            acc += hh
            hh = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
"""
_INIT = "    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)\n    for k in range(0, Kp, BLOCK_K):\n"
_OWN_INIT = ("    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)\n"
             "    hh = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)\n"
             "    lh = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)\n"
             "    hl = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)\n"
             "    for k in range(0, Kp, BLOCK_K):\n")
_RETURN = "        b_off += BLOCK_K\n    return acc\n"

# (name, tiles BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages, FOLD: None the template's chain, 0 never folded)
VARIANTS = (("chain", (128, 128, 64, 8, 3), None), ("chain", (128, 64, 64, 8, 3), None),
            ("fold", (128, 64, 64, 8, 3), 4), ("fold", (128, 64, 64, 8, 3), 8), ("fold", (128, 64, 32, 8, 4), 8),
            ("fold", (128, 128, 64, 8, 3), 8), ("fold", (64, 64, 64, 4, 4), 8), ("inplace", (128, 64, 64, 8, 3), 0))


def variant(source: str, fold: int | None) -> str:
    """The split_f16 kernel file with its product on three accumulators of its own, hi*hi folded every `fold` steps
    (0: never); None: as it is."""
    if fold is None:
        return source
    assert _CHAIN in source and _INIT in source and _RETURN in source, "the template's product loop changed"
    body = _OWN + (_FOLD.replace("FOLD", str(fold)) if fold else "")
    return (source.replace(_CHAIN, body).replace(_INIT, _OWN_INIT)
            .replace(_RETURN, "        b_off += BLOCK_K\n    return acc + (hh + (lh + hl))\n"))


def _module(source: str, tag: str):  # noqa: ANN202 - the kernel file as a module
    path = Path(tempfile.mkdtemp()) / f"fold_{tag}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"fold_probe_{tag}", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def probe(problem_path: Path) -> None:
    import torch

    from kernelopt.harness.problem import import_file
    from kernelopt.offline.moves import structural_moves
    from kernelopt.offline.tuner import with_config

    torch.backends.cuda.matmul.allow_tf32 = False
    moves = {m.name: m for m in structural_moves(problem_path).instances}
    name = "matmul.split_f16" if "matmul.split_f16" in moves else "bmm.split_f16"
    if name not in moves:
        print(f"## {problem_path.stem}: no split_f16 move ({', '.join(moves)})")
        return
    problem = import_file(problem_path, "fold_probe_problem")
    torch.manual_seed(0)
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in problem.get_inputs()]
    model = problem.Model(*problem.get_init_inputs()).cuda()
    rows = (slice(None), slice(0, 512)) if inputs[0].dim() == 3 else (slice(0, 512),)
    with torch.no_grad():
        fp32 = model(*inputs)
        truth = torch.matmul(*(x.double() for x in inputs))[rows]
        torch_worst = (fp32[rows].double() - truth).abs().max().item()
        torch_ms = _time(lambda: model(*inputs), 30)
    print(f"## {problem_path.stem} ({name}); torch fp32 {torch_ms:.4f} ms, its worst error {torch_worst:.3e}\n")
    print("| product | BLOCK_M x N x K, warps, stages | FOLD | ms | worst error x torch's |")
    print("|---|---|---:|---:|---:|")
    for kind, (bm, bn, bk, warps, stages), fold in VARIANTS:
        config = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "num_warps": warps, "num_stages": stages}
        try:
            module = _module(with_config(variant(moves[name].source, fold), config), f"{kind}{bm}{bn}{bk}{fold}")
            kernel = module.ModelNew(*problem.get_init_inputs()).cuda()
            with torch.no_grad():
                out = kernel(*inputs)
                ratio = (out[rows].double() - truth).abs().max().item() / torch_worst
                ms = _time(lambda k=kernel: k(*inputs), 30)
            print(f"| {kind} | {bm} x {bn} x {bk}, {warps}, {stages} | {fold if fold is not None else '-'} "
                  f"| {ms:.4f} | {ratio:.3g} |", flush=True)
        except Exception as error:  # noqa: BLE001 - a variant that fails to compile or run is a row of its own
            print(f"| {kind} | {bm} x {bn} x {bk}, {warps}, {stages} | {fold} | failed: "
                  f"{type(error).__name__}: {str(error)[:160]} | |", flush=True)
    print()


if __name__ == "__main__":
    square = ROOT / "benchmarks/kernelbench/problems/1_Square_matrix_multiplication_.py"
    for path in [Path(p) for p in sys.argv[1:]] or [square]:
        probe(path)
