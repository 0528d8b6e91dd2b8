"""The matmul family's in-register fp16 split (`f16x3`): an fp32 product at fp32's accuracy as three fp16
products, each operand tile scaled and split in registers as it is loaded, with no pass over A and B first.

`split_f16` (matmul_split_f16.py) scales each whole row of A and column of B, which takes a pass to find their
largest values and another to write the parts before the product reads them: on 6_Matmul's 256 x 524288 by
524288 x 256 that is 1 GB of operands read three times and written once where the product alone reads it once,
and on torch.bmm's 128 x 512 x 1024 x 2048 the passes were about 40% of the time (RESULTS.md (am)). Here the
product loads fp32 tiles as the plain template does and, each K step, scales every row of A's tile (its
BLOCK_K values) and every column of B's by the power of two that puts its largest magnitude in [2^14, 2^15),
splits them into fp16 parts and remainders, and multiplies `lo*hi + hi*lo + hi*hi` from zero; the step's sum,
unscaled by the outer product of the two inverses (powers of two: exact), is added to the running fp32 sum.
A tile's scale is local: a value far below its row's largest keeps its bits where that largest lies in
another tile.

Within a tile's line the split has fp16's range: a value below 2^-17 of its line's largest keeps a remainder of
fewer bits, and one below 2^-38 of it is dropped (an output made of such values alone, its line's largest meeting
zeros, errs). The step's unscale multiplies the two inverses first: where both lines lie under about 2^-60 (their
inverses' product under 2^-149) the step's sum underflows to zero, and where both lie over about 2^64 it
overflows, though the output itself may be fp32. A non-finite value goes whole into its remainder, so an inf meets
the other operand's part and gives torch's inf (not NaN). The verifier measures the outputs on the problem's data.

The cost moves from memory to the CUDA cores: each program splits every tile it loads, and each step's sum
is multiplied once more. So the twin is offered where memory, not the tensor cores, bounds the split product:
a long K over few output tiles (split-K), and torch.bmm, whose operands the split passes read most. fp16
products take either operand's layout, so no K-major copy is needed (a TF32 product's is: matmul_kmajor.py).

The verifier measures such products (16-bit operands on fp32 data: harness/sandbox/precision.py), and a
product outside a split's chain of three is refused as it stands.
"""

from __future__ import annotations

# Each K step's tiles as parts and remainders (the product's loop in matmul.py's templates, rewritten below)
PARTS = '''

@triton.jit
def _fp16_parts(x, AXIS: tl.constexpr):
    # x's lines along AXIS (-1: the rows of A's tile, along K; -2: the columns of B's), each scaled by the power of
    # two that puts its largest magnitude in [2^14, 2^15), split into an fp16 part and remainder; and the scales'
    # inverses (exact). Scales stay in 2^-126..2^126: a line of zeros, or of values under 2^-112, is scaled by
    # 2^126 and keeps fp16's subnormals. A non-finite value goes whole into the remainder, its part 0: it meets
    # only the other operand's part, never a remainder of 0 (inf * 0 = NaN).
    big = tl.max(x.to(tl.int32, bitcast=True) & 0x7FFFFFFF, axis=AXIS)  # |x|'s order as integers (NaN over inf)
    shift = tl.minimum(tl.maximum(268 - (big >> 23), 1), 253)
    y = x * tl.expand_dims((shift << 23).to(tl.float32, bitcast=True), AXIS)
    finite = tl.abs(y) < float("inf")
    hi = tl.where(finite, y, 0.0).to(tl.float16)
    lo = tl.where(finite, y - hi.to(tl.float32), y).to(tl.float16)
    return hi, lo, ((254 - shift) << 23).to(tl.float32, bitcast=True)

'''

_DOT = "        acc = tl.dot(a, b, acc, input_precision=PRECISION)\n"
_SPLIT_DOT = '''        # the step's three fp16 products from zero, their sum unscaled (exactly) and added in fp32
        a_hi, a_lo, inv_a = _fp16_parts(a, -1)
        b_hi, b_lo, inv_b = _fp16_parts(b, -2)
        step = tl.dot(a_lo, b_hi)
        step = tl.dot(a_hi, b_lo, step)
        step = tl.dot(a_hi, b_hi, step)
        acc += step * (tl.expand_dims(inv_a, -1) * tl.expand_dims(inv_b, -2))
'''
_RANGE = "\n\n@triton.jit\ndef _dot_range("
_PRECISION = '        precision = "ieee" if a.dtype == torch.float32 else "tf32"\n'

# The tiles of the in-register fp16 split, guesses until the H200 measures them. Each compiles for sm_90 with
# Triton 3.6 (the H200's) in 255 registers or fewer with nothing spilled and fits Hopper's 227 KB
# of shared memory (benchmarks/sm90_compile.py: 128 x 128 x 32 at 3 stages, 254 registers and 96 KB; 128 x 64 x
# 32, 164 and 72 KB; 128 x 128 x 64 at 2 stages, 254 and 128 KB). The split-K grid takes the first three.
TILES = ((128, 128, 32, 8, 3), (128, 64, 32, 8, 3), (128, 128, 64, 8, 2), (64, 128, 32, 8, 3), (128, 64, 64, 8, 3),
         (64, 64, 32, 4, 3))

WHAT = ("fp32 products as three fp16 products, each K step's tiles scaled by powers of two and split in "
        "registers")


def on_fp16_splits(source: str) -> str:
    """A template instance (matmul.py's `_dot_range` loop) with its fp32 products as three fp16 products of
    tiles scaled and split in registers each K step."""
    for part, count in ((_DOT, 1), (_RANGE, 1), (_PRECISION, 1), (", PRECISION)", None),
                        ("PRECISION=precision, ", None)):
        found = source.count(part)
        assert found and (count is None or found == count), f"not a template of matmul.py's product: {part!r}"
    out = source.replace(_DOT, _SPLIT_DOT).replace(_RANGE, PARTS.rstrip("\n") + "\n" + _RANGE, 1)
    out = out.replace(_PRECISION, "").replace(", PRECISION)", ")").replace("PRECISION=precision, ", "")
    out = out.replace(", PRECISION: tl.constexpr)", ")")
    return _joined_params(out).replace('"""matmul, ', f'"""matmul, {WHAT}, ', 1)


def _joined_params(source: str) -> str:
    """Drop a kernel's `PRECISION: tl.constexpr` parameter where it stands on a line of its own."""
    lines = source.split("\n")
    out: list[str] = []
    for line in lines:
        if line.strip() == "PRECISION: tl.constexpr):":
            out[-1] = out[-1].rstrip().rstrip(",") + "):"
            continue
        out.append(line)
    assert "PRECISION" not in "\n".join(out), "a PRECISION left in the template"
    return "\n".join(out)
