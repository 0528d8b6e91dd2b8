"""Can an fp32 matmul beat cuBLAS SGEMM on the tensor cores at fp32's accuracy? (H200 probe)

Triton's `input_precision="tf32x3"` splits each operand tile in registers on every step of K; on
Hopper the split B tile must go back to shared memory before the tensor cores can read it. The
probe times that against a kernel whose operands are split once, beforehand, into a TF32 part and
a remainder (two fp32 arrays each, 4 extra reads of memory an fp32 GEMM barely notices), and
multiplies `hi*hi + hi*lo + lo*hi` with three plain TF32 products per step. Errors are against a
float64 product, as multiples of cuBLAS SGEMM's own error.

Session 7 found that one-accumulator split 19x less accurate than `tf32x3` and no faster. Triton's own
`tf32x3` sums the two cross products in an accumulator of their own, started at zero, and adds it to the
running one; its hi part is rounded (`cvt.rna`), not truncated. `split3_two_acc` does both: hi rounded to
nearest, the cross products in a second accumulator added once at the end, and B split K-major (each
column's K contiguous, as the matmul moves copy it). Its three dots read their operands from shared memory
as loaded: nothing is split per step, so nothing is written back before the tensor cores read it.

    python3 benchmarks/h200/tf32_split_probe.py [--quick] [M N K]
"""
import sys

import torch
import triton
import triton.language as tl


