"""Does a row norm's one-read kernel lose its time to rows that start off a 16-byte boundary? (H200, L1 norm of
32768 rows of 65,535 fp32, KernelBench 38's shape, beside rows of 65,536.)

    python3 benchmarks/h200/rownorm_probe.py                    # every variant, each in its own process
    python3 benchmarks/h200/rownorm_probe.py VARIANT N CHUNK WARPS   # one

A row of 65,535 values starts at row * 65,535: Triton cannot prove a row's first address 16-byte aligned, so every
load and store of the template is a 4-byte one. Variants (each checked against torch, timed by CUDA events,
median of 15 after 3 warm-ups):
- `template`: `offline/moves/rows.one_read`'s kernel with VEC=1 (4-byte accesses where rows are off a boundary), at
  N = 65,535 and at 65,536 (aligned rows).
- `product`: `rows.one_read`'s own launch (at 65,535 it takes VEC=4: aligned windows, vector stores inside the row).
- `aligned`: each piece reads an aligned window of whole 4-value vectors (16-byte loads; the values outside the row
  are read and dropped), and stores with a per-value mask (4-byte stores).
- `aligned_st`: as `aligned`, and the vectors wholly inside the row are stored as vectors; the row's first and last
  vectors, which may be partial, are stored value by value by the row's first piece.
- `registers`, `registers_v1`: `rows.rows_in_registers` (CHUNK read as ROWS, rows a program) at its own launch (VEC=4
  where rows are off a boundary) and with VEC=1, for rows short enough for registers (N <= 16,384).
- `clone`: `x.clone()` (the floor's own rate); `torch`: `x / x.abs().mean(1, keepdim=True)`.

Prints one line per variant: ms, TB/s over the floor's bytes, max error.
"""

from __future__ import annotations

import subprocess
import sys

from softmax_probe import _time  # the probe beside this one (benchmarks/h200/ is the script's own path)

ROWS = 32768


