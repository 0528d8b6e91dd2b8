"""Is a stride-1 average pool faster as a sliding sum? (H200 probe, for the next move of the pooling family)

44_Average_Pooling_1D (64 x 128 rows of 65,536 fp32, window 8, stride 1, padding 4) sits at 56.5% of the
floor in pass c3 (`pooling.flat`, 1.583 ms; torch.compile 1.623): every output makes 8 scalar loads (rows of
65,537 outputs are not 16-byte aligned), 16 L1 reads a warp a load. A window sum is the one before it plus the
value entering minus the value leaving: S(i) = S(b - 1) + cumsum(x[i - p + k - 1] - x[i - p - 1]) over a
program's block, two loads an output and one `tl.cumsum`. The probe times both against eager and
torch.compile, and gives each one's largest error against a float64 pool, as a multiple of eager's own.

    python3 benchmarks/h200/sliding_pool_probe.py [ROWS LENGTH WINDOW PADDING]
"""
import sys

import torch
import triton
import triton.language as tl


@triton.jit
def flat(x_ptr, y_ptr, L, L_out, total, K: tl.constexpr, P: tl.constexpr, BLOCK: tl.constexpr):
    # the direct sum: K loads an output (pooling.flat's shape, the window unrolled)
    o = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    row = o // L_out
    i = o % L_out
    acc = tl.zeros((BLOCK,), tl.float32)
    for j in tl.static_range(K):
        t = i - P + j
        acc += tl.load(x_ptr + row * L + t, mask=(o < total) & (t >= 0) & (t < L), other=0.0)
    tl.store(y_ptr + o, acc / K, mask=o < total)


@triton.jit
def sliding(x_ptr, y_ptr, L, L_out, K: tl.constexpr, KP: tl.constexpr, P: tl.constexpr, BLOCK: tl.constexpr):
    # program (row, block): the window sum before the block, then what enters minus what leaves, summed along it
    row = tl.program_id(0).to(tl.int64)
    b = tl.program_id(1) * BLOCK
    i = b + tl.arange(0, BLOCK)
    xr = x_ptr + row * L
    enter = i - P + K - 1
    leave = i - P - 1
    live = i < L_out
    a = tl.load(xr + enter, mask=live & (enter >= 0) & (enter < L), other=0.0)
    c = tl.load(xr + leave, mask=live & (leave >= 0) & (leave < L), other=0.0)
    w = tl.arange(0, KP)
    t = b - 1 - P + w
    before = tl.sum(tl.load(xr + t, mask=(w < K) & (t >= 0) & (t < L), other=0.0), 0)
    s = before + tl.cumsum(a - c, 0)
    tl.store(y_ptr + row * L_out + i, s / K, mask=live)


def run_flat(x, k, p, block, warps):
    rows, L = x.shape
    L_out = L + 2 * p - k + 1
    y = torch.empty(rows, L_out, device=x.device, dtype=x.dtype)
    total = rows * L_out
    flat[(triton.cdiv(total, block),)](x, y, L, L_out, total, K=k, P=p, BLOCK=block, num_warps=warps)
    return y


def run_sliding(x, k, p, block, warps):
    rows, L = x.shape
    L_out = L + 2 * p - k + 1
    y = torch.empty(rows, L_out, device=x.device, dtype=x.dtype)
    sliding[(rows, triton.cdiv(L_out, block))](x, y, L, L_out, K=k, KP=triton.next_power_of_2(k), P=p, BLOCK=block,
                                              num_warps=warps)
    return y


def main():
    rows, L, k, p = (int(v) for v in sys.argv[1:5]) if len(sys.argv) > 4 else (64 * 128, 65536, 8, 4)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    x = torch.rand(rows, L, device=device)
    pool = torch.nn.AvgPool1d(k, 1, p)
    exact = pool(x.double().unsqueeze(1)).squeeze(1)
    scale = exact.abs().max().item()

    def err(y):
        return (y.double() - exact).abs().max().item() / scale

    eager = pool(x.unsqueeze(1)).squeeze(1)
    e0 = max(err(eager), 1e-30)
    floor_ms = (x.numel() + exact.numel()) * 4 / 4.8e12 * 1e3
    print(f"[{rows} x {L}, window {k}, padding {p}] floor {floor_ms:.4f} ms; eager err {e0:.2e}", flush=True)
    bench = triton.testing.do_bench if device == "cuda" else (lambda fn, **_: float("nan"))
    compiled = torch.compile(lambda v: pool(v.unsqueeze(1)).squeeze(1))
    compiled(x)
    for name, fn in (("eager", lambda: pool(x.unsqueeze(1)).squeeze(1)), ("torch.compile", lambda: compiled(x))):
        t = bench(fn, warmup=25, rep=200)
        print(f"  {name:14s} {t:.4f} ms ({floor_ms / t:.1%} of the floor)", flush=True)
    for name, run in (("flat", run_flat), ("sliding", run_sliding)):
        for block, warps in ((512, 4), (1024, 4), (1024, 8), (2048, 8), (4096, 8), (4096, 16)):
            try:
                y = run(x, k, p, block, warps)
                t = bench(lambda run=run, block=block, warps=warps: run(x, k, p, block, warps), warmup=25, rep=200)
                print(f"  {name:8s} BLOCK {block:5d} warps {warps:2d}: {t:.4f} ms ({floor_ms / t:.1%} of the floor), "
                      f"err {err(y) / e0:.2f}x eager's", flush=True)
            except Exception as exc:  # noqa: BLE001  (a configuration that does not compile)
                print(f"  {name} BLOCK {block} warps {warps}: {type(exc).__name__}: {str(exc)[:120]}", flush=True)


if __name__ == "__main__":
    main()