@triton.jit
def split_tf32(x_ptr, hi_ptr, lo_ptr, n, BLOCK: tl.constexpr, ROUND: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    bits = x.to(tl.int32, bitcast=True)
    if ROUND:
        bits += 4096  # to the nearest TF32, ties away (cvt.rna's), not the top 19 bits as they are
    hi = (bits & -8192).to(tl.float32, bitcast=True)  # top 19 bits: TF32
    tl.store(hi_ptr + offs, hi, mask=mask)
    tl.store(lo_ptr + offs, x - hi, mask=mask)


@triton.jit
def tile_offsets(M, N, sam, sak, sbk, sbn, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                 GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    npm, npn = tl.cdiv(M, BM), tl.cdiv(N, BN)
    group = GROUP_M * npn
    first = (pid // group) * GROUP_M
    gm = min(npm - first, GROUP_M)
    rm = (first + (pid % group) % gm) * BM + tl.arange(0, BM)
    rn = ((pid % group) // gm) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    return rm, rn, rk, rm[:, None] * sam + rk[None, :] * sak, rk[:, None] * sbk + rn[None, :] * sbn


@triton.jit
def gemm_split(ah, al, bh, bl, c, M, N, K, sam, sak, sbk, sbn, scm, scn,
               BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr, TWO_ACC: tl.constexpr):
    rm, rn, rk, a_off, b_off = tile_offsets(M, N, sam, sak, sbk, sbn, BM, BN, BK, GROUP_M)
    acc = tl.zeros((BM, BN), tl.float32)  # hi * hi, and the cross products too unless TWO_ACC
    small = tl.zeros((BM, BN), tl.float32)  # TWO_ACC: lo * hi + hi * lo apart from the big terms until the end
    for k in range(0, tl.cdiv(K, BK)):
        km = rk < K - k * BK
        amask = (rm[:, None] < M) & km[None, :]
        bmask = km[:, None] & (rn[None, :] < N)
        a_hi = tl.load(ah + a_off, mask=amask, other=0.0)
        a_lo = tl.load(al + a_off, mask=amask, other=0.0)
        b_hi = tl.load(bh + b_off, mask=bmask, other=0.0)
        b_lo = tl.load(bl + b_off, mask=bmask, other=0.0)
        if TWO_ACC:
            small = tl.dot(a_lo, b_hi, small, input_precision="tf32")
            small = tl.dot(a_hi, b_lo, small, input_precision="tf32")
        else:
            acc = tl.dot(a_lo, b_hi, acc, input_precision="tf32")
            acc = tl.dot(a_hi, b_lo, acc, input_precision="tf32")
        acc = tl.dot(a_hi, b_hi, acc, input_precision="tf32")
        a_off += BK * sak
        b_off += BK * sbk
    tl.store(c + rm[:, None] * scm + rn[None, :] * scn, acc + small, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def gemm_fold(ah, al, bh, bl, c, M, N, K, sam, sak, sbk, sbn, scm, scn,
              BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr, CHUNK: tl.constexpr):
    """The three TF32 products of CHUNK K steps in an accumulator of their own, started at zero, added to the
    running sum by the CUDA cores (rounded to nearest) at the chunk's end. The tensor cores' accumulator drops
    the bits below its largest addend's: over all of K (split3_two_acc) the error grows with K's steps."""
    rm, rn, rk, a_off, b_off = tile_offsets(M, N, sam, sak, sbk, sbn, BM, BN, BK, GROUP_M)
    acc = tl.zeros((BM, BN), tl.float32)
    if CHUNK <= 1:  # one loop (pipelined): a fresh accumulator every step; -1: each added one step late
        prev = tl.zeros((BM, BN), tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            km = rk < K - k * BK
            a_hi = tl.load(ah + a_off, mask=(rm[:, None] < M) & km[None, :], other=0.0)
            a_lo = tl.load(al + a_off, mask=(rm[:, None] < M) & km[None, :], other=0.0)
            b_hi = tl.load(bh + b_off, mask=km[:, None] & (rn[None, :] < N), other=0.0)
            b_lo = tl.load(bl + b_off, mask=km[:, None] & (rn[None, :] < N), other=0.0)
            part = tl.dot(a_lo, b_hi, input_precision="tf32")
            part = tl.dot(a_hi, b_lo, part, input_precision="tf32")
            part = tl.dot(a_hi, b_hi, part, input_precision="tf32")
            if CHUNK == -1:
                acc += prev
                prev = part
            else:
                acc += part
            a_off += BK * sak
            b_off += BK * sbk
        if CHUNK == -1:
            acc += prev
        tl.store(c + rm[:, None] * scm + rn[None, :] * scn, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))
        return
    for k0 in range(0, tl.cdiv(K, BK), CHUNK):
        part = tl.zeros((BM, BN), tl.float32)
        for k in range(k0, tl.minimum(k0 + CHUNK, tl.cdiv(K, BK))):
            km = rk < K - k * BK
            amask = (rm[:, None] < M) & km[None, :]
            bmask = km[:, None] & (rn[None, :] < N)
            a_hi = tl.load(ah + a_off, mask=amask, other=0.0)
            a_lo = tl.load(al + a_off, mask=amask, other=0.0)
            b_hi = tl.load(bh + b_off, mask=bmask, other=0.0)
            b_lo = tl.load(bl + b_off, mask=bmask, other=0.0)
            part = tl.dot(a_lo, b_hi, part, input_precision="tf32")
            part = tl.dot(a_hi, b_lo, part, input_precision="tf32")
            part = tl.dot(a_hi, b_hi, part, input_precision="tf32")
            a_off += BK * sak
            b_off += BK * sbk
        acc += part
    tl.store(c + rm[:, None] * scm + rn[None, :] * scn, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def gemm_one(a, b, c, M, N, K, sam, sak, sbk, sbn, scm, scn,
             BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr, PREC: tl.constexpr):
    rm, rn, rk, a_off, b_off = tile_offsets(M, N, sam, sak, sbk, sbn, BM, BN, BK, GROUP_M)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        km = rk < K - k * BK
        x = tl.load(a + a_off, mask=(rm[:, None] < M) & km[None, :], other=0.0)
        y = tl.load(b + b_off, mask=km[:, None] & (rn[None, :] < N), other=0.0)
        acc = tl.dot(x, y, acc, input_precision=PREC)
        a_off += BK * sak
        b_off += BK * sbk
    tl.store(c + rm[:, None] * scm + rn[None, :] * scn, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def split(x, rounded):
    hi, lo = torch.empty_like(x), torch.empty_like(x)
    split_tf32[(triton.cdiv(x.numel(), 4096),)](x, hi, lo, x.numel(), BLOCK=4096, ROUND=rounded)
    return hi, lo


def run_split(a, b, cfg, two_acc=False, chunk=0):
    """Both operands split once, then three TF32 products a step. `two_acc`: hi rounded (not truncated), B split
    K-major (its transpose's rows), and the cross products in an accumulator of their own."""
    BM, BN, BK, w, s = cfg
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty(M, N, device=a.device, dtype=torch.float32)
    rounded = two_acc or chunk > 0
    ah, al = split(a, rounded)
    if rounded:
        bth, btl = split(b.t().contiguous(), True)  # N x K: B's element (k, n) at n * K + k
        bh, bl = bth.t(), btl.t()
    else:
        bh, bl = split(b, False)
    grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN),)
    if chunk:
        gemm_fold[grid](ah, al, bh, bl, c, M, N, K, ah.stride(0), ah.stride(1), bh.stride(0), bh.stride(1),
                        c.stride(0), c.stride(1), BM=BM, BN=BN, BK=BK, GROUP_M=8, CHUNK=chunk, num_warps=w,
                        num_stages=s)
        return c
    gemm_split[grid](ah, al, bh, bl, c, M, N, K, ah.stride(0), ah.stride(1), bh.stride(0), bh.stride(1),
                     c.stride(0), c.stride(1), BM=BM, BN=BN, BK=BK, GROUP_M=8, TWO_ACC=two_acc, num_warps=w,
                     num_stages=s)
    return c


def run_one(a, b, cfg, prec):
    BM, BN, BK, w, s = cfg
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty(M, N, device=a.device, dtype=torch.float32)
    grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN),)
    gemm_one[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                   BM=BM, BN=BN, BK=BK, GROUP_M=8, PREC=prec, num_warps=w, num_stages=s)
    return c


def main():
    quick = "--quick" in sys.argv  # the folded split and its lagged fold at the three tiles it ran best at, rand only
    args = [a for a in sys.argv[1:] if a != "--quick"]
    M, N, K = (int(v) for v in args[:3]) if len(args) > 2 else (4096, 4096, 4096)
    torch.backends.cuda.matmul.allow_tf32 = False
    flop = 2 * M * N * K
    for dist in ("rand",) if quick else ("rand", "randn"):
        gen = torch.rand if dist == "rand" else torch.randn
        torch.manual_seed(0)
        a = gen(M, K, device="cuda")
        b = gen(K, N, device="cuda")
        exact = (a.double() @ b.double())
        scale = exact.abs().max().item()

        def err(c, exact=exact, scale=scale):
            return (c.double() - exact).abs().max().item() / scale

        sgemm = a @ b
        e0 = err(sgemm)
        t0 = triton.testing.do_bench(lambda a=a, b=b: a @ b, warmup=50, rep=300)
        print(f"[{dist} {M}x{N}x{K}] SGEMM {t0:.4f} ms {flop / t0 / 1e9:.1f} TFLOP/s err {e0:.2e}", flush=True)
        cfgs = [(128, 128, 32, 8, 3), (128, 64, 32, 4, 4), (64, 128, 32, 4, 4), (128, 64, 64, 4, 3),
                (128, 128, 32, 8, 2), (128, 256, 16, 8, 3)]
        rows = []
        if quick:
            cfgs = cfgs[:3]
        for cfg in cfgs:
            variants = (("split3_two_acc", lambda a=a, b=b, cfg=cfg: run_split(a, b, cfg, two_acc=True)),
                             ("fold1", lambda a=a, b=b, cfg=cfg: run_split(a, b, cfg, chunk=1)),
                             ("fold4", lambda a=a, b=b, cfg=cfg: run_split(a, b, cfg, chunk=4)),
                             ("fold16", lambda a=a, b=b, cfg=cfg: run_split(a, b, cfg, chunk=16)),
                             ("tf32x3", lambda a=a, b=b, cfg=cfg: run_one(a, b, cfg, "tf32x3")),
                             ("tf32(one)", lambda a=a, b=b, cfg=cfg: run_one(a, b, cfg, "tf32")))
            if quick:
                variants = (("fold1", lambda a=a, b=b, cfg=cfg: run_split(a, b, cfg, chunk=1)),
                            ("fold_lag", lambda a=a, b=b, cfg=cfg: run_split(a, b, cfg, chunk=-1)))
            for name, fn in variants:
                try:
                    c = fn()
                    t = triton.testing.do_bench(fn, warmup=25, rep=150)
                    rows.append((name, cfg, t, err(c) / e0))
                except Exception as exc:  # noqa: BLE001  (a config that does not fit shared memory)
                    rows.append((name, cfg, float("nan"), float("nan")))
                    print(f"  {name} {cfg}: {type(exc).__name__}: {str(exc)[:100]}", flush=True)
        for name in ("split3_two_acc", "fold1", "fold_lag", "fold4", "fold16", "tf32x3", "tf32(one)"):
            mine = sorted((r for r in rows if r[0] == name and r[2] == r[2]), key=lambda r: r[2])
            for r in mine[:3]:
                print(f"  {name:14s} {r[1]} {r[2]:.4f} ms {flop / r[2] / 1e9:.1f} TFLOP/s vs SGEMM {t0 / r[2]:.2f}x "
                      f"err {r[3]:.2f}x SGEMM's", flush=True)


if __name__ == "__main__":
    main()