def _kernels():
    import triton
    import triton.language as tl

    @triton.jit
    def aligned(out_ptr, x_ptr, s_ptr, count_ptr, n, chunks, CHUNK: tl.constexpr, PIECES: tl.constexpr,
                VECTOR_STORE: tl.constexpr):
        VEC: tl.constexpr = 4
        pid = tl.program_id(0).to(tl.int64)
        row = pid // chunks
        piece = pid % chunks
        base = row * n
        start = (base // VEC) * VEC + piece * CHUNK  # a multiple of VEC: 16-byte vectors
        q = start + tl.arange(0, CHUNK // VEC).to(tl.int64) * VEC  # each vector's first index
        offs = q[:, None] + tl.arange(0, VEC)[None, :]
        overlap = (q < base + n) & (q + VEC > base)  # one value a vector decides: the mask is the vector's
        x = tl.load(x_ptr + offs, mask=overlap[:, None], other=0.0)
        in_row = (offs >= base) & (offs < base + n)
        s = tl.sum(tl.sum(tl.where(in_row, tl.abs(x), 0.0), axis=1), axis=0)
        tl.store(s_ptr + row * chunks + piece, s)
        tl.debug_barrier()
        seen = tl.atomic_add(count_ptr + row, 1, sem="acq_rel") + 1
        while seen < chunks:
            seen = tl.atomic_add(count_ptr + row, 0, sem="acquire")
        tl.debug_barrier()
        idx = tl.arange(0, PIECES)
        s = tl.sum(tl.load(s_ptr + row * chunks + idx, mask=idx < chunks, other=0.0, cache_modifier=".cg"), axis=0)
        y = x / (s / n)
        if VECTOR_STORE:
            first = (base // VEC) * VEC
            last = ((base + n - 1) // VEC) * VEC
            inner = (q > first) & (q < last)
            tl.store(out_ptr + offs, y, mask=inner[:, None])
            if piece == 0:
                e = tl.arange(0, 2 * VEC)
                eo = tl.where(e < VEC, first + e, last + e - VEC)
                em = (eo >= base) & (eo < base + n)  # where first == last, the same values twice
                xe = tl.load(x_ptr + eo, mask=em, other=0.0)
                tl.store(out_ptr + eo, xe / (s / n), mask=em)
        else:
            tl.store(out_ptr + offs, y, mask=in_row)

    return aligned


def _template(n: int, structure: str = "one_read"):
    import importlib.util
    import tempfile
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from kernelopt.offline.moves import rows

    path = Path(tempfile.mkdtemp()) / "one_read.py"
    path.write_text(getattr(rows, structure)("row_l1_norm", 1, ("x",)))
    spec = importlib.util.spec_from_file_location("one_read", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def one(variant: str, n: int, chunk: int, warps: int) -> None:
    import torch
    import triton

    torch.manual_seed(0)
    x = torch.randn(ROWS, n, device="cuda")
    want = x / x.abs().mean(1, keepdim=True)
    if variant == "template":
        module = _template(n)
        module.CHUNK = chunk
        src = module.one_read_kernel

        def run() -> torch.Tensor:
            out = torch.empty_like(x)
            chunks = triton.cdiv(n, chunk)
            m = torch.empty((ROWS, chunks), device="cuda")
            s = torch.empty((ROWS, chunks), device="cuda")
            count, flag = torch.zeros((2, ROWS), device="cuda", dtype=torch.int32)
            row_stats = torch.empty((ROWS, 2), device="cuda")
            src[(chunks * ROWS,)](out, x, m, s, count, flag, row_stats, n, 1, chunks, CHUNK=chunk,
                                  PIECES=triton.next_power_of_2(chunks), VEC=1, LAST=False, num_warps=warps)
            return out
    elif variant == "product":
        module = _template(n)
        module.CHUNK = chunk
        model = module.ModelNew()

        def run() -> torch.Tensor:
            return model(x)
    elif variant.startswith("registers"):
        module = _template(n, "rows_in_registers")
        module.ROWS = chunk
        if variant == "registers_v1":
            module.VECTORS = 0
        model = module.ModelNew()

        def run() -> torch.Tensor:
            return model(x)
    elif variant in ("aligned", "aligned_st"):
        kernel = _kernels()

        def run() -> torch.Tensor:
            out = torch.empty_like(x)
            chunks = triton.cdiv(n + 3, chunk)
            s = torch.empty((ROWS, chunks), device="cuda")
            count = torch.zeros((ROWS,), device="cuda", dtype=torch.int32)
            kernel[(chunks * ROWS,)](out, x, s, count, n, chunks, CHUNK=chunk, PIECES=triton.next_power_of_2(chunks),
                                     VECTOR_STORE=variant == "aligned_st", num_warps=warps)
            return out
    elif variant == "clone":
        def run() -> torch.Tensor:
            return x.clone()
    else:
        def run() -> torch.Tensor:
            return x / x.abs().mean(1, keepdim=True)
    got = run()
    torch.cuda.synchronize()
    err = float((got - want).abs().max()) if variant != "clone" else 0.0
    ms = _time(run)  # softmax_probe's: median of 15 after 3 warm-ups
    print(f"{variant:11s} n={n} CHUNK={chunk:5d} warps={warps:2d}: {ms:.3f} ms, "
          f"{2 * ROWS * n * 4 / ms / 1e9:.2f} TB/s, max error {err:.2e}", flush=True)


RUNS = [("clone", 65535, 0, 0), ("torch", 65535, 0, 0)] + [
    (v, n, c, w) for v, n in (("template", 65535), ("template", 65536), ("aligned", 65535), ("aligned_st", 65535),
                              ("product", 65535)) for c, w in ((4096, 8), (8192, 8))]

if __name__ == "__main__":
    if len(sys.argv) == 5:
        one(sys.argv[1], *map(int, sys.argv[2:]))
    else:
        for args in RUNS:
            try:
                subprocess.run([sys.executable, __file__, *map(str, args)], timeout=60, check=False)
            except subprocess.TimeoutExpired:
                print(f"{args}: over 60 s (a wait that never ended?)", flush=True)
