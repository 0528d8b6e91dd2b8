"""Can an fp32 matmul run its three split products at fp16's rate, at fp32's accuracy? (H200 probe)

`matmul.split_tf32` splits each fp32 operand once into a TF32 part and a remainder and runs three TF32
products a K step. fp16 keeps as many mantissa bits as TF32 (10 stored, 11 with the implicit one) and the
H200's tensor cores run it at twice TF32's rate, with half the bytes per operand. What it lacks is range:
a remainder is about 2^-11 of its value, and fp16's normals stop at 2^-14. So each row of A (and each
column of B) is first scaled by a power of two that puts its largest magnitude in [2^14, 2^15): the hi part
of every value down to 2^-14 of it is a normal fp16, and a remainder's rounding (fp16's subnormal spacing,
2^-24) is 2^-38 of the row's largest, far below fp32's 2^-24. The scales are powers of two, so scaling is
exact and the product is unscaled exactly in the epilogue. Each K step's three products start from zero and
are added to the running sum in fp32 (as `split_tf32` does: the tensor cores' accumulator drops bits).

Timed with the split passes included, against cuBLAS SGEMM, cuBLAS fp16 (the rate's ceiling) and the TF32
split (`tf32_split_probe.run_split(chunk=1)`). Errors against a float64 product, as multiples of SGEMM's.

    python3 benchmarks/h200/f16_split_probe.py [M N K]
"""
import os
import sys

import torch
import triton
import triton.language as tl

sys.path.insert(0, os.path.dirname(__file__))
from tf32_split_probe import run_split  # noqa: E402


@triton.jit
def split_rows_f16(x_ptr, hi_ptr, lo_ptr, inv_ptr, R, C, sr, sc, ld, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    """Rows of x (R x C, any strides) scaled by 2^(14 - floor(log2 max|row|)), as fp16 hi + lo, R x ld row-major
    (zeros past C); inv[r] = the scale's inverse (exact)."""
    r = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    big = tl.zeros((BLOCK_R,), tl.float32)
    for c0 in range(0, C, BLOCK_C):
        c = c0 + tl.arange(0, BLOCK_C)
        x = tl.load(x_ptr + r[:, None].to(tl.int64) * sr + c[None, :] * sc,
                    mask=(r[:, None] < R) & (c[None, :] < C), other=0.0)
        big = tl.maximum(big, tl.max(tl.abs(x), axis=1))
    e = (big.to(tl.int32, bitcast=True) >> 23) & 255  # biased exponent of the row's largest magnitude
    field = tl.minimum(tl.maximum(268 - e, 1), 254)  # 2^(127 + 14 - (e - 127))
    scale = (field << 23).to(tl.float32, bitcast=True)
    tl.store(inv_ptr + r, 1.0 / scale, mask=r < R)
    for c0 in range(0, ld, BLOCK_C):
        c = c0 + tl.arange(0, BLOCK_C)
        x = tl.load(x_ptr + r[:, None].to(tl.int64) * sr + c[None, :] * sc,
                    mask=(r[:, None] < R) & (c[None, :] < C), other=0.0)
        y = x * scale[:, None]
        hi = y.to(tl.float16)
        lo = (y - hi.to(tl.float32)).to(tl.float16)
        dst = r[:, None].to(tl.int64) * ld + c[None, :]
        tl.store(hi_ptr + dst, hi, mask=(r[:, None] < R) & (c[None, :] < ld))
        tl.store(lo_ptr + dst, lo, mask=(r[:, None] < R) & (c[None, :] < ld))


@triton.jit
def gemm_f16_split(ah, al, bh, bl, inv_a, inv_b, c, M, N, Kp, scm, scn,
                   BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr, MODE: tl.constexpr):
    pid = tl.program_id(0)
    npm, npn = tl.cdiv(M, BM), tl.cdiv(N, BN)
    group = GROUP_M * npn
    first = (pid // group) * GROUP_M
    gm = min(npm - first, GROUP_M)
    pm = first + (pid % group) % gm
    pn = (pid % group) // gm
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_off = rm[:, None].to(tl.int64) * Kp + rk[None, :]  # M, N padded to whole tiles, K to BK: no masks
    b_off = rk[:, None] + rn[None, :].to(tl.int64) * Kp
    acc = tl.zeros((BM, BN), tl.float32)
    for _ in range(0, Kp, BK):
        a_hi = tl.load(ah + a_off)
        b_hi = tl.load(bh + b_off)
        if MODE == 1:  # "hh": one fp16 product: the rate's ceiling, not an fp32 product
            acc = tl.dot(a_hi, b_hi, acc)
        elif MODE == 2:  # "chained": the three products on the running sum itself, no sum of a step's own (the
            # sm_90 compile keeps the last product asynchronous across steps; the accuracy is the H200's to say)
            a_lo = tl.load(al + a_off)
            b_lo = tl.load(bl + b_off)
            acc = tl.dot(a_lo, b_hi, acc)
            acc = tl.dot(a_hi, b_lo, acc)
            acc = tl.dot(a_hi, b_hi, acc)
        else:  # the moves' own: each step's three products from zero, added to the running sum in fp32
            a_lo = tl.load(al + a_off)
            b_lo = tl.load(bl + b_off)
            step = tl.dot(a_lo, b_hi)
            step = tl.dot(a_hi, b_lo, step)
            acc += tl.dot(a_hi, b_hi, step)
        a_off += BK
        b_off += BK
    ia = tl.load(inv_a + rm, mask=rm < M, other=1.0)
    ib = tl.load(inv_b + rn, mask=rn < N, other=1.0)
    out = acc * ia[:, None] * ib[None, :]
    tl.store(c + rm[:, None].to(tl.int64) * scm + rn[None, :] * scn, out, mask=(rm[:, None] < M) & (rn[None, :] < N))


def split_f16(x, rows_p, ld):
    R, C = x.shape
    hi = torch.zeros(rows_p, ld, device=x.device, dtype=torch.float16)  # padded rows stay zero
    lo = torch.zeros(rows_p, ld, device=x.device, dtype=torch.float16)
    inv = torch.ones(rows_p, device=x.device, dtype=torch.float32)
    split_rows_f16[(triton.cdiv(R, 16),)](x, hi, lo, inv, R, C, x.stride(0), x.stride(1), ld, BLOCK_R=16,
                                          BLOCK_C=256, num_warps=4)
    return hi, lo, inv


def run_f16(a, b, cfg, mode=0, parts=None):
    BM, BN, BK, w, s = cfg
    M, K = a.shape
    N = b.shape[1]
    Kp = triton.cdiv(K, BK) * BK
    if parts is None:
        parts = (*split_f16(a, triton.cdiv(M, BM) * BM, Kp), *split_f16(b.t(), triton.cdiv(N, BN) * BN, Kp))
    ah, al, ia, bh, bl, ib = parts
    c = torch.empty(M, N, device=a.device, dtype=torch.float32)
    grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN),)
    gemm_f16_split[grid](ah, al, bh, bl, ia, ib, c, M, N, Kp, c.stride(0), c.stride(1), BM=BM, BN=BN, BK=BK,
                         GROUP_M=8, MODE=mode, num_warps=w, num_stages=s)
    return c


def main():
    args = sys.argv[1:]
    M, N, K = (int(v) for v in args[:3]) if len(args) > 2 else (4096, 4096, 4096)
    torch.backends.cuda.matmul.allow_tf32 = False
    flop = 2 * M * N * K
    for dist in ("rand", "randn"):
        gen = torch.rand if dist == "rand" else torch.randn
        torch.manual_seed(0)
        a = gen(M, K, device="cuda")
        b = gen(K, N, device="cuda")
        exact = a.double() @ b.double()
        scale = exact.abs().max().item()

        def err(c, exact=exact, scale=scale):
            return (c.double() - exact).abs().max().item() / scale

        e0 = err(a @ b)
        t0 = triton.testing.do_bench(lambda a=a, b=b: a @ b, warmup=50, rep=300)
        a16, b16 = a.half(), b.half()
        th = triton.testing.do_bench(lambda a16=a16, b16=b16: a16 @ b16, warmup=50, rep=300)
        print(f"[{dist} {M}x{N}x{K}] SGEMM {t0:.4f} ms err {e0:.2e}; cuBLAS fp16 {th:.4f} ms "
              f"{flop / th / 1e9:.1f} TFLOP/s", flush=True)
        rows = []
        for cfg in ((128, 128, 32, 8, 3), (128, 128, 64, 8, 3), (128, 256, 32, 8, 3), (128, 256, 64, 8, 2),
                    (128, 128, 64, 4, 3), (64, 128, 64, 4, 4), (128, 64, 64, 4, 4), (128, 128, 32, 4, 4)):
            Kp = triton.cdiv(K, cfg[2]) * cfg[2]
            try:
                parts = (*split_f16(a, triton.cdiv(M, cfg[0]) * cfg[0], Kp),
                         *split_f16(b.t(), triton.cdiv(N, cfg[1]) * cfg[1], Kp))
                for name, fn in (("f16x3", lambda a=a, b=b, cfg=cfg: run_f16(a, b, cfg)),
                                 ("f16x3 product", lambda a=a, b=b, cfg=cfg, p=parts: run_f16(a, b, cfg, parts=p)),
                                 ("f16x3 chained product", lambda a=a, b=b, cfg=cfg, p=parts: run_f16(a, b, cfg, 2,
                                                                                                       parts=p)),
                                 ("f16 hh only", lambda a=a, b=b, cfg=cfg, p=parts: run_f16(a, b, cfg, 1,
                                                                                             parts=p))):
                    out = fn()
                    t = triton.testing.do_bench(fn, warmup=25, rep=150)
                    rows.append((name, cfg, t, err(out) / e0))
            except Exception as exc:  # noqa: BLE001  (a tile that does not fit shared memory)
                print(f"  {cfg}: {type(exc).__name__}: {str(exc)[:100]}", flush=True)
        cfg = (128, 128, 32, 8, 3)
        out = run_split(a, b, cfg, chunk=1)
        t = triton.testing.do_bench(lambda a=a, b=b, cfg=cfg: run_split(a, b, cfg, chunk=1), warmup=25, rep=150)
        rows.append(("tf32 split (fold1)", cfg, t, err(out) / e0))
        for name in ("f16x3", "f16x3 product", "f16x3 chained product", "f16 hh only", "tf32 split (fold1)"):
            mine = sorted((r for r in rows if r[0] == name), key=lambda r: r[2])
            for r in mine[:4]:
                print(f"  {name:22s} {r[1]} {r[2]:.4f} ms {flop / r[2] / 1e9:.1f} TFLOP/s vs SGEMM {t0 / r[2]:.2f}x "
                      f"err {r[3]:.2f}x SGEMM's", flush=True)


if __name__ == "__main__":
    main()
